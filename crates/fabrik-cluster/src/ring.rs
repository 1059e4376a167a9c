//! The ring reduce-scatter and all-gather of one lane as one stream of segments.
//!
//! In both algorithms the segment a rank receives at one step is the one it sends at the next,
//! and the segment the reduce-scatter finishes is the first one the all-gather sends. So a whole
//! all_reduce is one stream out and one stream in, where outgoing segment `k` is incoming segment
//! `k-1` once it has arrived (and been reduced). Over TCP the stream is pipelined below the
//! segment: a chunk is forwarded as soon as it is reduced, so data keeps flowing around the ring
//! instead of every rank waiting at every step for a whole segment. Other links run it step by
//! step (send segment `k` while receiving segment `k`).

use std::io::{ErrorKind, Read, Write};

use crate::dtype::{reduce_from, reduce_into, Elem, RedOp};
use crate::link::{Direct, Link, Polled, RecvSink, StepError};
use crate::step::step;
use crate::tcp_link::wait;
use crate::ClusterError;

/// What happens to an incoming segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Reduced into the segment (from `src`'s segment when there is a `src`).
    Reduce,
    /// Written into the segment as it is.
    Copy,
}

/// Which segments go out and come in, in order. `sends[0]` is read from `src` when there is
/// one; every later `sends[k]` equals `recvs[k-1].0` and may leave only as far as that
/// segment has been received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Schedule {
    pub sends: Vec<usize>,
    pub recvs: Vec<(usize, Mode)>,
}

impl Schedule {
    /// `rs` reduce-scatter steps then `ag` all-gather steps of rank `rank` in a ring of `n`
    /// segments (`rs` and `ag` each 0 or `n-1`).
    pub fn ring(rank: usize, n: usize, rs: usize, ag: usize) -> Schedule {
        let mut recvs = Vec::with_capacity(rs + ag);
        for s in 0..rs {
            recvs.push(((rank + 2 * n - s - 2) % n, Mode::Reduce));
        }
        for s in 0..ag {
            recvs.push(((rank + 2 * n - s - 1) % n, Mode::Copy));
        }
        let first = if rs > 0 {
            (rank + n - 1) % n
        } else {
            rank % n.max(1)
        };
        let mut sends = Vec::with_capacity(recvs.len());
        if !recvs.is_empty() {
            sends.push(first);
            sends.extend(recvs[..recvs.len() - 1].iter().map(|r| r.0));
        }
        Schedule { sends, recvs }
    }
}

/// Runs `sched` over `segs` between `next` and `prev`; `scratch` holds one reduce chunk.
pub(crate) fn run<T: Elem>(
    next: &dyn Link,
    prev: &dyn Link,
    sched: &Schedule,
    segs: &mut [&mut [T]],
    src: Option<&[&[T]]>,
    op: RedOp,
    scratch: &mut [T],
) -> Result<(), StepError> {
    if let (Some(n), Some(p)) = (next.polled(), prev.polled()) {
        return run_tcp(n, p, sched, segs, src, op, scratch);
    }
    for (k, (&si, &(ri, mode))) in sched.sends.iter().zip(&sched.recvs).enumerate() {
        let (out, inb): (&[T], &mut [T]) = match src {
            Some(src) if k == 0 => (src[si], &mut *segs[ri]),
            _ => two(segs, si, ri),
        };
        let out: &[u8] = bytemuck::cast_slice(out);
        match mode {
            Mode::Copy => step(
                next,
                out,
                prev,
                &mut Direct {
                    buf: bytemuck::cast_slice_mut(inb),
                },
            )?,
            Mode::Reduce => step(
                next,
                out,
                prev,
                &mut ReduceSink {
                    dst: inb,
                    mine: src.map(|s| s[ri]),
                    scratch: &mut *scratch,
                    at: 0,
                    op,
                },
            )?,
        }
    }
    Ok(())
}

fn send_err(e: std::io::Error) -> StepError {
    StepError::Send(ClusterError::Io {
        what: "sending".into(),
        err: e,
    })
}

fn recv_err(e: std::io::Error) -> StepError {
    StepError::Recv(ClusterError::Io {
        what: "receiving".into(),
        err: e,
    })
}

