use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use serde::de::DeserializeOwned;
use serde::Serialize;
use sha2::Sha256;

use crate::frame::{read_frame, write_frame};
use crate::{Token, WireError};

/// Largest control message accepted by default. Control messages are small (set-up parameters,
/// results); bulk data never travels on this channel.
pub const DEFAULT_MAX_FRAME: u32 = 1 << 20;
/// How long one whole message (every byte of it) may take to send or receive by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

const MAGIC: &[u8] = b"FABRIK-WIRE/1";
const NONCE_LEN: usize = 32;
const VERDICT_OK: &[u8] = b"OK";
const VERDICT_DENIED: &[u8] = b"DENIED";

/// Which end of the connection this is; the two ends prove the token with different labels so
/// one end's proof can never be reflected back as the other's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The end that connected.
    Client,
    /// The end that accepted.
    Server,
}

impl Role {
    fn label(self) -> &'static [u8] {
        match self {
            Role::Client => b"client",
            Role::Server => b"server",
        }
    }

    fn other(self) -> Role {
        match self {
            Role::Client => Role::Server,
            Role::Server => Role::Client,
        }
    }
}

/// How many bytes a connection has received so far, readable from another thread (e.g. by the
/// thread that has to say which connection stalled and how far it got).
#[derive(Debug, Clone, Default)]
pub struct ByteCount(Arc<AtomicU64>);

impl ByteCount {
    /// A count at zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes received so far.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    pub(crate) fn add(&self, n: usize) {
        self.0.fetch_add(n as u64, Ordering::Relaxed);
    }
}

/// An authenticated control connection.
///
/// Every message is sent or received under ONE deadline: `timeout` from when the operation
/// starts (and never past the channel's own deadline, if set). The socket timeout is re-armed
/// to the time left before each system call, so a peer that trickles one byte at a time cannot
/// stretch a message past its deadline the way a per-read timer (reset by every byte) allows.
#[derive(Debug)]
pub struct Channel {
    stream: TcpStream,
    peer: String,
    max_frame: u32,
    timeout: Duration,
    deadline: Option<Instant>,
    received: ByteCount,
}

