//! Collectives between host-memory buffers over any [`Link`] (TCP by default): ring algorithms
//! (reduce-scatter then all-gather for all_reduce), chains for broadcast and reduce, and
//! pairwise exchange for alltoall at large sizes; recursive doubling, binomial trees and Bruck's
//! all_gather for small ones ([`Comm::algorithm`] picks, by the names and thresholds in
//! `choice`; `small` holds them). Each of `channels` parallel lanes carries its own slice of
//! every buffer in its own thread, so one rank can fill several NICs. A lane's ring steps run
//! as one stream (the private `ring` module): on TCP one thread polls both sockets and forwards
//! each chunk as soon as it is reduced; other links send and receive each step from two threads.

use std::sync::{mpsc, Mutex};
use std::thread;

use crate::dtype::{finish_avg, reduce_into, Elem, RedOp};
use crate::link::{Direct, Link, StepError};
use crate::ring::{self, Schedule};
use crate::step::step;
use crate::ClusterError;

mod choice;
mod small;

pub use choice::{
    AlgoChoice, Algorithm, CollOp, BRUCK_ALLTOALL_MAX_BLOCK, BRUCK_MAX_BYTES, ONE_LANE_BELOW,
    RD_MAX_BYTES, TREE_MAX_BYTES,
};

/// Receive granularity over RDMA pipes: large enough that messages are few, small enough that
/// reducing one chunk overlaps with the next one arriving.
pub const DEFAULT_CHUNK_BYTES: usize = 1 << 20;

/// Receive granularity over TCP. A chunk is copied out of the socket and then reduced; at 64 KiB
/// it is still in the core's cache when the reduction reads it. Measured against 256 KiB and
/// 1 MiB with 2, 4 and 8 ranks from 1 to 64 MiB (docs/benchmarks/collectives.md): 0.68-1.00x
/// the 1 MiB time, and the least CPU per operation of 16 KiB to 4 MiB.
pub const TCP_CHUNK_BYTES: usize = 64 << 10;

/// One ring channel: a link to the next rank and one from the previous, and the receive
/// scratch space its reductions use (kept across calls; `u64` words so any element type fits
/// its alignment).
#[derive(Debug)]
struct Lane {
    next: Box<dyn Link>,
    prev: Box<dyn Link>,
    scratch: Mutex<Vec<u64>>,
}

/// The data connections of one rank: `channels` ring lanes, and a full mesh for alltoall.
#[derive(Debug)]
pub struct Comm {
    rank: u32,
    n: u32,
    lanes: Vec<Lane>,
    mesh: Vec<Option<Box<dyn Link>>>,
    labels: Vec<String>,
    chunk_bytes: usize,
    algo: AlgoChoice,
}

impl Comm {
    /// A communicator over links some transport has already opened.
    ///
    /// `labels[r]` names rank `r` in errors. `lanes` holds one `(to next rank, from previous
    /// rank)` pair per channel (at least one when `n > 1`); `mesh[p]`, when present, is a
    /// two-way link to rank `p`, needed only by [`Comm::alltoall`] (so `mesh` may be empty).
    pub fn from_links(
        rank: u32,
        n: u32,
        labels: Vec<String>,
        lanes: Vec<(Box<dyn Link>, Box<dyn Link>)>,
        mesh: Vec<Option<Box<dyn Link>>>,
        chunk_bytes: usize,
    ) -> Result<Comm, ClusterError> {
        if n == 0 || rank >= n {
            return Err(ClusterError::NotARank {
                role: "rank",
                rank,
                world_size: n,
            });
        }
        if n > 1 && lanes.is_empty() {
            return Err(ClusterError::NoRingLane { ranks: n });
        }
        if mesh.len() > n as usize {
            return Err(ClusterError::TooManyMeshLinks {
                links: mesh.len(),
                ranks: n,
            });
        }
        let mut mesh = mesh;
        mesh.resize_with(n as usize, || None);
        Ok(Comm {
            rank,
            n,
            lanes: lanes
                .into_iter()
                .map(|(next, prev)| Lane {
                    next,
                    prev,
                    scratch: Mutex::new(Vec::new()),
                })
                .collect(),
            mesh,
            labels,
            chunk_bytes: chunk_bytes.max(64),
            algo: AlgoChoice::Auto,
        })
    }

