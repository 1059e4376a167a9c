//! NCCL RAS reports: the three real `ncclras` text reports of fixtures/nccl-logs (50-52, copied
//! from public NCCL issues; ground truth in that folder's README on the logs-corpus branch) and
//! reports written from NCCL's own format strings (src/ras/client_support.cc at v2.24.3 for the
//! older text, v2.28.9 for JSON).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use fabrik_model::Severity;
use fabrik_parse::nccl_log::{analyze_paths, analyze_str, LogReport};
use fabrik_parse::ras::{parse_json, RasTextParser};

fn load(name: &str) -> LogReport {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/nccl-logs")
        .join(name);
    analyze_paths(&[p]).expect("fixture readable")
}

fn finding<'a>(r: &'a LogReport, rule: &str) -> &'a fabrik_model::Finding {
    r.findings
        .iter()
        .find(|f| f.rule == rule)
        .unwrap_or_else(|| panic!("no {rule} in {:?}", r.findings))
}

#[test]
fn f50_mismatch_names_the_counts_and_the_listed_ranks() {
    let r = load("50-nccl-2.26.2-ras-mismatch-allgather-4-nodes.log");
    let ras = r.ras.as_ref().expect("RAS report read");
    assert_eq!(ras.nccl_version.as_deref(), Some("2.26.2"));
    assert_eq!(
        (ras.nodes, ras.processes, ras.gpus),
        (Some(4), Some(32), Some(32))
    );
    assert_eq!(ras.groups.len(), 1);
    assert_eq!(ras.groups[0].status, "RUNNING");
    assert_eq!(ras.groups[0].errors, vec!["MISMATCH"]);
    let i = &ras.comm_issues[0];
    assert_eq!(
        (i.id.as_str(), i.hash.as_str(), i.kind.as_str()),
        ("#0-0", "fa93daea854b060b", "MISMATCH")
    );
    assert_eq!(i.op.as_deref(), Some("AllGather"));
    assert_eq!(i.counts.len(), 2);
    assert_eq!((i.counts[0].count, i.counts[0].value.as_str()), (30, "640"));
    assert_eq!(i.counts[1].ranks.len(), 2);
    assert_eq!(i.counts[1].ranks[0].rank, Some(12));
    assert_eq!(i.counts[1].ranks[0].gpu.as_deref(), Some("4"));
    assert_eq!(i.counts[1].ranks[0].pid, Some(323032));
    assert_eq!(i.counts[1].ranks[0].node.as_deref(), Some("10.137.190.124"));
    assert_eq!((r.summary.hosts, r.summary.processes), (4, 32));
    assert_eq!(
        r.summary.text,
        "NCCL RAS report (NCCL 2.26.2): 4 node(s), 32 process(es), 32 GPU(s); group 0 RUNNING MISMATCH; 0 error(s)"
    );
    let f = finding(&r, "FAB-NCCL-RAS-MISMATCH");
    assert_eq!(f.severity, Severity::Warning);
    assert!(
        f.message
            .contains("lagging ranks are the 30 that have not reached AllGather 641"),
        "{}",
        f.message
    );
    assert!(
        f.message
            .contains("rank 12 (GPU 4, process 323032, node 10.137.190.124)"),
        "{}",
        f.message
    );
    // A straggler, not a failure: no error, and no "set NCCL_DEBUG" hint for a RAS report.
    assert!(
        r.findings.iter().all(|f| f.severity != Severity::Error),
        "{:?}",
        r.findings
    );
    assert!(!r.findings.iter().any(|f| f.rule == "FAB-NCCL-NO-LINES"));
}

