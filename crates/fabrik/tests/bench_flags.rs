//! `bench p2p` refuses RDMA-only options when the test would run over TCP (they would measure
//! host memory over TCP and exit 0), and `--transport auto` says why it chose TCP.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use assert_cmd::Command;
use serde_json::Value;

fn p2p(args: &[&str]) -> std::process::Output {
    Command::cargo_bin("fabrik")
        .unwrap()
        .args(["bench", "p2p", "--local", "-s", "4K", "-n", "20"])
        .args(args)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap()
}

#[test]
fn rdma_options_without_the_rdma_transport_are_refused() {
    let cases: [(&[&str], &str); 6] = [
        (&["--mem", "cuda"], "--mem"),
        (&["--op", "read"], "--op"),
        (&["-d", "mlx5_0"], "-d/--device"),
        (&["-q", "4"], "-q/--qps"),
        (&["-x", "3"], "-x/--gid-index"),
        (
            &["--transport", "tcp", "--mem", "managed", "-q", "2"],
            "-q/--qps, --mem are",
        ),
    ];
    for (args, named) in cases {
        let out = p2p(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(named), "{args:?}: {stderr}");
        assert!(
            stderr.contains("add --transport rdma"),
            "{args:?}: {stderr}"
        );
        assert!(out.stdout.is_empty(), "{args:?}: nothing measured");
    }
}

#[test]
fn transport_auto_says_why_it_chose_tcp() {
    let out = p2p(&["--transport", "auto", "--format", "json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    if v["transport"] != "tcp" {
        fabrik_testbed::not_applicable(
            "auto's TCP note",
            "this machine has a usable RDMA device, and auto chose RDMA",
        );
        return;
    }
    let notes = v["notes"].as_array().unwrap();
    assert!(
        notes.iter().any(|n| n
            .as_str()
            .unwrap()
            .starts_with("--transport auto chose TCP: ")),
        "{notes:?}"
    );
    let out = p2p(&["--transport", "auto"]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.starts_with("# --transport auto chose TCP: "),
        "{table}"
    );
    // Refused under auto too, naming auto's choice.
    let out = p2p(&["--transport", "auto", "--mem", "cuda"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--transport auto chose TCP"));
}