impl Channel {
    /// Connects to `addr` and authenticates as the client.
    pub fn connect<A: ToSocketAddrs + std::fmt::Display>(
        addr: A,
        token: &Token,
        timeout: Duration,
    ) -> Result<Channel, WireError> {
        let peer = addr.to_string();
        let addrs: Vec<_> = addr
            .to_socket_addrs()
            .map_err(|source| WireError::Io {
                peer: peer.clone(),
                source,
            })?
            .collect();
        let mut last = None;
        for sa in addrs {
            match TcpStream::connect_timeout(&sa, timeout) {
                Ok(stream) => {
                    return Channel::handshake(stream, Role::Client, token, peer, timeout)
                }
                Err(e) => last = Some(WireError::from_io(&peer, e, timeout.as_secs_f64())),
            }
        }
        Err(last.unwrap_or_else(|| WireError::Io {
            peer: peer.clone(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no address"),
        }))
    }

    /// Authenticates an accepted connection as the server.
    pub fn accept(
        stream: TcpStream,
        token: &Token,
        timeout: Duration,
    ) -> Result<Channel, WireError> {
        let peer = stream
            .peer_addr()
            .map(|a| a.to_string())
            .unwrap_or_else(|_| "unknown peer".to_string());
        Channel::handshake(stream, Role::Server, token, peer, timeout)
    }

    /// Authenticates an accepted connection as the server, the whole handshake before
    /// `deadline`, counting received bytes into `received`. The deadline stays on the channel
    /// (every later message must also finish before it) until [`Channel::set_deadline`] lifts it,
    /// so a server can bound a handshake and the first message after it together.
    pub fn accept_until(
        stream: TcpStream,
        token: &Token,
        deadline: Instant,
        received: ByteCount,
    ) -> Result<Channel, WireError> {
        let peer = stream
            .peer_addr()
            .map(|a| a.to_string())
            .unwrap_or_else(|_| "unknown peer".to_string());
        let timeout = deadline.saturating_duration_since(Instant::now());
        let ch = Channel {
            stream,
            peer,
            max_frame: DEFAULT_MAX_FRAME,
            timeout,
            deadline: Some(deadline),
            received,
        };
        ch.run_handshake(Role::Server, token)
    }

    /// Runs the mutual challenge-response on an open stream, all of it within `timeout`.
    pub fn handshake(
        stream: TcpStream,
        role: Role,
        token: &Token,
        peer: String,
        timeout: Duration,
    ) -> Result<Channel, WireError> {
        let deadline = Instant::now() + timeout;
        let mut ch = Channel {
            stream,
            peer,
            max_frame: DEFAULT_MAX_FRAME,
            timeout,
            deadline: Some(deadline),
            received: ByteCount::new(),
        };
        ch = ch.run_handshake(role, token)?;
        ch.deadline = None;
        Ok(ch)
    }

    fn run_handshake(mut self, role: Role, token: &Token) -> Result<Channel, WireError> {
        let ch = &mut self;
        ch.apply_timeout()?;
        // Disabling Nagle matters for latency tests that ping-pong small control messages.
        let _ = ch.stream.set_nodelay(true);

        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).map_err(|e| WireError::Random(e.to_string()))?;
        let mut hello = MAGIC.to_vec();
        hello.extend_from_slice(&nonce);
        ch.send_bytes(&hello)?;
        let peer_hello = ch.recv_bytes_limited(256)?;
        let peer_nonce = match peer_hello.strip_prefix(MAGIC) {
            Some(n) if n.len() == NONCE_LEN => n.to_vec(),
            _ => {
                return Err(WireError::Protocol {
                    peer: ch.peer.clone(),
                    detail: "bad greeting".into(),
                })
            }
        };
        ch.send_bytes(&proof(token, role, &peer_nonce, &nonce))?;
        let peer_proof = ch.recv_bytes_limited(64)?;
        let valid = verify(token, role.other(), &nonce, &peer_nonce, &peer_proof);
        match role {
            Role::Server => {
                ch.send_bytes(if valid { VERDICT_OK } else { VERDICT_DENIED })?;
                if !valid {
                    return Err(WireError::AuthFailed {
                        peer: ch.peer.clone(),
                    });
                }
            }
            Role::Client => {
                let verdict = ch.recv_bytes_limited(16)?;
                if !valid || verdict != VERDICT_OK {
                    return Err(WireError::AuthFailed {
                        peer: ch.peer.clone(),
                    });
                }
            }
        }
        Ok(self)
    }

    /// Names the peer in errors from now on (`rank 3 (node-b)` reads better than an address).
    pub fn set_peer_name(&mut self, name: impl Into<String>) {
        self.peer = name.into();
    }

    /// The name errors give the peer.
    pub fn peer(&self) -> &str {
        &self.peer
    }

    /// Sets how long one send or receive may wait for the peer.
    pub fn set_timeout(&mut self, timeout: Duration) -> Result<(), WireError> {
        self.timeout = timeout;
        self.apply_timeout()
    }

