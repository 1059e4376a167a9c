//! `fabrik bench p2p` as a user runs it: two processes, the server's printed token, a peer
//! killed mid-test, a wrong token.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn fabrik() -> Command {
    Command::new(assert_cmd::cargo::cargo_bin("fabrik"))
}

/// A server on a free loopback port; returns the child, its address and the first lines.
fn start_server(extra: &[&str]) -> (Child, String, Vec<String>) {
    let mut child = fabrik()
        .args([
            "bench",
            "p2p",
            "--server",
            "--bind",
            "127.0.0.1",
            "--port",
            "0",
        ])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut lines = Vec::new();
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let addr = line.trim().rsplit(' ').next().unwrap().to_string();
    lines.push(line.trim().to_string());
    if !extra.contains(&"--token") {
        let mut tok = String::new();
        out.read_line(&mut tok).unwrap();
        lines.push(tok.trim().to_string());
    }
    (child, addr, lines)
}

fn wait_with_deadline(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let t = Instant::now();
    while t.elapsed() < limit {
        if let Some(s) = child.try_wait().unwrap() {
            return Some(s);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

fn stderr_of(child: &mut Child) -> String {
    let mut s = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut s);
    }
    s
}

#[test]
fn the_printed_token_lets_a_client_in_and_json_is_the_p2p_report() {
    let (mut server, addr, lines) = start_server(&["--once"]);
    assert!(lines[0].starts_with("fabrik bench p2p server listening on 127.0.0.1:"));
    let token = lines[1]
        .strip_prefix("token: ")
        .and_then(|t| t.split_whitespace().next())
        .unwrap()
        .to_string();
    assert_eq!(token.len(), 32);
    let out = fabrik()
        .args([
            "bench",
            "p2p",
            "--client",
            &addr,
            "--iters",
            "100",
            "--streams",
            "2",
        ])
        .args(["--format", "json", "--verify"])
        .env("FABRIK_TOKEN", &token)
        .output()
        .unwrap();
    let v = support::json_ok(&out);
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["test"], "bw");
    assert_eq!(v["transport"], "tcp");
    assert_eq!(v["streams"], 2);
    let row = &v["results"][0];
    assert_eq!(row["bytes"], 65536);
    assert_eq!(row["iterations"], 200);
    assert!(row["bw_avg_gbps"].as_f64().unwrap() > 0.0);
    assert!(row["msg_rate_mpps"].as_f64().unwrap() > 0.0);
    assert_eq!(v["per_stream"].as_array().unwrap().len(), 2);
    // --once: the server leaves after the session.
    assert!(wait_with_deadline(&mut server, Duration::from_secs(10)).is_some_and(|s| s.success()));
}

#[test]
fn the_table_prints_perftest_columns() {
    let out = fabrik()
        .args([
            "bench", "p2p", "--local", "--test", "lat", "--iters", "200", "-s", "64",
        ])
        .output()
        .unwrap();
    support::assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("t_typical[usec]") && text.contains("99.9% percentile[usec]"));
    let row = text.lines().find(|l| l.starts_with(" 64 ")).unwrap();
    assert_eq!(row.split_whitespace().count(), 9, "{row}");
}

