//! `bench collective` as a library call ([`fabrik_cluster::bench::run_collective`]) on ranks
//! joined over loopback: what rank 0 is told while it runs, and the report it gets back.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use fabrik_cluster::backend::{BackendChoice, BackendOptions};
use fabrik_cluster::bench::{run_collective, summary, Observer};
use fabrik_cluster::collective::{AlgoChoice, CollOp};
use fabrik_cluster::dtype::{DType, RedOp};
use fabrik_cluster::sweep::SweepConfig;
use fabrik_cluster::transport::TransportChoice;
use fabrik_model::{CollectiveRow, RankDevice};

#[derive(Default)]
struct Seen {
    banner: Option<String>,
    devices: Vec<RankDevice>,
    rows: Vec<(u64, usize)>,
}

impl Observer for Seen {
    fn started(&mut self, banner: Option<&str>, devices: &[RankDevice]) {
        self.banner = banner.map(str::to_string);
        self.devices = devices.to_vec();
    }

    fn row(&mut self, row: &CollectiveRow, done: usize) {
        self.rows.push((row.size, done));
    }
}

fn cfg() -> SweepConfig {
    SweepConfig {
        op: CollOp::AllReduce,
        dtype: DType::Float,
        redop: RedOp::Sum,
        root: 0,
        sizes: vec![1024, 64 << 10],
        warmup: 1,
        iters: 2,
        check: true,
    }
}

#[test]
fn three_ranks_over_tcp_report_every_size_verified_to_rank_0() {
    let out = common::on_ranks(3, Duration::from_secs(30), |_, mut g| {
        let opts = BackendOptions {
            choice: BackendChoice::Host(TransportChoice::Tcp),
            channels: 2,
            algo: AlgoChoice::Ring,
            ..BackendOptions::default()
        };
        let mut seen = Seen::default();
        let outcome = run_collective(&mut g, &cfg(), &opts, &mut seen).unwrap();
        (outcome, seen)
    });
    for (outcome, seen) in &out[1..] {
        assert!(outcome.is_none());
        assert!(seen.rows.is_empty() && seen.devices.is_empty());
    }
    let (outcome, seen) = &out[0];
    let o = outcome.as_ref().unwrap();
    assert!(o.error.is_none());
    assert_eq!((o.wrong_total, o.first_wrong.len()), (0, 0));
    let r = &o.report;
    assert_eq!(
        (r.op.as_str(), r.backend.as_deref(), r.ranks),
        ("all_reduce", Some("tcp"), Some(3))
    );
    assert_eq!(r.hosts, ["h0", "h1", "h2"]);
    assert_eq!(
        r.rows.iter().map(|row| row.size).collect::<Vec<_>>(),
        [1024, 64 << 10]
    );
    assert_eq!(seen.rows, [(1024, 1), (64 << 10, 2)]);
    // The average is nccl-tests': every timed run of every size, out of place and in place.
    let runs: Vec<f64> = r
        .rows
        .iter()
        .flat_map(|row| [&row.out_of_place, &row.in_place])
        .flatten()
        .map(|t| t.busbw)
        .collect();
    assert_eq!(runs.len(), 4);
    let avg = runs.iter().sum::<f64>() / 4.0;
    assert_eq!(r.avg_busbw, Some(avg));
    assert!(avg > 0.0);
    assert_eq!(
        r.notes,
        [
            "channels 2, chunk 65536 B, warm-up 1, iterations 2",
            "algorithm (ring): ring 1024-65536 B"
        ]
    );
    assert_eq!(
        seen.banner.as_deref(),
        Some("# Algorithm (ring): ring 1024-65536 B")
    );
    assert_eq!(seen.devices.len(), 3);
    assert_eq!(
        seen.devices[2].name.as_deref(),
        Some("host memory (tcp, 2 channels)")
    );
    assert_eq!(r.devices, seen.devices);
}

#[test]
fn the_summary_is_the_mean_of_every_timed_run_and_the_sum_of_wrong_elements() {
    use fabrik_model::CollTiming;
    let t = |busbw: f64, wrong: Option<u64>| CollTiming {
        time_us: 1.0,
        algbw: busbw,
        busbw,
        wrong,
    };
    let row = |size: u64, oop: Option<CollTiming>, ip: Option<CollTiming>| CollectiveRow {
        size,
        count: size / 4,
        dtype: "float".into(),
        redop: Some("sum".into()),
        root: Some(-1),
        out_of_place: oop,
        in_place: ip,
    };
    assert_eq!(summary(&[]), (0.0, 0));
    let rows = [
        row(8, Some(t(1.0, Some(0))), Some(t(3.0, Some(2)))),
        row(16, Some(t(5.0, None)), None),
    ];
    assert_eq!(summary(&rows), (3.0, 2));
}

#[test]
fn backend_and_transport_names_parse_and_unknown_ones_list_the_known() {
    assert_eq!(
        "nccl".parse::<BackendChoice>().unwrap(),
        BackendChoice::Nccl
    );
    assert_eq!(
        "auto".parse::<BackendChoice>().unwrap(),
        BackendChoice::Host(TransportChoice::Auto)
    );
    assert_eq!(
        "rdma".parse::<TransportChoice>().unwrap(),
        TransportChoice::Rdma
    );
    assert_eq!(
        "ucx".parse::<BackendChoice>().unwrap_err().to_string(),
        "unknown backend \"ucx\" (tcp, rdma, auto or nccl)"
    );
    assert_eq!(
        "nccl".parse::<TransportChoice>().unwrap_err().to_string(),
        "unknown transport \"nccl\" (tcp, rdma or auto)"
    );
}
