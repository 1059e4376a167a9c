//! NCCL DIAG reports, RAS monitor events and Inspector files, read from the samples of NCCL's
//! and RCCL's own documentation and tests (fixtures/nccl-logs/{diag,ras-monitor,inspector}).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use fabrik_model::Severity;
use fabrik_parse::inspector::{analyze, Inspector, Record};
use fabrik_parse::nccl_log::analyze_str;
use fabrik_parse::ras::{diag, monitor};

fn fixture(rel: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/nccl-logs")
        .join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn ras_diagnostics_all_ok_give_no_finding() {
    let reports = diag::parse(&fixture("diag/01-nccl-2.32-ras-diagnostics-ok.txt"));
    assert_eq!(reports.len(), 1);
    let r = &reports[0];
    assert_eq!(r.kind, "ras");
    assert_eq!(r.host.as_deref(), Some("node042"));
    assert_eq!(r.pid, Some(12345));
    assert_eq!(r.lines.len(), 5);
    assert!(r.lines.iter().all(|l| l.tag == "OK"));
    assert_eq!(r.lines[0].check, "GPU inventory");
    assert_eq!(r.lines[0].comm.as_deref(), Some("0x1234"));
    assert_eq!(r.completed_ms, Some(12.3));
    assert_eq!(r.across, Some(8));
    assert!(diag::findings(&reports, &diag::RankHosts::new()).is_empty());
}

#[test]
fn env_mismatch_names_the_variable_the_values_and_the_hosts_of_the_ranks() {
    let reports = diag::parse(&fixture(
        "diag/02-nccl-2.32-ras-diagnostics-env-mismatch.txt",
    ));
    let mut hosts = diag::RankHosts::new();
    for r in 0..4 {
        hosts.insert(r, "node-a".into());
    }
    for r in 4..8 {
        hosts.insert(r, "node-b".into());
    }
    let f = diag::findings(&reports, &hosts);
    let env: Vec<_> = f.iter().filter(|f| f.rule == "FAB-NCCL-DIAG-ENV").collect();
    assert!(!env.is_empty(), "{f:#?}");
    assert!(env.iter().all(|f| f.severity == Severity::Warning));
    let warn = env
        .iter()
        .find(|f| f.subject == "node-b")
        .expect("ranks 4-7 on node-b");
    assert!(warn.message.contains("NCCL_DEBUG=WARN"), "{}", warn.message);
    assert!(
        warn.message.contains("rank(s) 4,5,6,7 on node-b"),
        "{}",
        warn.message
    );
    assert!(env
        .iter()
        .any(|f| f.subject == "node-a" && f.message.contains("NCCL_DEBUG=INFO")));
}

#[test]
fn active_diagnostics_p2p_failures_are_errors_naming_the_edge() {
    let reports = diag::parse(&fixture("diag/05-rccl-active-diagnostics-capture.txt"));
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].kind, "active");
    let mut hosts = diag::RankHosts::new();
    hosts.insert(0, "node01".into());
    hosts.insert(1, "node01".into());
    let f = diag::findings(&reports, &hosts);
    let p2p: Vec<_> = f.iter().filter(|f| f.rule == "FAB-NCCL-DIAG-P2P").collect();
    assert_eq!(p2p.len(), 1, "{f:#?}");
    assert_eq!(p2p[0].severity, Severity::Error);
    assert_eq!(p2p[0].subject, "node01");
    assert!(p2p[0]
        .message
        .contains("write mismatch srcRank=0 dstRank=1"));
    // The partial summary alone (NCCL's documented example) is an error too.
    let only = diag::parse(&fixture("diag/03-nccl-2.32-active-diagnostics.txt"));
    let f = diag::findings(&only, &diag::RankHosts::new());
    assert!(
        f.iter()
            .any(|f| f.rule == "FAB-NCCL-DIAG-P2P" && f.message.contains("52/56")),
        "{f:#?}"
    );
}

#[test]
fn data_unavailable_is_not_a_problem() {
    let reports = diag::parse(&fixture("diag/04-rccl-ras-diagnostics-mi355x-init.txt"));
    assert_eq!(
        reports[0].lines.iter().filter(|l| l.tag == "INFO").count(),
        2
    );
    assert!(diag::findings(&reports, &diag::RankHosts::new()).is_empty());
}

