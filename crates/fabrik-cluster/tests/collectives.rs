//! Every collective, verified, with ranks as threads joined over loopback TCP.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use fabrik_cluster::collective::CollOp;
use fabrik_cluster::dtype::{DType, RedOp};
use fabrik_cluster::sweep::{run_sweep, SweepConfig};
use fabrik_cluster::transport::{Tcp, Transport};
use fabrik_model::CollectiveRow;

/// Runs `cfg` on `n` thread-ranks with `channels` lanes; returns rank 0's rows.
fn sweep(n: u32, channels: usize, chunk: usize, cfg: SweepConfig) -> Vec<CollectiveRow> {
    let per_rank = common::on_ranks(n, Duration::from_secs(20), move |_, mut g| {
        let mesh = cfg.op == CollOp::Alltoall;
        let comm = Tcp.connect_comm(&mut g, channels, mesh, chunk).unwrap();
        let mut rows = Vec::new();
        run_sweep(&mut g, &comm, &cfg, &mut |row, first| {
            assert!(first.is_none(), "{:?}: {}", cfg.op, first.unwrap());
            rows.push(row.clone());
        })
        .unwrap();
        rows
    });
    per_rank.into_iter().flatten().collect()
}

fn cfg(op: CollOp, dtype: DType, redop: RedOp, root: u32, sizes: Vec<u64>) -> SweepConfig {
    SweepConfig {
        op,
        dtype,
        redop,
        root,
        sizes,
        warmup: 1,
        iters: 2,
        check: true,
    }
}

fn assert_clean(rows: &[CollectiveRow], expect: usize) {
    assert_eq!(rows.len(), expect);
    for r in rows {
        for t in [&r.out_of_place, &r.in_place] {
            let t = t.as_ref().unwrap();
            assert_eq!(t.wrong, Some(0), "{r:?}");
            assert!(t.time_us > 0.0 || r.size == 0);
        }
    }
}

#[test]
fn every_op_is_correct_on_odd_and_even_rings_with_several_channels() {
    // Sizes that do not divide evenly by ranks or channels, and ones larger than a chunk.
    let sizes = vec![4, 12, 1000, 40_004, 300_000];
    for n in [1, 2, 3, 5] {
        for op in CollOp::ALL {
            for channels in [1, 3] {
                let root = if op.rooted() { n / 2 } else { 0 };
                let rows = sweep(
                    n,
                    channels,
                    4096,
                    cfg(op, DType::Float, RedOp::Sum, root, sizes.clone()),
                );
                assert_clean(&rows, sizes.len());
            }
        }
    }
}

#[test]
fn every_dtype_and_redop_is_correct() {
    for dtype in DType::ALL {
        for redop in [RedOp::Sum, RedOp::Prod, RedOp::Max, RedOp::Min, RedOp::Avg] {
            let rows = sweep(
                4,
                2,
                1 << 16,
                cfg(CollOp::AllReduce, dtype, redop, 0, vec![1 << 12, 1 << 18]),
            );
            assert_clean(&rows, 2);
            assert_eq!(rows[0].dtype, dtype.name());
            assert_eq!(rows[0].redop.as_deref(), Some(redop.name()));
        }
        let rows = sweep(
            3,
            1,
            1 << 16,
            cfg(CollOp::Reduce, dtype, RedOp::Max, 2, vec![1 << 14]),
        );
        assert_clean(&rows, 1);
    }
}

#[test]
fn bandwidth_columns_follow_nccl_tests_factors() {
    let rows = sweep(
        4,
        1,
        1 << 20,
        cfg(
            CollOp::AllReduce,
            DType::Float,
            RedOp::Sum,
            0,
            vec![1 << 20],
        ),
    );
    let t = rows[0].out_of_place.clone().unwrap();
    assert!((t.algbw - (1u64 << 20) as f64 / t.time_us / 1e3).abs() < 1e-9);
    assert!((t.busbw - t.algbw * 1.5).abs() < 1e-9);
    assert_eq!((rows[0].count, rows[0].root), (1 << 18, Some(-1)));
}
