//! The byte pipes the collectives run over. A [`Link`] is one ordered, reliable stream of bytes
//! to or from one peer; the ring and mesh algorithms in [`crate::collective`] only need
//! `send_all` and `recv_exact`, so any transport (TCP, RDMA verbs, an in-memory pipe in tests)
//! plugs in by implementing them. This module knows no transport: TCP's link is in `tcp_link`,
//! and a step between two links (`step`) picks TCP's one-thread path when both are sockets.

use std::collections::VecDeque;
use std::net::TcpStream;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::ClusterError;

/// An ordered, reliable byte pipe to (or from) one peer.
///
/// Errors should be [`ClusterError::Io`] (for an operating-system error, so the caller can tell
/// a closed connection from a timeout), [`ClusterError::Peer`], or anything else; the
/// collectives add the peer's rank and host to whatever comes back.
pub trait Link: Send + Sync + std::fmt::Debug {
    /// Blocking; one thread may run it while another runs `recv_exact` on the same link.
    fn send_all(&self, buf: &[u8]) -> Result<(), ClusterError>;
    /// Blocking: returns once `buf` is full, or with an error.
    fn recv_exact(&self, buf: &mut [u8]) -> Result<(), ClusterError>;

    /// How many bytes `send_all` is sure to accept while the peer is not receiving (kernel
    /// socket buffers, say). A ring step writes a message up to this size before it starts
    /// receiving instead of sending from a second thread; the default, 0, always overlaps.
    fn send_buffer_bytes(&self) -> usize {
        0
    }

    /// The non-blocking socket behind this link, if it is one: a ring step between two such
    /// links drives both sockets from one thread with `poll(2)`. Other transports keep the
    /// default.
    fn polled(&self) -> Option<Polled<'_>> {
        None
    }
}

/// A link's non-blocking socket and the limit on every wait on it (see [`Link::polled`]).
#[derive(Debug, Clone, Copy)]
pub struct Polled<'a> {
    /// The connection, in non-blocking mode.
    pub stream: &'a TcpStream,
    /// A wait that makes no progress for this long fails as timed out.
    pub timeout: Option<Duration>,
}

/// Where a ring step puts what it receives: pieces handed out in order until the message is
/// complete, each processed (reduced, say) once full.
pub(crate) trait RecvSink {
    /// The next piece to fill; empty once the whole message has arrived.
    fn piece(&mut self) -> &mut [u8];
    /// The piece `piece` last returned is full.
    fn filled(&mut self);
}

/// A sink that receives straight into one buffer.
pub(crate) struct Direct<'a> {
    pub buf: &'a mut [u8],
}

impl RecvSink for Direct<'_> {
    fn piece(&mut self) -> &mut [u8] {
        self.buf
    }

    fn filled(&mut self) {
        self.buf = &mut [];
    }
}

/// Which side of a step failed, so the error can name the right peer.
#[derive(Debug)]
pub(crate) enum StepError {
    Send(ClusterError),
    Recv(ClusterError),
}

/// One direction of an in-memory pipe: a bounded byte queue, so a sender blocks when the reader
/// falls behind as it would on a full socket buffer (which is what exposes ordering deadlocks).
#[derive(Debug)]
struct Pipe {
    state: Mutex<PipeState>,
    changed: Condvar,
    capacity: usize,
    timeout: Duration,
}

#[derive(Debug, Default)]
struct PipeState {
    bytes: VecDeque<u8>,
    closed: bool,
}

impl Pipe {
    fn new(capacity: usize, timeout: Duration) -> Pipe {
        Pipe {
            state: Mutex::new(PipeState::default()),
            changed: Condvar::new(),
            capacity: capacity.max(1),
            timeout,
        }
    }

