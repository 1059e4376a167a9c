//! Every collective over in-memory links (no sockets): the algorithms need nothing from a
//! transport but `Link::send_all` and `Link::recv_exact`. The pipes are small, so a send blocks
//! until the peer reads, as on a full socket buffer.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::thread;
use std::time::Duration;

use fabrik_cluster::collective::Comm;
use fabrik_cluster::dtype::RedOp;
use fabrik_cluster::ClusterError;

const PIPE_BYTES: usize = 1000;

/// One communicator per rank, wired as `channels` rings plus a full mesh.
fn comms(n: u32, channels: usize, chunk: usize) -> Vec<Comm> {
    Comm::in_memory(n, channels, PIPE_BYTES, chunk, Duration::from_secs(20)).unwrap()
}

/// Rank `r`'s input element `i`: small integers, so float sums are exact.
fn x(r: u32, i: usize) -> f32 {
    ((r + 1) as usize * (i % 13 + 1)) as f32
}

fn sum(n: u32, i: usize) -> f32 {
    (0..n).map(|r| x(r, i)).sum()
}

/// Runs every collective on every rank of a ring of `n` and checks each result element.
fn check_all(n: u32, channels: usize, chunk: usize, len: usize) {
    let nu = n as usize;
    let root = n / 2;
    let handles: Vec<_> = comms(n, channels, chunk)
        .into_iter()
        .map(|c| {
            thread::spawn(move || {
                let r = c.rank();
                let mine: Vec<f32> = (0..len).map(|i| x(r, i)).collect();

                let mut buf = mine.clone();
                c.all_reduce(&mut buf, RedOp::Sum).unwrap();
                for (i, v) in buf.iter().enumerate() {
                    assert_eq!(*v, sum(n, i), "all_reduce n={n} rank {r} [{i}]");
                }

                let mut out = vec![0.0f32; len];
                c.all_reduce_out_of_place(&mine, &mut out, RedOp::Max)
                    .unwrap();
                for (i, v) in out.iter().enumerate() {
                    assert_eq!(*v, x(n - 1, i), "all_reduce max n={n} rank {r} [{i}]");
                }

                let block = len / nu;
                let mut buf = mine.clone();
                c.reduce_scatter(&mut buf[..block * nu], RedOp::Sum)
                    .unwrap();
                for j in 0..block {
                    let i = r as usize * block + j;
                    assert_eq!(buf[i], sum(n, i), "reduce_scatter n={n} rank {r} [{i}]");
                }

                let mut buf = vec![0.0f32; block * nu];
                for j in 0..block {
                    buf[r as usize * block + j] = x(r, j);
                }
                c.all_gather(&mut buf).unwrap();
                for (i, v) in buf.iter().enumerate() {
                    let q = (i / block.max(1)) as u32;
                    assert_eq!(
                        *v,
                        x(q, i % block.max(1)),
                        "all_gather n={n} rank {r} [{i}]"
                    );
                }

                let mut buf = if r == root {
                    mine.clone()
                } else {
                    vec![0.0; len]
                };
                c.broadcast(&mut buf, root).unwrap();
                for (i, v) in buf.iter().enumerate() {
                    assert_eq!(*v, x(root, i), "broadcast n={n} rank {r} [{i}]");
                }

                let mut buf = mine.clone();
                c.reduce(&mut buf, RedOp::Sum, root).unwrap();
                if r == root {
                    for (i, v) in buf.iter().enumerate() {
                        assert_eq!(*v, sum(n, i), "reduce n={n} [{i}]");
                    }
                }

                let mut out = vec![0.0f32; block * nu];
                c.alltoall(&mine[..block * nu], &mut out).unwrap();
                for (i, v) in out.iter().enumerate() {
                    let from = (i / block.max(1)) as u32;
                    let k = r as usize * block + i % block.max(1);
                    assert_eq!(*v, x(from, k), "alltoall n={n} rank {r} [{i}]");
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

#[test]
fn every_collective_is_correct_over_in_memory_links() {
    for n in [1, 2, 3, 5] {
        for channels in [1, 2] {
            // Lengths that do not divide by ranks or channels; some far past a chunk and a pipe.
            for len in [1, 7, 1000, 40_001] {
                check_all(n, channels, 256, len);
            }
        }
    }
}

#[test]
fn a_rank_whose_links_close_is_named_by_its_neighbours() {
    let mut cs = comms(3, 1, 256);
    let dead = cs.pop().unwrap();
    drop(dead);
    let handles: Vec<_> = cs
        .into_iter()
        .map(|c| {
            thread::spawn(move || {
                let mut buf = vec![1.0f32; 100_000];
                c.all_reduce(&mut buf, RedOp::Sum).unwrap_err()
            })
        })
        .collect();
    let errs: Vec<ClusterError> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    // Rank 0 receives from rank 2 and rank 1 sends to it: both must blame rank 2.
    for e in &errs {
        let msg = e.to_string();
        assert!(msg.contains("rank 2 (mem2)"), "{msg}");
        assert!(msg.contains("connection closed"), "{msg}");
    }
}

#[test]
fn from_links_refuses_a_group_without_lanes() {
    let e = Comm::from_links(0, 2, vec![], vec![], vec![], 1024).unwrap_err();
    assert!(e.to_string().contains("lane"), "{e}");
    assert!(Comm::from_links(3, 2, vec![], vec![], vec![], 1024).is_err());
}
