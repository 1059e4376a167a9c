//! Warnings about peers, off the serving threads and rate-limited.
//!
//! A server that writes one line per rejected connection stops serving when its stderr is a pipe
//! nobody reads: once the pipe is full the write blocks, and it blocked the accept loop. Lines
//! are handed to one writer thread through a bounded queue instead (a full queue leaves the line
//! out), and at most a burst of 20 and then 5 a second are written; how many were left out is
//! said in one line a second later. The writer thread may block on stderr; nothing else does.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// Lines written at once before the rate applies.
const BURST: f64 = 20.0;
/// Lines a second after the burst.
const PER_SECOND: f64 = 5.0;
/// Lines waiting for the writer; more are left out.
const QUEUE: usize = 64;

enum Level {
    Warn,
    Info,
}

struct Log {
    tx: mpsc::SyncSender<(Level, String)>,
    bucket: Mutex<(f64, Instant)>,
    left_out: AtomicU64,
}

fn log() -> Option<&'static Log> {
    static LOG: OnceLock<Option<Log>> = OnceLock::new();
    LOG.get_or_init(|| {
        let (tx, rx) = mpsc::sync_channel::<(Level, String)>(QUEUE);
        let log = Log {
            tx,
            bucket: Mutex::new((BURST, Instant::now())),
            left_out: AtomicU64::new(0),
        };
        std::thread::Builder::new()
            .name("bench-log".into())
            .spawn(move || write_lines(rx))
            .ok()?;
        Some(log)
    })
    .as_ref()
}

fn write_lines(rx: mpsc::Receiver<(Level, String)>) {
    let mut counted = Instant::now();
    loop {
        match rx.recv_timeout(Duration::from_secs(1)) {
            Ok((Level::Warn, line)) => tracing::warn!("{line}"),
            Ok((Level::Info, line)) => tracing::info!("{line}"),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        }
        if counted.elapsed() < Duration::from_secs(1) {
            continue;
        }
        counted = Instant::now();
        if let Some(l) = log() {
            let n = l.left_out.swap(0, Ordering::Relaxed);
            if n > 0 {
                tracing::warn!(
                    "{n} more lines about peers left out (at most {PER_SECOND} a second are written)"
                );
            }
        }
    }
}

fn emit(level: Level, line: String) {
    let Some(l) = log() else {
        return;
    };
    let allowed = {
        let mut b = l.bucket.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        b.0 = (b.0 + now.duration_since(b.1).as_secs_f64() * PER_SECOND).min(BURST);
        b.1 = now;
        if b.0 >= 1.0 {
            b.0 -= 1.0;
            true
        } else {
            false
        }
    };
    if !allowed || l.tx.try_send((level, line)).is_err() {
        l.left_out.fetch_add(1, Ordering::Relaxed);
    }
}

/// A warning about a peer or a connection.
pub(crate) fn warn(line: String) {
    emit(Level::Warn, line);
}

/// A note about a session, under the same limit.
pub(crate) fn info(line: String) {
    emit(Level::Info, line);
}
