//! Every fixture pair under fixtures/counters must produce the rates and findings its
//! expected.json states (written by hand from the numbers in make_fixtures.py).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use fabrik_monitor::delta::Traffic;
use fabrik_monitor::{compare, interval_between, report_findings, sample, Thresholds};
use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/counters")
}

fn close(got: Option<f64>, want: &Value, what: &str) {
    match want.as_f64() {
        None => assert_eq!(got, None, "{what}: expected no rate, got {got:?}"),
        Some(w) => {
            let g = got.unwrap_or_else(|| panic!("{what}: expected {w}, got none"));
            assert!(
                (g - w).abs() <= 1e-9 * w.abs().max(1.0),
                "{what}: expected {w}, got {g}"
            );
        }
    }
}

fn check_traffic(t: &Traffic, want: &Value, what: &str) {
    close(
        t.tx_bits_per_s,
        &want["tx_bits_per_s"],
        &format!("{what} tx_bits_per_s"),
    );
    close(
        t.rx_bits_per_s,
        &want["rx_bits_per_s"],
        &format!("{what} rx_bits_per_s"),
    );
    close(
        t.tx_packets_per_s,
        &want["tx_packets_per_s"],
        &format!("{what} tx_packets_per_s"),
    );
    close(
        t.rx_packets_per_s,
        &want["rx_packets_per_s"],
        &format!("{what} rx_packets_per_s"),
    );
    if let Some(b) = want.get("tx_bytes") {
        assert_eq!(t.tx_bytes, b.as_u64(), "{what} tx_bytes");
    }
}

fn check_pair(name: &str) {
    let dir = fixtures().join(name);
    let want: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap()).unwrap();
    let before = sample(&dir.join("before"));
    let after = sample(&dir.join("after"));
    let interval = interval_between(&before, &after);
    close(
        interval.map(|d| d.as_secs_f64()),
        &want["interval_s"],
        &format!("{name} interval"),
    );
    let report = compare(&before, &after, interval);

    let ports = want["ports"].as_object().unwrap();
    assert_eq!(
        report.ports.len(),
        ports.len(),
        "{name}: ports {:?}",
        report.ports
    );
    for (subject, w) in ports {
        let p = report
            .ports
            .iter()
            .find(|p| &p.subject() == subject)
            .unwrap_or_else(|| panic!("{name}: no port {subject}"));
        check_traffic(&p.traffic, w, &format!("{name} {subject}"));
    }
    let nds = want["netdevs"].as_object().unwrap();
    assert_eq!(
        report
            .netdevs
            .iter()
            .map(|n| n.name.clone())
            .collect::<std::collections::BTreeSet<_>>(),
        nds.keys().cloned().collect(),
        "{name}: netdevs"
    );
    for (ifname, w) in nds {
        let n = report.netdevs.iter().find(|n| &n.name == ifname).unwrap();
        check_traffic(&n.traffic, w, &format!("{name} {ifname}"));
    }

    let findings = report_findings(&report, &Thresholds::default());
    let mut got: Vec<(String, String, String)> = findings
        .iter()
        .map(|f| (f.rule.clone(), f.severity.to_string(), f.subject.clone()))
        .collect();
    got.sort();
    let mut exp: Vec<(String, String, String)> = want["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let s = |i: usize| t[i].as_str().unwrap().to_string();
            (s(0), s(1), s(2))
        })
        .collect();
    exp.sort();
    assert_eq!(got, exp, "{name}: findings {findings:#?}");
    for f in &findings {
        assert!(!f.evidence.is_empty(), "{name}: {} has no evidence", f.rule);
        assert!(!f.fix.is_empty(), "{name}: {} has no fix", f.rule);
    }
}

#[test]
fn mlx5_ib_pair() {
    check_pair("mlx5-ib");
}

#[test]
fn mlx5_roce_pair() {
    check_pair("mlx5-roce");
}

#[test]
fn rxe_pair() {
    check_pair("rxe");
}

#[test]
fn rxe_idle_pair_fires_nothing() {
    check_pair("rxe-idle");
}

#[test]
fn vanished_pair_unknown_interval() {
    check_pair("vanished");
}

#[test]
fn evidence_states_before_after_interval() {
    let dir = fixtures().join("mlx5-ib");
    let f = fabrik_monitor::counter_findings(
        &sample(&dir.join("before")),
        &sample(&dir.join("after")),
        Some(std::time::Duration::from_secs(10)),
    );
    let sym = f.iter().find(|f| f.rule == "FAB-CNT-101").unwrap();
    assert_eq!(
        sym.evidence[0].path,
        "/sys/class/infiniband/mlx5_1/ports/1/counters/symbol_error"
    );
    assert_eq!(
        sym.evidence[0].value,
        "before 1200, after 1215, interval 10.000 s (+15, 1.50/s)"
    );
}

#[test]
fn ethtool_and_ports_are_read_from_snapshot() {
    let s = sample(&fixtures().join("mlx5-roce/after"));
    let nd = s.netdev("ens1f0").unwrap();
    assert_eq!(nd.rdma_ports, vec!["mlx5_2:1".to_string()]);
    assert!(nd.physical);
    assert_eq!(
        nd.ethtool.get("rx_prio3_pause").and_then(|r| r.value()),
        Some(200_100)
    );
    let p = s.port("mlx5_2", 1).unwrap();
    assert_eq!(p.link_layer.as_deref(), Some("Ethernet"));
    assert_eq!(p.netdevs, vec!["ens1f0".to_string()]);
}

#[test]
fn watch_samples_twice_and_sees_no_motion_in_a_snapshot() {
    let (report, findings) = fabrik_monitor::watch(
        &fixtures().join("rxe/after"),
        std::time::Duration::from_millis(20),
        &Thresholds::default(),
    );
    assert!(report.interval_s.unwrap() >= 0.02);
    assert_eq!(report.ports.len(), 1);
    assert!(findings.is_empty(), "{findings:?}");
}

#[test]
fn rxe_vm_pair_captured_from_a_real_soft_roce_run() {
    check_pair("rxe-vm");
}
