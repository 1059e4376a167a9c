//! Every perftest fixture against the ground truth in fixtures/perftest/README.md.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use fabrik_model::{P2pReport, P2pRows, P2pTest};
use fabrik_parse::check::check_p2p;
use fabrik_parse::perftest::parse_path;

fn load(name: &str) -> Vec<P2pReport> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/perftest")
        .join(name);
    parse_path(&p).expect("fixture readable")
}

fn one(name: &str) -> P2pReport {
    let mut r = load(name);
    assert_eq!(r.len(), 1, "{name}");
    r.remove(0)
}

fn bw_rows(r: &P2pReport) -> usize {
    match &r.results {
        P2pRows::Bw(v) => v.len(),
        P2pRows::Lat(v) => v.len(),
    }
}

#[test]
fn p01_post_list_gbits() {
    let r = one("01-ib_write_bw-post-list-gbits-roce.txt");
    assert_eq!(r.test, P2pTest::Bw);
    assert_eq!(r.op.as_deref(), Some("write"));
    assert_eq!(r.device.as_deref(), Some("ib0"));
    assert_eq!(r.link_type.as_deref(), Some("Ethernet"));
    assert_eq!((r.mtu, r.gid_index), (Some(4096), Some(2)));
    assert_eq!(r.transport, "IB");
    assert!(r.notes.iter().any(|n| n == "Connection type: RC"));
    assert!(r.notes.iter().any(|n| n == "PCIe relax order: Unsupported"));
    let P2pRows::Bw(rows) = &r.results else {
        panic!()
    };
    assert_eq!(rows.len(), 1);
    assert_eq!((rows[0].bytes, rows[0].iterations), (8, 224958464));
    assert_eq!(
        (
            rows[0].bw_peak_gbps,
            rows[0].bw_avg_gbps,
            rows[0].msg_rate_mpps
        ),
        (0.0, 0.48, 7.498617)
    );
}

#[test]
fn p02_cut_row_is_not_a_row() {
    let r = one("02-ib_write_bw-server-mbsec-truncated.txt");
    assert_eq!(r.device.as_deref(), Some("mlx5_0"));
    assert_eq!(r.gid_index, Some(3));
    assert_eq!(bw_rows(&r), 0);
}

#[test]
fn p03_indented_ib_link() {
    let r = one("03-ib_write_bw-report-min-bw-indented-ib.txt");
    assert_eq!(r.device.as_deref(), Some("ibp5"));
    assert_eq!(r.link_type.as_deref(), Some("IB"));
    assert_eq!((r.mtu, r.gid_index), (Some(4096), Some(0)));
    assert_eq!(bw_rows(&r), 0);
}

#[test]
fn p04_send_bw_header_only() {
    let r = one("04-ib_send_bw-5.60-rdma-cm-header-only.txt");
    assert_eq!(r.op.as_deref(), Some("send"));
    assert_eq!(r.device.as_deref(), Some("mlx5_bond_0"));
    assert!(r.notes.iter().any(|n| n == "perftest version 5.60"));
    assert!(r.notes.iter().any(|n| n == "Data ex. method: rdma_cm"));
}

#[test]
fn p05_write_lat_cx3() {
    let r = one("05-ib_write_lat-cx3-roce-truncated.txt");
    assert_eq!(r.test, P2pTest::Lat);
    assert_eq!(r.op.as_deref(), Some("write"));
    assert_eq!(r.device.as_deref(), Some("mlx4_0"));
    assert_eq!((r.mtu, r.gid_index), (Some(1024), Some(1)));
}

#[test]
fn p06_cut_latency_row_skipped() {
    let r = one("06-ib_send_lat-bond-cpu-freq-warnings.txt");
    assert_eq!(r.test, P2pTest::Lat);
    assert_eq!(r.gid_index, Some(3));
    assert_eq!(bw_rows(&r), 0);
}

#[test]
fn p07_two_tables_two_reports_mb_converted() {
    let r = load("07-ib_send_bw-mbsec-rows-only.txt");
    assert_eq!(r.len(), 2);
    let avg: Vec<f64> = r
        .iter()
        .map(|x| match &x.results {
            P2pRows::Bw(v) => v[0].bw_avg_gbps,
            P2pRows::Lat(_) => panic!(),
        })
        .collect();
    // perftest's MB is 2^20 bytes.
    assert!((avg[0] - 5544.28 * 1_048_576.0 * 8.0 / 1e9).abs() < 1e-9);
    assert!((avg[1] - 920.13 * 1_048_576.0 * 8.0 / 1e9).abs() < 1e-9);
    assert_eq!(r[0].op, None);
}

#[test]
fn p08_dc_two_qps() {
    let r = one("08-ib_send_lat-dc-srq-two-qps.txt");
    assert_eq!(r.streams, 2);
    assert!(r.notes.iter().any(|n| n == "Connection type: DC"));
    assert!(r.notes.iter().any(|n| n == "Using SRQ: ON"));
    assert_eq!(r.link_type.as_deref(), Some("IB"));
}

#[test]
fn low_bandwidth_is_flagged_against_the_link() {
    let text = " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n 65536      5000           98.10              97.50                0.185000\n";
    let r = fabrik_parse::perftest::parse_str(text);
    assert!(check_p2p(&r[0], Some(100.0)).is_empty());
    let f = check_p2p(&r[0], Some(400.0));
    assert_eq!(f[0].rule, "FAB-BENCH-LOW-BW");
}

#[test]
fn json_round_trips_into_the_model() {
    let r = one("01-ib_write_bw-post-list-gbits-roce.txt");
    let text = serde_json::to_string(&r).unwrap();
    let back: P2pReport = serde_json::from_str(&text).unwrap();
    assert_eq!(back, r);
}

#[test]
fn p09_old_perftest_without_msg_rate() {
    let r = one("09-ib_send_bw-old-ud-no-msgrate.txt");
    assert_eq!(r.op.as_deref(), Some("send"));
    assert_eq!(r.device.as_deref(), Some("mlx4_0"));
    assert_eq!(r.mtu, Some(2048));
    assert!(r.notes.iter().any(|n| n == "Connection type: UD"));
    let P2pRows::Bw(rows) = &r.results else {
        panic!()
    };
    assert_eq!(rows.len(), 11);
    let last = rows.last().unwrap();
    assert_eq!(last.bytes, 2048);
    assert!((last.bw_avg_gbps - 2919.91 * 1_048_576.0 * 8.0 / 1e9).abs() < 1e-9);
    // 2919.91 MiB/s of 2 KiB messages is 1.495 M messages per second.
    assert!(
        (last.msg_rate_mpps - 1.494_994).abs() < 1e-3,
        "{}",
        last.msg_rate_mpps
    );
    assert!(r.notes.iter().any(|n| n.starts_with("MsgRate not printed")));
}
