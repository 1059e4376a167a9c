//! `fabrik ras` against a loopback peer that answers with the bytes a live NCCL 2.28.9 job sent
//! (fixtures/nccl-logs/ras-live, captured on an H200 by testbed/gpu/ras-live.sh): the handshake,
//! the streamed STATUS report, and the refusal an older job gives MONITOR.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::thread::JoinHandle;

mod support;

use support::{fabrik, fixture};

/// Serves one client: answers `CLIENT PROTOCOL 2` as NCCL does, then answers the command line
/// that follows with `answer` and closes. Returns the port and the lines the client sent.
fn job(answer: Vec<u8>) -> (u16, JoinHandle<Vec<String>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let t = std::thread::spawn(move || {
        let (sock, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(sock.try_clone().unwrap());
        let mut w = sock;
        let mut got = vec![];
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap() == 0 {
                break;
            }
            got.push(line.trim_end().to_string());
            if line.starts_with("CLIENT PROTOCOL") {
                w.write_all(b"SERVER PROTOCOL 2\n").unwrap();
            } else {
                w.write_all(&answer).unwrap();
                break;
            }
        }
        got
    });
    (port, t)
}

#[test]
fn status_of_a_live_job_is_read_from_its_ras_port() {
    let report = std::fs::read(fixture(
        "nccl-logs",
        "ras-live/01-nccl-2.28.9-h200-one-rank-status.txt",
    ))
    .unwrap();
    let (port, peer) = job(report);
    let out = fabrik()
        .args(["ras", &format!("127.0.0.1:{port}"), "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ras = &v["ras"];
    assert_eq!(ras["nccl_version"], "2.28.9");
    assert_eq!(
        (&ras["nodes"], &ras["processes"], &ras["gpus"]),
        (&1.into(), &1.into(), &1.into())
    );
    assert_eq!(ras["groups"][0]["status"], "RUNNING");
    assert_eq!(peer.join().unwrap(), ["CLIENT PROTOCOL 2", "STATUS"]);
}

#[test]
fn monitor_refused_by_an_older_job_says_which_nccl_has_it() {
    let (port, peer) = job(b"ERROR: Unknown command MONITOR all\n".to_vec());
    let out = fabrik()
        .args([
            "ras",
            &format!("127.0.0.1:{port}"),
            "--ask",
            "monitor",
            "--duration",
            "2",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no RAS monitor mode") && err.contains("2.29"),
        "{err}"
    );
    assert_eq!(peer.join().unwrap(), ["CLIENT PROTOCOL 2", "MONITOR all"]);
}

#[test]
fn a_closed_port_is_a_tool_failure_that_names_it() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let out = fabrik()
        .args([
            "ras",
            &format!("127.0.0.1:{port}"),
            "--connect-timeout",
            "2",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&port.to_string()));
}
