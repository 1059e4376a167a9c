//! Every perftest fixture against the ground truth in fixtures/perftest/README.md.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use fabrik_model::{P2pReport, P2pRows, P2pTest};
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

fn bw(r: &P2pReport) -> &[fabrik_model::BwRow] {
    match &r.results {
        P2pRows::Bw(v) => v,
        P2pRows::Lat(_) => panic!("expected a BW table"),
    }
}

fn lat(r: &P2pReport) -> &[fabrik_model::LatRow] {
    match &r.results {
        P2pRows::Lat(v) => v,
        P2pRows::Bw(_) => panic!("expected a latency table"),
    }
}

#[test]
fn p10_all_sizes_gbits_with_a_comment_in_the_header() {
    let r = one("10-ib_send_bw-all-sizes-gbits-comment-in-header.txt");
    assert_eq!((r.op.as_deref(), r.test), (Some("send"), P2pTest::Bw));
    assert_eq!(r.device.as_deref(), Some("mlx4_0"));
    assert_eq!((r.link_type.as_deref(), r.mtu), (Some("IB"), Some(4096)));
    let rows = bw(&r);
    assert_eq!(rows.len(), 23);
    assert_eq!((rows[0].bytes, rows[22].bytes), (2, 8_388_608));
    assert!((rows[0].bw_avg_gbps - 0.074187).abs() < 1e-9);
    assert!((rows[22].bw_avg_gbps - 27.33).abs() < 1e-9);
}

#[test]
fn p11_latency_table_with_percentiles() {
    let r = one("11-ib_send_lat-all-sizes-percentiles-mlx4.txt");
    assert_eq!((r.op.as_deref(), r.test), (Some("send"), P2pTest::Lat));
    let rows = lat(&r);
    assert_eq!(rows.len(), 23);
    let last = &rows[22];
    assert_eq!(last.bytes, 8_388_608);
    assert!((last.t_typical_us - 2576.83).abs() < 1e-9);
    assert!((last.t_avg_us - 2576.92).abs() < 1e-9);
    assert_eq!(last.p99_us, Some(2579.82));
    assert_eq!(last.p999_us, Some(2609.54));
}

#[test]
fn p12_mib_header_and_tabbed_latency_named_by_command_lines() {
    let r = load("12-ib_write_bw-mib-sec-and-write_lat-tabs.txt");
    assert_eq!(r.len(), 2);
    assert_eq!(
        (r[0].op.as_deref(), r[0].test),
        (Some("write"), P2pTest::Bw)
    );
    let row = &bw(&r[0])[0];
    assert_eq!(row.bytes, 65536);
    assert!((row.bw_avg_gbps - 3293.56 * 1_048_576.0 * 8.0 / 1e9).abs() < 1e-6);
    assert_eq!(
        (r[1].op.as_deref(), r[1].test),
        (Some("write"), P2pTest::Lat)
    );
    let l = &lat(&r[1])[0];
    assert_eq!(l.bytes, 2);
    assert!((l.t_avg_us - 1.12).abs() < 1e-9);
    assert_eq!(l.p999_us, Some(2.05));
}

#[test]
fn p13_bidirectional_rocm_run_keeps_new_header_keys() {
    let r = one("13-ib_write_bw-bidir-rocm-ionic-4qps.txt");
    assert_eq!((r.op.as_deref(), r.test), (Some("write"), P2pTest::Bw));
    assert_eq!(r.device.as_deref(), Some("ionic_1"));
    assert_eq!((r.streams, r.gid_index, r.mtu), (4, Some(1), Some(4096)));
    assert_eq!(r.link_type.as_deref(), Some("Ethernet"));
    assert!(fabrik_parse::perftest::is_bidirectional(&r));
    for note in [
        "CQE Poll Batch: 16",
        "CPU freq: 3295[MHz]",
        "Use ROCm memory: ON",
        "GPU memory buffers (GPUDirect RDMA)",
    ] {
        assert!(r.notes.iter().any(|n| n == note), "{note}: {:?}", r.notes);
    }
    assert!(!r.notes.iter().any(|n| n.starts_with("Connected")));
    let rows = bw(&r);
    assert_eq!(rows.len(), 23);
    assert!((rows[22].bw_avg_gbps - 697.97).abs() < 1e-9);
    // Both directions added up: the bandwidth judge doubles the line for it.
    assert!(fabrik_parse::perftest::is_bidirectional(&r));
}

#[test]
fn p14_bidirectional_duration_row_with_run_together_columns() {
    let r = one("14-ib_send_bw-bidir-duration-mbsec.txt");
    assert_eq!(
        (r.op.as_deref(), r.device.as_deref()),
        (Some("send"), Some("mlx5_0"))
    );
    assert!(fabrik_parse::perftest::is_bidirectional(&r));
    let rows = bw(&r);
    assert_eq!(rows.len(), 1);
    assert_eq!((rows[0].bytes, rows[0].iterations), (4096, 8_758_300));
    assert_eq!(rows[0].bw_peak_gbps, 0.0);
    assert!((rows[0].bw_avg_gbps - 11403.46 * 1_048_576.0 * 8.0 / 1e9).abs() < 1e-6);
}

