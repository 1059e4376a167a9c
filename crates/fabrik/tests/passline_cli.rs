//! Pass lines end to end: `fabrik parse perftest|nccl-tests` judge real tool output against an
//! expectations file's `[bandwidth]` or, for perftest, 90 % of the link rate (NVIDIA
//! ngc_multinode_perf's line); a verdict per row, `pass`/`fail` in the JSON, exit 1 below it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use assert_cmd::Command;
use serde_json::Value;

mod support;

use support::repo;

fn fixture(p: &str) -> String {
    repo()
        .join("fixtures")
        .join(p)
        .to_string_lossy()
        .into_owned()
}

fn parse_json(args: &[&str]) -> (i32, Value) {
    support::json_of(&[&["parse"], args].concat())
}

fn write_expect(dir: &tempfile::TempDir, body: &str) -> String {
    let p = dir.path().join("cluster.toml");
    std::fs::write(&p, body).unwrap();
    p.to_string_lossy().into_owned()
}

/// fixtures/perftest/10: ib_send_bw -a on a ConnectX-3 at 40 Gb/s (4X QDR), 27.33 Gb/s at 8 MiB.
const QDR_RUN: &str = "perftest/10-ib_send_bw-all-sizes-gbits-comment-in-header.txt";

#[test]
fn perftest_below_90_percent_of_the_link_fails_each_large_row() {
    let (code, v) = parse_json(&["perftest", &fixture(QDR_RUN), "--link-gbps", "40"]);
    assert_eq!(code, 1);
    let j = &v["pass_line"];
    assert_eq!(j["verdict"], "fail");
    assert_eq!(j["line"]["value"], 36.0);
    assert_eq!(j["line"]["unit"], "Gb/s");
    assert!(j["line"]["basis"]
        .as_str()
        .unwrap()
        .contains("ngc_multinode_perf"));
    let rows = j["rows"].as_array().unwrap();
    // 64 KiB .. 8 MiB: the sizes ngc_multinode_perf's default message size and up.
    assert_eq!(rows.len(), 8);
    assert_eq!(rows[0]["bytes"], 65536);
    assert!(rows.iter().all(|r| r["verdict"] == "fail"));
    assert_eq!(rows[7]["value"], 27.33);

    // Without a link rate or an expectations file nothing is judged, and the exit code is the
    // findings' alone.
    let (code, v) = parse_json(&["perftest", &fixture(QDR_RUN)]);
    assert!(v.get("pass_line").is_none());
    assert_eq!(code, 0);
}

#[test]
fn the_expectations_line_wins_and_a_bidirectional_run_doubles_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_expect(&dir, "[bandwidth]\np2p_gbps_per_nic = 27\n");
    let (code, v) = parse_json(&[
        "perftest",
        &fixture(QDR_RUN),
        "--link-gbps",
        "40",
        "--expect",
        &file,
    ]);
    assert_eq!(v["pass_line"]["verdict"], "pass", "{v:#}");
    assert_eq!(v["pass_line"]["line"]["value"], 27.0);
    assert_eq!(code, 0);

    // fixtures/perftest/14: ib_send_bw -b (bidirectional), 95.66 Gb/s both directions at 4 KiB:
    // below 64 KiB, so nothing is judged.
    let (_, v) = parse_json(&[
        "perftest",
        &fixture("perftest/14-ib_send_bw-bidir-duration-mbsec.txt"),
        "--link-gbps",
        "100",
    ]);
    assert!(v.get("pass_line").is_none(), "{v:#}");
    // fixtures/perftest/13: bidirectional write, 697.97 Gb/s at 8 MiB; against a 400 Gb/s link
    // the line is 2 x 0.9 x 400 = 720.
    let (code, v) = parse_json(&[
        "perftest",
        &fixture("perftest/13-ib_write_bw-bidir-rocm-ionic-4qps.txt"),
        "--link-gbps",
        "400",
    ]);
    assert_eq!(v["pass_line"]["line"]["value"], 720.0);
    assert_eq!(v["pass_line"]["verdict"], "fail");
    assert_eq!(code, 1);
}

