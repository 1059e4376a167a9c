//! deploy/prometheus/fabrik-alerts.yml against the real promtool (Debian's `prometheus`
//! package): the rules load, their unit tests (synthetic series for every alert, firing and not)
//! pass, and every fabrik metric they name is one the exporter writes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use fabrik_model::{Finding, Severity};

fn deploy() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/prometheus")
}

fn run(promtool: &Path, args: &[&str]) -> String {
    let out = Command::new(promtool)
        .args(args)
        .current_dir(deploy())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "promtool {args:?} failed:\n{text}");
    text
}

#[test]
fn alert_rules_load_and_their_unit_tests_pass() {
    let Some(promtool) = fabrik_testbed::tools::require("promtool", "Debian package prometheus")
    else {
        return;
    };
    let checked = run(&promtool, &["check", "rules", "fabrik-alerts.yml"]);
    assert!(checked.contains("SUCCESS"), "{checked}");
    let tested = run(&promtool, &["test", "rules", "fabrik-alerts.test.yml"]);
    assert!(tested.contains("SUCCESS"), "{tested}");
}

#[test]
fn every_metric_the_rules_use_is_one_the_exporter_writes() {
    let rules = std::fs::read_to_string(deploy().join("fabrik-alerts.yml")).unwrap();
    let used: BTreeSet<String> = rules
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("fabrik_") && !w.ends_with('_'))
        .map(str::to_string)
        .collect();
    assert!(used.contains("fabrik_findings") && used.contains("fabrik_port_state"));

    let root =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/counters/mlx5-roce/after");
    let sample = fabrik_monitor::sample(&root);
    let finding = Finding {
        rule: "FAB-CNT-101".into(),
        severity: Severity::Warning,
        subject: "mlx5_0:1".into(),
        message: "m".into(),
        evidence: vec![],
        fix: "f".into(),
    };
    let text = fabrik_monitor::metrics::encode(sample, &[finding], 0.01).unwrap();
    let written: BTreeSet<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split(['{', ' ']).next())
        .collect();
    for name in &used {
        assert!(
            written.contains(name.as_str()),
            "the rules use {name}, which the exporter does not write; it writes {written:?}"
        );
    }
}
