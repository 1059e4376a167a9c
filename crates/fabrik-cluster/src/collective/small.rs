//! The latency-bound algorithms: recursive doubling all_reduce, binomial-tree reduce and
//! broadcast, and Bruck's all_gather and alltoall. Each takes ⌈log2 n⌉ (or twice that) steps where the ring
//! takes n-1 or 2(n-1), at the price of moving the whole buffer at every step, so they win
//! below the sizes where bandwidth dominates (the thresholds are in [`super::Algorithm`]'s
//! selection). They run on the calling thread over the mesh links (for two ranks, the ring
//! lane is the link to the only peer), receive into the lane's kept scratch, and allocate
//! nothing per step.

use crate::dtype::{reduce_into, Elem, RedOp};
use crate::link::{Direct, Link};
use crate::step::step;
use crate::ClusterError;

use super::{name_peer, Comm};

impl Comm {
    /// The link that carries data to rank `p`: its mesh link, or the ring lane's when `p` is
    /// both neighbours (two ranks).
    fn link_to(&self, p: u32) -> Result<&dyn Link, ClusterError> {
        if let Some(l) = self.mesh.get(p as usize).and_then(Option::as_deref) {
            return Ok(l);
        }
        match self.lanes.first() {
            Some(lane) if p == self.next() => Ok(&*lane.next),
            _ => Err(no_link(p)),
        }
    }

    /// The link that carries data from rank `p` (see [`Comm::link_to`]).
    fn link_from(&self, p: u32) -> Result<&dyn Link, ClusterError> {
        if let Some(l) = self.mesh.get(p as usize).and_then(Option::as_deref) {
            return Ok(l);
        }
        match self.lanes.first() {
            Some(lane) if p == self.prev() => Ok(&*lane.prev),
            _ => Err(no_link(p)),
        }
    }

    /// Whether every rank this one may exchange with in a latency-bound algorithm has a link.
    pub(super) fn has_peer_links(&self) -> bool {
        (0..self.n)
            .filter(|&p| p != self.rank)
            .all(|p| self.link_to(p).is_ok() && self.link_from(p).is_ok())
    }

    /// Sends `out` to `to` while `inb` fills from `from`, from this thread when the transport
    /// allows it (TCP, and any link that buffers the message).
    fn exchange(&self, to: u32, out: &[u8], from: u32, inb: &mut [u8]) -> Result<(), ClusterError> {
        step(
            self.link_to(to)?,
            out,
            self.link_from(from)?,
            &mut Direct { buf: inb },
        )
        .map_err(|e| self.step_err(e, to, from))
    }

    fn send_to(&self, to: u32, out: &[u8]) -> Result<(), ClusterError> {
        if out.is_empty() {
            return Ok(());
        }
        self.link_to(to)?
            .send_all(out)
            .map_err(|e| name_peer(self.label(to), "sending to it", e))
    }

    fn recv_from(&self, from: u32, inb: &mut [u8]) -> Result<(), ClusterError> {
        if inb.is_empty() {
            return Ok(());
        }
        self.link_from(from)?
            .recv_exact(inb)
            .map_err(|e| name_peer(self.label(from), "receiving from it", e))
    }

    /// Runs `f` with `elems` elements of the first lane's scratch (a single rank has no lane
    /// and never calls this with a peer to talk to).
    fn small_scratch<T: Elem, R>(
        &self,
        elems: usize,
        f: impl FnOnce(&mut [T]) -> Result<R, ClusterError>,
    ) -> Result<R, ClusterError> {
        match self.lanes.first() {
            Some(lane) => self.with_scratch(lane, elems, f),
            None => f(&mut []),
        }
    }

