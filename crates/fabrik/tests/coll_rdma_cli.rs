//! `bench collective --backend rdma|auto` and `cluster matrix --transport rdma` where there is
//! no usable RDMA (this machine, CI outside the Soft-RoCE VM): a clear error on every rank, no
//! panic, no hang; `auto` falls back to TCP. The RDMA data path itself is checked inside the VM
//! (testbed/softroce/vm-tests-collective.sh).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::{Duration, Instant};

use assert_cmd::Command;

fn fabrik() -> Command {
    let mut c = Command::cargo_bin("fabrik").unwrap();
    c.env("FABRIK_TOKEN", "coll-rdma-test")
        .timeout(Duration::from_secs(120));
    c
}

/// Whether this machine has RDMA that fabrik can use (then the no-RDMA tests do not apply).
fn rdma_here() -> bool {
    fabrik_verbs::Verbs::load()
        .ok()
        .map(std::sync::Arc::new)
        .and_then(|v| fabrik_verbs::usable_device(&v))
        .is_some()
}

fn assert_clear_rdma_error(stderr: &str) {
    assert!(
        stderr.contains("cannot load libibverbs.so.1")
            || stderr.contains("no RDMA device")
            || stderr.contains("RDMA device `fabrik_no_dev` not found"),
        "{stderr}"
    );
    assert!(
        stderr.contains("rank "),
        "the error names no rank: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn collective_over_rdma_without_rdma_fails_clearly_on_every_rank() {
    let start = Instant::now();
    let out = fabrik()
        .args(["bench", "collective", "all_reduce", "--backend", "rdma"])
        .args([
            "--device",
            "fabrik_no_dev",
            "--local",
            "2",
            "-b",
            "1K",
            "-e",
            "1K",
        ])
        .args(["-n", "1", "-w", "0", "--timeout", "20"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert_clear_rdma_error(&stderr);
    assert!(start.elapsed() < Duration::from_secs(60), "{stderr}");
}

#[test]
fn matrix_over_rdma_without_rdma_fails_clearly() {
    let out = fabrik()
        .args(["cluster", "matrix", "--transport", "rdma", "--local", "2"])
        .args([
            "--device",
            "fabrik_no_dev",
            "--size",
            "4K",
            "--timeout",
            "20",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert_clear_rdma_error(&stderr);
}

#[test]
fn auto_without_rdma_runs_over_tcp() {
    if rdma_here() {
        fabrik_testbed::not_applicable(
            "auto falling back to TCP",
            "RDMA is usable here, so auto picks it",
        );
        return;
    }
    let out = fabrik()
        .args(["bench", "collective", "all_gather", "--backend", "auto"])
        .args(["--local", "2", "-b", "1K", "-e", "4K", "-n", "1", "-w", "0"])
        .args(["-c", "1", "--format", "json"])
        .output()
        .unwrap();
    let v = support::json_ok(&out);
    assert_eq!(v["backend"], "tcp");
    assert_eq!(v["rows"].as_array().unwrap().len(), 3);
}

#[test]
fn unknown_backend_and_transport_are_refused() {
    let out = fabrik()
        .args([
            "bench",
            "collective",
            "all_reduce",
            "--backend",
            "infiniband",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("unknown --backend \"infiniband\" (tcp, rdma, auto or nccl)"),
        "{stderr}"
    );
    let out = fabrik()
        .args(["cluster", "matrix", "--transport", "ucx"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("unknown --transport \"ucx\""), "{stderr}");
}

#[test]
fn a_zero_chunk_is_refused_not_taken_for_the_default() {
    let out = fabrik()
        .args(["bench", "collective", "all_reduce", "--chunk-size", "0"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--chunk-size must be at least 1 byte"),
        "{stderr}"
    );
}
