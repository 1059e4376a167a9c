use super::*;
use fabrik_model::ResultSource;

#[test]
fn the_matrix_line_is_the_rate_most_ranks_report() {
    // Seven ranks at 200 Gb/s, one degraded to 100, one unknown: the line is 180.
    let mut rates = vec![Some(200.0); 7];
    rates.push(Some(100.0));
    rates.push(None);
    assert_eq!(common_rate(&rates), Some((200.0, 7, 8)));
    let l = matrix_line(None, None, &rates).unwrap();
    assert_eq!(l.value, 180.0);
    assert!(l.basis.contains("7 of 8 ranks"), "{}", l.basis);
    // A tie goes to the higher rate; nothing known, no line.
    assert_eq!(
        common_rate(&[Some(100.0), Some(400.0)]),
        Some((400.0, 1, 2))
    );
    assert_eq!(matrix_line(None, None, &[None, None]), None);
    assert_eq!(common_rate(&[Some(0.0), Some(f64::NAN)]), None);
    // --link-gbps and a file win over the inventories.
    assert_eq!(matrix_line(None, Some(100.0), &rates).unwrap().value, 90.0);
    let e = Expectations::parse("t", "[bandwidth]\np2p_gbps_per_nic = 380\n").unwrap();
    assert_eq!(matrix_line(Some(&e), None, &rates).unwrap().value, 380.0);
}

#[test]
fn the_expectations_line_wins_over_the_link_rate() {
    let e = Expectations::parse("t", "[bandwidth]\np2p_gbps_per_nic = 380\n").unwrap();
    let l = p2p_line(Some(&e), Some(400.0), false).unwrap();
    assert_eq!(l.value, 380.0);
    assert!(l.basis.starts_with("expectations"));
    let l = p2p_line(None, Some(400.0), false).unwrap();
    assert_eq!(l.value, 360.0);
    assert!(l.basis.contains("ngc_multinode_perf"));
    assert_eq!(p2p_line(None, Some(400.0), true).unwrap().value, 720.0);
    let four = p2p_line_striped(None, Some(100.0), 4, false).unwrap();
    assert_eq!(four.value, 360.0);
    assert!(four.basis.ends_with("x4 NICs"));
    assert_eq!(p2p_line(None, None, false), None);
    assert_eq!(p2p_line(None, Some(f64::NAN), false), None);
    assert_eq!(busbw_line(None), None);
    let e = Expectations::parse("t", "[bandwidth]\nall_reduce_busbw_gbs = 460\n").unwrap();
    assert_eq!(busbw_line(Some(&e)).unwrap().value, 460.0);
}

#[test]
fn a_row_below_the_line_fails_the_run_and_small_rows_are_not_judged() {
    let line = PassLine {
        value: 90.0,
        unit: "Gb/s",
        basis: "t".into(),
        measure: Measure::PointToPoint,
        op: None,
    };
    let row = |bytes, avg| fabrik_model::BwRow {
        bytes,
        iterations: 1000,
        bw_peak_gbps: avg,
        bw_avg_gbps: avg,
        msg_rate_mpps: 0.0,
    };
    let mut r = P2pReport {
        schema_version: 1,
        source: fabrik_model::ResultSource::Perftest,
        test: fabrik_model::P2pTest::Bw,
        transport: "IB".into(),
        op: Some("write".into()),
        streams: 1,
        interfaces: vec![],
        device: None,
        link_type: None,
        mtu: None,
        gid_index: None,
        results: P2pRows::Bw(vec![row(2, 0.1), row(65536, 95.0), row(1 << 20, 96.0)]),
        per_stream: vec![],
        notes: vec![],
        memory: None,
    };
    let j = judge_p2p(&r, &line).unwrap();
    assert_eq!(j.rows.len(), 2);
    assert_eq!(j.verdict, Verdict::Pass);
    r.results = P2pRows::Bw(vec![row(65536, 95.0), row(1 << 20, 89.9)]);
    let j = judge_p2p(&r, &line).unwrap();
    assert_eq!(j.verdict, Verdict::Fail);
    assert_eq!(j.rows[1].verdict, Verdict::Fail);
    r.results = P2pRows::Bw(vec![row(4096, 1.0)]);
    assert_eq!(judge_p2p(&r, &line), None);
}

