//! Every algorithm (`ring`, `rd`, `tree`, and `auto` across its thresholds; alltoall runs
//! Bruck's under `rd` and `tree`, the pairwise exchange under `ring`) through the sweep's
//! own checker, on every operation, element type and reduction, for 1, 2, 3, 5, 7 and 8 ranks
//! (powers of two and not), over in-memory links and over loopback TCP. Ranks are threads; one
//! communicator per rank serves every configuration, so set-up is paid once per group.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Mutex;
use std::time::Duration;

use fabrik_cluster::collective::{AlgoChoice, Algorithm, CollOp, Comm, RD_MAX_BYTES};
use fabrik_cluster::dtype::{DType, RedOp};
use fabrik_cluster::sweep::{run_sweep, SweepConfig};

const RANKS: [u32; 6] = [1, 2, 3, 5, 7, 8];
const ALGOS: [AlgoChoice; 4] = [
    AlgoChoice::Ring,
    AlgoChoice::Rd,
    AlgoChoice::Tree,
    AlgoChoice::Auto,
];
const REDOPS: [RedOp; 5] = [RedOp::Sum, RedOp::Prod, RedOp::Max, RedOp::Min, RedOp::Avg];

#[derive(Clone, Copy, Debug)]
enum Transport {
    Mem,
    Tcp,
}

/// The configurations one group runs with `algo`: float sum at sizes from a few elements to past
/// the `auto` threshold (where `auto` switches to rings), and for the latency-bound algorithms
/// every dtype and reduction at one odd size (the ring's are in tests/collectives.rs).
fn configs(n: u32, algo: AlgoChoice) -> Vec<SweepConfig> {
    let every_type = matches!(algo, AlgoChoice::Rd | AlgoChoice::Tree);
    let mut out = Vec::new();
    for op in CollOp::ALL {
        let root = if op.rooted() { n / 2 } else { 0 };
        let redops: &[RedOp] = if op.reduces() { &REDOPS } else { &[RedOp::Sum] };
        for dtype in DType::ALL.into_iter().filter(|_| every_type) {
            for &redop in redops {
                out.push(cfg(op, dtype, redop, root, vec![1000]));
            }
        }
        let past = (RD_MAX_BYTES as u64) * 4;
        out.push(cfg(
            op,
            DType::Float,
            RedOp::Sum,
            root,
            vec![4, 12, 4100, past],
        ));
    }
    out
}

fn cfg(op: CollOp, dtype: DType, redop: RedOp, root: u32, sizes: Vec<u64>) -> SweepConfig {
    SweepConfig {
        op,
        dtype,
        redop,
        root,
        sizes,
        warmup: 0,
        iters: 1,
        check: true,
    }
}

/// Runs every configuration with `algo` on a group of `n` over `transport`; returns how many
/// rows rank 0 got, after asserting that none had a wrong element.
fn run_group(n: u32, transport: Transport, algo: AlgoChoice) -> usize {
    let mem: Vec<Option<Comm>> = match transport {
        Transport::Mem => Comm::in_memory(n, 2, 1000, 4096, Duration::from_secs(20))
            .unwrap()
            .into_iter()
            .map(Some)
            .collect(),
        Transport::Tcp => (0..n).map(|_| None).collect(),
    };
    let mem = Mutex::new(mem);
    let rows = common::on_ranks(n, Duration::from_secs(30), move |rank, mut g| {
        let given = mem.lock().unwrap()[rank as usize].take();
        let mut comm = match given {
            Some(c) => c,
            None => fabrik_cluster::transport::Transport::connect_comm(
                &fabrik_cluster::transport::Tcp,
                &mut g,
                2,
                true,
                4096,
            )
            .unwrap(),
        };
        comm.set_algo(algo);
        let mut rows = 0;
        for c in configs(n, algo) {
            run_sweep(&mut g, &comm, &c, &mut |row, first| {
                assert!(
                    first.is_none(),
                    "{transport:?} {algo:?} n={n} {:?} {:?} {:?}: {}",
                    c.op,
                    c.dtype,
                    c.redop,
                    first.unwrap()
                );
                for t in [&row.out_of_place, &row.in_place] {
                    assert_eq!(t.as_ref().unwrap().wrong, Some(0), "{row:?}");
                }
                rows += 1;
            })
            .unwrap();
        }
        rows
    });
    rows.into_iter().sum()
}

fn every_algorithm_over(transport: Transport) {
    for n in RANKS {
        for algo in ALGOS {
            let want: usize = configs(n, algo).iter().map(|c| c.sizes.len()).sum();
            assert_eq!(
                run_group(n, transport, algo),
                want,
                "{transport:?} {algo:?} n={n}"
            );
        }
    }
}