    /// How long one send or receive may wait for the peer.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Sets (or with `None` lifts) a deadline no send or receive may pass, whatever `timeout`.
    pub fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.deadline = deadline;
    }

    /// Sets the largest frame accepted from the peer, in bytes.
    pub fn set_max_frame(&mut self, max: u32) {
        self.max_frame = max;
    }

    /// The underlying socket, e.g. to learn the local address the connection left from.
    pub fn stream(&self) -> &TcpStream {
        &self.stream
    }

    /// Sends `msg` as one JSON frame.
    pub fn send<T: Serialize>(&mut self, msg: &T) -> Result<(), WireError> {
        let bytes = serde_json::to_vec(msg).map_err(|source| WireError::Malformed {
            peer: format!("(encoding for {})", self.peer),
            source,
        })?;
        self.send_bytes(&bytes)
    }

    /// Receives one frame and decodes it as JSON into `T`.
    pub fn recv<T: DeserializeOwned>(&mut self) -> Result<T, WireError> {
        let bytes = self.recv_bytes()?;
        serde_json::from_slice(&bytes).map_err(|source| WireError::Malformed {
            peer: self.peer.clone(),
            source,
        })
    }

    /// Sends `payload` as one frame.
    pub fn send_bytes(&mut self, payload: &[u8]) -> Result<(), WireError> {
        let (mut io, secs) = self.timed();
        write_frame(&mut io, payload, self.max_frame, &self.peer, secs)
    }

    /// Receives one frame, bounded by the channel's maximum frame size.
    pub fn recv_bytes(&mut self) -> Result<Vec<u8>, WireError> {
        self.recv_bytes_limited(self.max_frame)
    }

    fn recv_bytes_limited(&mut self, max: u32) -> Result<Vec<u8>, WireError> {
        let (mut io, secs) = self.timed();
        read_frame(&mut io, max, &self.peer, secs)
    }

    /// The stream under this operation's one deadline, and that deadline's length in seconds
    /// (what a timeout error reports).
    fn timed(&self) -> (Timed<'_>, f64) {
        let now = Instant::now();
        let mut until = now + self.timeout;
        if let Some(d) = self.deadline {
            until = until.min(d);
        }
        let secs = until.saturating_duration_since(now).as_secs_f64();
        (
            Timed {
                stream: &self.stream,
                until,
                received: &self.received,
            },
            secs,
        )
    }

    fn apply_timeout(&mut self) -> Result<(), WireError> {
        // A zero duration means "no timeout" to the socket API; never allow that.
        let t = self.timeout.max(Duration::from_millis(1));
        let io = |source| WireError::Io {
            peer: self.peer.clone(),
            source,
        };
        self.stream.set_read_timeout(Some(t)).map_err(io)?;
        self.stream.set_write_timeout(Some(t)).map_err(io)
    }
}

/// A stream whose every read and write must finish before `until`.
struct Timed<'a> {
    stream: &'a TcpStream,
    until: Instant,
    received: &'a ByteCount,
}

impl Timed<'_> {
    fn left(&self) -> io::Result<Duration> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            Err(io::Error::from(io::ErrorKind::TimedOut))
        } else {
            Ok(left)
        }
    }
}

impl Read for Timed<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.stream.set_read_timeout(Some(self.left()?))?;
        let mut s = self.stream;
        let n = s.read(buf)?;
        self.received.add(n);
        Ok(n)
    }
}

impl Write for Timed<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.stream.set_write_timeout(Some(self.left()?))?;
        let mut s = self.stream;
        s.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        let mut s = self.stream;
        s.flush()
    }
}

fn mac(token: &Token, role: Role, their_nonce: &[u8], my_nonce: &[u8]) -> Hmac<Sha256> {
    // HMAC accepts keys of any length, so construction cannot fail; fall back to an empty-key
    // MAC rather than panic, which would simply fail verification.
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(token.as_str().as_bytes())
        .unwrap_or_else(|_| <Hmac<Sha256> as Mac>::new(&Default::default()));
    m.update(role.label());
    m.update(their_nonce);
    m.update(my_nonce);
    m
}

fn proof(token: &Token, role: Role, their_nonce: &[u8], my_nonce: &[u8]) -> Vec<u8> {
    mac(token, role, their_nonce, my_nonce)
        .finalize()
        .into_bytes()
        .to_vec()
}