#[test]
fn diag_lines_inside_a_job_log_name_hosts_through_the_log_ranks() {
    let log = "\
node-a:100:100 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0x1234 - Init COMPLETE
node-b:200:200 [0] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0x1234 - Init COMPLETE
node-a:100 NCCL DIAG === RAS Diagnostics ===
node-a:100 NCCL DIAG [INFO] CUDA driver version: mismatch across 2 ranks in comm 0x1234, rank(s) {1} differ from rank 0 (13000)
node-a:100 NCCL DIAG RAS diagnostics completed in 3.0 ms across 2 ranks
";
    let r = analyze_str("job.log", log);
    assert_eq!(r.diag.len(), 1);
    let f = r
        .findings
        .iter()
        .find(|f| f.rule == "FAB-NCCL-DIAG-DRIVER")
        .expect("driver finding");
    assert_eq!(f.subject, "node-b");
    assert!(
        f.message.contains("reference rank 0 on node-a: 13000"),
        "{}",
        f.message
    );
    assert_eq!(r.summary.processes, 2);
}

#[test]
fn monitor_text_and_json_events_keep_the_dead_peer_with_its_host() {
    for (file, group) in [
        ("ras-monitor/01-nccl-ras-monitor-peer-dead-text.txt", None),
        (
            "ras-monitor/02-nccl-ras-monitor-peer-dead-json.txt",
            Some("LIFECYCLE"),
        ),
    ] {
        let mut p = monitor::MonitorParser::new();
        let events: Vec<_> = fixture(file).lines().filter_map(|l| p.line(l)).collect();
        assert_eq!(events.len(), 1, "{file}");
        let e = &events[0];
        assert_eq!(e.event, "PEER_DEAD");
        assert_eq!(e.time, "2025-12-19 13:07:07");
        assert_eq!(e.group.as_deref(), group);
        let peer = e.peer.as_ref().expect("peer");
        assert_eq!(peer.host.as_deref(), Some("172.16.64.245"));
        assert_eq!(peer.pid, Some(1524345));
        assert_eq!(peer.gpus.as_deref(), Some("1"));
        let t = p.finish();
        assert_eq!(t.counts(), (0, 0, 1));
        let f = monitor::findings(&t);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].rule, "FAB-NCCL-RAS-DEAD");
        assert_eq!(f[0].subject, "172.16.64.245");
        assert_eq!(f[0].severity, Severity::Error);
    }
}

#[test]
fn monitor_states_follow_the_events() {
    // Lines in the layouts of rasClientsNotifyEvent: a known peer, then only its RAS address.
    let mut p = monitor::MonitorParser::new();
    for l in [
        "[2026-01-02 10:00:00] PEER_NEW: Process 7 on node n2 managing GPUs 0,1 ",
        "[2026-01-02 10:00:05] PEER_UNRESPONSIVE: n2<28028> peer not responding for 5s (keepalive warning)",
    ] {
        assert!(p.line(l).is_some(), "{l}");
    }
    let rows = p.table().troubled();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].state, monitor::PeerState::Unreachable);
    assert_eq!(
        rows[0].peer.pid,
        Some(7),
        "the address-only event joined the process on n2"
    );
    assert_eq!(rows[0].peer.gpus.as_deref(), Some("0,1"));
    p.line("[2026-01-02 10:00:06] PEER_RECOVERED: n2<28028> peer responding again");
    assert!(p.table().troubled().is_empty());
    p.line("[2026-01-02 10:01:00] PEER_TIMEOUT_DEAD: n2<28028> peer failed to respond for 60s, declaring dead");
    p.line("[2026-01-02 10:01:01] PEER_CONNECTED: n2<28028> connection established successfully");
    assert_eq!(p.table().counts(), (0, 0, 1), "a dead peer stays dead");
    assert!(p
        .line("[rank0]: Traceback (most recent call last):")
        .is_none());
}

#[test]
fn a_monitor_stream_in_a_log_gives_its_findings() {
    let r = analyze_str(
        "mon.txt",
        &fixture("ras-monitor/01-nccl-ras-monitor-peer-dead-text.txt"),
    );
    assert!(r.ras_monitor.is_some());
    assert!(r
        .findings
        .iter()
        .any(|f| f.rule == "FAB-NCCL-RAS-DEAD" && f.subject == "172.16.64.245"));
    assert!(!r.findings.iter().any(|f| f.rule == "FAB-NCCL-NO-LINES"));
}

