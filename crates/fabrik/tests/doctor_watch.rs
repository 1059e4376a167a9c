//! `fabrik doctor --watch`: counter findings from two live samples of a root whose counters a
//! test thread moves during the interval (a copy of fixtures/counters/mlx5-ib/before, whose
//! mlx5_1 link keeps flapping and collecting symbol errors).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use assert_cmd::Command;
use serde_json::Value;
use support::copy_tree;

fn pair() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/counters/mlx5-ib")
}

/// Raises mlx5_1:1's `link_downed` and `symbol_error` every 50 ms until stopped, so any two
/// samples far enough apart see them grow, however late the doctor starts on a busy machine.
fn keep_flapping(root: &Path) -> (Arc<AtomicBool>, std::thread::JoinHandle<()>) {
    let stop = Arc::new(AtomicBool::new(false));
    let counters = root.join("sys/class/infiniband/mlx5_1/ports/1/counters");
    let staging = root.join("staging");
    let flag = stop.clone();
    // A sysfs counter reads whole; a plain rewrite could be read between its truncate and its
    // write (an empty counter, no growth seen), so each value is written aside and renamed in.
    let set = move |name: &str, value: u64| {
        std::fs::write(&staging, format!("{value}\n")).unwrap();
        std::fs::rename(&staging, counters.join(name)).unwrap();
    };
    // The first raise happens before this returns, so the doctor's first sample already sees
    // it however late the thread is first scheduled.
    set("link_downed", 3);
    set("symbol_error", 1201);
    let handle = std::thread::spawn(move || {
        let mut n = 1u64;
        while !flag.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(50));
            n += 1;
            set("link_downed", 2 + n);
            set("symbol_error", 1200 + n);
        }
    });
    (stop, handle)
}

fn doctor(args: &[&str]) -> (i32, Value) {
    support::json_of(&[&["doctor"], args].concat())
}

fn finding<'a>(report: &'a Value, rule: &str, subject: &str) -> Option<&'a Value> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == rule && f["subject"] == subject)
}

#[test]
fn watch_adds_counter_findings_that_move_during_the_interval() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("node");
    copy_tree(&pair().join("before"), &root);
    let r = root.to_string_lossy().into_owned();

    // Nothing moves: only mthca0's 32-bit counters stuck at their maximum are reported
    // (saturated), nothing grows, exit 0.
    let (code, still) = doctor(&["--root", &r, "--watch", "300ms"]);
    assert_eq!(code, 0, "{still}");
    let counter_rules: Vec<(&str, &str)> = still["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"].as_str().unwrap().starts_with("FAB-CNT-1"))
        .map(|f| (f["rule"].as_str().unwrap(), f["subject"].as_str().unwrap()))
        .collect();
    assert_eq!(counter_rules, vec![("FAB-CNT-121", "mthca0:1")], "{still}");

    // A thread moves the counters while the doctor waits between its two samples.
    let (stop, writer) = keep_flapping(&root);
    let (code, report) = doctor(&["--root", &r, "--watch", "1s"]);
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    assert_eq!(code, 1, "link_downed grew: an error finding: {report}");
    assert!(report["summary"]["errors"].as_u64().unwrap() >= 1);
    let flap = finding(&report, "FAB-CNT-102", "mlx5_1:1").expect("FAB-CNT-102");
    assert_eq!(flap["severity"], "error");
    let ev = &flap["evidence"][0];
    assert_eq!(
        ev["path"],
        "/sys/class/infiniband/mlx5_1/ports/1/counters/link_downed"
    );
    let value = ev["value"].as_str().unwrap();
    // `before N, after M, interval S s (+D, R/s)`
    let nums: Vec<f64> = value
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter_map(|w| w.parse().ok())
        .collect();
    assert!(value.starts_with("before "), "{value}");
    assert!(nums[0] > 2.0 && nums[1] > nums[0], "{value}");
    assert!(nums[2] >= 1.0, "the interval: {value}");
    assert!(value.contains("interval "), "{value}");
    assert!(finding(&report, "FAB-CNT-101", "mlx5_1:1").is_some());
    // The doctor's static rules are still there beside the counter rules.
    assert!(finding(&report, "FAB-CTR-001", "mlx5_1:1").is_some());
}

#[test]
fn watch_prefixes_subjects_with_the_node_when_several_roots() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    copy_tree(&pair().join("before"), &a);
    copy_tree(&pair().join("before"), &b);
    let (stop, writer) = keep_flapping(&b);
    let (ra, rb) = (
        a.to_string_lossy().into_owned(),
        b.to_string_lossy().into_owned(),
    );
    let (code, report) = doctor(&["--root", &ra, "--root", &rb, "--watch", "1s"]);
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    assert_eq!(code, 1, "{report}");
    let names: Vec<&str> = report["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    let flapped: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "FAB-CNT-102")
        .map(|f| f["subject"].as_str().unwrap())
        .collect();
    assert_eq!(flapped, vec![format!("{}/mlx5_1:1", names[1])], "{report}");
}

#[test]
fn watch_rejects_a_bad_duration() {
    let out = Command::cargo_bin("fabrik")
        .unwrap()
        .args(["doctor", "--root", "/nonexistent", "--watch", "soon"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