    /// Recursive doubling all_reduce without the final average. With `n` not a power of two,
    /// the first `2·rem` ranks pair up: each even one folds its buffer into the odd one above
    /// it and waits, the rest run recursive doubling among a power of two, and the even ones
    /// get the result back at the end (MPICH's and Open MPI's fix-up). Every rank ends with
    /// the same bits, since each step combines the same two operands on both sides.
    pub(super) fn rd_all_reduce<T: Elem>(
        &self,
        buf: &mut [T],
        op: RedOp,
    ) -> Result<(), ClusterError> {
        let (n, r) = (self.n, self.rank);
        if n < 2 || buf.is_empty() {
            return Ok(());
        }
        let pof2 = 1u32 << (31 - n.leading_zeros());
        let rem = n - pof2;
        self.small_scratch(buf.len(), |tmp: &mut [T]| {
            let folded = r < 2 * rem;
            let newrank = if !folded {
                Some(r - rem)
            } else if r % 2 == 0 {
                self.send_to(r + 1, bytemuck::cast_slice(buf))?;
                None
            } else {
                self.recv_from(r - 1, bytemuck::cast_slice_mut(tmp))?;
                reduce_into(buf, tmp, op);
                Some(r / 2)
            };
            if let Some(nr) = newrank {
                let mut mask = 1;
                while mask < pof2 {
                    let nd = nr ^ mask;
                    let peer = if nd < rem { nd * 2 + 1 } else { nd + rem };
                    self.exchange(
                        peer,
                        bytemuck::cast_slice(buf),
                        peer,
                        bytemuck::cast_slice_mut(tmp),
                    )?;
                    reduce_into(buf, tmp, op);
                    mask <<= 1;
                }
            }
            if folded {
                if r % 2 == 1 {
                    self.send_to(r - 1, bytemuck::cast_slice(buf))?;
                } else {
                    self.recv_from(r + 1, bytemuck::cast_slice_mut(buf))?;
                }
            }
            Ok(())
        })
    }

    /// Binomial-tree reduce to `root` (no final average): in round `k` every rank whose
    /// position relative to the root has bit `k` set sends its partial result to the rank
    /// `2^k` below and is done; the others fold in what they receive. Other ranks' buffers
    /// are left holding partial results.
    pub(super) fn tree_reduce<T: Elem>(
        &self,
        buf: &mut [T],
        op: RedOp,
        root: u32,
    ) -> Result<(), ClusterError> {
        let Some(tree) = self.binomial(root, buf.len()) else {
            return Ok(());
        };
        let n = self.n;
        self.small_scratch(buf.len(), |tmp: &mut [T]| {
            let mut mask = 1;
            while mask < tree.bit {
                let child = tree.pos | mask;
                if child < n {
                    self.recv_from((child + tree.root) % n, bytemuck::cast_slice_mut(tmp))?;
                    reduce_into(buf, tmp, op);
                }
                mask <<= 1;
            }
            match tree.parent {
                Some(p) => self.send_to(p, bytemuck::cast_slice(buf)),
                None => Ok(()),
            }
        })
    }

    /// This rank's place in the binomial tree rooted at `root`; none where there is nothing
    /// to move (a single rank or an empty buffer of `len` elements).
    fn binomial(&self, root: u32, len: usize) -> Option<Binomial> {
        let n = self.n;
        if n < 2 || len == 0 {
            return None;
        }
        let root = root % n;
        let pos = (self.rank + n - root) % n;
        if pos == 0 {
            let bit = n.next_power_of_two();
            return Some(Binomial {
                root,
                pos,
                bit,
                parent: None,
            });
        }
        let bit = pos & pos.wrapping_neg();
        let parent = Some((pos - bit + root) % n);
        Some(Binomial {
            root,
            pos,
            bit,
            parent,
        })
    }

    /// Binomial-tree broadcast from `root`: a rank receives once from the rank that clears the
    /// lowest set bit of its position, then sends to the positions below that bit.
    pub(super) fn tree_broadcast<T: Elem>(
        &self,
        buf: &mut [T],
        root: u32,
    ) -> Result<(), ClusterError> {
        let Some(tree) = self.binomial(root, buf.len()) else {
            return Ok(());
        };
        let n = self.n;
        if let Some(p) = tree.parent {
            self.recv_from(p, bytemuck::cast_slice_mut(buf))?;
        }
        let mut mask = tree.bit >> 1;
        while mask > 0 {
            if tree.pos + mask < n {
                let child = (tree.pos + mask + tree.root) % n;
                self.send_to(child, bytemuck::cast_slice(buf))?;
            }
            mask >>= 1;
        }
        Ok(())
    }

