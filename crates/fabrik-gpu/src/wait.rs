//! Bounded waits on GPU work. NCCL's blocking calls (communicator set-up, a group end that
//! opens connections) cannot be interrupted from Rust, so a [`Watchdog`] thread ends the
//! process when one of them outlives its deadline: the rank then dies with a message naming the
//! call, and rank 0's rendezvous names the rank, instead of the whole job hanging. Queued
//! kernels are waited for by polling (`cuStreamQuery`) while checking the communicator's
//! asynchronous error, so a failed peer turns into an error rather than a hang.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::{GpuError, NcclComm, Stream};

type Armed = Arc<Mutex<Option<(Instant, String)>>>;

/// Ends the process (exit status 3) when an armed deadline passes.
pub struct Watchdog {
    armed: Armed,
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl Watchdog {
    /// Starts the watchdog thread, disarmed; it stops when the watchdog is dropped.
    pub fn start() -> Self {
        let armed: Armed = Arc::new(Mutex::new(None));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (a, s) = (armed.clone(), stop.clone());
        std::thread::spawn(move || {
            while !s.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
                let expired = match a.lock() {
                    Ok(g) => g
                        .as_ref()
                        .filter(|(t, _)| Instant::now() >= *t)
                        .map(|(_, w)| w.clone()),
                    Err(_) => None,
                };
                if let Some(what) = expired {
                    eprintln!("fabrik: {what} did not return in time; giving up on this rank");
                    std::process::exit(3);
                }
            }
        });
        Watchdog { armed, stop }
    }

    /// From now on, `what` must finish within `limit`.
    pub fn arm(&self, what: impl Into<String>, limit: Duration) {
        if let Ok(mut g) = self.armed.lock() {
            *g = Some((Instant::now() + limit, what.into()));
        }
    }

    /// No deadline from now on.
    pub fn disarm(&self) {
        if let Ok(mut g) = self.armed.lock() {
            *g = None;
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Waits until `stream` is idle, polling `comm`'s asynchronous error; gives up (and marks the
/// communicator for abort) after `limit`.
pub fn wait_stream(
    comm: &mut NcclComm,
    stream: &Stream,
    limit: Duration,
    what: &str,
) -> Result<(), GpuError> {
    let start = Instant::now();
    let mut spins = 0u32;
    loop {
        if stream.is_done()? {
            return comm.async_error();
        }
        spins = spins.wrapping_add(1);
        if spins % 256 == 0 {
            if let Err(e) = comm.async_error() {
                comm.abort_on_drop();
                return Err(e);
            }
            if start.elapsed() > limit {
                comm.abort_on_drop();
                return Err(GpuError::Timeout {
                    what: what.to_string(),
                    secs: limit.as_secs_f64(),
                });
            }
        }
        // Yield rather than sleep: small collectives finish in microseconds and a sleep would
        // inflate their time (nccl-tests spins on cudaStreamQuery the same way).
        std::thread::yield_now();
    }
}