#[test]
fn inspector_documented_records_are_read() {
    let mut i = Inspector::new();
    let n = i
        .read(
            "a",
            fixture("inspector/example-hostname-pid1639453.log").as_bytes(),
        )
        .expect("read");
    assert_eq!(n, 1);
    i.read(
        "b",
        fixture("inspector/example-hostname-pid438776-verbose.log").as_bytes(),
    )
    .expect("read");
    let r = &i.records()[0];
    assert_eq!(r.op, "AllReduce");
    assert_eq!(r.sn, 1407);
    assert_eq!(r.rank, 2);
    assert_eq!(r.host.as_deref(), Some("example-hostname"));
    assert_eq!(r.exec_us, 61974.0);
    assert_eq!(i.records()[1].start_us, Some(1752867229235181));
    assert!(i.read("c", "{\"header\": 1} not json".as_bytes()).is_err());
}

fn rec(rank: u64, sn: u64, exec: f64, start: Option<u64>) -> Record {
    Record {
        comm: "0xabc".into(),
        comm_name: None,
        op: "AllReduce".into(),
        sn,
        rank,
        n_ranks: Some(4),
        host: Some(format!("node{}", rank / 2)),
        pid: Some(100 + rank),
        bytes: Some(1 << 30),
        exec_us: exec,
        busbw_gbs: None,
        start_us: start,
    }
}

#[test]
fn the_rank_that_starts_last_is_the_straggler_and_is_joined_with_its_nics() {
    // Four ranks, ten collectives; rank 3 starts 2 ms late in each (its kernel is the shortest).
    let mut records = Vec::new();
    for sn in 0..10 {
        for rank in 0..4 {
            let late = rank == 3;
            records.push(rec(rank, sn, if late { 8000.0 } else { 10000.0 }, None));
        }
    }
    let mut nics = std::collections::BTreeMap::new();
    nics.insert("node1:103".to_string(), vec!["mlx5_3".to_string()]);
    let r = analyze(records, 0, &nics);
    assert_eq!(r.compared, 10);
    assert_eq!(r.stragglers.len(), 10);
    assert!(r
        .stragglers
        .iter()
        .all(|s| s.rank == 3 && s.lag_us == 2000.0 && s.by == "exec"));
    assert_eq!(r.findings.len(), 1);
    assert_eq!(r.findings[0].subject, "node1");
    assert!(
        r.findings[0].message.contains("NIC(s) mlx5_3"),
        "{}",
        r.findings[0].message
    );
    // With start times, the latest start decides, whatever the execution times.
    let mut records = Vec::new();
    for sn in 0..4 {
        for rank in 0..4 {
            let start = 1_000_000 + if rank == 1 { 5000 } else { 10 * rank };
            records.push(rec(rank, sn, 9000.0, Some(start)));
        }
    }
    let r = analyze(records, 0, &std::collections::BTreeMap::new());
    assert!(r.stragglers.iter().all(|s| s.rank == 1 && s.by == "start"));
    // A healthy job (jitter below the noise floor) has no straggler.
    let records: Vec<_> = (0..4)
        .map(|rank| rec(rank, 0, 10000.0 - rank as f64 * 20.0, None))
        .collect();
    assert!(analyze(records, 0, &std::collections::BTreeMap::new())
        .stragglers
        .is_empty());
}

#[test]
fn a_real_one_rank_job_answers_status_and_its_log_is_healthy() {
    // Captured from a live NCCL 2.28.9 job on an H200 by testbed/gpu/ras-live.sh.
    let r = analyze_str(
        "status.txt",
        &fixture("ras-live/01-nccl-2.28.9-h200-one-rank-status.txt"),
    );
    let ras = r.ras.as_ref().expect("the STATUS answer is a RAS report");
    assert_eq!(ras.format, "text");
    assert_eq!(ras.nccl_version.as_deref(), Some("2.28.9"));
    assert_eq!(
        (ras.nodes, ras.processes, ras.gpus),
        (Some(1), Some(1), Some(1))
    );
    assert_eq!(ras.groups.len(), 1);
    assert_eq!(ras.groups[0].status, "RUNNING");
    assert!(
        ras.groups[0].errors.iter().all(|e| e == "OK"),
        "{:?}",
        ras.groups[0]
    );
    assert!(ras.dead_processes.is_empty() && ras.comm_issues.is_empty());
    assert!(
        r.findings.iter().all(|f| f.severity != Severity::Error),
        "{:?}",
        r.findings
    );

    let log = analyze_str(
        "job.log",
        &fixture("ras-live/02-nccl-2.28.9-h200-one-rank-job.log"),
    );
    assert_eq!(log.summary.nccl_version.as_deref(), Some("2.28.9"));
    assert_eq!(log.summary.processes, 1);
    assert!(
        log.findings.iter().all(|f| f.severity != Severity::Error),
        "{:?}",
        log.findings
    );
}
