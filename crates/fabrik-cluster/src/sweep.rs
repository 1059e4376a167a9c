//! A collective sweep as nccl-tests runs it: for each size, warm-up, timed out-of-place and
//! in-place loops, then (with `check`) one verified run of each; rank 0 gathers every rank's
//! timing and wrong-element count and builds the row.

use std::time::Instant;

use fabrik_model::{busbw_factor, CollTiming, CollectiveRow};
use half::{bf16, f16};
use serde::{Deserialize, Serialize};

use crate::collective::{CollOp, Comm};
use crate::dtype::{expected_reduction, move_input, reduce_input, DType, Elem, RedOp};
use crate::rendezvous::Group;
use crate::ClusterError;

/// One collective sweep: what to run, at which sizes, how often.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepConfig {
    /// The operation.
    pub op: CollOp,
    /// The element type.
    pub dtype: DType,
    /// The reduction operator (for reducing operations).
    pub redop: RedOp,
    /// The root rank (for rooted operations).
    pub root: u32,
    /// Sizes in bytes, run in order.
    pub sizes: Vec<u64>,
    /// Untimed iterations per size.
    pub warmup: u32,
    /// Timed iterations per size.
    pub iters: u32,
    /// Check every result against the expected values.
    pub check: bool,
}

/// The first element that was not what it should be.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WrongElement {
    /// The rank that held it.
    pub rank: u32,
    /// Its element index.
    pub index: u64,
    /// The value expected.
    pub expected: f64,
    /// The value found.
    pub got: f64,
    /// Whether it was the in-place run.
    pub in_place: bool,
    /// The size being run, in bytes.
    pub size: u64,
}

impl std::fmt::Display for WrongElement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "rank {} element {} ({}, {} B): expected {}, got {}",
            self.rank,
            self.index,
            if self.in_place {
                "in-place"
            } else {
                "out-of-place"
            },
            self.size,
            self.expected,
            self.got
        )
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RankResult {
    pub(crate) oop_us: f64,
    pub(crate) ip_us: f64,
    pub(crate) wrong_oop: u64,
    pub(crate) wrong_ip: u64,
    pub(crate) first_wrong: Option<WrongElement>,
}

impl RankResult {
    /// The result of the timed runs (`times`, out of place then in place, in µs) and of their
    /// checked runs (wrong elements and the first of them); the first wrong element out of
    /// place is the one named.
    pub(crate) fn new(times: [f64; 2], checked: [(u64, Option<WrongElement>); 2]) -> Self {
        let [(wrong_oop, first_oop), (wrong_ip, first_ip)] = checked;
        RankResult {
            oop_us: times[0],
            ip_us: times[1],
            wrong_oop,
            wrong_ip,
            first_wrong: first_oop.or(first_ip),
        }
    }
}

/// Sizes from `min` to `max`, as every sweep of fabrik makes them.
pub use fabrik_model::size::sweep as sizes;

/// Element counts for a size: (count per buffer as nccl-tests prints it, elements in the send
/// buffer, elements in the receive buffer, bytes moved for the bandwidth).
pub fn counts(op: CollOp, dtype: DType, size: u64, ranks: u32) -> (u64, u64, u64, u64) {
    let elt = dtype.size() as u64;
    let n = u64::from(ranks.max(1));
    let count = size / elt;
    match op {
        CollOp::AllReduce | CollOp::Broadcast | CollOp::Reduce => {
            (count, count, count, count * elt)
        }
        CollOp::AllGather | CollOp::ReduceScatter | CollOp::Alltoall => {
            // Per-rank blocks aligned to 16 bytes, as nccl-tests does.
            let align = (16 / elt).max(1);
            let base = (count / n) & !(align - 1);
            let (send, recv) = match op {
                CollOp::AllGather => (base, base * n),
                CollOp::ReduceScatter => (base * n, base),
                _ => (base * n, base * n),
            };
            (base, send, recv, base * n * elt)
        }
    }
}

