//! Notices a vanished peer during a data phase from its control connection: a killed process's
//! kernel closes the socket (FIN or RST) at once, well before RDMA retries run out or the data
//! timeout passes. Both ends keep the control connection open, idle, while the data moves.

use std::cell::Cell;
use std::io::ErrorKind;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::error::VerbsError;

/// How often the control socket is looked at while waiting on the NIC.
pub const WATCH_EVERY: Duration = Duration::from_millis(100);

/// What a look at the control socket found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeerState {
    /// Nothing to read: the peer is there and quiet.
    Quiet,
    /// Bytes are waiting: the peer sent a message (during a data phase, an error report).
    Spoke,
    /// End of stream: the peer closed the connection (or its kernel did, on exit).
    Closed,
    /// The connection failed (reset, unreachable); the text says how.
    Failed(String),
}

/// Reads a non-blocking `peek` result.
pub fn classify(r: std::io::Result<usize>) -> PeerState {
    match r {
        Ok(0) => PeerState::Closed,
        Ok(_) => PeerState::Spoke,
        Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {
            PeerState::Quiet
        }
        Err(e) => PeerState::Failed(e.to_string()),
    }
}

/// A second handle on the control connection, looked at now and then while the data moves.
#[derive(Debug)]
pub struct PeerWatch {
    stream: TcpStream,
    peer: String,
    last: Cell<Instant>,
}

impl PeerWatch {
    /// A watch on a clone of `stream`; `None` when it cannot be cloned.
    pub fn new(stream: &TcpStream) -> Option<Self> {
        let peer = stream
            .peer_addr()
            .map(|a| a.to_string())
            .unwrap_or_else(|_| "?".into());
        Some(PeerWatch {
            stream: stream.try_clone().ok()?,
            peer,
            last: Cell::new(Instant::now()),
        })
    }

    /// Looks at the control socket when `WATCH_EVERY` has passed since the last look (`now` is
    /// the caller's clock reading, so that the check adds no clock read of its own).
    pub fn check(&self, now: Instant, waiting: &str) -> Result<(), VerbsError> {
        if now.saturating_duration_since(self.last.get()) < WATCH_EVERY {
            return Ok(());
        }
        self.last.set(now);
        // The clone shares the socket's file status flags with the channel's handle, so
        // non-blocking mode is turned off again before the channel reads. This runs on the one
        // thread that uses the channel.
        let mut b = [0u8; 1];
        let state = match self.stream.set_nonblocking(true) {
            Ok(()) => {
                let r = self.stream.peek(&mut b);
                let _ = self.stream.set_nonblocking(false);
                classify(r)
            }
            Err(_) => PeerState::Quiet,
        };
        let gone = |what: String| VerbsError::PeerGone {
            peer: self.peer.clone(),
            what,
            waiting: waiting.to_string(),
        };
        match state {
            PeerState::Quiet => Ok(()),
            PeerState::Spoke => Err(VerbsError::PeerSpoke),
            PeerState::Closed => Err(gone("closed the control connection".into())),
            PeerState::Failed(e) => Err(gone(format!("dropped the control connection ({e})"))),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::io::{Error, Write};
    use std::net::TcpListener;

    #[test]
    fn peek_results() {
        assert_eq!(classify(Ok(0)), PeerState::Closed);
        assert_eq!(classify(Ok(1)), PeerState::Spoke);
        assert_eq!(
            classify(Err(ErrorKind::WouldBlock.into())),
            PeerState::Quiet
        );
        assert!(matches!(
            classify(Err(Error::from_raw_os_error(104))),
            PeerState::Failed(_)
        ));
    }

    #[test]
    fn sees_a_live_quiet_peer_then_a_message_then_a_close() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        let w = PeerWatch::new(&b).unwrap();
        let later = || Instant::now() + 2 * WATCH_EVERY;
        w.check(later(), "data").unwrap();
        // Not looked at again before WATCH_EVERY has passed.
        a.write_all(b"x").unwrap();
        std::thread::sleep(Duration::from_millis(20));
        w.check(w.last.get(), "data").unwrap();
        assert!(matches!(
            w.check(w.last.get() + 2 * WATCH_EVERY, "data"),
            Err(VerbsError::PeerSpoke)
        ));
        // The channel's own handle is back in blocking mode.
        let mut buf = [0u8; 1];
        std::io::Read::read_exact(&mut &b, &mut buf).unwrap();
        drop(a);
        std::thread::sleep(Duration::from_millis(20));
        let e = w
            .check(w.last.get() + 2 * WATCH_EVERY, "send completions")
            .unwrap_err()
            .to_string();
        assert!(e.contains("closed the control connection"), "{e}");
        assert!(e.contains("127.0.0.1:"), "{e}");
        assert!(e.contains("send completions"), "{e}");
    }
}