/// Checks the peer's proof in constant time: the peer (`peer_role`) MACed our nonce then its own.
fn verify(token: &Token, peer_role: Role, my_nonce: &[u8], peer_nonce: &[u8], got: &[u8]) -> bool {
    mac(token, peer_role, my_nonce, peer_nonce)
        .verify_slice(got)
        .is_ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use std::io::Write;
    use std::net::TcpListener;
    use std::thread;

    #[derive(Debug, Serialize, Deserialize, PartialEq)]
    struct Ping {
        seq: u32,
        text: String,
    }

    fn pair(
        server_token: &str,
        client_token: &str,
    ) -> (Result<Channel, WireError>, Result<Channel, WireError>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let st = Token::new(server_token).unwrap();
        let server = thread::spawn(move || {
            let (s, _) = listener.accept().unwrap();
            Channel::accept(s, &st, Duration::from_secs(5))
        });
        let ct = Token::new(client_token).unwrap();
        let client = Channel::connect(addr, &ct, Duration::from_secs(5));
        (server.join().unwrap(), client)
    }

    #[test]
    fn same_token_connects_and_carries_typed_messages() {
        let (server, client) = pair("tok", "tok");
        let (mut server, mut client) = (server.unwrap(), client.unwrap());
        let msg = Ping {
            seq: 7,
            text: "hi".into(),
        };
        client.send(&msg).unwrap();
        assert_eq!(server.recv::<Ping>().unwrap(), msg);
    }

    #[test]
    fn wrong_token_is_rejected_on_both_ends() {
        let (server, client) = pair("right", "wrong");
        assert!(matches!(server, Err(WireError::AuthFailed { .. })));
        let err = client.unwrap_err();
        assert!(matches!(err, WireError::AuthFailed { .. }));
        assert!(err.to_string().contains("token differs"));
    }

    #[test]
    fn a_silent_peer_times_out_and_is_named() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let hold = thread::spawn(move || {
            let (s, _) = listener.accept().unwrap();
            thread::sleep(Duration::from_millis(800));
            drop(s);
        });
        let t = Token::new("tok").unwrap();
        let err = Channel::connect(addr, &t, Duration::from_millis(200)).unwrap_err();
        assert!(matches!(err, WireError::Timeout { .. }), "{err:?}");
        assert!(err.to_string().contains(&addr.to_string()));
        hold.join().unwrap();
    }

    #[test]
    fn a_trickling_peer_is_cut_off_at_the_one_deadline() {
        // One byte every 100 ms would keep a per-read timer of 300 ms alive forever; the
        // handshake's single deadline ends it at 300 ms, and the bytes it got are counted.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let slow = thread::spawn(move || {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            // A well-formed greeting, sent too slowly.
            let mut hello = ((MAGIC.len() + NONCE_LEN) as u32).to_be_bytes().to_vec();
            hello.extend_from_slice(MAGIC);
            hello.resize(4 + MAGIC.len() + NONCE_LEN, 7);
            for b in hello {
                if s.write_all(&[b]).is_err() {
                    break;
                }
                thread::sleep(Duration::from_millis(100));
            }
        });
        let (s, _) = listener.accept().unwrap();
        let bytes = ByteCount::new();
        let t0 = Instant::now();
        let deadline = t0 + Duration::from_millis(300);
        let err = Channel::accept_until(s, &Token::new("tok").unwrap(), deadline, bytes.clone())
            .unwrap_err();
        let took = t0.elapsed();
        assert!(matches!(err, WireError::Timeout { .. }), "{err:?}");
        assert!(took < Duration::from_millis(900), "{took:?}");
        assert!((2..=4).contains(&bytes.get()), "{}", bytes.get());
        slow.join().unwrap();
    }

    #[test]
    fn a_peer_that_is_not_fabrik_is_refused() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let fake = thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let junk = b"HTTP/1.1 200 OK\r\n\r\n";
            s.write_all(&(junk.len() as u32).to_be_bytes()).unwrap();
            s.write_all(junk).unwrap();
            thread::sleep(Duration::from_millis(200));
        });
        let t = Token::new("tok").unwrap();
        let err = Channel::connect(addr, &t, Duration::from_secs(2)).unwrap_err();
        assert!(matches!(err, WireError::Protocol { .. }), "{err:?}");
        fake.join().unwrap();
    }

    #[test]
    fn malformed_message_and_oversized_frame_are_errors() {
        let (server, client) = pair("tok", "tok");
        let (mut server, mut client) = (server.unwrap(), client.unwrap());
        client.send_bytes(b"{not json").unwrap();
        assert!(matches!(
            server.recv::<Ping>(),
            Err(WireError::Malformed { .. })
        ));
        server.set_max_frame(8);
        client.send_bytes(&[b'x'; 64]).unwrap();
        assert!(matches!(
            server.recv_bytes(),
            Err(WireError::FrameTooLarge {
                len: 64,
                max: 8,
                ..
            })
        ));
    }

    #[test]
    fn a_peer_that_dies_is_reported_closed() {
        let (server, client) = pair("tok", "tok");
        let mut server = server.unwrap();
        server.set_peer_name("rank 3 (node-b)");
        drop(client);
        let err = server.recv::<Ping>().unwrap_err();
        assert!(matches!(err, WireError::Closed { .. }), "{err:?}");
        assert!(err.to_string().contains("rank 3 (node-b)"));
    }
}