/// The TCP stream: one thread, non-blocking sockets, `poll(2)` only when neither side can move.
fn run_tcp<T: Elem>(
    next: Polled<'_>,
    prev: Polled<'_>,
    sched: &Schedule,
    segs: &mut [&mut [T]],
    src: Option<&[&[T]]>,
    op: RedOp,
    scratch: &mut [T],
) -> Result<(), StepError> {
    let (ns, ps) = (next.stream, prev.stream);
    let size = std::mem::size_of::<T>();
    let (mut sk, mut sent) = (0usize, 0usize);
    // Incoming: segment index, bytes of it finished (reduced or written), bytes in scratch.
    let (mut rk, mut done, mut got) = (0usize, 0usize, 0usize);
    let scratch_bytes = std::mem::size_of_val(scratch);
    loop {
        let mut moved = false;
        let mut can_send = false;
        if let Some(&si) = sched.sends.get(sk) {
            let seg: &[u8] = match src {
                Some(src) if sk == 0 => bytemuck::cast_slice(src[si]),
                _ => bytemuck::cast_slice(&*segs[si]),
            };
            // Segment k is incoming segment k-1: only what of it has arrived may leave.
            let limit = if sk == 0 || rk >= sk {
                seg.len()
            } else if rk + 1 == sk {
                done
            } else {
                0
            };
            if sent < limit {
                can_send = true;
                match (&*ns).write(&seg[sent..limit]) {
                    Ok(0) => return Err(send_err(ErrorKind::WriteZero.into())),
                    Ok(k) => {
                        sent += k;
                        moved = true;
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                    Err(e) if e.kind() == ErrorKind::Interrupted => moved = true,
                    Err(e) => return Err(send_err(e)),
                }
            }
            if sent == seg.len() {
                sk += 1;
                sent = 0;
                moved = true;
            }
        }
        let mut can_recv = false;
        if let Some(&(ri, mode)) = sched.recvs.get(rk) {
            let total = std::mem::size_of_val(&*segs[ri]);
            if done == total {
                rk += 1;
                done = 0;
                moved = true;
            } else {
                can_recv = true;
                let r = match mode {
                    Mode::Copy => {
                        let dst: &mut [u8] = bytemuck::cast_slice_mut(&mut *segs[ri]);
                        (&*ps).read(&mut dst[done..])
                    }
                    Mode::Reduce => {
                        let piece = scratch_bytes.min(total - done);
                        let buf: &mut [u8] = bytemuck::cast_slice_mut(&mut *scratch);
                        (&*ps).read(&mut buf[got..piece])
                    }
                };
                match r {
                    Ok(0) => return Err(recv_err(ErrorKind::UnexpectedEof.into())),
                    Ok(k) => {
                        moved = true;
                        match mode {
                            Mode::Copy => done += k,
                            Mode::Reduce => {
                                got += k;
                                let piece = scratch_bytes.min(total - done);
                                if got == piece {
                                    let (a, len) = (done / size, piece / size);
                                    let d = &mut segs[ri][a..a + len];
                                    let tmp = &scratch[..len];
                                    match src {
                                        Some(src) => reduce_from(d, &src[ri][a..a + len], tmp, op),
                                        None => reduce_into(d, tmp, op),
                                    }
                                    done += piece;
                                    got = 0;
                                }
                            }
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                    Err(e) if e.kind() == ErrorKind::Interrupted => moved = true,
                    Err(e) => return Err(recv_err(e)),
                }
            }
        }
        if sk >= sched.sends.len() && rk >= sched.recvs.len() {
            return Ok(());
        }
        if !moved {
            // A stall is blamed on the side we wait to receive from when there is one: a
            // dead or stuck previous rank stops our receive first.
            let (timeout, blame_recv) = if can_recv {
                (prev.timeout, true)
            } else {
                (next.timeout, false)
            };
            wait(can_send.then_some(ns), can_recv.then_some(ps), timeout).map_err(|e| {
                if blame_recv {
                    recv_err(e)
                } else {
                    send_err(e)
                }
            })?;
        }
    }
}

/// Receives a message a chunk at a time into scratch space and reduces each chunk into `dst`
/// (`dst op chunk`, or with `mine`, `mine op chunk`) as soon as it is complete.
pub(crate) struct ReduceSink<'a, T> {
    pub dst: &'a mut [T],
    pub mine: Option<&'a [T]>,
    pub scratch: &'a mut [T],
    pub at: usize,
    pub op: RedOp,
}

impl<T: Elem> ReduceSink<'_, T> {
    fn len(&self) -> usize {
        (self.dst.len() - self.at).min(self.scratch.len())
    }
}

impl<T: Elem> RecvSink for ReduceSink<'_, T> {
    fn piece(&mut self) -> &mut [u8] {
        let len = self.len();
        bytemuck::cast_slice_mut(&mut self.scratch[..len])
    }

    fn filled(&mut self) {
        let (at, len) = (self.at, self.len());
        let got = &self.scratch[..len];
        let dst = &mut self.dst[at..at + len];
        match self.mine {
            Some(mine) => reduce_from(dst, &mine[at..at + len], got, self.op),
            None => reduce_into(dst, got, self.op),
        }
        self.at += len;
    }
}

/// A shared view of segment `a` and a mutable one of segment `b` (`a != b`).
pub(crate) fn two<'a, T>(segs: &'a mut [&mut [T]], a: usize, b: usize) -> (&'a [T], &'a mut [T]) {
    if a < b {
        let (l, r) = segs.split_at_mut(b);
        (&*l[a], &mut *r[0])
    } else {
        let (l, r) = segs.split_at_mut(a);
        (&*r[0], &mut *l[b])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_reduce_schedule_forwards_what_it_received_and_ends_on_a_complete_ring() {
        // 4 ranks, rank 1: reduce-scatter receives 3, 2, 1 (its own, 1, last) and the
        // all-gather sends 1 first, then receives 0, 3, 2.
        let s = Schedule::ring(1, 4, 3, 3);
        let recvs: Vec<usize> = s.recvs.iter().map(|r| r.0).collect();
        assert_eq!(recvs, [3, 2, 1, 0, 3, 2]);
        assert_eq!(s.sends, [0, 3, 2, 1, 0, 3]);
        assert_eq!(s.recvs[2].1, Mode::Reduce);
        assert_eq!(s.recvs[3].1, Mode::Copy);
        // Every segment but our own is received once per phase.
        let ag = Schedule::ring(1, 4, 0, 3);
        assert_eq!(ag.sends, [1, 0, 3]);
        assert_eq!(Schedule::ring(0, 1, 0, 0).sends, Vec::<usize>::new());
    }
}
