use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use hmac::{Hmac, Mac};
use serde::de::DeserializeOwned;
use serde::Serialize;
use sha2::Sha256;

use crate::frame::{read_frame, write_frame};
use crate::{Token, WireError};

/// Largest control message accepted by default. Control messages are small (set-up parameters,
/// results); bulk data never travels on this channel.
pub const DEFAULT_MAX_FRAME: u32 = 1 << 20;
/// How long any single read or write may wait by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

const MAGIC: &[u8] = b"FABRIK-WIRE/1";
const NONCE_LEN: usize = 32;
const VERDICT_OK: &[u8] = b"OK";
const VERDICT_DENIED: &[u8] = b"DENIED";

/// Which end of the connection this is; the two ends prove the token with different labels so
/// one end's proof can never be reflected back as the other's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Client,
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

/// An authenticated control connection.
#[derive(Debug)]
pub struct Channel {
    stream: TcpStream,
    peer: String,
    max_frame: u32,
    timeout: Duration,
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

    /// Runs the mutual challenge-response on an open stream. Every step is under `timeout`.
    pub fn handshake(
        stream: TcpStream,
        role: Role,
        token: &Token,
        peer: String,
        timeout: Duration,
    ) -> Result<Channel, WireError> {
        let mut ch = Channel {
            stream,
            peer,
            max_frame: DEFAULT_MAX_FRAME,
            timeout,
        };
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
                    return Err(WireError::AuthFailed { peer: ch.peer });
                }
            }
            Role::Client => {
                let verdict = ch.recv_bytes_limited(16)?;
                if !valid || verdict != VERDICT_OK {
                    return Err(WireError::AuthFailed { peer: ch.peer });
                }
            }
        }
        Ok(ch)
    }

    /// Names the peer in errors from now on (`rank 3 (node-b)` reads better than an address).
    pub fn set_peer_name(&mut self, name: impl Into<String>) {
        self.peer = name.into();
    }

    pub fn peer(&self) -> &str {
        &self.peer
    }

    pub fn set_timeout(&mut self, timeout: Duration) -> Result<(), WireError> {
        self.timeout = timeout;
        self.apply_timeout()
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    pub fn set_max_frame(&mut self, max: u32) {
        self.max_frame = max;
    }

    /// The underlying socket, e.g. to learn the local address the connection left from.
    pub fn stream(&self) -> &TcpStream {
        &self.stream
    }

    pub fn send<T: Serialize>(&mut self, msg: &T) -> Result<(), WireError> {
        let bytes = serde_json::to_vec(msg).map_err(|source| WireError::Malformed {
            peer: format!("(encoding for {})", self.peer),
            source,
        })?;
        self.send_bytes(&bytes)
    }

    pub fn recv<T: DeserializeOwned>(&mut self) -> Result<T, WireError> {
        let bytes = self.recv_bytes()?;
        serde_json::from_slice(&bytes).map_err(|source| WireError::Malformed {
            peer: self.peer.clone(),
            source,
        })
    }

    pub fn send_bytes(&mut self, payload: &[u8]) -> Result<(), WireError> {
        write_frame(
            &mut self.stream,
            payload,
            self.max_frame,
            &self.peer,
            self.timeout.as_secs_f64(),
        )
    }

    pub fn recv_bytes(&mut self) -> Result<Vec<u8>, WireError> {
        self.recv_bytes_limited(self.max_frame)
    }

    fn recv_bytes_limited(&mut self, max: u32) -> Result<Vec<u8>, WireError> {
        read_frame(
            &mut self.stream,
            max,
            &self.peer,
            self.timeout.as_secs_f64(),
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
