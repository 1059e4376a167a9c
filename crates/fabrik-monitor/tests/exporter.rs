//! The exporter end to end on a fixture root: real HTTP on loopback.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use fabrik_model::{Finding, Severity};
use fabrik_monitor::server::{Exporter, ExporterConfig};
use fabrik_monitor::{SampleOptions, Thresholds};

fn get(addr: &str, path: &str, accept: Option<&str>) -> (String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let accept = accept.map_or(String::new(), |a| format!("Accept: {a}\r\n"));
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\n{accept}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    (head.to_string(), body.to_string())
}

#[test]
fn serves_metrics_healthz_and_plugged_findings() {
    let dir = tempfile::tempdir().unwrap();
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/counters/mlx5-roce/after");
    // Copy the fixture so the test can break a counter between scrapes.
    let status = std::process::Command::new("cp")
        .arg("-r")
        .arg(&fixture)
        .arg(dir.path().join("root"))
        .status()
        .unwrap();
    assert!(status.success());
    let root = dir.path().join("root");
    let config = ExporterConfig {
        root: root.clone(),
        options: SampleOptions::for_root(&root),
        thresholds: Thresholds::default(),
        findings: Some(Box::new(|_root: &Path| {
            vec![Finding {
                rule: "FAB-TEST-001".into(),
                severity: Severity::Error,
                subject: "node".into(),
                message: "m".into(),
                evidence: vec![],
                fix: "f".into(),
            }]
        })),
    };
    let exp = Exporter::bind("127.0.0.1:0", config).unwrap();
    let addr = exp.local_addr();
    let handle = exp.handle();
    let t = std::thread::spawn(move || exp.run());

    let (head, body) = get(&addr, "/healthz", None);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(body, "ok\n");

    let (head, body) = get(&addr, "/metrics", None);
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    assert!(body
        .contains("fabrik_port_transmit_bytes_total{device=\"mlx5_2\",port=\"1\"} 20500000000\n"));
    assert!(body.contains(
        "fabrik_netdev_pause_frames_total{interface=\"ens1f0\",direction=\"rx\",priority=\"3\"} 200100\n"
    ));
    assert!(body.contains("fabrik_findings{severity=\"error\",rule=\"FAB-TEST-001\"} 1"));
    // port_xmit_wait holds "N/A (no PMA)".
    assert!(body.contains("fabrik_unreadable_counters{subject=\"mlx5_2:1\"} 1"));
    assert!(!body.contains("# EOF"));

    // Break a counter and make one grow: the exporter keeps serving and the counter rule fires.
    let hw = root.join("sys/class/infiniband/mlx5_2/ports/1/hw_counters");
    std::fs::write(hw.join("np_cnp_sent"), "garbage\n").unwrap();
    std::fs::write(hw.join("out_of_sequence"), "100000\n").unwrap();
    let (head, body) = get(
        &addr,
        "/metrics",
        Some("application/openmetrics-text;version=1.0.0"),
    );
    assert!(head.contains("application/openmetrics-text"), "{head}");
    assert!(body.ends_with("# EOF\n"));
    assert!(body.contains("fabrik_unreadable_counters{subject=\"mlx5_2:1\"} 2"));
    assert!(
        body.contains("fabrik_findings{severity=\"warning\",rule=\"FAB-CNT-110\"} 1"),
        "{body}"
    );

    // The device disappears: still 200, the port is simply gone.
    std::fs::remove_dir_all(root.join("sys/class/infiniband/mlx5_2")).unwrap();
    let (head, body) = get(&addr, "/metrics", None);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(!body.contains("device=\"mlx5_2\",port=\"1\"} "));
    assert!(
        body.contains("fabrik_findings{severity=\"warning\",rule=\"FAB-CNT-122\"} 1"),
        "{body}"
    );

    let (head, _) = get(&addr, "/nope", None);
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
    handle.unblock();
    t.join().unwrap();
}

#[test]
fn bind_failure_is_an_error() {
    let config = ExporterConfig {
        root: "/nonexistent".into(),
        options: SampleOptions::for_root(Path::new("/nonexistent")),
        thresholds: Thresholds::default(),
        findings: None,
    };
    assert!(Exporter::bind("256.0.0.1:1", config).is_err());
}