/// Runs the sweep on this rank. Rank 0 gets each finished row through `on_row` (so a run that
/// fails half-way keeps its rows) and the first wrong elements in the result.
pub fn run_sweep(
    group: &mut Group,
    comm: &Comm,
    cfg: &SweepConfig,
    on_row: &mut dyn FnMut(&CollectiveRow, Option<&WrongElement>),
) -> Result<(), ClusterError> {
    sweep_sizes(group, cfg, on_row, |group, size| match cfg.dtype {
        DType::Int8 => run_size::<i8>(group, comm, cfg, size),
        DType::Uint8 => run_size::<u8>(group, comm, cfg, size),
        DType::Int32 => run_size::<i32>(group, comm, cfg, size),
        DType::Uint32 => run_size::<u32>(group, comm, cfg, size),
        DType::Int64 => run_size::<i64>(group, comm, cfg, size),
        DType::Uint64 => run_size::<u64>(group, comm, cfg, size),
        DType::Half => run_size::<f16>(group, comm, cfg, size),
        DType::Float => run_size::<f32>(group, comm, cfg, size),
        DType::Double => run_size::<f64>(group, comm, cfg, size),
        DType::Bfloat16 => run_size::<bf16>(group, comm, cfg, size),
    })
}

/// The size loop every backend shares: checks the root, runs `run_size` for each size on this
/// rank, and has rank 0 gather every rank's result into a row for `on_row`. A rank whose size
/// fails tells the others (`Group::fail`) so that nobody waits for it.
pub(crate) fn sweep_sizes(
    group: &mut Group,
    cfg: &SweepConfig,
    on_row: &mut dyn FnMut(&CollectiveRow, Option<&WrongElement>),
    mut run_size: impl FnMut(&mut Group, u64) -> Result<RankResult, ClusterError>,
) -> Result<(), ClusterError> {
    if cfg.op.rooted() && cfg.root >= group.size() {
        return Err(ClusterError::NotARank {
            role: "root",
            rank: cfg.root,
            world_size: group.size(),
        });
    }
    for &size in &cfg.sizes {
        let mine = match run_size(group, size) {
            Ok(m) => m,
            Err(e) => return Err(group.fail(&e)),
        };
        if let Some(all) = group.gather(mine)? {
            let (row, first) = build_row(cfg, size, group.size(), &all);
            on_row(&row, first.as_ref());
        }
    }
    Ok(())
}

pub(crate) fn build_row(
    cfg: &SweepConfig,
    size: u64,
    ranks: u32,
    all: &[RankResult],
) -> (CollectiveRow, Option<WrongElement>) {
    let (count, _, _, bytes) = counts(cfg.op, cfg.dtype, size, ranks);
    let factor = busbw_factor(cfg.op.name(), ranks).unwrap_or(1.0);
    let n = all.len().max(1) as f64;
    // nccl-tests reports the time averaged over ranks.
    let avg = |f: fn(&RankResult) -> f64| all.iter().map(f).sum::<f64>() / n;
    let timing = |us: f64, wrong: u64| {
        let algbw = if us > 0.0 {
            bytes as f64 / us / 1e3
        } else {
            0.0
        };
        CollTiming {
            time_us: us,
            algbw,
            busbw: algbw * factor,
            wrong: cfg.check.then_some(wrong),
        }
    };
    let row = CollectiveRow {
        size: bytes,
        count,
        dtype: cfg.dtype.name().to_string(),
        redop: Some(
            if cfg.op.reduces() {
                cfg.redop.name()
            } else {
                "none"
            }
            .to_string(),
        ),
        root: Some(if cfg.op.rooted() {
            i64::from(cfg.root)
        } else {
            -1
        }),
        out_of_place: Some(timing(
            avg(|r| r.oop_us),
            all.iter().map(|r| r.wrong_oop).sum(),
        )),
        in_place: Some(timing(
            avg(|r| r.ip_us),
            all.iter().map(|r| r.wrong_ip).sum(),
        )),
    };
    let first = all.iter().find_map(|r| r.first_wrong.clone());
    (row, first)
}

/// Buffers for one size and the calls that run the operation in each placement.
struct Bufs<T> {
    send: Vec<T>,
    recv: Vec<T>,
    scratch: Vec<T>,
}

