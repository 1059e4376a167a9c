//! `fabrik diff` and `fabrik top` on the counter fixtures.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use assert_cmd::Command;
use serde_json::Value;

fn fx(p: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/counters")
        .join(p)
}

#[test]
fn diff_table_exits_1_on_error_findings() {
    let out = Command::cargo_bin("fabrik")
        .unwrap()
        .arg("diff")
        .arg(fx("mlx5-ib/before"))
        .arg(fx("mlx5-ib/after"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("interval 10.000 s"));
    assert!(text.contains("16.00 Gb/s"), "{text}");
    assert!(text.contains("symbol_error +15 (1.5/s)"), "{text}");
    assert!(text.contains("\nmlx5_1:1\n  ERROR FAB-CNT-102  "), "{text}");
}

#[test]
fn diff_json_is_stable() {
    let out = Command::cargo_bin("fabrik")
        .unwrap()
        .args(["diff", "--format", "json"])
        .arg(fx("mlx5-roce/before"))
        .arg(fx("mlx5-roce/after"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["interval_s"], 5.0);
    assert_eq!(v["interval_source"], "captured_at");
    assert_eq!(v["ports"][0]["traffic"]["tx_bits_per_s"], 20e9);
    let rules: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    assert!(rules.contains(&"FAB-CNT-108"));
    let reset = v["ports"][0]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "rp_cnp_handled")
        .unwrap();
    assert_eq!(reset["kind"], "reset");
    assert_eq!(reset["per_second"], Value::Null);
}

#[test]
fn diff_unknown_interval_and_bad_root() {
    let out = Command::cargo_bin("fabrik")
        .unwrap()
        .args(["diff", "--format", "json"])
        .arg(fx("vanished/before"))
        .arg(fx("vanished/after"))
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["interval_s"], Value::Null);
    assert_eq!(v["interval_source"], "unknown");

    let out = Command::cargo_bin("fabrik")
        .unwrap()
        .args(["diff", "/nonexistent/a", "/nonexistent/b"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/a"));
}

#[test]
fn top_once_json_is_one_object() {
    let out = Command::cargo_bin("fabrik")
        .unwrap()
        .args([
            "top",
            "--once",
            "--interval",
            "50ms",
            "--format",
            "json",
            "--root",
        ])
        .arg(fx("rxe/after"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 1);
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["ports"][0]["device"], "rxe0");
    // A snapshot does not move: zero rates, no findings.
    assert_eq!(v["ports"][0]["traffic"]["tx_packets_per_s"], 0.0);
    assert_eq!(v["findings"].as_array().unwrap().len(), 0);
}

#[test]
fn top_count_plain_lines_when_not_a_terminal() {
    let out = Command::cargo_bin("fabrik")
        .unwrap()
        .args(["top", "--count", "2", "--interval", "20ms", "--root"])
        .arg(fx("mlx5-ib/after"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains('\x1b'), "no escapes when not a terminal");
    assert_eq!(text.matches("fabrik top").count(), 2);
    assert_eq!(text.matches("\nmthca0:1").count(), 2);
}