#[test]
fn every_algorithm_is_correct_over_in_memory_links() {
    every_algorithm_over(Transport::Mem);
}

#[test]
fn every_algorithm_is_correct_over_tcp() {
    every_algorithm_over(Transport::Tcp);
}

#[test]
fn auto_picks_latency_algorithms_for_small_buffers_and_rings_for_large() {
    let comms = Comm::in_memory(5, 2, 1000, 4096, Duration::from_secs(5)).unwrap();
    let c = &comms[0];
    let small = 1024;
    let large = RD_MAX_BYTES * 16;
    assert_eq!(c.algorithm(CollOp::AllReduce, small), Algorithm::Rd);
    assert_eq!(c.algorithm(CollOp::ReduceScatter, small), Algorithm::Rd);
    assert_eq!(c.algorithm(CollOp::AllGather, small), Algorithm::Bruck);
    assert_eq!(c.algorithm(CollOp::Broadcast, small), Algorithm::Tree);
    assert_eq!(c.algorithm(CollOp::Reduce, small), Algorithm::Tree);
    // 1024 bytes over 5 ranks: 204-byte blocks, Bruck's alltoall; 2 KiB blocks, pairwise.
    assert_eq!(c.algorithm(CollOp::Alltoall, small), Algorithm::Bruck);
    assert_eq!(c.algorithm(CollOp::Alltoall, 5 * 2048), Algorithm::Pairwise);
    for op in [
        CollOp::AllReduce,
        CollOp::AllGather,
        CollOp::ReduceScatter,
        CollOp::Broadcast,
        CollOp::Reduce,
    ] {
        assert_eq!(c.algorithm(op, large), Algorithm::Ring, "{op:?}");
    }
}

#[test]
fn a_forced_choice_overrides_size_and_a_missing_mesh_leaves_only_rings() {
    let mut comms = Comm::in_memory(3, 1, 1000, 4096, Duration::from_secs(5)).unwrap();
    let c = &mut comms[1];
    c.set_algo(AlgoChoice::Ring);
    assert_eq!(c.algorithm(CollOp::AllReduce, 8), Algorithm::Ring);
    c.set_algo(AlgoChoice::Tree);
    assert_eq!(c.algorithm(CollOp::AllReduce, 1 << 30), Algorithm::Tree);
    assert_eq!(c.algorithm(CollOp::AllGather, 1 << 30), Algorithm::Bruck);
    c.set_algo(AlgoChoice::Rd);
    assert_eq!(c.algorithm(CollOp::Broadcast, 1 << 30), Algorithm::Tree);
    assert_eq!(c.algorithm(CollOp::Alltoall, 1 << 30), Algorithm::Bruck);
    c.set_algo(AlgoChoice::Ring);
    assert_eq!(c.algorithm(CollOp::Alltoall, 8), Algorithm::Pairwise);
    // Three ranks under auto: the pairwise exchange's two steps are Bruck's two.
    c.set_algo(AlgoChoice::Auto);
    assert_eq!(c.algorithm(CollOp::Alltoall, 8), Algorithm::Pairwise);

    // Three ranks with ring lanes only: a non-neighbour cannot be reached.
    let (a, b) = fabrik_cluster::mem_pair(100, Duration::from_secs(1));
    let (c2, d) = fabrik_cluster::mem_pair(100, Duration::from_secs(1));
    let lanes: Vec<(Box<dyn fabrik_cluster::Link>, Box<dyn fabrik_cluster::Link>)> =
        vec![(Box::new(a), Box::new(c2))];
    let mut ringonly = Comm::from_links(0, 3, vec![], lanes, vec![], 4096).unwrap();
    ringonly.set_algo(AlgoChoice::Rd);
    assert_eq!(ringonly.algorithm(CollOp::AllReduce, 8), Algorithm::Ring);
    drop((b, d));
}

#[test]
fn algorithm_names_parse_and_unknown_ones_are_refused() {
    for (s, a) in [
        ("ring", AlgoChoice::Ring),
        ("rd", AlgoChoice::Rd),
        ("tree", AlgoChoice::Tree),
        ("auto", AlgoChoice::Auto),
    ] {
        assert_eq!(s.parse::<AlgoChoice>().unwrap(), a);
    }
    let e = "bruck".parse::<AlgoChoice>().unwrap_err().to_string();
    assert!(e.contains("ring, rd, tree or auto"), "{e}");
}