    /// A whole group of `n` communicators joined by in-memory links ([`crate::link::mem_pair`],
    /// each direction buffering `pipe_bytes`): `channels` rings and a full mesh. For tests of
    /// the algorithms without sockets; `comms[r]` is rank `r`, named `rank r (memr)`.
    pub fn in_memory(
        n: u32,
        channels: usize,
        pipe_bytes: usize,
        chunk_bytes: usize,
        timeout: std::time::Duration,
    ) -> Result<Vec<Comm>, ClusterError> {
        type BoxLink = Box<dyn Link>;
        let nu = n as usize;
        // Ring c's pipe r runs from rank r to rank r+1.
        let mut to_next: Vec<Vec<BoxLink>> = (0..nu).map(|_| Vec::new()).collect();
        let mut from_prev: Vec<Vec<BoxLink>> = (0..nu).map(|_| Vec::new()).collect();
        if n > 1 {
            for _ in 0..channels.max(1) {
                for r in 0..nu {
                    let (a, b) = crate::link::mem_pair(pipe_bytes, timeout);
                    to_next[r].push(Box::new(a));
                    from_prev[(r + 1) % nu].push(Box::new(b));
                }
            }
        }
        let mut mesh: Vec<Vec<Option<BoxLink>>> =
            (0..nu).map(|_| (0..nu).map(|_| None).collect()).collect();
        for (i, j) in (0..nu).flat_map(|i| (i + 1..nu).map(move |j| (i, j))) {
            let (a, b) = crate::link::mem_pair(pipe_bytes, timeout);
            mesh[i][j] = Some(Box::new(a));
            mesh[j][i] = Some(Box::new(b));
        }
        let labels: Vec<String> = (0..n).map(|r| format!("rank {r} (mem{r})")).collect();
        to_next
            .into_iter()
            .zip(from_prev)
            .zip(mesh)
            .enumerate()
            .map(|(r, ((tn, fp), m))| {
                let lanes = tn.into_iter().zip(fp).collect();
                Comm::from_links(r as u32, n, labels.clone(), lanes, m, chunk_bytes)
            })
            .collect()
    }

    /// Sets how the collectives pick their algorithm (`Auto` when never set).
    pub fn set_algo(&mut self, algo: AlgoChoice) {
        self.algo = algo;
    }

    /// The algorithm `op` runs on a buffer of `bytes` (the whole buffer: all `n` blocks for
    /// all_gather and reduce_scatter). Without links to every rank (no mesh, more than two
    /// ranks) only rings can run, whatever was chosen.
    pub fn algorithm(&self, op: CollOp, bytes: usize) -> Algorithm {
        if op == CollOp::Alltoall {
            let forced = !matches!(self.algo, AlgoChoice::Auto | AlgoChoice::Ring);
            let short = self.n >= 4 && bytes / self.n.max(1) as usize <= BRUCK_ALLTOALL_MAX_BLOCK;
            return if self.algo != AlgoChoice::Ring
                && self.n > 1
                && self.has_peer_links()
                && (forced || short)
            {
                Algorithm::Bruck
            } else {
                Algorithm::Pairwise
            };
        }
        if self.algo == AlgoChoice::Ring || self.n < 2 || !self.has_peer_links() {
            return Algorithm::Ring;
        }
        let forced = self.algo != AlgoChoice::Auto;
        match op {
            CollOp::AllReduce if self.algo == AlgoChoice::Tree => Algorithm::Tree,
            CollOp::AllReduce | CollOp::ReduceScatter if forced || bytes <= RD_MAX_BYTES => {
                Algorithm::Rd
            }
            CollOp::AllGather if forced || bytes <= BRUCK_MAX_BYTES => Algorithm::Bruck,
            CollOp::Broadcast | CollOp::Reduce if forced || bytes <= TREE_MAX_BYTES => {
                Algorithm::Tree
            }
            _ => Algorithm::Ring,
        }
    }

