//! Busy waits on a completion queue or a byte of memory, with the timeout, peer and scheduler
//! checks kept out of the fast path.

use std::time::{Duration, Instant};

use crate::device::Cq;
use crate::error::VerbsError;
use crate::ffi::*;
use crate::loader::Verbs;
use crate::watch::PeerWatch;

/// Empty polls of a completion queue between two looks at the clock, the peer and the scheduler.
pub(super) const POLLS_PER_CHECK: u32 = 1024;

/// The same for a spin on a byte of memory, which costs far less per round.
pub(super) const READS_PER_CHECK: u32 = 16384;

/// The bookkeeping of a busy wait. Every `every` empty rounds it reads the clock (timeout), looks
/// at the peer's control connection and yields the CPU; never before, so that a wait that ends
/// within a round trip makes no system call at all, as perftest's busy polls make none. (In a VM
/// on the `hpet` clocksource every clock read is a system call plus an emulated device read,
/// several µs: one per wait was a measurable part of a 12 µs round trip.) Yielding now and then
/// matters when both ends share a CPU (oversubscribed hosts, VMs): a spinning waiter would
/// otherwise hold it until the next scheduler tick while the peer it waits for cannot run (in
/// the Soft-RoCE VM, both ends pinned to one vCPU: about 1 ms a round trip with the yield, and
/// `ib_send_lat`, which never yields, did not finish).
///
/// An empty round is not followed by a `pause` (`spin_loop`), as perftest's polls are not: on
/// x86 `pause` stalls 40 to 140 cycles, a delay added to noticing a completion, and qemu's TCG
/// ends its translated code on every `pause` and takes its global lock before going on.
pub(super) struct Spin {
    pub(super) rounds: u32,
    pub(super) every: u32,
    pub(super) start: Option<Instant>,
}

impl Spin {
    pub(super) fn new(every: u32) -> Self {
        Spin {
            rounds: 0,
            every: every.max(1),
            start: None,
        }
    }

    /// After an empty round: errs when `timeout` has passed (counted from the first check, one
    /// check interval late at most) or the peer is gone.
    pub(super) fn idle(
        &mut self,
        timeout: Duration,
        what: &str,
        watch: Option<&PeerWatch>,
    ) -> Result<(), VerbsError> {
        self.rounds = self.rounds.wrapping_add(1);
        if self.rounds % self.every == 0 {
            let now = Instant::now();
            let start = *self.start.get_or_insert(now);
            if now.duration_since(start) > timeout {
                return Err(VerbsError::Timeout {
                    what: what.to_string(),
                    secs: timeout.as_secs_f64(),
                });
            }
            if let Some(w) = watch {
                w.check(now, what)?;
            }
            std::thread::yield_now();
        }
        Ok(())
    }
}

/// Polls `cq` until at least one completion or `timeout` passes with none.
pub(super) fn poll_some(
    cq: &Cq,
    wcs: &mut [ibv_wc],
    timeout: Duration,
    what: &str,
    watch: Option<&PeerWatch>,
) -> Result<usize, VerbsError> {
    let mut spin = Spin::new(POLLS_PER_CHECK);
    loop {
        let n = cq.poll(wcs)?;
        if n > 0 {
            return Ok(n);
        }
        spin.idle(timeout, what, watch)?;
    }
}

pub(super) fn check_wc(verbs: &Verbs, wc: &ibv_wc, op: &str) -> Result<(), VerbsError> {
    if wc.status == IBV_WC_SUCCESS {
        return Ok(());
    }
    Err(VerbsError::Completion {
        op: op.to_string(),
        qp_num: wc.qp_num,
        status: wc.status,
        status_str: verbs.wc_status_str(wc.status),
        vendor_err: wc.vendor_err,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn spin_looks_at_the_clock_only_every_n_rounds() {
        // A zero timeout cannot fire before the first check: no clock is read before it.
        let mut s = Spin::new(1000);
        for _ in 0..999 {
            s.idle(Duration::ZERO, "x", None).unwrap();
        }
        // The first check starts the clock; a later one sees the timeout.
        s.idle(Duration::ZERO, "x", None).unwrap();
        std::thread::sleep(Duration::from_millis(2));
        let e = (0..1000)
            .find_map(|_| s.idle(Duration::ZERO, "the ping", None).err())
            .unwrap()
            .to_string();
        assert!(e.contains("timed out") && e.contains("the ping"), "{e}");
    }

    #[test]
    fn spin_reports_a_closed_peer() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let a = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        let w = PeerWatch::new(&b).unwrap();
        drop(a);
        std::thread::sleep(crate::watch::WATCH_EVERY + Duration::from_millis(20));
        let mut s = Spin::new(1);
        let e = s
            .idle(Duration::from_secs(60), "send completions", Some(&w))
            .unwrap_err();
        assert!(matches!(e, VerbsError::PeerGone { .. }), "{e}");
    }
}
