//! The latency ping-pong, as perftest's ib_*_lat run it: one message each way per round trip,
//! stamped with the cycle counter before each post.

use std::time::Duration;

use super::resources::Resources;
use super::wait::{check_wc, poll_some, Spin, READS_PER_CHECK};
use crate::clock::Ticker;
use crate::error::VerbsError;
use crate::ffi::*;
use crate::loader::Verbs;
use crate::proto::{Endpoint, Op, TestParams};

/// Whether the receive just completed (the `received`-th, counted from 1) is reposted: only
/// when a message still to come needs it.
pub(super) fn lat_repost(received: u64, rx_depth: u32, iterations: u64) -> bool {
    received + u64::from(rx_depth) <= iterations
}

/// Waits for one receive on QP 0 and, when `repost`, reposts its slot.
pub(super) fn recv_one(
    res: &mut Resources,
    bytes: u64,
    timeout: Duration,
    repost: bool,
) -> Result<(), VerbsError> {
    let mut wcs = [ibv_wc::default(); 1];
    poll_some(
        &res.recv_cq,
        &mut wcs,
        timeout,
        "a ping from the peer",
        res.watch.as_ref(),
    )?;
    check_wc(&res.ctx.verbs, &wcs[0], "receive")?;
    if u64::from(wcs[0].byte_len) != bytes {
        return Err(VerbsError::Control(format!(
            "received {} bytes, expected {bytes}",
            wcs[0].byte_len
        )));
    }
    res.rx_posted[0] = res.rx_posted[0].saturating_sub(1);
    if repost {
        res.post_recv_slot(0, wcs[0].wr_id & 0xffff_ffff)?;
    }
    Ok(())
}

/// Reaps send completions; blocks only while `outstanding` is at `limit`.
pub(super) fn reap_sends(
    res: &mut Resources,
    outstanding: &mut usize,
    limit: usize,
    timeout: Duration,
    op: &str,
) -> Result<(), VerbsError> {
    // Latency loops have one send in flight at a time; a one-entry array and a borrowed
    // `Verbs` keep the per-message work (an Arc count, a 768-byte clear) out of the timed
    // round trip, which matters under qemu's TCG where every instruction is emulated.
    let mut wcs = [ibv_wc::default(); 1];
    let verbs: &Verbs = &res.ctx.verbs;
    loop {
        let got = if *outstanding >= limit {
            poll_some(
                &res.send_cq,
                &mut wcs,
                timeout,
                "send completions",
                res.watch.as_ref(),
            )?
        } else {
            res.send_cq.poll(&mut wcs)?
        };
        for wc in &wcs[..got] {
            check_wc(verbs, wc, op)?;
            *outstanding = outstanding.saturating_sub(1);
        }
        if got == 0 || *outstanding == 0 {
            return Ok(());
        }
    }
}

/// Spins until the last byte of the message in the dst region reads `marker`.
pub(super) fn wait_marker(
    res: &Resources,
    bytes: u64,
    marker: u8,
    timeout: Duration,
) -> Result<(), VerbsError> {
    let off = (res.max_size + bytes - 1) as usize;
    let mut spin = Spin::new(READS_PER_CHECK);
    loop {
        if res.buf.read_volatile_byte(off) == Some(marker) {
            return Ok(());
        }
        spin.idle(timeout, "the peer's RDMA write", res.watch.as_ref())?;
    }
}

pub(super) fn marker(i: u64) -> u8 {
    (i % 250 + 1) as u8
}

/// Waits for the peer's `i`-th ping-pong message (of `n`): a receive completion (send) or the
/// marker of message `i` landing in the destination region (write).
pub(super) fn wait_ping(
    res: &mut Resources,
    op: Op,
    bytes: u64,
    (i, n): (u64, u64),
    timeout: Duration,
) -> Result<(), VerbsError> {
    match op {
        Op::Send => {
            let repost = lat_repost(i + 1, res.rx_depth, n);
            recv_one(res, bytes, timeout, repost)
        }
        Op::Write => wait_marker(res, bytes, marker(i), timeout),
        Op::Read => Ok(()),
    }
}