#[test]
fn a_wrong_token_is_a_clear_error_on_both_ends() {
    let (mut server, addr, _) = start_server(&["--token", "right-one"]);
    let out = fabrik()
        .args([
            "bench",
            "p2p",
            "--client",
            &addr,
            "--token",
            "wrong-one",
            "--iters",
            "10",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let client_err = String::from_utf8_lossy(&out.stderr);
    assert!(client_err.contains("token differs"), "{client_err}");
    assert!(client_err.contains(&addr), "{client_err}");
    // The server answers "denied" before it logs the rejection, so the client can be done
    // before the line is written: wait for the line rather than kill the server at once.
    let server_err = stderr_line_containing(&mut server, "rejected control connection");
    server.kill().unwrap();
    server.wait().unwrap();
    assert!(
        server_err.contains("rejected control connection") && server_err.contains("token differs"),
        "{server_err}"
    );
}

/// The first stderr line of a running child that contains `needle` (10 s at most; the lines
/// read so far when it never comes, for the failure message).
fn stderr_line_containing(child: &mut Child, needle: &str) -> String {
    let stderr = child.stderr.take().unwrap();
    let needle = needle.to_string();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut seen = String::new();
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if line.contains(&needle) {
                let _ = tx.send(line);
                return;
            }
            seen.push_str(&line);
            seen.push('\n');
        }
        let _ = tx.send(format!("(never logged; stderr was:)\n{seen}"));
    });
    rx.recv_timeout(Duration::from_secs(10))
        .unwrap_or_else(|_| "(no such line within 10 s)".to_string())
}

#[test]
fn a_server_killed_mid_test_ends_the_client_with_an_error_naming_it() {
    let (mut server, addr, _) = start_server(&["--token", "t"]);
    let mut client = fabrik()
        .args([
            "bench",
            "p2p",
            "--client",
            &addr,
            "--token",
            "t",
            "--duration",
            "60",
        ])
        .args(["--streams", "2", "--timeout", "5"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    server.kill().unwrap();
    server.wait().unwrap();
    let t = Instant::now();
    let status = wait_with_deadline(&mut client, Duration::from_secs(15));
    let Some(status) = status else {
        client.kill().unwrap();
        panic!("the client hung after its server died");
    };
    assert!(t.elapsed() < Duration::from_secs(10));
    assert_eq!(status.code(), Some(2));
    let err = stderr_of(&mut client);
    assert!(err.contains(&format!("server {addr}")), "{err}");
}

#[test]
fn a_client_killed_mid_test_leaves_the_server_serving() {
    let (mut server, addr, _) = start_server(&["--token", "t"]);
    let mut client = fabrik()
        .args([
            "bench",
            "p2p",
            "--client",
            &addr,
            "--token",
            "t",
            "--duration",
            "60",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    client.kill().unwrap();
    client.wait().unwrap();
    let out = fabrik()
        .args([
            "bench", "p2p", "--client", &addr, "--token", "t", "--iters", "50",
        ])
        .output()
        .unwrap();
    support::assert_ok(&out);
    server.kill().unwrap();
    server.wait().unwrap();
    let log = stderr_of(&mut server);
    assert!(
        log.contains("failed"),
        "the dead client went unreported: {log}"
    );
}

#[test]
fn bad_arguments_are_refused() {
    let out = fabrik().args(["bench", "p2p"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = fabrik()
        .args(["bench", "p2p", "--client", "127.0.0.1:1", "--iters", "5"])
        .env_remove("FABRIK_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--token"));
    let out = fabrik()
        .args(["bench", "p2p", "--local", "-s", "12Q"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_stalled_server_is_reported_after_the_timeout_not_waited_on_forever() {
    let (mut server, addr, _) = start_server(&["--token", "t"]);
    let mut client = fabrik()
        .args([
            "bench",
            "p2p",
            "--client",
            &addr,
            "--token",
            "t",
            "--duration",
            "60",
        ])
        .args(["--timeout", "2"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    // Freeze the server: its sockets stay open but nothing is read any more.
    let pid = server.id().to_string();
    assert!(Command::new("kill")
        .args(["-STOP", &pid])
        .status()
        .unwrap()
        .success());
    let status = wait_with_deadline(&mut client, Duration::from_secs(15));
    let _ = Command::new("kill").args(["-CONT", &pid]).status();
    server.kill().unwrap();
    server.wait().unwrap();
    let Some(status) = status else {
        client.kill().unwrap();
        panic!("the client hung on a stalled server");
    };
    assert_eq!(status.code(), Some(2));
    let err = stderr_of(&mut client);
    assert!(
        err.contains(&format!("server {addr}")) && err.contains("stalled"),
        "{err}"
    );
}
