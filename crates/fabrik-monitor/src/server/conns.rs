//! Per-client connection accounting: the descriptor budget, what is known of each connection
//! being served (its address, when a byte last moved, its requests in progress), and the
//! choice of which connection gives up its place to a newcomer.

use std::collections::BTreeMap;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

/// Raises the soft descriptor limit to the hard one, at most 65,536 (as Go's runtime and
/// node_exporter do): the default 1,024 would cap the connections at a few hundred.
pub(super) fn raise_nofile() {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let lim = getrlimit(Resource::Nofile);
    let want = lim.maximum.map_or(65_536, |h| h.min(65_536));
    if lim.current.is_some_and(|c| c < want) {
        let _ = setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(want),
                maximum: lim.maximum,
            },
        );
    }
}

/// The connections that fit beside the counter files the sampler keeps (half the descriptor
/// limit) and a margin for everything else: at most `max`, at least 64.
pub(super) fn connection_budget(max: usize) -> usize {
    let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(1024);
    let spare = usize::try_from(soft / 2)
        .unwrap_or(usize::MAX)
        .saturating_sub(64);
    spare.clamp(64, max)
}

/// The connections being served, each with what the bounds need to know of it.
pub(super) type Open = Arc<Mutex<Vec<(u64, Arc<Track>)>>>;

pub(super) fn lock(open: &Open) -> std::sync::MutexGuard<'_, Vec<(u64, Arc<Track>)>> {
    // Every change is one push or retain: a poisoned list is still consistent.
    open.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Whether a connection from `ip` can be served now. Under `max` it can; at `max` a place is
/// made by closing, in this order, the idlest connection (not waiting for its own answer) of
/// the address holding the most connections, when it holds more than `ip` does, and then any
/// connection idle for a second or more. Otherwise the newcomer waits.
pub(super) fn make_room(open: &Open, ip: IpAddr, max: usize) -> bool {
    let list = lock(open);
    let live: Vec<&Arc<Track>> = list
        .iter()
        .map(|(_, t)| t)
        .filter(|t| !t.closing.load(Ordering::Relaxed))
        .collect();
    if live.len() < max {
        return true;
    }
    let mut per_ip: BTreeMap<IpAddr, usize> = BTreeMap::new();
    for t in &live {
        *per_ip.entry(t.ip).or_default() += 1;
    }
    let mine = per_ip.get(&ip).copied().unwrap_or(0);
    // Fairness first: an address with more connections than the newcomer's gives one up.
    let heaviest = per_ip
        .iter()
        .filter(|(a, n)| **a != ip && **n > mine + 1)
        .max_by_key(|(_, n)| **n)
        .map(|(a, _)| *a);
    let victim = heaviest
        .and_then(|a| {
            live.iter()
                .filter(|t| t.ip == a)
                .max_by_key(|t| (t.busy.load(Ordering::Relaxed) == 0, t.idle_for()))
        })
        .or_else(|| {
            live.iter()
                .filter(|t| t.busy.load(Ordering::Relaxed) == 0)
                .filter(|t| t.idle_for() >= Duration::from_secs(1))
                .max_by_key(|t| t.idle_for())
        });
    let Some(victim) = victim else {
        return false;
    };
    victim.closing.store(true, Ordering::Relaxed);
    victim.close.notify_one();
    true
}

/// What is known of one connection: its client's address, when a byte last moved, whether
/// an answer is being made, how many requests it made, and the signal that closes it.
pub(super) struct Track {
    ip: IpAddr,
    pub(super) born: Instant,
    /// Milliseconds after `born` when a byte last moved.
    last: AtomicU64,
    busy: AtomicUsize,
    pub(super) requests: AtomicU64,
    closing: AtomicBool,
    pub(super) close: Notify,
}

impl Track {
    pub(super) fn new(ip: IpAddr) -> Self {
        Track {
            ip,
            born: Instant::now(),
            last: AtomicU64::new(0),
            busy: AtomicUsize::new(0),
            requests: AtomicU64::new(0),
            closing: AtomicBool::new(false),
            close: Notify::new(),
        }
    }

    fn moved(&self) {
        let ms = u64::try_from(self.born.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last.store(ms, Ordering::Relaxed);
    }

    /// How long nothing has moved; a connection waiting for its own answer is not idle.
    pub(super) fn idle_for(&self) -> Duration {
        if self.busy.load(Ordering::Relaxed) > 0 {
            self.moved();
        }
        let moved = Duration::from_millis(self.last.load(Ordering::Relaxed));
        self.born.elapsed().saturating_sub(moved)
    }
}

/// Counts a request in progress for as long as it lives (dropped futures included).
pub(super) struct Busy(pub(super) Arc<Track>);

impl Busy {
    pub(super) fn start(t: &Arc<Track>) -> Busy {
        t.busy.fetch_add(1, Ordering::Relaxed);
        Busy(Arc::clone(t))
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::Relaxed);
        self.0.moved();
    }
}

/// A socket that notes when a byte last moved, for the idle bound.
pub(super) struct Watched {
    pub(super) inner: tokio::net::TcpStream,
    pub(super) track: Arc<Track>,
}

impl Watched {
    fn moved(&self) {
        self.track.moved();
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.moved();
        }
        r
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.moved();
        }
        r
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn track(ip: [u8; 4], idle_ms: u64) -> (u64, Arc<Track>) {
        let t = Track::new(IpAddr::from(ip));
        let born = Instant::now() - Duration::from_millis(idle_ms + 1);
        let t = Track { born, ..t };
        (u64::from(ip[3]) * 1000 + idle_ms, Arc::new(t))
    }

    #[test]
    fn room_is_made_by_the_heaviest_address_then_by_the_idle() {
        let open: Open = Arc::default();
        // A full server: five connections from .2, one from .3.
        for i in 0..5 {
            lock(&open).push(track([127, 0, 0, 2], 10 * i));
        }
        lock(&open).push(track([127, 0, 0, 3], 5000));
        let newcomer = IpAddr::from([127, 0, 0, 9]);
        assert!(make_room(&open, newcomer, 6));
        let closed: Vec<IpAddr> = lock(&open)
            .iter()
            .filter(|(_, t)| t.closing.load(Ordering::Relaxed))
            .map(|(_, t)| t.ip)
            .collect();
        // The heavy address gave one up, not the idler connection of the light one.
        assert_eq!(closed, vec![IpAddr::from([127, 0, 0, 2])]);

        // Everyone holds one and nobody is idle: the newcomer waits.
        let open: Open = Arc::default();
        for i in 2..6u8 {
            lock(&open).push(track([127, 0, 0, i], 0));
        }
        assert!(!make_room(&open, newcomer, 4));
        // One idle for a second makes room.
        lock(&open).push(track([127, 0, 0, 7], 2000));
        assert!(make_room(&open, newcomer, 5));
        // The heavy address itself never evicts its own for fairness.
        let open: Open = Arc::default();
        for i in 0..4 {
            lock(&open).push(track([127, 0, 0, 2], i));
        }
        assert!(!make_room(&open, IpAddr::from([127, 0, 0, 2]), 4));
    }
}