#[test]
fn f51_ras_ok_beside_a_watchdog_timeout() {
    let r = load("51-nccl-2.26.2-ras-ok-torch-watchdog-timeout.log");
    let ras = r.ras.as_ref().unwrap();
    assert_eq!((ras.nodes, ras.processes), (Some(32), Some(256)));
    assert_eq!(ras.groups[0].errors, vec!["OK"]);
    assert!(ras.comm_issues.is_empty());
    assert!(!r
        .findings
        .iter()
        .any(|f| f.rule.starts_with("FAB-NCCL-RAS")));
    // The watchdog line is read as what it is.
    assert!(r.findings.iter().any(|f| f.rule == "FAB-NCCL-TIMEOUT"));
}

#[test]
fn f52_outlier_node_and_a_miscounted_report() {
    let r = load("52-nccl-2.27.3-ras-incomplete-mismatch-outlier-node.log");
    let ras = r.ras.as_ref().unwrap();
    assert_eq!(
        (ras.nodes, ras.processes, ras.gpus),
        (Some(2), Some(10), Some(10))
    );
    assert_eq!(ras.outlier_nodes.len(), 1);
    assert_eq!(ras.outlier_nodes[0].node, "10.4.109.13");
    assert_eq!(ras.outlier_nodes[0].pids, vec![60004, 60035]);
    assert_eq!(ras.groups.len(), 3);
    assert_eq!(ras.groups[2].status, "NOCOMM");
    assert_eq!(ras.groups[2].errors, vec!["INCOMPLETE", "MISMATCH"]);
    assert_eq!(ras.missing_process_count, Some(1));
    assert_eq!(ras.missing_processes[0].pid, Some(60004));
    let f = finding(&r, "FAB-NCCL-RAS-OUTLIER");
    assert!(
        f.message.contains("10.4.109.13 (processes 60004,60035)"),
        "{}",
        f.message
    );
    // `Rank 1057455228` of a 2-rank communicator: RAS's own miscount (NVIDIA/nccl#1762), not
    // an error of the job.
    let inc: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.rule == "FAB-NCCL-RAS-INCOMPLETE")
        .collect();
    assert!(!inc.is_empty());
    assert!(inc
        .iter()
        .all(|f| f.severity == Severity::Warning && f.message.contains("nccl#1762")));
}

/// v2.24.3 client_support.cc: `Communicator ranks have different collective operation counts`,
/// `Rank %d has launched up to operation %ld -- GPU %s managed by process %d on node %s`, and a
/// `DEAD` block; quoted as pasted in an issue.
#[test]
fn older_text_dead_processes_and_single_lagging_rank() {
    let text = "\
> NCCL version 2.24.3 compiled with CUDA 12.6
> CUDA runtime version 12060, driver version 12040
>
> Job summary
> ===========
>
>   Nodes  Processes         GPUs  Processes     GPUs
> (total)   per node  per process    (total)  (total)
>       2          4            1          8        8
>
> Communicators... (0.01s)
> =============
>
> Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
>     #  in group  per comm  per node  per comm  in group
>     0         1         2         4         8         8   RUNNING  MISMATCH
>
> Errors
> ======
>
> DEAD
>   1 job process is considered dead (unreachable via the RAS network)
>   Process 4711 on node 10.0.0.2 managing GPU 3
>
> Warnings
> ========
>
> #0-0 (0123456789abcdef) MISMATCH
>   Communicator ranks have different collective operation counts
>   7 ranks have launched up to operation 1200
>   Rank 7 has launched up to operation 1187 -- GPU 3 managed by process 4711 on node 10.0.0.2
";
    let r = analyze_str("ras.txt", text);
    let ras = r.ras.as_ref().unwrap();
    assert_eq!(ras.dead_process_count, Some(1));
    let dead = finding(&r, "FAB-NCCL-RAS-DEAD");
    assert_eq!(dead.severity, Severity::Error);
    assert_eq!(dead.subject, "10.0.0.2");
    assert!(dead.message.contains("process 4711"), "{}", dead.message);
    let m = finding(&r, "FAB-NCCL-RAS-MISMATCH");
    assert!(
        m.message
            .contains("lagging ranks are the 1 that have not reached collective 1200"),
        "{}",
        m.message
    );
    assert!(
        m.message
            .contains("wait for them: rank 7 (GPU 3, process 4711, node 10.0.0.2)"),
        "{}",
        m.message
    );
    // A parser fed line by line gives the same report.
    let mut p = RasTextParser::new();
    for l in text.lines() {
        p.line(l);
    }
    assert_eq!(p.finish().as_ref(), r.ras.as_ref());
}

