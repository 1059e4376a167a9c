//! `fabrik parse` on failed perftest runs and on pasted command outputs, end to end: exit codes,
//! JSON shape, stdin.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use serde_json::Value;

mod support;

use support::{fabrik, fixture};

fn json(args: &[&str], file: PathBuf) -> (Option<i32>, Value) {
    let out = fabrik()
        .args(args)
        .args(["--format", "json"])
        .arg(file)
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code(), v)
}

#[test]
fn a_failed_perftest_run_is_an_error_finding_not_a_tool_failure() {
    let (code, v) = json(
        &["parse", "perftest"],
        fixture("perftest", "17-failed-modify-qp-rtr-grh-required.txt"),
    );
    assert_eq!(code, Some(1));
    assert_eq!(v["failed"], true);
    assert_eq!(v["findings"][0]["rule"], "FAB-BENCH-PT-QP");
    assert_eq!(v["failures"][1]["count"], 2);
}

#[test]
fn text_with_no_report_and_no_failure_is_a_tool_failure() {
    let out = fabrik()
        .args(["parse", "perftest", "-"])
        .write_stdin("hello\nworld\n")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no perftest report and no perftest failure")
    );
}

#[test]
fn topo_from_stdin_gives_nearest_nics_and_the_hca_list() {
    let text = std::fs::read_to_string(fixture(
        "commands",
        "topo/03-h200-dash-rule-legend-out-of-order-bond.txt",
    ))
    .unwrap();
    let out = fabrik()
        .args(["parse", "topo", "-", "--format", "json"])
        .write_stdin(text)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["tool"], "topo");
    assert_eq!(v["facts"]["nearest"][1]["nics"][0], "mlx5_3");
    assert_eq!(v["facts"]["nccl_ib_hca"].as_array().unwrap().len(), 8);
}

#[test]
fn a_down_port_in_ibstat_exits_1_and_show_gids_alias_works() {
    let (code, v) = json(
        &["parse", "ibstat"],
        fixture(
            "commands",
            "ibstat/03-cx7-down-polling-rate10-redacted-guids.txt",
        ),
    );
    assert_eq!(code, Some(1));
    assert_eq!(v["findings"][0]["rule"], "FAB-PORT-001");
    let (code, v) = json(
        &["parse", "show_gids"],
        fixture("commands", "show_gids/02-rdma0-one-port-dollar-prompt.txt"),
    );
    assert_eq!(code, Some(0));
    assert_eq!(v["facts"]["roce_v2_ipv4"][0]["index"], 3);
}

#[test]
fn text_that_is_not_the_named_tool_exits_2_saying_what_was_expected() {
    for tool in ["mstlink", "nvlink", "ibdiagnet", "lspci"] {
        let out = fabrik()
            .args(["parse", tool, "-"])
            .write_stdin("hello\nworld\n")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{tool}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("output found: expected"), "{tool}: {err}");
    }
}

#[test]
fn new_tools_and_their_aliases_end_to_end() {
    let (code, v) = json(
        &["parse", "mlxlink"],
        fixture(
            "commands",
            "mstlink/03-cx4-riser-forum-blank-line-after-every-line-counters-then-eye.txt",
        ),
    );
    assert_eq!(code, Some(0));
    assert_eq!(v["tool"], "mstlink");
    let (code, v) = json(
        &["parse", "dmesg"],
        fixture("commands", "dmesg/01-desktop-xid-32-twice-forum-fence.txt"),
    );
    // A warning is reported, not failed on.
    assert_eq!(code, Some(0));
    assert_eq!(v["findings"][0]["rule"], "FAB-KLOG-001");
    let (code, v) = json(
        &["parse", "nvlink"],
        fixture(
            "commands",
            "nvlink/01-v100-sxm2-two-inactive-links-cut-head-fenced.txt",
        ),
    );
    assert_eq!(code, Some(1));
    assert_eq!(v["findings"][0]["rule"], "FAB-LINK-008");
}
