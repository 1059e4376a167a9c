//! `fabrik logs` and `fabrik parse` end to end: JSON reads back into the model types.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use fabrik_model::{CollectiveReport, P2pReport};

mod support;

use support::{fabrik, fixture};

#[test]
fn parse_nccl_tests_json_round_trips() {
    let out = fabrik()
        .args([
            "parse",
            "nccl-tests",
            "--format",
            "json",
            "--op",
            "all_reduce",
        ])
        .arg(fixture(
            "nccl-tests",
            "02-nccl-2.6.4-era-no-redop-error-float.txt",
        ))
        .output()
        .unwrap();
    assert!(out.status.success());
    let report: CollectiveReport = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report.op, "all_reduce");
    assert_eq!(report.rows.len(), 12);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["findings"].as_array().unwrap().is_empty());
    assert_eq!(v["schema_version"], 1);
}

#[test]
fn parse_perftest_json_round_trips() {
    let out = fabrik()
        .args(["parse", "perftest", "--format", "json"])
        .arg(fixture(
            "perftest",
            "01-ib_write_bw-post-list-gbits-roce.txt",
        ))
        .output()
        .unwrap();
    assert!(out.status.success());
    let report: P2pReport = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report.device.as_deref(), Some("ib0"));
}

#[test]
fn logs_json_summary_and_exit_code() {
    let out = fabrik()
        .args(["logs", "--format", "json"])
        .arg(fixture(
            "nccl-logs",
            "20-nccl-ib-plugin-completion-error-12.log",
        ))
        .output()
        .unwrap();
    // Error findings exit 1.
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["summary"]["errors"], 1);
    let out = fabrik()
        .args(["logs"])
        .arg(fixture("nccl-logs", "05-nccl-aks-ib-gdrdma-cumem.log"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("transport IB"), "{text}");
}

#[test]
fn logs_reads_stdin() {
    // gzip input is covered in fabrik-parse's own tests.
    let raw = std::fs::read(fixture("nccl-logs", "21-nccl-roce-ro-gdr-disabled.log")).unwrap();
    let out = fabrik()
        .args(["logs", "--format", "json", "-"])
        .write_stdin(raw)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["summary"]["transport"], "IB");
    assert_eq!(v["summary"]["gdr"], false);
}

#[test]
fn logs_job_level_errors_and_silence() {
    // Sockets on `lo` across two hosts: a job-level error, so exit 1.
    let lo = "n1:1:1 [0] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0>\n\
              n1:1:1 [0] NCCL INFO Using network Socket\n\
              n2:2:2 [0] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0>\n\
              n2:2:2 [0] NCCL INFO Using network Socket\n";
    let out = fabrik()
        .args(["logs", "--format", "json", "-"])
        .write_stdin(lo)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["findings"][0]["rule"], "FAB-NCCL-SOCKET-LOOPBACK");
    // No NCCL lines: a hint, not an error.
    let out = fabrik()
        .args(["logs", "-"])
        .write_stdin("epoch 1 loss 0.5\n")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("FAB-NCCL-NO-LINES"), "{text}");
    assert!(text.contains("NCCL_DEBUG=INFO"), "{text}");
}

#[test]
fn missing_file_is_a_clear_error() {
    let out = fabrik()
        .args(["parse", "perftest", "/nonexistent/file"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("/nonexistent/file"), "{err}");
}

#[test]
fn parse_nccl_tests_takes_the_link_rate_from_an_inventory_root() {
    // ib-ndr-8gpu has 400 Gb/s NDR ports: the line is 90 % of one, 45 GB/s of bus bandwidth.
    // The Mooncake run reaches 300.51 GB/s at its largest complete size (32 MiB): above it; but
    // its last row is cut, no `# Avg bus bandwidth` follows, so it is not a complete result.
    let out = fabrik()
        .args(["parse", "nccl-tests", "--format", "json", "--root"])
        .arg(fixture("nodes", "ib-ndr-8gpu"))
        .arg(fixture("nccl-tests", "09-mooncake-all-reduce-rows.txt"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rules: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    assert_eq!(rules, ["FAB-BENCH-INCOMPLETE"], "{v:#}");
    assert_eq!(v["pass_line"]["verdict"], "pass", "{v:#}");
    assert_eq!(v["pass_line"]["line"]["value"], 45.0);
    // The old nccl-tests run of fixture 02 plateaus near 21 GB/s: below the line.
    let out = fabrik()
        .args([
            "parse",
            "nccl-tests",
            "--format",
            "json",
            "--op",
            "all_reduce",
            "--root",
        ])
        .arg(fixture("nodes", "ib-ndr-8gpu"))
        .arg(fixture(
            "nccl-tests",
            "02-nccl-2.6.4-era-no-redop-error-float.txt",
        ))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = v["findings"].as_array().unwrap();
    assert!(
        f.iter().any(|f| f["rule"] == "FAB-BENCH-LOW-BUSBW"
            && f["severity"] == "error"
            && f["message"].as_str().unwrap().contains("400 Gb/s link")),
        "{f:?}"
    );
}

#[test]
fn parse_root_and_link_gbps_conflict() {
    let out = fabrik()
        .args(["parse", "perftest", "--link-gbps", "100", "--root"])
        .arg(fixture("nodes", "ib-ndr-8gpu"))
        .arg(fixture(
            "perftest",
            "10-ib_send_bw-all-sizes-gbits-comment-in-header.txt",
        ))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn parse_ras_streams_monitor_events_from_stdin_then_the_table() {
    let text = std::fs::read(fixture(
        "nccl-logs",
        "ras-monitor/01-nccl-ras-monitor-peer-dead-text.txt",
    ))
    .unwrap();
    let out = fabrik()
        .args(["parse", "ras", "-"])
        .write_stdin(text)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // A dead peer is an error finding: exit 1.
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let first = stdout.lines().next().unwrap();
    assert!(
        first.starts_with("[2025-12-19 13:07:07] PEER_DEAD"),
        "{stdout}"
    );
    assert!(first.contains("(dead 1, unreachable 0)"), "{first}");
    assert!(stdout.contains("RAS monitor: "), "{stdout}");
    assert!(stdout.contains("FAB-NCCL-RAS-DEAD"), "{stdout}");
}

#[test]
fn parse_ras_json_lists_the_troubled_peers() {
    let out = fabrik()
        .args(["parse", "ras", "--format", "json"])
        .arg(fixture(
            "nccl-logs",
            "ras-monitor/02-nccl-ras-monitor-peer-dead-json.txt",
        ))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["source"], "ncclras");
    assert!(!v["troubled_peers"].as_array().unwrap().is_empty());
}

#[test]
fn parse_inspector_reads_a_dump_directory() {
    let out = fabrik()
        .args(["parse", "inspector"])
        .arg(fixture("nccl-logs", "inspector"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("NCCL Inspector: "), "{stdout}");
    assert!(out.status.code().is_some_and(|c| c <= 1));
    let none = fabrik()
        .args(["parse", "inspector"])
        .arg(fixture("nccl-logs", "ras-monitor"))
        .output()
        .unwrap();
    // Files that hold no Inspector record: a tool failure, said so.
    assert_eq!(none.status.code(), Some(2));
}