fn run_size<T: Elem>(
    group: &mut Group,
    comm: &Comm,
    cfg: &SweepConfig,
    size: u64,
) -> Result<RankResult, ClusterError> {
    let (rank, n) = (comm.rank(), comm.size());
    let (_, send_len, recv_len, _) = counts(cfg.op, cfg.dtype, size, n);
    let mut b = Bufs {
        send: vec![T::zeroed(); send_len as usize],
        recv: vec![T::zeroed(); recv_len as usize],
        scratch: vec![T::zeroed(); send_len.max(recv_len) as usize],
    };
    init_send(cfg, rank, n, &mut b.send);

    let mut times = [0.0f64; 2];
    for (k, in_place) in [false, true].into_iter().enumerate() {
        if in_place {
            init_in_place(cfg, rank, n, &mut b);
        }
        for _ in 0..cfg.warmup {
            run_once(comm, cfg, &mut b, in_place)?;
        }
        group.barrier()?;
        let t0 = Instant::now();
        for _ in 0..cfg.iters {
            run_once(comm, cfg, &mut b, in_place)?;
        }
        times[k] = t0.elapsed().as_secs_f64() * 1e6 / f64::from(cfg.iters.max(1));
    }

    let mut checked = [(0, None), (0, None)];
    if cfg.check {
        for (k, in_place) in [false, true].into_iter().enumerate() {
            init_send(cfg, rank, n, &mut b.send);
            b.recv.iter_mut().for_each(|x| *x = T::zeroed());
            if in_place {
                init_in_place(cfg, rank, n, &mut b);
            }
            group.barrier()?;
            run_once(comm, cfg, &mut b, in_place)?;
            checked[k] = verify(cfg, rank, n, &b.recv, in_place, size);
        }
    }
    Ok(RankResult::new(times, checked))
}

pub(crate) fn init_send<T: Elem>(cfg: &SweepConfig, rank: u32, n: u32, send: &mut [T]) {
    for (i, x) in send.iter_mut().enumerate() {
        *x = T::from_i64(if cfg.op.reduces() {
            reduce_input(rank, i, cfg.redop, n)
        } else {
            move_input(rank, i)
        });
    }
}

/// In-place runs work on `recv`: load it with what the send buffer would hold, where nccl-tests
/// places it (all_gather: this rank's block; reduce_scatter: the whole input).
fn init_in_place<T: Elem>(cfg: &SweepConfig, rank: u32, n: u32, b: &mut Bufs<T>) {
    match cfg.op {
        CollOp::AllGather => {
            let m = b.send.len();
            let r = rank as usize;
            b.recv[r * m..(r + 1) * m].copy_from_slice(&b.send);
        }
        CollOp::ReduceScatter => {
            let _ = n;
            b.scratch[..b.send.len()].copy_from_slice(&b.send);
        }
        _ => {
            let len = b.recv.len().min(b.send.len());
            b.recv[..len].copy_from_slice(&b.send[..len]);
        }
    }
}

fn run_once<T: Elem>(
    comm: &Comm,
    cfg: &SweepConfig,
    b: &mut Bufs<T>,
    in_place: bool,
) -> Result<(), ClusterError> {
    let r = comm.rank() as usize;
    match cfg.op {
        CollOp::AllReduce => {
            if in_place {
                comm.all_reduce(&mut b.recv, cfg.redop)
            } else {
                comm.all_reduce_out_of_place(&b.send, &mut b.recv, cfg.redop)
            }
        }
        CollOp::Broadcast => {
            if !in_place && comm.rank() == cfg.root {
                b.recv.copy_from_slice(&b.send);
            }
            comm.broadcast(&mut b.recv, cfg.root)
        }
        CollOp::Reduce => {
            if !in_place {
                b.recv.copy_from_slice(&b.send);
            }
            comm.reduce(&mut b.recv, cfg.redop, cfg.root)
        }
        CollOp::AllGather => {
            let m = b.send.len();
            if !in_place {
                b.recv[r * m..(r + 1) * m].copy_from_slice(&b.send);
            }
            comm.all_gather(&mut b.recv)
        }
        CollOp::ReduceScatter => {
            // The in-place input lives in `scratch` (nccl-tests: recvbuff = sendbuff + rank*m).
            let m = b.recv.len();
            let work = &mut b.scratch[..b.send.len()];
            if !in_place {
                work.copy_from_slice(&b.send);
            }
            comm.reduce_scatter(work, cfg.redop)?;
            b.recv.copy_from_slice(&work[r * m..(r + 1) * m]);
            Ok(())
        }
        CollOp::Alltoall => {
            if in_place {
                let len = b.recv.len();
                b.scratch[..len].copy_from_slice(&b.recv);
                comm.alltoall(&b.scratch[..len], &mut b.recv)
            } else {
                comm.alltoall(&b.send, &mut b.recv)
            }
        }
    }
}