    fn lock(&self) -> MutexGuard<'_, PipeState> {
        // A panic in another holder leaves only a byte queue behind, which is still consistent.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits on the condition variable until `deadline`; false once it has passed.
    fn wait<'a>(
        &self,
        g: MutexGuard<'a, PipeState>,
        deadline: Instant,
    ) -> Option<MutexGuard<'a, PipeState>> {
        let left = deadline.checked_duration_since(Instant::now())?;
        let (g, _) = self
            .changed
            .wait_timeout(g, left)
            .unwrap_or_else(|p| p.into_inner());
        Some(g)
    }

    fn io_err(kind: std::io::ErrorKind, what: &str) -> ClusterError {
        ClusterError::Io {
            what: what.into(),
            err: std::io::Error::from(kind),
        }
    }

    fn send(&self, mut buf: &[u8]) -> Result<(), ClusterError> {
        let deadline = Instant::now() + self.timeout;
        let mut g = self.lock();
        while !buf.is_empty() {
            if g.closed {
                return Err(Self::io_err(std::io::ErrorKind::BrokenPipe, "sending"));
            }
            let room = self.capacity.saturating_sub(g.bytes.len());
            if room == 0 {
                g = self
                    .wait(g, deadline)
                    .ok_or_else(|| Self::io_err(std::io::ErrorKind::TimedOut, "sending"))?;
                continue;
            }
            let take = room.min(buf.len());
            g.bytes.extend(&buf[..take]);
            buf = &buf[take..];
            self.changed.notify_all();
        }
        Ok(())
    }

    fn recv(&self, buf: &mut [u8]) -> Result<(), ClusterError> {
        let deadline = Instant::now() + self.timeout;
        let mut filled = 0;
        let mut g = self.lock();
        while filled < buf.len() {
            if g.bytes.is_empty() {
                if g.closed {
                    return Err(Self::io_err(std::io::ErrorKind::UnexpectedEof, "receiving"));
                }
                g = self
                    .wait(g, deadline)
                    .ok_or_else(|| Self::io_err(std::io::ErrorKind::TimedOut, "receiving"))?;
                continue;
            }
            let take = g.bytes.len().min(buf.len() - filled);
            for (dst, src) in buf[filled..filled + take]
                .iter_mut()
                .zip(g.bytes.drain(..take))
            {
                *dst = src;
            }
            filled += take;
            self.changed.notify_all();
        }
        Ok(())
    }

    fn close(&self) {
        self.lock().closed = true;
        self.changed.notify_all();
    }
}

/// One end of an in-memory, two-way [`Link`] made by [`mem_pair`]: for tests of the algorithms
/// without sockets, and for transports' own tests. Dropping an end closes both directions, so
/// the other end sees the same errors as a closed connection.
#[derive(Debug)]
pub struct MemLink {
    tx: Arc<Pipe>,
    rx: Arc<Pipe>,
}

/// Two connected in-memory link ends, each direction buffering at most `capacity` bytes; a
/// blocked send or receive gives up with a timeout error after `timeout`.
pub fn mem_pair(capacity: usize, timeout: Duration) -> (MemLink, MemLink) {
    let a = Arc::new(Pipe::new(capacity, timeout));
    let b = Arc::new(Pipe::new(capacity, timeout));
    (
        MemLink {
            tx: a.clone(),
            rx: b.clone(),
        },
        MemLink { tx: b, rx: a },
    )
}

impl Link for MemLink {
    fn send_all(&self, buf: &[u8]) -> Result<(), ClusterError> {
        self.tx.send(buf)
    }

    fn recv_exact(&self, buf: &mut [u8]) -> Result<(), ClusterError> {
        self.rx.recv(buf)
    }
}

impl Drop for MemLink {
    fn drop(&mut self) {
        self.tx.close();
        self.rx.close();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::thread;

    #[test]
    fn mem_pair_moves_more_than_its_capacity_in_order() {
        let (a, b) = mem_pair(7, Duration::from_secs(10));
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 31 % 251) as u8).collect();
        let sent = data.clone();
        let h = thread::spawn(move || a.send_all(&sent).map(|_| a));
        let mut got = vec![0u8; data.len()];
        b.recv_exact(&mut got[..3]).unwrap();
        b.recv_exact(&mut got[3..]).unwrap();
        assert_eq!(got, data);
        h.join().unwrap().unwrap();
    }

    #[test]
    fn a_dropped_end_is_a_closed_connection_and_a_stall_times_out() {
        let (a, b) = mem_pair(4, Duration::from_millis(50));
        let mut buf = [0u8; 8];
        match b.recv_exact(&mut buf) {
            Err(ClusterError::Io { err: source, .. }) => {
                assert_eq!(source.kind(), std::io::ErrorKind::TimedOut)
            }
            other => panic!("{other:?}"),
        }
        a.send_all(&[1, 2]).unwrap();
        drop(a);
        match b.recv_exact(&mut buf) {
            Err(ClusterError::Io { err: source, .. }) => {
                assert_eq!(source.kind(), std::io::ErrorKind::UnexpectedEof)
            }
            other => panic!("{other:?}"),
        }
        assert!(b.send_all(&[0; 16]).is_err());
    }
}