#[test]
fn p15_read_latency_with_warnings_between_header_and_row() {
    let r = load("15-ib_read_lat-roce-cpu-freq-between-header-and-row-two-pods.txt");
    assert_eq!(r.len(), 2);
    for x in &r {
        assert_eq!((x.op.as_deref(), x.test), (Some("read"), P2pTest::Lat));
        assert_eq!(
            (x.link_type.as_deref(), x.gid_index),
            (Some("Ethernet"), Some(3))
        );
        assert!(x.notes.iter().any(|n| n == "Outstand reads: 16"));
    }
    let rows = lat(&r[0]);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].bytes, 2);
    assert!((rows[0].t_typical_us - 4.83).abs() < 1e-9);
    assert!((rows[0].t_avg_us - 4.82).abs() < 1e-9);
    assert_eq!((rows[0].p99_us, rows[0].p999_us), (Some(4.91), Some(13.2)));
    assert!(lat(&r[1]).is_empty());
}

fn full(name: &str) -> fabrik_parse::perftest::PerftestOutput {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/perftest")
        .join(name);
    fabrik_parse::perftest::parse_path_full(&p).expect("fixture readable")
}

#[test]
fn t16_failed_completion_is_an_error_with_its_status() {
    use fabrik_parse::perftest_failures::{findings, FailureClass};
    let out = full("16-failed-completion-status4-run-iter.txt");
    assert!(out.reports.is_empty());
    let classes: Vec<_> = out.failures.iter().map(|f| f.class).collect();
    assert_eq!(classes, vec![FailureClass::Completion; 3]);
    let f = findings(&out.failures);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].rule, "FAB-BENCH-PT-COMPLETION");
    assert_eq!(f[0].severity, fabrik_model::Severity::Error);
    assert!(
        f[0].message.contains("4 (IBV_WC_LOC_PROT_ERR)"),
        "{}",
        f[0].message
    );
    assert_eq!(f[0].evidence.len(), 3);
}

#[test]
fn t17_modify_qp_to_rtr_is_the_qp_state_class() {
    use fabrik_parse::perftest_failures::{findings, FailureClass};
    let out = full("17-failed-modify-qp-rtr-grh-required.txt");
    assert!(out.reports.is_empty());
    assert_eq!(out.failures.len(), 3, "{:?}", out.failures);
    assert!(out
        .failures
        .iter()
        .all(|f| f.class == FailureClass::QpState));
    // The repeated `Unable to Connect` line is counted, not stored twice.
    assert_eq!(
        out.failures.iter().map(|f| f.count).sum::<u64>(),
        4,
        "{:?}",
        out.failures
    );
    let f = findings(&out.failures);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].rule, "FAB-BENCH-PT-QP");
    assert!(f[0].fix.contains("-x"));
}

#[test]
fn t18_one_line_status_12_names_retry_exceeded() {
    let out = full("18-failed-status12-one-line-siw.txt");
    assert_eq!(out.failures.len(), 1);
    assert_eq!(
        out.failures[0].wc_status.as_deref(),
        Some("12 (IBV_WC_RETRY_EXC_ERR)")
    );
}

/// The same report pasted with a Markdown quote, srun `--label` and mpirun `--tag-output`
/// prefixes reads the same as the plain one.
#[test]
fn quoted_and_launcher_prefixed_reports_read_the_same() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/perftest/01-ib_write_bw-post-list-gbits-roce.txt");
    let text = std::fs::read_to_string(p).unwrap();
    let plain = fabrik_parse::perftest::parse_str(&text);
    assert!(bw_rows(&plain[0]) > 0);
    for prefix in ["> ", "0: ", "[1,0]<stdout>:", "> 12: "] {
        let prefixed: String = text.lines().map(|l| format!("{prefix}{l}\n")).collect();
        let got = fabrik_parse::perftest::parse_str(&prefixed);
        assert_eq!(got, plain, "prefix {prefix:?}");
    }
}

/// Endless input keeps bounded state: rows past the cap are counted, not stored, and the run
/// stays linear (a 1 GiB input reads in constant memory; here 200k rows in bounded time).
#[test]
fn rows_beyond_the_cap_are_counted_not_kept() {
    use fabrik_parse::perftest::{parse_reader_full, MAX_ROWS};
    let mut text = String::from(
        " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n",
    );
    let n = 200_000usize;
    for _ in 0..n {
        text.push_str(
            " 65536      5000           97.50              97.40              0.185800\n",
        );
    }
    let start = std::time::Instant::now();
    let out = parse_reader_full(&mut text.as_bytes()).unwrap();
    assert!(start.elapsed() < std::time::Duration::from_secs(30));
    assert_eq!(out.reports.len(), 1);
    assert_eq!(bw_rows(&out.reports[0]), MAX_ROWS);
    assert_eq!(out.rows_dropped, (n - MAX_ROWS) as u64);
}

#[test]
fn t19_port_down_is_the_cause_not_the_context_follow_up() {
    let out = full("19-failed-port-down-set-link-layer-no-context.txt");
    assert!(out.reports.is_empty());
    assert_eq!(out.failures.len(), 3, "{:?}", out.failures);
    let f = fabrik_parse::perftest_failures::findings(&out.failures);
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].rule, "FAB-BENCH-PT-PORT");
    assert_eq!(f[0].evidence.len(), 3);
    // Alone, the follow-up line is the cause it names.
    let alone = fabrik_parse::perftest::parse_reader_full(
        &mut &b" Couldn't get context for the device\n"[..],
    )
    .unwrap();
    let f = fabrik_parse::perftest_failures::findings(&alone.failures);
    assert_eq!(f[0].rule, "FAB-BENCH-PT-DEVICE");
}
