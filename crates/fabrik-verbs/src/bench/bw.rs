//! The bandwidth loops: many work requests in flight, a completion every `cq_mod`, as perftest's
//! ib_*_bw run them.

use std::time::Duration;

use super::resources::Resources;
use super::wait::{check_wc, poll_some, Spin, POLLS_PER_CHECK};
use crate::clock::Ticker;
use crate::error::VerbsError;
use crate::ffi::*;
use crate::mem::pattern;
use crate::proto::{Endpoint, TestParams};
use crate::stats::bw_row;

/// Bandwidth, sending side: `iterations` WRs round-robin over the QPs, at most `tx_depth` in
/// flight per QP, one signaled every `cq_mod`.
pub(super) fn bw_sender(
    res: &mut Resources,
    p: &TestParams,
    remote: &Endpoint,
    bytes: u64,
    timeout: Duration,
) -> Result<fabrik_model::BwRow, VerbsError> {
    let n = p.iterations as usize;
    let nq = res.qps.len();
    let depth = p.tx_depth as usize;
    let cq_mod = p.cq_mod as usize;
    let mut posted_at = Vec::with_capacity(n);
    let mut completed_at = Vec::with_capacity(n);
    let mut outstanding = vec![0usize; nq];
    let mut since_signal = vec![0usize; nq];
    let (mut posted, mut completed) = (0usize, 0usize);
    let mut wcs = [ibv_wc::default(); 16];
    let verbs = res.ctx.verbs.clone();
    // Stamps come from the cycle counter, as perftest's `get_cycles()`: where the clocksource is
    // `hpet` (a qemu guest), `Instant::now()` is a system call and an emulated device read, and
    // it was two of them per message. The clock proper is read only at the idle checks.
    let clock = Ticker::start();
    let mut spin = Spin::new(POLLS_PER_CHECK);
    while completed < n {
        while posted < n {
            let q = posted % nq;
            if outstanding[q] >= depth {
                break;
            }
            since_signal[q] += 1;
            let signaled = since_signal[q] >= cq_mod || posted + nq >= n;
            let wr_id = ((q as u64) << 32) | since_signal[q] as u64;
            // Stamped before posting, as perftest does: on software providers (rxe) the post
            // itself can run the whole transfer.
            posted_at.push(clock.now());
            res.post(q, p.op, bytes, remote, signaled, wr_id)?;
            outstanding[q] += 1;
            posted += 1;
            if signaled {
                since_signal[q] = 0;
            }
        }
        let got = res.send_cq.poll(&mut wcs)?;
        if got == 0 {
            // The timeout says how far the run got.
            spin.idle(timeout, "completions", res.watch.as_ref())
                .map_err(|e| match e {
                    VerbsError::Timeout { secs, .. } => VerbsError::Timeout {
                        what: format!("{} completions ({completed} of {n} done)", p.op.as_str()),
                        secs,
                    },
                    e => e,
                })?;
            continue;
        }
        let t = clock.now();
        spin = Spin::new(POLLS_PER_CHECK);
        for wc in &wcs[..got] {
            check_wc(&verbs, wc, p.op.as_str())?;
            let q = (wc.wr_id >> 32) as usize;
            let covered = (wc.wr_id & 0xffff_ffff) as usize;
            if q >= nq {
                return Err(VerbsError::Control(format!(
                    "stray completion wr_id {:#x}",
                    wc.wr_id
                )));
            }
            outstanding[q] = outstanding[q].saturating_sub(covered);
            completed += covered;
            completed_at.extend(std::iter::repeat_n(t, covered));
        }
    }
    completed_at.truncate(n);
    let rate = clock
        .rate()
        .ok_or_else(|| VerbsError::Control("the cycle counter did not advance".into()))?;
    let t0 = posted_at.first().copied().unwrap_or(0);
    let secs = |ticks: &[u64]| -> Vec<f64> {
        ticks
            .iter()
            .map(|&t| t.wrapping_sub(t0) as f64 / rate / 1e6)
            .collect()
    };
    bw_row(bytes, &secs(&posted_at), &secs(&completed_at))
        .ok_or_else(|| VerbsError::Control("no time elapsed: too few iterations".into()))
}

/// Send bandwidth, receiving side: reap `iterations` receives, reposting each slot, checking
/// payloads when asked. Returns the number of mismatching bytes.
pub(super) fn bw_receiver(
    res: &mut Resources,
    p: &TestParams,
    bytes: u64,
    timeout: Duration,
) -> Result<u64, VerbsError> {
    let mut wcs = [ibv_wc::default(); 16];
    let verbs = res.ctx.verbs.clone();
    let mut received = 0u64;
    let mut mismatches = 0u64;
    let expected = pattern(bytes);
    while received < p.iterations {
        let got = poll_some(
            &res.recv_cq,
            &mut wcs,
            timeout,
            "send data from the peer",
            res.watch.as_ref(),
        )?;
        for wc in &wcs[..got] {
            check_wc(&verbs, wc, "receive")?;
            let q = (wc.wr_id >> 32) as usize;
            let slot = wc.wr_id & 0xffff_ffff;
            if q >= res.qps.len() {
                return Err(VerbsError::Control(format!(
                    "stray receive wr_id {:#x}",
                    wc.wr_id
                )));
            }
            res.rx_posted[q] = res.rx_posted[q].saturating_sub(1);
            if u64::from(wc.byte_len) != bytes {
                mismatches += bytes.abs_diff(u64::from(wc.byte_len));
            } else if p.verify {
                mismatches += res
                    .buf
                    .mismatches(res.dst_offset(slot) as usize, &expected)?;
            }
            res.post_recv_slot(q, slot)?;
            received += 1;
        }
    }
    Ok(mismatches)
}