#[test]
fn a_p2p_run_reads_this_machines_nics_only_when_nothing_else_gives_the_line() {
    let r = P2pReport {
        schema_version: 1,
        source: ResultSource::Fabrik,
        test: fabrik_model::P2pTest::Bw,
        transport: "tcp".into(),
        op: None,
        streams: 2,
        interfaces: vec![],
        device: None,
        link_type: None,
        mtu: None,
        gid_index: None,
        results: P2pRows::Bw(vec![fabrik_model::BwRow {
            bytes: 1 << 20,
            iterations: 100,
            bw_peak_gbps: 40.0,
            bw_avg_gbps: 40.0,
            msg_rate_mpps: 0.0,
        }]),
        per_stream: vec![],
        notes: vec![],
        memory: None,
    };
    let mut node = Node::default();
    for (name, mbps) in [("eth0", 100_000), ("eth1", 25_000)] {
        node.net_interfaces.push(fabrik_model::NetInterface {
            name: name.into(),
            speed_mbps: Some(mbps),
            pci: Some(fabrik_model::PciFunction::default()),
            ..Default::default()
        });
    }
    let ifaces: Vec<String> = ["eth0", "eth1", "eth0"].map(String::from).to_vec();
    let unread = || -> Result<&Node, &str> { Err("the NICs were read") };
    // --link-gbps gives the per-NIC line: 90 % of 30 Gb/s on each of two NICs.
    let j = judge_tcp_p2p(&r, None, Some(30.0), &ifaces, false, unread).unwrap();
    let j = j.unwrap();
    assert_eq!((j.line.value, j.verdict), (54.0, Verdict::Fail));
    // Else the slowest NIC in use (25 Gb/s) sets it: 45 Gb/s for two, and 40 is below.
    let j = judge_tcp_p2p(&r, None, None, &ifaces, false, || Ok::<_, ()>(&node));
    let j = j.unwrap().unwrap();
    assert_eq!(j.line.value, 45.0);
    assert!(j.line.basis.contains("x2 NICs"), "{}", j.line.basis);
    // A file's line needs no NIC; the NICs that cannot be read are the caller's error.
    let e = Expectations::parse("t", "[bandwidth]\np2p_gbps_per_nic = 10\n").unwrap();
    let j = judge_tcp_p2p(&r, Some(&e), None, &ifaces, false, unread).unwrap();
    assert_eq!(j.unwrap().verdict, Verdict::Pass);
    assert_eq!(
        judge_tcp_p2p(&r, None, None, &ifaces, false, unread),
        Err("the NICs were read")
    );
    // Over RDMA the port in use gives the rate; without a device there is no line.
    assert_eq!(judge_rdma_p2p(&r, None, None, unread), Ok(None));
    assert!(failed(Some(
        &judge_p2p(&r, &p2p_line(None, Some(50.0), false).unwrap()).unwrap()
    )));
    assert!(!failed(None));
}

fn coll(op: &str, hosts: &[&str], sizes_busbw: &[(u64, f64)]) -> CollectiveReport {
    CollectiveReport {
        schema_version: 1,
        source: ResultSource::NcclTests,
        op: op.into(),
        backend: None,
        ranks: None,
        hosts: hosts.iter().map(|h| h.to_string()).collect(),
        devices: vec![],
        rows: sizes_busbw
            .iter()
            .map(|&(size, busbw)| fabrik_model::CollectiveRow {
                size,
                count: size / 4,
                dtype: "float".into(),
                redop: None,
                root: None,
                out_of_place: Some(fabrik_model::CollTiming {
                    time_us: 1.0,
                    algbw: busbw,
                    busbw,
                    wrong: Some(0),
                }),
                in_place: None,
            })
            .collect(),
        avg_busbw: Some(1.0),
        notes: vec![],
    }
}