/// Latency ping-pong as perftest's `run_iter_lat_send` / `run_iter_lat_write` / `run_iter_lat`
/// run it; `initiator` is the client. Each end: wait for the peer's message (the client skips
/// this before its first), stamp the cycle counter, post, and when the post is signaled (every
/// `cq_mod`-th, every one at perftest's latency default of tx depth 1) spin on its send
/// completion. Samples are the intervals between consecutive stamps, halved for send and write
/// (a round trip is two one-way trips), whole for read: perftest's `tposted[i+1] - tposted[i]`.
/// Returns the one-way times (µs) and the measured counter rate (ticks/µs) on the client.
pub(super) fn lat_loop(
    res: &mut Resources,
    p: &TestParams,
    remote: &Endpoint,
    bytes: u64,
    initiator: bool,
    timeout: Duration,
) -> Result<(Vec<f64>, Option<f64>), VerbsError> {
    let n = p.iterations;
    if p.op == Op::Read && !initiator {
        return Ok((Vec::new(), None));
    }
    let mut outstanding = 0usize;
    let op = p.op.as_str();
    let src_last = (bytes - 1) as usize;
    let cq_mod = u64::from(p.cq_mod.max(1));
    let clock = Ticker::start();
    let mut stamps: Vec<u64> = Vec::with_capacity(if initiator {
        n.min(1 << 20) as usize
    } else {
        0
    });
    for i in 0..n {
        // The client's message i answers the server's i-1; the server's i answers the client's i.
        if initiator && i > 0 {
            wait_ping(res, p.op, bytes, (i - 1, n), timeout)?;
        } else if !initiator {
            wait_ping(res, p.op, bytes, (i, n), timeout)?;
        }
        let signaled = p.op == Op::Read || (i + 1) % cq_mod == 0 || i + 1 == n;
        if initiator {
            stamps.push(clock.now());
        }
        if p.op == Op::Write {
            res.buf.write(src_last, &[marker(i)])?;
        }
        res.post(0, p.op, bytes, remote, signaled, 1)?;
        if signaled {
            outstanding += 1;
            if !initiator && i + 1 == n {
                // The client may already have answered this last message with `done` on the
                // control connection, which the watch would take for an interruption.
                let watch = res.watch.take();
                let reaped = reap_sends(res, &mut outstanding, 1, timeout, op);
                res.watch = watch;
                reaped?;
            } else {
                reap_sends(res, &mut outstanding, 1, timeout, op)?;
            }
        }
    }
    if initiator && n > 0 {
        // The answer to the last message, so that both ends end in step.
        wait_ping(res, p.op, bytes, (n - 1, n), timeout)?;
    }
    if stamps.len() < 2 {
        return Ok((Vec::new(), None));
    }
    let rate = clock
        .rate()
        .ok_or_else(|| VerbsError::Control("the cycle counter did not advance".into()))?;
    let factor = if p.op == Op::Read { 1.0 } else { 2.0 };
    let samples = stamps
        .windows(2)
        .map(|w| w[1].wrapping_sub(w[0]) as f64 / rate / factor)
        .collect();
    Ok((samples, Some(rate)))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::super::resources::lat_rx_depth;
    use super::*;

    #[test]
    fn send_latency_reposts_receives_as_perftest_does() {
        // perftest 4.5, `ib_send_lat -n 1000`: rx_depth 512, so 488 reposts and the last 512
        // round trips without one; `-n 20000`: 19488 reposts.
        for (n, depth, reposts) in [(1000, 512, 488), (20_000, 512, 19_488), (3, 3, 0)] {
            let d = lat_rx_depth(n);
            assert_eq!(d, depth, "n={n}");
            let r = (1..=n).filter(|&k| lat_repost(k, d, n)).count() as u64;
            assert_eq!(r, reposts, "n={n}");
            // Every message of the run finds a receive, and none is left over for the next size.
            let mut posted = u64::from(d);
            for k in 1..=n {
                assert!(posted > 0, "n={n}: message {k} finds no receive");
                posted -= 1;
                if lat_repost(k, d, n) {
                    posted += 1;
                }
            }
            assert_eq!(posted, 0, "n={n}");
        }
        assert!(lat_repost(1, 512, 1000) && !lat_repost(489, 512, 1000));
    }
}