#[test]
fn nccl_tests_all_reduce_is_judged_only_against_an_expectations_file() {
    // fixtures/nccl-tests/12: rccl-tests all_reduce on 8 MI300X, two runs, ~319 GB/s at 16 GiB.
    let run = fixture("nccl-tests/12-rccl-tests-mi300x-two-runs-rccl-version-block.txt");
    let (code, v) = parse_json(&["nccl-tests", &run]);
    assert!(v
        .as_array()
        .unwrap()
        .iter()
        .all(|d| d.get("pass_line").is_none()));
    assert_eq!(code, 0);
    // AzNHC's ND H100 v5 line (460 GB/s) fails it; a 300 GB/s line passes it.
    let nd = repo().join("deploy/expect/azure-nd-h100-v5.toml");
    let (code, v) = parse_json(&["nccl-tests", &run, "--expect", &nd.to_string_lossy()]);
    assert_eq!(code, 1);
    for d in v.as_array().unwrap() {
        assert_eq!(d["pass_line"]["verdict"], "fail");
        assert_eq!(d["pass_line"]["line"]["unit"], "GB/s");
        let last = d["pass_line"]["rows"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone();
        assert_eq!(last["bytes"], 17179869184u64);
    }
    let dir = tempfile::tempdir().unwrap();
    let file = write_expect(&dir, "[bandwidth]\nall_reduce_busbw_gbs = 300\n");
    let (code, v) = parse_json(&["nccl-tests", &run, "--expect", &file]);
    assert_eq!(code, 0);
    assert!(v
        .as_array()
        .unwrap()
        .iter()
        .all(|d| d["pass_line"]["verdict"] == "pass"));

    // The table says it too.
    let out = Command::cargo_bin("fabrik")
        .unwrap()
        .args([
            "parse",
            "nccl-tests",
            &run,
            "--expect",
            &nd.to_string_lossy(),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(
            "pass line 460.0 GB/s (expectations: bandwidth.all_reduce_busbw_gbs = 460): FAIL"
        ),
        "{text}"
    );
}

/// `bench p2p` over loopback: a line far below what any machine moves passes, one far above
/// fails with exit 1; the expectations file's line is used when given.
#[test]
fn bench_p2p_judges_its_own_run() {
    let run = |extra: &[&str]| {
        let out = Command::cargo_bin("fabrik")
            .unwrap()
            .args([
                "bench", "p2p", "--local", "-s", "1M", "-n", "100", "--format", "json",
            ])
            .args(extra)
            .timeout(std::time::Duration::from_secs(120))
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
        (out.status.code().unwrap(), v)
    };
    let (code, v) = run(&["--link-gbps", "0.01"]);
    assert_eq!(v["pass_line"]["verdict"], "pass", "{v:#}");
    assert_eq!(v["pass_line"]["rows"][0]["bytes"], 1048576);
    assert_eq!(code, 0);
    let (code, v) = run(&["--link-gbps", "1000000"]);
    assert_eq!(v["pass_line"]["verdict"], "fail");
    assert_eq!(v["pass_line"]["line"]["value"], 900000.0);
    assert_eq!(code, 1);
    let dir = tempfile::tempdir().unwrap();
    let file = write_expect(&dir, "[bandwidth]\np2p_gbps_per_nic = 6000\n");
    let (code, v) = run(&["--expect", &file, "--link-gbps", "0.01"]);
    assert!(v["pass_line"]["line"]["basis"]
        .as_str()
        .unwrap()
        .starts_with("expectations"));
    assert_eq!(code, 1);
    // No line known (loopback has no speed, nothing given): no verdict, exit 0.
    let (code, v) = run(&[]);
    assert!(v.get("pass_line").is_none());
    assert_eq!(code, 0);
}

/// `bench collective all_reduce` with 2 local ranks: judged at its largest size against the
/// expectations' bus bandwidth, exit 1 below it; no file, no verdict.
#[test]
fn bench_collective_all_reduce_is_judged_against_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let run = |extra: &[&str]| {
        let out = Command::cargo_bin("fabrik")
            .unwrap()
            .args([
                "bench",
                "collective",
                "all_reduce",
                "--local",
                "2",
                "-b",
                "1M",
                "-e",
                "4M",
            ])
            .args(["-n", "5", "-w", "1", "--format", "json"])
            .args(extra)
            .timeout(std::time::Duration::from_secs(180))
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
        (out.status.code().unwrap(), v)
    };
    let high = write_expect(&dir, "[bandwidth]\nall_reduce_busbw_gbs = 9000\n");
    let (code, v) = run(&["--expect", &high]);
    assert_eq!(v["pass_line"]["verdict"], "fail", "{v:#}");
    let rows = v["pass_line"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["bytes"], 4194304);
    assert_eq!(code, 1);
    let low = dir.path().join("low.toml");
    std::fs::write(&low, "[bandwidth]\nall_reduce_busbw_gbs = 0.000001\n").unwrap();
    let (code, v) = run(&["--expect", &low.to_string_lossy()]);
    assert_eq!(v["pass_line"]["verdict"], "pass", "{v:#}");
    assert_eq!(code, 0);
    let (code, v) = run(&[]);
    assert!(v.get("pass_line").is_none());
    assert_eq!(code, 0);
}

/// `cluster matrix` with 3 local ranks: every link judged against the line.
#[test]
fn cluster_matrix_judges_every_link() {
    let run = |extra: &[&str]| {
        let out = Command::cargo_bin("fabrik")
            .unwrap()
            .args([
                "cluster", "matrix", "--local", "3", "--size", "64K", "--iters", "1",
            ])
            .args(["--format", "json"])
            .args(extra)
            .timeout(std::time::Duration::from_secs(180))
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
        (out.status.code().unwrap(), v)
    };
    let (code, v) = run(&["--link-gbps", "1000000"]);
    assert_eq!(v["pass_line"]["verdict"], "fail", "{v:#}");
    let links = v["pass_line"]["links"].as_array().unwrap();
    assert_eq!(links.len(), 6, "3 ranks, both directions of 3 pairs");
    assert!(links.iter().all(|l| l["verdict"] == "fail"));
    assert_eq!(code, 1);
    // Loopback links beat a line of 0.00009 Gb/s; the exit code also answers to the slow-link
    // analysis, which loopback noise can trip, so only the verdict is asserted.
    let (_, v) = run(&["--link-gbps", "0.0001"]);
    assert_eq!(v["pass_line"]["verdict"], "pass", "{v:#}");
    let (_, v) = run(&[]);
    assert!(v.get("pass_line").is_none());
}
