//! One vocabulary across commands: `--format text` (alias `table`) and `--format json`
//! everywhere, errors that say their cause once, no colour codes into a pipe, counts with the
//! right noun, and `top` that quits on `q`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use assert_cmd::Command;

fn fixture(p: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(p)
        .display()
        .to_string()
}

fn fabrik(args: &[&str]) -> std::process::Output {
    Command::cargo_bin("fabrik")
        .unwrap()
        .args(args)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap()
}

#[test]
fn text_and_table_and_json_are_accepted_by_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let node = fixture("nodes/roce-dualport");
    let before = fixture("counters/rxe/before");
    let after = fixture("counters/rxe/after");
    let log = fixture("nccl-logs/18-nccl-two-hosts-ib-gdrdma-p2p-ipc-read.log");
    let nt = fixture("nccl-tests/06-two-gpus-destroy-lines-avg.txt");
    let pt = fixture("perftest/01-ib_write_bw-post-list-gbits-roce.txt");
    for word in ["text", "table", "json"] {
        let snap = dir.path().join(format!("snap-{word}"));
        let snap = snap.to_str().unwrap();
        let commands: Vec<Vec<&str>> = vec![
            vec!["doctor", "--root", &node],
            vec!["inventory", "--root", &node],
            vec!["rules"],
            vec!["explain", "FAB-PORT-001"],
            vec!["diff", &before, &after],
            vec!["top", "--once", "--interval", "10ms", "--root", &before],
            vec!["snapshot", "-o", snap, "--root", &node],
            vec!["logs", &log],
            vec!["parse", "nccl-tests", &nt],
            vec!["parse", "perftest", &pt],
            vec!["bench", "p2p", "--local", "-s", "1K", "-n", "10"],
            vec![
                "launch",
                "torchrun",
                "--profile",
                "generic-ib",
                "--command",
                "t.py",
                "--hosts",
                "a,b",
                "--nodes",
                "2",
            ],
            vec![
                "bench",
                "collective",
                "all_reduce",
                "--local",
                "2",
                "-b",
                "8",
                "-e",
                "8",
            ],
            vec![
                "cluster", "matrix", "--local", "2", "--size", "64K", "--iters", "1",
            ],
        ];
        for mut args in commands {
            args.extend(["--format", word]);
            let out = fabrik(&args);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                out.status.code().is_some_and(|c| c < 2),
                "{args:?}: {stderr}"
            );
            if word == "json" {
                let first = String::from_utf8_lossy(&out.stdout);
                let first = first.lines().next().unwrap_or_default();
                assert!(first.starts_with('{'), "{args:?}: {first}");
            }
        }
    }
}

#[test]
fn explain_has_json() {
    let out = fabrik(&["explain", "FAB-PORT-001", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["rule"]["id"], "FAB-PORT-001");
    assert!(v["page"].as_str().unwrap().contains("FAB-PORT-001"));
}

#[test]
fn an_error_says_its_cause_once() {
    let cases: [&[&str]; 3] = [
        &["parse", "nccl-tests", "/nonexistent/run.txt"],
        &["parse", "perftest", "/nonexistent/run.txt"],
        &["logs", "/nonexistent/run.log", "--format", "json"],
    ];
    for args in cases {
        let out = fabrik(args);
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            stderr.matches("(os error 2)").count(),
            1,
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn no_colour_codes_into_a_pipe() {
    // -vv logs the bench server's INFO lines on stderr, here a pipe.
    let out = fabrik(&["-vv", "bench", "p2p", "--local", "-s", "1K", "-n", "10"]);
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("INFO"), "{stderr}");
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
}

#[test]
fn counts_take_the_right_noun() {
    // Two ranks meet in one round.
    let out = fabrik(&[
        "cluster", "matrix", "--local", "2", "--size", "64K", "--iters", "1",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("# pair matrix: 2 ranks, 1 round,"),
        "{stdout}"
    );
}

#[test]
fn top_quits_on_q() {
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        fabrik_testbed::skip(
            "top in a terminal",
            "no script(1) to give top a terminal (util-linux)",
        );
        return;
    }
    let bin = assert_cmd::cargo::cargo_bin("fabrik");
    let cmd = format!(
        "{} top --interval 100ms --root {}",
        bin.display(),
        fixture("counters/rxe/before")
    );
    let mut child = std::process::Command::new("script")
        .args(["-qfec", &cmd, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    stdin.write_all(b"q").unwrap();
    stdin.flush().unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if start.elapsed() > Duration::from_secs(15) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    drop(stdin);
    let status = status.expect("top did not quit on q");
    assert!(status.success());
}

#[test]
fn cluster_doctor_prints_findings_like_doctor_and_a_shared_one_once() {
    let out = fabrik(&[
        "cluster",
        "doctor",
        "--local",
        "3",
        "--root",
        &fixture("doctor/nodes/port-001-init"),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Three ranks of one node share the INIT port: one finding naming the three.
    assert_eq!(stdout.matches("FAB-PORT-001").count(), 1, "{stdout}");
    assert!(
        stdout.contains("mlx5_1:1 on rank0, rank1, rank2"),
        "{stdout}"
    );
    assert!(stdout.contains("/sys/class/infiniband/mlx5_1/ports/1/state = 2: INIT"));
    assert!(stdout.contains("fix: "));
    assert!(stdout.contains("verdict: "));
}