/// v2.28.9 jsonWriteHeader / jsonStartCommunicator / jsonWriteRankData / jsonWriteMissingRank /
/// jsonWriteFooter, for a 3-rank communicator on 3 nodes: rank 2 behind on AllReduce, rank 1
/// with an async error, and one missing rank considered dead.
const RAS_JSON: &str = r#"{
  "nccl_version": "2.28.9",
  "cuda_runtime_version": 12090,
  "cuda_driver_version": 12090,
  "timestamp": "2025-11-20 10:11:12",
  "communicators_count": 1,
  "communicators": [
    {
      "hash": "0x5a1b2c3d4e5f6071",
      "secondary_hash": "0x11:0x22",
      "size": 4,
      "ranks_count": 3,
      "missing_ranks_count": 1,
      "ranks": [
        {
          "rank": 0,
          "host": "node-a",
          "pid": 1001,
          "cuda_dev": 0,
          "nvml_dev": 0,
          "status": {
            "init_state": 0,
            "async_error": 0,
            "finalize_called": false,
            "destroy_flag": false,
            "abort_flag": false
          },
          "collective_counts": {
            "Broadcast": 0,
            "AllReduce": 512
          }
        },
        {
          "rank": 1,
          "host": "node-b",
          "pid": 2002,
          "cuda_dev": 0,
          "nvml_dev": 0,
          "status": {
            "init_state": 0,
            "async_error": 6,
            "finalize_called": false,
            "destroy_flag": false,
            "abort_flag": false
          },
          "collective_counts": {
            "Broadcast": 0,
            "AllReduce": 512
          }
        },
        {
          "rank": 2,
          "host": "node-c",
          "pid": 3003,
          "cuda_dev": 1,
          "nvml_dev": 1,
          "status": {
            "init_state": 0,
            "async_error": 0,
            "finalize_called": false,
            "destroy_flag": false,
            "abort_flag": false
          },
          "collective_counts": {
            "Broadcast": 0,
            "AllReduce": 511
          }
        }
      ],
      "missing_ranks": [
        {
          "rank": 3,
          "host": "node-d",
          "pid": 4004,
          "cuda_dev": 0,
          "nvml_dev": 0,
          "status": {
            "unresponsive": true,
            "considered_dead": true
          }
        }
      ]
    }
  ],
  "ras": {
    "collection_time_sec": 0.012,
    "timeouts_count": 0
  }
}
"#;

#[test]
fn json_report_from_2_28() {
    let ras = parse_json(RAS_JSON).expect("json");
    assert_eq!(ras.format, "json");
    assert_eq!((ras.nodes, ras.processes), (Some(3), Some(3)));
    let r = analyze_str("ras.json", RAS_JSON);
    assert!(r.ras.is_some());
    let m = finding(&r, "FAB-NCCL-RAS-MISMATCH");
    assert!(
        m.message
            .contains("rank 2 (GPU 1, process 3003, node node-c)"),
        "{}",
        m.message
    );
    let e = finding(&r, "FAB-NCCL-RAS-ERROR");
    assert!(
        e.message
            .contains("rank 1 (GPU 0, process 2002, node node-b)"),
        "{}",
        e.message
    );
    let d = finding(&r, "FAB-NCCL-RAS-DEAD");
    assert_eq!(d.subject, "node-d");
    let i = finding(&r, "FAB-NCCL-RAS-INCOMPLETE");
    assert_eq!(i.severity, Severity::Error);
    assert!(parse_json("{\"communicators\": 3}").is_none());
    assert!(parse_json("not json").is_none());
}