    /// Bruck's all_gather over `n` equal blocks of `buf` (this rank's at `rank`): in step `k`
    /// a rank sends the blocks it holds (up to `2^k` of them) to the rank `2^k` below and
    /// receives as many from the rank `2^k` above, so ⌈log2 n⌉ steps suffice for any `n`.
    /// The blocks gather in rotated order in scratch and are put in place once at the end.
    pub(super) fn bruck_all_gather<T: Elem>(&self, buf: &mut [T]) -> Result<(), ClusterError> {
        let n = self.n as usize;
        let r = self.rank as usize;
        let block = buf.len() / n.max(1);
        if n < 2 || block == 0 {
            return Ok(());
        }
        self.small_scratch(block * n, |tmp: &mut [T]| {
            tmp[..block].copy_from_slice(&buf[r * block..(r + 1) * block]);
            let mut pow = 1;
            while pow < n {
                let cnt = pow.min(n - pow);
                let to = ((r + n - pow) % n) as u32;
                let from = ((r + pow) % n) as u32;
                let (have, rest) = tmp.split_at_mut(pow * block);
                self.exchange(
                    to,
                    bytemuck::cast_slice(&have[..cnt * block]),
                    from,
                    bytemuck::cast_slice_mut(&mut rest[..cnt * block]),
                )?;
                pow *= 2;
            }
            for (i, b) in tmp.chunks_exact(block).enumerate() {
                let dst = (r + i) % n;
                buf[dst * block..(dst + 1) * block].copy_from_slice(b);
            }
            Ok(())
        })
    }

    /// Bruck's alltoall over `n` equal blocks (block `j` of `send` goes to rank `j`, block `i`
    /// of `recv` comes from rank `i`): the blocks are rotated so that the one for rank
    /// `r + i` sits at position `i`; in step `k` every block whose position has bit `2^k` set
    /// goes `2^k` ranks up (packed into one message) while as many come from `2^k` below into
    /// the same positions; after ⌈log2 n⌉ steps position `i` holds the block of rank `r - i`.
    /// Each step moves about half the blocks, so it wins where the n-1 steps of the pairwise
    /// exchange cost more than the bytes (MPICH's choice for short messages).
    pub(super) fn bruck_alltoall<T: Elem>(
        &self,
        send: &[T],
        recv: &mut [T],
    ) -> Result<(), ClusterError> {
        let n = self.n as usize;
        let r = self.rank as usize;
        let block = send.len().min(recv.len()) / n.max(1);
        if block == 0 {
            return Ok(());
        }
        if n < 2 {
            recv[..block].copy_from_slice(&send[..block]);
            return Ok(());
        }
        let half = n.div_ceil(2);
        self.small_scratch(block * (n + 2 * half), |scratch: &mut [T]| {
            let (tmp, packs) = scratch.split_at_mut(block * n);
            let (out, inb) = packs.split_at_mut(block * half);
            for (i, b) in tmp.chunks_exact_mut(block).enumerate() {
                let src = (r + i) % n;
                b.copy_from_slice(&send[src * block..(src + 1) * block]);
            }
            let mut pow = 1;
            while pow < n {
                let mut cnt = 0;
                for i in (0..n).filter(|i| i & pow != 0) {
                    out[cnt * block..(cnt + 1) * block]
                        .copy_from_slice(&tmp[i * block..(i + 1) * block]);
                    cnt += 1;
                }
                let to = ((r + pow) % n) as u32;
                let from = ((r + n - pow) % n) as u32;
                self.exchange(
                    to,
                    bytemuck::cast_slice(&out[..cnt * block]),
                    from,
                    bytemuck::cast_slice_mut(&mut inb[..cnt * block]),
                )?;
                for (k, i) in (0..n).filter(|i| i & pow != 0).enumerate() {
                    tmp[i * block..(i + 1) * block]
                        .copy_from_slice(&inb[k * block..(k + 1) * block]);
                }
                pow *= 2;
            }
            for (i, b) in tmp.chunks_exact(block).enumerate() {
                let dst = (r + n - i) % n;
                recv[dst * block..(dst + 1) * block].copy_from_slice(b);
            }
            Ok(())
        })
    }
}

fn no_link(p: u32) -> ClusterError {
    ClusterError::NoMeshLink { rank: p }
}

/// A rank's place in a binomial tree: its children sit at `pos` plus each bit below `bit`.
struct Binomial {
    /// The root, below `n`.
    root: u32,
    /// The rank's position relative to the root.
    pos: u32,
    /// The bit through which the rank meets its parent: the lowest set bit of `pos`, or at the
    /// root `n` rounded up to a power of two.
    bit: u32,
    /// The rank that clears `bit` (none at the root).
    parent: Option<u32>,
}
