//! Connections that are still proving who they are. A listener on the job network must not let
//! strangers hold it: each unauthenticated connection gets its own thread and one overall
//! deadline ([`Channel::accept_until`](crate::Channel::accept_until)), and this table bounds
//! how many wait at once. When the table is full the connection that has waited longest is shut
//! down to make room: a real peer completes its handshake in a few round trips, so the oldest
//! entry is the one least likely to be real, and a flood of idle connections can delay a real
//! peer by at most the time it takes the flood to cycle through the table once.

use std::fmt;
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::channel::ByteCount;

/// A connection that did not finish its handshake: who, how far it got, for how long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stall {
    /// The address the connection came from.
    pub from: SocketAddr,
    /// Bytes it had sent when it was given up.
    pub bytes: u64,
    /// How long it had been in its handshake.
    pub waited: Duration,
    /// It was shut down to make room for a newer connection (not by its own deadline).
    pub evicted: bool,
}

impl fmt::Display for Stall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({} byte{} received in {:.1} s{})",
            self.from,
            self.bytes,
            if self.bytes == 1 { "" } else { "s" },
            self.waited.as_secs_f64(),
            if self.evicted {
                ", dropped to make room"
            } else {
                ""
            }
        )
    }
}

struct Entry {
    id: u64,
    from: SocketAddr,
    since: Instant,
    bytes: ByteCount,
    stream: TcpStream,
    evicted: bool,
}

impl Entry {
    fn stall(&self, now: Instant) -> Stall {
        Stall {
            from: self.from,
            bytes: self.bytes.get(),
            waited: now.saturating_duration_since(self.since),
            evicted: self.evicted,
        }
    }
}

#[derive(Default)]
struct Table {
    next: u64,
    entries: Vec<Entry>,
}

/// The bounded table of connections still in their handshake; cheap to clone (shared).
#[derive(Clone)]
pub struct Pending {
    max: usize,
    table: Arc<Mutex<Table>>,
}

impl fmt::Debug for Pending {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pending")
            .field("max", &self.max)
            .field("len", &self.len())
            .finish()
    }
}

/// One admitted connection's place in the table; dropping it (handshake over, either way)
/// frees the place.
#[derive(Debug)]
pub struct Ticket {
    id: u64,
    from: SocketAddr,
    since: Instant,
    bytes: ByteCount,
    pending: Pending,
}

impl Ticket {
    /// Counts the bytes the handshake receives; pass it to `Channel::accept_until`.
    pub fn bytes(&self) -> ByteCount {
        self.bytes.clone()
    }

    /// The address the connection came from.
    pub fn from(&self) -> SocketAddr {
        self.from
    }

    /// What this connection looks like as a stall, now.
    pub fn stall(&self) -> Stall {
        Stall {
            from: self.from,
            bytes: self.bytes.get(),
            waited: self.since.elapsed(),
            evicted: self.evicted(),
        }
    }

    /// Whether the table shut this connection down to make room for a newer one.
    pub fn evicted(&self) -> bool {
        self.pending
            .lock()
            .entries
            .iter()
            .find(|e| e.id == self.id)
            .is_some_and(|e| e.evicted)
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.pending.lock().entries.retain(|e| e.id != self.id);
    }
}

impl Pending {
    /// A table holding at most `max` (at least 1) connections at once.
    pub fn new(max: usize) -> Self {
        Pending {
            max: max.max(1),
            table: Arc::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        // A panic while holding this lock leaves the table consistent (every change is one
        // push or retain), so a poisoned lock is still usable.
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Connections still in their handshake (evicted ones not counted).
    pub fn len(&self) -> usize {
        self.lock().entries.iter().filter(|e| !e.evicted).count()
    }

    /// Whether no connection is in its handshake.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Admits `stream` (from `from`). When the table is full, the oldest connection still
    /// waiting is shut down and returned as a stall. Fails only if the socket cannot be
    /// duplicated (out of file descriptors), in which case the caller should drop the connection.
    pub fn admit(
        &self,
        stream: &TcpStream,
        from: SocketAddr,
    ) -> std::io::Result<(Ticket, Option<Stall>)> {
        let handle = stream.try_clone()?;
        let now = Instant::now();
        let mut t = self.lock();
        let mut evicted = None;
        if t.entries.iter().filter(|e| !e.evicted).count() >= self.max {
            if let Some(old) = t.entries.iter_mut().find(|e| !e.evicted) {
                old.evicted = true;
                let _ = old.stream.shutdown(Shutdown::Both);
                evicted = Some(old.stall(now));
            }
        }
        t.next += 1;
        let id = t.next;
        let bytes = ByteCount::new();
        t.entries.push(Entry {
            id,
            from,
            since: now,
            bytes: bytes.clone(),
            stream: handle,
            evicted: false,
        });
        drop(t);
        Ok((
            Ticket {
                id,
                from,
                since: now,
                bytes,
                pending: self.clone(),
            },
            evicted,
        ))
    }

    /// Shuts down every connection still waiting (the caller's deadline passed or it has what it
    /// needs) and returns them, oldest first.
    pub fn close_all(&self) -> Vec<Stall> {
        let now = Instant::now();
        let mut t = self.lock();
        let mut out = Vec::new();
        for e in t.entries.iter_mut().filter(|e| !e.evicted) {
            e.evicted = true;
            let _ = e.stream.shutdown(Shutdown::Both);
            let mut s = e.stall(now);
            s.evicted = false;
            out.push(s);
        }
        out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;

    fn pair(l: &TcpListener) -> (TcpStream, TcpStream, SocketAddr) {
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, from) = l.accept().unwrap();
        (c, s, from)
    }

    #[test]
    fn a_full_table_shuts_the_oldest_connection_down() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let p = Pending::new(2);
        let (mut c1, s1, f1) = pair(&l);
        let (_c2, s2, f2) = pair(&l);
        let (_c3, s3, f3) = pair(&l);
        let (t1, e) = p.admit(&s1, f1).unwrap();
        assert!(e.is_none());
        let (_t2, e) = p.admit(&s2, f2).unwrap();
        assert!(e.is_none());
        assert_eq!(p.len(), 2);
        let (_t3, e) = p.admit(&s3, f3).unwrap();
        let e = e.unwrap();
        assert_eq!((e.from, e.evicted), (f1, true));
        assert!(t1.evicted());
        assert_eq!(p.len(), 2);
        // The evicted client sees its connection end.
        c1.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut b = [0u8; 1];
        assert_eq!(c1.read(&mut b).unwrap(), 0);
        drop(t1);
        let left: Vec<SocketAddr> = p.close_all().iter().map(|s| s.from).collect();
        assert_eq!(left, vec![f2, f3]);
        assert_eq!(p.len(), 0);
    }

    #[test]
    fn a_finished_handshake_frees_its_place() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let p = Pending::new(1);
        let (mut c, s, f) = pair(&l);
        let (t, _) = p.admit(&s, f).unwrap();
        c.write_all(b"abc").unwrap();
        t.bytes().add(3);
        assert_eq!(t.stall().bytes, 3);
        assert!(t.stall().to_string().contains("3 bytes received"));
        drop(t);
        assert!(p.is_empty());
        assert!(p.close_all().is_empty());
    }
}