/// Counts elements of `result` that differ from what the operation must produce on `rank`,
/// computed from the input formulas alone.
pub fn verify<T: Elem>(
    cfg: &SweepConfig,
    rank: u32,
    n: u32,
    result: &[T],
    in_place: bool,
    size: u64,
) -> (u64, Option<WrongElement>) {
    let m = result.len() / n.max(1) as usize;
    let want = |i: usize| -> Option<T> {
        Some(match cfg.op {
            CollOp::AllReduce => expected_reduction::<T>(i, cfg.redop, n),
            CollOp::Reduce => {
                if rank != cfg.root {
                    return None;
                }
                expected_reduction::<T>(i, cfg.redop, n)
            }
            CollOp::ReduceScatter => {
                expected_reduction::<T>(rank as usize * result.len() + i, cfg.redop, n)
            }
            CollOp::Broadcast => T::from_i64(move_input(cfg.root, i)),
            CollOp::AllGather => T::from_i64(move_input((i / m.max(1)) as u32, i % m.max(1))),
            CollOp::Alltoall => T::from_i64(move_input(
                (i / m.max(1)) as u32,
                rank as usize * m + i % m.max(1),
            )),
        })
    };
    let mut wrong = 0u64;
    let mut first = None;
    for (i, got) in result.iter().enumerate() {
        let Some(w) = want(i) else { continue };
        if !got.close_to(w) {
            wrong += 1;
            if first.is_none() {
                first = Some(WrongElement {
                    rank,
                    index: i as u64,
                    expected: w.to_f64(),
                    got: got.to_f64(),
                    in_place,
                    size,
                });
            }
        }
    }
    (wrong, first)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn sizes_by_factor_and_increment() {
        assert_eq!(sizes(8, 64, 2, None), [8, 16, 32, 64]);
        assert_eq!(sizes(100, 400, 2, Some(100)), [100, 200, 300, 400]);
        assert_eq!(sizes(8, 8, 1, None), [8]);
        assert!(sizes(10, 5, 2, None).is_empty());
    }

    #[test]
    fn counts_follow_nccl_tests() {
        // all_gather of 1 MiB floats on 8 ranks: 32768 per rank, 1 MiB total.
        assert_eq!(
            counts(CollOp::AllGather, DType::Float, 1 << 20, 8),
            (32768, 32768, 262144, 1 << 20)
        );
        // Blocks are 16-byte aligned: 100 bytes of floats on 3 ranks -> 8 per rank.
        assert_eq!(
            counts(CollOp::ReduceScatter, DType::Float, 100, 3),
            (8, 24, 8, 96)
        );
        assert_eq!(
            counts(CollOp::AllReduce, DType::Double, 64, 4),
            (8, 8, 8, 64)
        );
    }

    #[test]
    fn verify_finds_a_planted_wrong_element() {
        let cfg = SweepConfig {
            op: CollOp::AllReduce,
            dtype: DType::Float,
            redop: RedOp::Sum,
            root: 0,
            sizes: vec![],
            warmup: 0,
            iters: 1,
            check: true,
        };
        let mut good: Vec<f32> = (0..100)
            .map(|i| expected_reduction(i, RedOp::Sum, 4))
            .collect();
        assert_eq!(verify(&cfg, 2, 4, &good, false, 400).0, 0);
        good[37] += 1.0;
        let (w, first) = verify(&cfg, 2, 4, &good, true, 400);
        assert_eq!(w, 1);
        let f = first.unwrap();
        assert_eq!((f.rank, f.index, f.in_place), (2, 37, true));
    }
}