#[test]
fn one_share_of_the_link_judges_point_to_point_and_collectives_across_hosts() {
    // 400 Gb/s: 360 Gb/s for a link, 45 GB/s of bus bandwidth for a multi-host collective.
    let p2p = p2p_line(None, Some(400.0), false).unwrap();
    let two = coll(
        "all_gather",
        &["a", "b"],
        &[(1 << 20, 10.0), (1 << 30, 44.0)],
    );
    let c = collective_line(None, &two, Some(400.0)).unwrap();
    assert_eq!((p2p.value, c.value), (360.0, 45.0));
    assert!(p2p.basis.starts_with("90 % of"), "{}", p2p.basis);
    assert!(
        c.basis
            .starts_with("90 % of one NIC's 400 Gb/s link rate (50 GB/s)"),
        "{}",
        c.basis
    );
    assert!(c.basis.contains("a run across 2 hosts"), "{}", c.basis);
    let unlisted = coll("all_gather", &[], &[(1 << 30, 44.0)]);
    let c0 = collective_line(None, &unlisted, Some(400.0)).unwrap();
    assert!(c0.basis.contains("lists no hosts"), "{}", c0.basis);
    let j = judge_collective(&two, &c).unwrap();
    assert_eq!((j.rows.len(), j.verdict), (1, Verdict::Fail));
    let f = below_line_finding(&j, "nccl-tests all_gather").unwrap();
    assert_eq!((f.rule.as_str(), f.severity), (LOW_BUSBW, Severity::Error));
    assert!(
        f.message
            .contains("the lowest bus bandwidth 44.00 GB/s at 1073741824 bytes"),
        "{}",
        f.message
    );
    // The file's share applies to every line drawn from a link rate.
    let e = Expectations::parse("t", "[bandwidth]\npass_fraction = 0.8\n").unwrap();
    let c = collective_line(Some(&e), &two, Some(400.0)).unwrap();
    assert_eq!(c.value, 40.0);
    assert!(
        c.basis
            .starts_with("80 % (expectations: bandwidth.pass_fraction)"),
        "{}",
        c.basis
    );
    assert!(below_line_finding(&judge_collective(&two, &c).unwrap(), "x").is_none());
    assert_eq!(p2p_line(Some(&e), Some(100.0), false).unwrap().value, 80.0);
    // One host: no network line. Largest size below 32 MiB: not judged against the link.
    let one = coll("all_reduce", &["a", "a"], &[(1 << 30, 1.0)]);
    assert_eq!(collective_line(None, &one, Some(400.0)), None);
    let small = coll("all_reduce", &["a", "b"], &[(1 << 20, 1.0)]);
    let l = collective_line(None, &small, Some(400.0)).unwrap();
    assert_eq!(judge_collective(&small, &l), None);
    assert_eq!(collective_line(None, &two, None), None);
}

#[test]
fn the_files_all_reduce_line_judges_all_reduce_only() {
    let e = Expectations::parse("t", "[bandwidth]\nall_reduce_busbw_gbs = 460\n").unwrap();
    let ar = coll("all_reduce", &["a"], &[(1 << 20, 400.0)]);
    let l = collective_line(Some(&e), &ar, Some(400.0)).unwrap();
    assert_eq!((l.value, l.op.as_deref()), (460.0, Some("all_reduce")));
    // Judged at the largest size whatever it is: the file says what that size must reach.
    assert_eq!(judge_collective(&ar, &l).unwrap().verdict, Verdict::Fail);
    let ag = coll("all_gather", &["a", "b"], &[(1 << 30, 400.0)]);
    assert_eq!(judge_collective(&ag, &l), None);
    // Another op across hosts falls back to the link.
    assert_eq!(
        collective_line(Some(&e), &ag, Some(400.0)).unwrap().value,
        45.0
    );
}

#[test]
fn a_run_that_did_not_finish_says_why() {
    let mut r = coll("all_reduce", &["a"], &[(1 << 20, 1.0)]);
    assert_eq!(collective_incomplete(&r), None);
    r.avg_busbw = None;
    assert!(collective_incomplete(&r)
        .unwrap()
        .starts_with("incomplete: no \"# Avg bus bandwidth\""));
    r.rows.clear();
    assert_eq!(
        collective_incomplete(&r).unwrap(),
        "aborted: no result rows"
    );
    r.notes.push("aborted: rank 1 (b): connection reset".into());
    assert_eq!(
        collective_incomplete(&r).unwrap(),
        "aborted: rank 1 (b): connection reset"
    );
    let f = incomplete_finding("nccl-tests all_reduce", "aborted: no result rows");
    assert_eq!((f.rule.as_str(), f.severity), (INCOMPLETE, Severity::Error));
}

#[test]
fn one_slow_link_fails_the_matrix_and_is_named() {
    let line = PassLine {
        value: 90.0,
        unit: "Gb/s",
        basis: "t".into(),
        measure: Measure::PointToPoint,
        op: None,
    };
    let link = |src, dst, gbps| LinkMeasurement {
        src,
        dst,
        gbps,
        latency_us: None,
        round: 0,
    };
    let j = judge_links(&[link(1, 0, 95.0), link(0, 1, 40.0)], &line).unwrap();
    assert_eq!(j.verdict, Verdict::Fail);
    assert_eq!((j.links[0].src, j.links[0].verdict), (0, Verdict::Fail));
    assert_eq!((j.links[1].src, j.links[1].verdict), (1, Verdict::Pass));
    assert_eq!(judge_links(&[], &line), None);
}
