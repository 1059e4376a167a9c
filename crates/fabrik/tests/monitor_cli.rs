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

#[test]
fn the_rate_thresholds_are_flags_of_every_command_that_runs_the_counter_rules() {
    let diff = |extra: &[&str]| {
        let out = Command::cargo_bin("fabrik")
            .unwrap()
            .args(["diff", "--format", "json"])
            .args(extra)
            .arg(fx("mlx5-roce/before"))
            .arg(fx("mlx5-roce/after"))
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        let rules: Vec<String> = v["findings"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|f| f["rule"].as_str().unwrap().to_string())
                    .collect()
            })
            .unwrap_or_default();
        (out.status.code(), rules)
    };
    // The fixture's pause rate is above the default line and below one raised far above it.
    let (_, rules) = diff(&[]);
    assert!(rules.iter().any(|r| r == "FAB-CNT-108"), "{rules:?}");
    let (code, rules) = diff(&["--pause-threshold", "1e12"]);
    assert_eq!(code, Some(0));
    assert!(!rules.iter().any(|r| r == "FAB-CNT-108"), "{rules:?}");
    // A rate that is not one is a usage error, not a silent default.
    let (code, _) = diff(&["--cnp-threshold", "-5"]);
    assert_eq!(code, Some(2));
    for cmd in ["diff", "top", "doctor", "exporter"] {
        let out = Command::cargo_bin("fabrik")
            .unwrap()
            .args([cmd, "--help"])
            .output()
            .unwrap();
        let help = String::from_utf8(out.stdout).unwrap();
        for flag in ["--pause-threshold <PER_S>", "--cnp-threshold <PER_S>"] {
            let at = help
                .find(flag)
                .unwrap_or_else(|| panic!("{cmd}: no {flag}\n{help}"));
            let entry = &help[at..help[at..].find("\n  -").map_or(help.len(), |e| at + e)];
            assert!(entry.contains("[default: 1000]"), "{cmd} {flag}: {entry}");
        }
    }
}
