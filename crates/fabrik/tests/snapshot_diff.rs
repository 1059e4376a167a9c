//! `fabrik snapshot` stamps `fabrik/captured_at`, so `fabrik diff` of two snapshots (directory
//! or .tar.gz) computes rates: a fixture tree (fixtures/counters/mlx5-roce) is snapshotted, its
//! counters are changed to the pair's `after` values, and it is snapshotted again.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use assert_cmd::Command;
use serde_json::Value;
use support::copy_tree;

fn pair() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/counters/mlx5-roce")
}

fn snapshot(root: &Path, out: &Path) {
    let st = Command::cargo_bin("fabrik")
        .unwrap()
        .args(["snapshot", "--no-commands", "--root"])
        .arg(root)
        .arg("--output")
        .arg(out)
        .output()
        .unwrap();
    support::assert_ok(&st);
}

fn rfc3339_seconds(text: &str) -> f64 {
    let t = humantime::parse_rfc3339(text.trim()).unwrap();
    t.duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

#[test]
fn two_snapshots_of_a_changing_tree_give_rates() {
    let tmp = tempfile::tempdir().unwrap();
    let node = tmp.path().join("node");
    copy_tree(&pair().join("before"), &node);
    // The fixture's own time would be kept (a snapshot of a snapshot); this node is live.
    std::fs::remove_file(node.join("fabrik/captured_at")).unwrap();

    let a = tmp.path().join("a");
    snapshot(&node, &a);
    std::thread::sleep(Duration::from_millis(1200));
    copy_tree(&pair().join("after/sys"), &node.join("sys"));
    let b = tmp.path().join("b.tar.gz");
    snapshot(&node, &b);

    let stamp = std::fs::read_to_string(a.join("fabrik/captured_at")).unwrap();
    assert!(stamp.trim().ends_with('Z'), "UTC RFC 3339: {stamp}");
    let t_a = rfc3339_seconds(&stamp);

    let out = Command::cargo_bin("fabrik")
        .unwrap()
        .args(["diff", "--format", "json"])
        .arg(&a)
        .arg(&b)
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(doc["interval_source"], "captured_at", "{doc}");
    let interval = doc["interval_s"].as_f64().unwrap();
    assert!((1.2..30.0).contains(&interval), "{interval}");
    assert!(t_a > 1.7e9);

    let port = doc["ports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["device"] == "mlx5_2" && p["port"] == 1)
        .unwrap_or_else(|| panic!("{doc}"));
    let oos = port["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "out_of_sequence")
        .unwrap();
    // 10 → 130 in the fixture pair.
    assert_eq!(oos["delta"], 120);
    let rate = oos["per_second"].as_f64().unwrap();
    assert!(
        (rate - 120.0 / interval).abs() < 1e-6,
        "{rate} vs {interval}"
    );
    // port_xmit_data counts 4-byte words: 3,125,000,000 words more in the pair.
    let tx = port["traffic"]["tx_bits_per_s"].as_f64().unwrap();
    assert!((tx - 12.5e9 * 8.0 / interval).abs() < 1.0, "{tx}");
    let rules: Vec<&str> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    // 50,000 CNPs in about a second: a rate only the interval can give.
    assert!(rules.contains(&"FAB-CNT-109"), "{rules:?}");
    assert!(rules.contains(&"FAB-CNT-110"), "{rules:?}");
}

#[test]
fn a_snapshot_of_a_snapshot_keeps_its_time() {
    let tmp = tempfile::tempdir().unwrap();
    let again = tmp.path().join("again.tar.gz");
    snapshot(&pair().join("before"), &again);
    let out = Command::cargo_bin("fabrik")
        .unwrap()
        .args(["diff", "--format", "json"])
        .arg(&again)
        .arg(pair().join("after"))
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    // The pair's own captured_at files are 5 s apart.
    assert_eq!(doc["interval_s"].as_f64(), Some(5.0), "{doc}");
}

#[test]
fn diff_refuses_what_is_no_snapshot() {
    let tmp = tempfile::tempdir().unwrap();
    let junk = tmp.path().join("junk.tar.gz");
    std::fs::write(&junk, b"not gzip").unwrap();
    let out = Command::cargo_bin("fabrik")
        .unwrap()
        .arg("diff")
        .arg(&junk)
        .arg(pair().join("after"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("junk.tar.gz"));
}