    /// Which algorithm runs at each of `sizes` (`(size as reported, bytes of the buffer the
    /// call gets)`), as ranges: `rd 8-65536 B, ring 131072-33554432 B`.
    pub fn algorithms_by_size(&self, op: CollOp, sizes: &[(u64, usize)]) -> String {
        let mut runs: Vec<(Algorithm, u64, u64)> = Vec::new();
        for &(size, bytes) in sizes {
            let a = self.algorithm(op, bytes);
            match runs.last_mut() {
                Some(last) if last.0 == a => last.2 = size,
                _ => runs.push((a, size, size)),
            }
        }
        runs.iter()
            .map(|(a, lo, hi)| {
                if lo == hi {
                    format!("{} {lo} B", a.name())
                } else {
                    format!("{} {lo}-{hi} B", a.name())
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// How many lanes a ring over `bytes` uses.
    fn lanes_for(&self, bytes: usize) -> usize {
        if bytes < ONE_LANE_BELOW {
            1
        } else {
            self.lanes.len()
        }
    }

    /// This rank.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// Number of ranks.
    pub fn size(&self) -> u32 {
        self.n
    }

    fn next(&self) -> u32 {
        (self.rank + 1) % self.n
    }

    fn prev(&self) -> u32 {
        (self.rank + self.n - 1) % self.n
    }

    fn label(&self, r: u32) -> &str {
        self.labels
            .get(r as usize)
            .map(String::as_str)
            .unwrap_or("a rank")
    }

    fn chunk_elems<T: Elem>(&self) -> usize {
        (self.chunk_bytes / std::mem::size_of::<T>()).max(1)
    }

    /// In-place all_reduce: ring reduce-scatter then ring all-gather on every channel.
    pub fn all_reduce<T: Elem>(&self, buf: &mut [T], op: RedOp) -> Result<(), ClusterError> {
        let n = self.n as usize;
        let bytes = std::mem::size_of_val(buf);
        match self.algorithm(CollOp::AllReduce, bytes) {
            Algorithm::Rd => self.rd_all_reduce(buf, op)?,
            Algorithm::Tree => {
                self.tree_reduce(buf, op, 0)?;
                self.tree_broadcast(buf, 0)?;
            }
            _ if n > 1 => {
                let parts = split_even(buf, self.lanes_for(bytes));
                self.per_lane(parts, |lane, part| {
                    let mut segs = split_even(part, n);
                    self.ring(lane, &mut segs, None, n - 1, n - 1, op)
                })?;
            }
            _ => {}
        }
        finish_avg(buf, op, self.n);
        Ok(())
    }

    /// Out-of-place all_reduce: the first reduce-scatter step reads `send` directly, so the
    /// input is never copied into `recv` as a separate pass.
    pub fn all_reduce_out_of_place<T: Elem>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: RedOp,
    ) -> Result<(), ClusterError> {
        let n = self.n as usize;
        let len = send.len().min(recv.len());
        let (send, recv) = (&send[..len], &mut recv[..len]);
        let bytes = std::mem::size_of_val(send);
        let algo = self.algorithm(CollOp::AllReduce, bytes);
        if n < 2 {
            recv.copy_from_slice(send);
        } else if algo != Algorithm::Ring {
            // The latency-bound algorithms work in place; one copy of a small buffer is
            // cheaper than a send-buffer variant of each.
            recv.copy_from_slice(send);
            if algo == Algorithm::Tree {
                self.tree_reduce(recv, op, 0)?;
                self.tree_broadcast(recv, 0)?;
            } else {
                self.rd_all_reduce(recv, op)?;
            }
        } else {
            let lanes = self.lanes_for(bytes);
            let sparts = split_even_ref(send, lanes);
            let rparts = split_even(recv, lanes);
            let parts: Vec<(&[T], &mut [T])> = sparts.into_iter().zip(rparts).collect();
            self.per_lane(parts, |lane, (sp, rp)| {
                let ssegs = split_even_ref(sp, n);
                let mut rsegs = split_even(rp, n);
                self.ring(lane, &mut rsegs, Some(&ssegs), n - 1, n - 1, op)
            })?;
        }
        finish_avg(recv, op, self.n);
        Ok(())
    }

    /// In-place reduce_scatter over `buf` of `n` equal blocks: block `rank` ends up reduced.
    pub fn reduce_scatter<T: Elem>(&self, buf: &mut [T], op: RedOp) -> Result<(), ClusterError> {
        let n = self.n as usize;
        let block = buf.len() / n;
        let bytes = std::mem::size_of_val(&buf[..block * n]);
        if n > 1 && self.algorithm(CollOp::ReduceScatter, bytes) != Algorithm::Ring {
            // Every rank reduces the whole buffer and keeps its block: ⌈log2 n⌉ steps.
            self.rd_all_reduce(&mut buf[..block * n], op)?;
        } else if n > 1 {
            let lanes = self.lanes_for(bytes);
            let per_lane = block_major(&mut buf[..block * n], n, lanes);
            self.per_lane(per_lane, |lane, mut segs| {
                self.ring(lane, &mut segs, None, n - 1, 0, op)
            })?;
        }
        let r = self.rank as usize;
        finish_avg(&mut buf[r * block..(r + 1) * block], op, self.n);
        Ok(())
    }

    /// In-place all_gather: `buf` holds `n` equal blocks, this rank's own already at `rank`.
    pub fn all_gather<T: Elem>(&self, buf: &mut [T]) -> Result<(), ClusterError> {
        let n = self.n as usize;
        let block = buf.len() / n.max(1);
        let bytes = std::mem::size_of_val(&buf[..block * n]);
        if n > 1 && self.algorithm(CollOp::AllGather, bytes) != Algorithm::Ring {
            self.bruck_all_gather(&mut buf[..block * n])?;
        } else if n > 1 {
            let per_lane = block_major(&mut buf[..block * n], n, self.lanes_for(bytes));
            self.per_lane(per_lane, |lane, mut segs| {
                self.ring(lane, &mut segs, None, 0, n - 1, RedOp::Sum)
            })?;
        }
        Ok(())
    }

    /// Broadcast from `root` along the ring, pipelined in chunks.
    pub fn broadcast<T: Elem>(&self, buf: &mut [T], root: u32) -> Result<(), ClusterError> {
        let n = self.n;
        if n < 2 {
            return Ok(());
        }
        let bytes = std::mem::size_of_val(buf);
        if self.algorithm(CollOp::Broadcast, bytes) != Algorithm::Ring {
            return self.tree_broadcast(buf, root);
        }
        let pos = (self.rank + n - root % n) % n;
        self.ring_pass(buf, pos, |dst, got| dst.copy_from_slice(got))
    }

    /// One pass along the ring, pipelined in chunks on every lane: the rank at position 0
    /// sends its buffer; each later one applies what arrives to its own with `apply` and,
    /// unless it is the last (position `n - 1`), forwards the result.
    fn ring_pass<T: Elem, A>(&self, buf: &mut [T], pos: u32, apply: A) -> Result<(), ClusterError>
    where
        A: Fn(&mut [T], &[T]) + Sync,
    {
        let parts = split_even(buf, self.lanes_for(std::mem::size_of_val(buf)));
        let chunk = self.chunk_elems::<T>();
        let forward = pos != self.n - 1;
        self.per_lane(parts, |lane, part| {
            if pos == 0 {
                return self.send(lane, bytemuck::cast_slice(part));
            }
            self.pipeline(lane, part, chunk, forward, &apply)
        })
    }

    /// Reduce to `root` along the ring (starting at the rank after it), pipelined in chunks.
    /// Only `root`'s buffer holds the result.
    pub fn reduce<T: Elem>(&self, buf: &mut [T], op: RedOp, root: u32) -> Result<(), ClusterError> {
        let n = self.n;
        let bytes = std::mem::size_of_val(buf);
        if n > 1 && self.algorithm(CollOp::Reduce, bytes) != Algorithm::Ring {
            self.tree_reduce(buf, op, root)?;
        } else if n > 1 {
            let pos = (self.rank + 2 * n - root % n - 1) % n;
            self.ring_pass(buf, pos, |dst, got| reduce_into(dst, got, op))?;
        }
        if self.rank == root % n.max(1) {
            finish_avg(buf, op, n);
        }
        Ok(())
    }

    /// alltoall: block `j` of `send` goes to rank `j`; block `i` of `recv` comes from rank `i`.
    pub fn alltoall<T: Elem>(&self, send: &[T], recv: &mut [T]) -> Result<(), ClusterError> {
        let bytes = std::mem::size_of_val(send);
        if self.algorithm(CollOp::Alltoall, bytes) == Algorithm::Bruck {
            return self.bruck_alltoall(send, recv);
        }
        let n = self.n as usize;
        let r = self.rank as usize;
        let block = send.len().min(recv.len()) / n.max(1);
        recv[r * block..(r + 1) * block].copy_from_slice(&send[r * block..(r + 1) * block]);
        for k in 1..n {
            let to = (r + k) % n;
            let from = (r + n - k) % n;
            let out: &[u8] = bytemuck::cast_slice(&send[to * block..(to + 1) * block]);
            let inb: &mut [u8] =
                bytemuck::cast_slice_mut(&mut recv[from * block..(from + 1) * block]);
            let (ts, fs) = (self.mesh_stream(to)?, self.mesh_stream(from)?);
            step(ts, out, fs, &mut Direct { buf: inb })
                .map_err(|e| self.step_err(e, to as u32, from as u32))?;
        }
        Ok(())
    }

    fn mesh_stream(&self, peer: usize) -> Result<&dyn Link, ClusterError> {
        self.mesh
            .get(peer)
            .and_then(Option::as_deref)
            .ok_or(ClusterError::NoMeshLink { rank: peer as u32 })
    }

    /// Runs `f` for every lane on its own thread (the first on this one).
    fn per_lane<P: Send, F>(&self, parts: Vec<P>, f: F) -> Result<(), ClusterError>
    where
        F: Fn(&Lane, P) -> Result<(), ClusterError> + Sync,
    {
        let mut items: Vec<(&Lane, P)> = self.lanes.iter().zip(parts).collect();
        if items.len() <= 1 {
            return match items.pop() {
                Some((lane, p)) => f(lane, p),
                None => Ok(()),
            };
        }
        let f = &f;
        thread::scope(|s| {
            let mut rest = items.split_off(1);
            let handles: Vec<_> = rest
                .drain(..)
                .map(|(lane, p)| s.spawn(move || f(lane, p)))
                .collect();
            let mut result = match items.pop() {
                Some((lane, p)) => f(lane, p),
                None => Ok(()),
            };
            for h in handles {
                let r = h
                    .join()
                    .unwrap_or(Err(ClusterError::ThreadPanicked("a channel")));
                if result.is_ok() {
                    result = r;
                }
            }
            result
        })
    }

    /// Runs `f` with `elems` elements of the lane's scratch space.
    fn with_scratch<T: Elem, R>(
        &self,
        lane: &Lane,
        elems: usize,
        f: impl FnOnce(&mut [T]) -> R,
    ) -> R {
        // Nothing can panic while the lock is held but `f`, which leaves only scratch bytes.
        let mut v = lane.scratch.lock().unwrap_or_else(|p| p.into_inner());
        let words = (elems * std::mem::size_of::<T>()).div_ceil(8);
        if v.len() < words {
            v.resize(words, 0);
        }
        let all: &mut [T] = bytemuck::cast_slice_mut(&mut v[..words]);
        f(&mut all[..elems])
    }

    fn step_err(&self, e: StepError, to: u32, from: u32) -> ClusterError {
        match e {
            StepError::Send(e) => name_peer(self.label(to), "sending to it", e),
            StepError::Recv(e) => name_peer(self.label(from), "receiving from it", e),
        }
    }

    /// `rs` ring reduce-scatter steps then `ag` ring all-gather steps over `segs` (`n`
    /// segments) on `lane`. Reduce-scatter: at step `s` send segment `rank-s-1` while receiving
    /// segment `rank-s-2` and reducing it in (from `src`'s copy when given), so after `n-1`
    /// steps segment `rank` holds everyone's contribution. All-gather: at step `s` send segment
    /// `rank-s` and receive segment `rank-s-1` in place.
    fn ring<T: Elem>(
        &self,
        lane: &Lane,
        segs: &mut [&mut [T]],
        src: Option<&[&[T]]>,
        rs: usize,
        ag: usize,
        op: RedOp,
    ) -> Result<(), ClusterError> {
        let sched = Schedule::ring(self.rank as usize, segs.len(), rs, ag);
        let longest = segs.iter().map(|s| s.len()).max().unwrap_or(0);
        let elems = self.chunk_elems::<T>().min(longest).max(1);
        self.with_scratch(lane, elems, |scratch: &mut [T]| {
            ring::run(&*lane.next, &*lane.prev, &sched, segs, src, op, scratch)
                .map_err(|e| self.step_err(e, self.next(), self.prev()))
        })
    }

    fn send(&self, lane: &Lane, out: &[u8]) -> Result<(), ClusterError> {
        write_all(&*lane.next, out, self.label(self.next()))
    }

    /// Receives `buf` chunk by chunk from the previous rank, applies `apply(chunk, received)`,
    /// and (with `forward`) passes each finished chunk on to the next rank from a second thread
    /// while the following chunk arrives.
    fn pipeline<T: Elem, A>(
        &self,
        lane: &Lane,
        buf: &mut [T],
        chunk: usize,
        forward: bool,
        apply: A,
    ) -> Result<(), ClusterError>
    where
        A: Fn(&mut [T], &[T]),
    {
        let elems = chunk.min(buf.len()).max(1);
        self.with_scratch(lane, elems, |scratch: &mut [T]| {
            self.pipeline_with(lane, buf, chunk, forward, apply, scratch)
        })
    }

    fn pipeline_with<T: Elem, A>(
        &self,
        lane: &Lane,
        buf: &mut [T],
        chunk: usize,
        forward: bool,
        apply: A,
        scratch: &mut [T],
    ) -> Result<(), ClusterError>
    where
        A: Fn(&mut [T], &[T]),
    {
        let prev_label = self.label(self.prev());
        let next_label = self.label(self.next());
        if !forward {
            for dst in buf.chunks_mut(chunk) {
                let tmp = &mut scratch[..dst.len()];
                read_all(&*lane.prev, bytemuck::cast_slice_mut(tmp), prev_label)?;
                apply(dst, tmp);
            }
            return Ok(());
        }
        thread::scope(|s| {
            let (tx, rx) = mpsc::channel::<&[T]>();
            let h = s.spawn(move || -> Result<(), ClusterError> {
                for c in rx {
                    write_all(&*lane.next, bytemuck::cast_slice(c), next_label)?;
                }
                Ok(())
            });
            let mut got = Ok(());
            for dst in buf.chunks_mut(chunk) {
                let tmp = &mut scratch[..dst.len()];
                if let Err(e) = read_all(&*lane.prev, bytemuck::cast_slice_mut(tmp), prev_label) {
                    got = Err(e);
                    break;
                }
                apply(dst, tmp);
                let done: &[T] = dst;
                if tx.send(done).is_err() {
                    break;
                }
            }
            drop(tx);
            let sent = h
                .join()
                .unwrap_or(Err(ClusterError::ThreadPanicked("a send")));
            got.and(sent)
        })
    }
}

fn write_all(link: &dyn Link, buf: &[u8], peer: &str) -> Result<(), ClusterError> {
    if buf.is_empty() {
        return Ok(());
    }
    link.send_all(buf)
        .map_err(|e| name_peer(peer, "sending to it", e))
}

fn read_all(link: &dyn Link, buf: &mut [u8], peer: &str) -> Result<(), ClusterError> {
    if buf.is_empty() {
        return Ok(());
    }
    link.recv_exact(buf)
        .map_err(|e| name_peer(peer, "receiving from it", e))
}

/// Puts the peer's rank and host on a link's error (one that already names a peer is kept).
fn name_peer(peer: &str, doing: &str, e: ClusterError) -> ClusterError {
    match e {
        ClusterError::Io { err: source, .. } => io_peer(peer, doing, source),
        e @ (ClusterError::Peer { .. } | ClusterError::Aborted(_)) => e,
        e => ClusterError::Peer {
            peer: peer.to_string(),
            why: format!("{doing}: {e}"),
        },
    }
}

fn io_peer(peer: &str, doing: &str, e: std::io::Error) -> ClusterError {
    use std::io::ErrorKind::*;
    let why = match e.kind() {
        WouldBlock | TimedOut => format!("timed out {doing}"),
        UnexpectedEof | ConnectionReset | ConnectionAborted | BrokenPipe => {
            format!("connection closed while {doing} (the rank died or gave up)")
        }
        _ => format!("{doing}: {e}"),
    };
    ClusterError::Peer {
        peer: peer.to_string(),
        why,
    }
}

/// The lengths of `parts` contiguous pieces of `len` items that differ by at most one, longer
/// pieces first (at least one piece, so an empty buffer still yields one empty piece).
fn even_lengths(len: usize, parts: usize) -> impl Iterator<Item = usize> {
    let parts = parts.max(1);
    let (base, extra) = (len / parts, len % parts);
    (0..parts).map(move |i| base + usize::from(i < extra))
}

/// Splits `buf` into `parts` contiguous pieces whose lengths differ by at most one.
pub fn split_even<T>(buf: &mut [T], parts: usize) -> Vec<&mut [T]> {
    let mut rest = buf;
    even_lengths(rest.len(), parts)
        .map(|len| {
            let (head, tail) = std::mem::take(&mut rest).split_at_mut(len);
            rest = tail;
            head
        })
        .collect()
}

/// [`split_even`] for a shared slice.
pub fn split_even_ref<T>(buf: &[T], parts: usize) -> Vec<&[T]> {
    let mut rest = buf;
    even_lengths(rest.len(), parts)
        .map(|len| {
            let (head, tail) = rest.split_at(len);
            rest = tail;
            head
        })
        .collect()
}

/// Splits `n` equal blocks into `lanes` pieces each, and hands lane `c` the `c`-th piece of
/// every block (so the segment index is still the block index).
fn block_major<T>(buf: &mut [T], n: usize, lanes: usize) -> Vec<Vec<&mut [T]>> {
    let lanes = lanes.max(1);
    let block = buf.len() / n.max(1);
    let mut per_lane: Vec<Vec<&mut [T]>> = (0..lanes).map(|_| Vec::with_capacity(n)).collect();
    for b in buf.chunks_mut(block.max(1)).take(n) {
        for (c, piece) in split_even(b, lanes).into_iter().enumerate() {
            per_lane[c].push(piece);
        }
    }
    // A zero-sized block yields no chunks; keep every lane's list n long.
    for l in &mut per_lane {
        while l.len() < n {
            l.push(&mut []);
        }
    }
    per_lane
}
