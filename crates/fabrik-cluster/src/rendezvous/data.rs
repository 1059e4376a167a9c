//! Data connections between ranks, opened from the rendezvous table: each is authenticated
//! with the job's token and announces its rank and tag ([`super::wire::DataHello`]), so that
//! connections arriving in any order reach the call that waits for them.

use std::io::ErrorKind;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use fabrik_wire::{Channel, Token, WireError};

use super::deadlines::HANDSHAKE_LIMIT;
use super::membership::set_nonblocking;
use super::wire::{data_stream, DataHello};
use super::{Group, PeerInfo};
use crate::ClusterError;

impl Group {
    /// What opening data connections needs, detached so a thread can connect while this one
    /// accepts.
    pub fn connector(&self) -> Connector {
        Connector {
            rank: self.rank,
            peers: self.peers.clone(),
            token: self.token.clone(),
            timeout: self.timeout,
        }
    }

    /// [`Connector::connect_data`] from this thread.
    pub fn connect_data(
        &self,
        peer: u32,
        tag: u32,
        index: usize,
    ) -> Result<TcpStream, ClusterError> {
        self.connector().connect_data(peer, tag, index)
    }

    /// Opens `channels` (at least one) data connections to the next rank of the ring and
    /// accepts as many from the previous one, tagged `ring_tag + channel`; with `mesh`, one
    /// connection tagged `mesh_tag` to every other rank (the lower rank connects). Needs two
    /// ranks or more. `what` names the connecting thread if it panics.
    pub(crate) fn ring_streams(
        &mut self,
        channels: usize,
        mesh: bool,
        (ring_tag, mesh_tag): (u32, u32),
        what: &'static str,
    ) -> Result<RingStreams, ClusterError> {
        let (rank, n) = (self.rank, self.size());
        let next = (rank + 1) % n;
        let prev = (rank + n - 1) % n;
        let channels = channels.max(1);
        let connector = self.connector();
        // Connect from a thread while accepting here: every rank does both at once, and a
        // connection's handshake needs the other side to be accepting.
        std::thread::scope(|s| {
            let h = s.spawn(move || -> Result<_, ClusterError> {
                let mut out = Vec::with_capacity(channels);
                for c in 0..channels {
                    out.push(connector.connect_data(next, ring_tag + c as u32, c)?);
                }
                let mut m = Vec::new();
                if mesh {
                    for peer in rank + 1..n {
                        m.push((peer, connector.connect_data(peer, mesh_tag, 0)?));
                    }
                }
                Ok((out, m))
            });
            let accepted = (|| -> Result<_, ClusterError> {
                let mut inc = Vec::with_capacity(channels);
                for c in 0..channels {
                    inc.push(self.accept_data(prev, ring_tag + c as u32)?);
                }
                let mut m = Vec::new();
                if mesh {
                    for peer in 0..rank {
                        m.push((peer, self.accept_data(peer, mesh_tag)?));
                    }
                }
                Ok((inc, m))
            })();
            let connected = h
                .join()
                .unwrap_or_else(|_| Err(ClusterError::ThreadPanicked(what)));
            let (to_next, mut mesh) = connected?;
            let (from_prev, mesh_in) = accepted?;
            mesh.extend(mesh_in);
            Ok(RingStreams {
                next,
                prev,
                to_next,
                from_prev,
                mesh,
            })
        })
    }

    /// Waits for `peer`'s data connection labelled `tag`; connections for other (peer, tag)
    /// pairs that arrive first are kept for their own call.
    pub fn accept_data(&mut self, peer: u32, tag: u32) -> Result<TcpStream, ClusterError> {
        self.accept_data_within(peer, tag, self.timeout)
    }

    /// [`Group::accept_data`] with `limit` instead of the group's timeout, for the wait and for
    /// every read and write on the stream (a pair test that must end well inside the timeout
    /// rank 0 allows each round).
    pub fn accept_data_within(
        &mut self,
        peer: u32,
        tag: u32,
        limit: Duration,
    ) -> Result<TcpStream, ClusterError> {
        if let Some(s) = self.stash.remove(&(peer, tag)) {
            let t = Some(limit.max(Duration::from_millis(1)));
            let _ = s.set_read_timeout(t);
            let _ = s.set_write_timeout(t);
            return Ok(s);
        }
        set_nonblocking(&self.listener, true)?;
        let deadline = Instant::now() + limit;
        loop {
            let stream = match self.listener.accept() {
                Ok((s, _)) => s,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if Instant::now() >= deadline {
                        return Err(ClusterError::Peer {
                            peer: self.label(peer),
                            why: format!(
                                "did not open its data connection within {:.0} s",
                                limit.as_secs_f64()
                            ),
                        });
                    }
                    std::thread::sleep(Duration::from_millis(1));
                    continue;
                }
                Err(err) => {
                    return Err(ClusterError::Io {
                        what: "accepting data connections".into(),
                        err,
                    })
                }
            };
            let _ = stream.set_nonblocking(false);
            // The handshake and hello under one deadline inside the wait's own: a stranger
            // trickling bytes on the data port cannot hold this past either.
            let until = deadline.min(Instant::now() + HANDSHAKE_LIMIT);
            let mut ch = match Channel::accept_until(stream, &self.token, until, Default::default())
            {
                Ok(ch) => ch,
                Err(e) => {
                    tracing::warn!("refused a data connection: {e}");
                    continue;
                }
            };
            let hello: DataHello = match ch.recv() {
                Ok(h) => h,
                Err(e) => {
                    tracing::warn!("a data connection said no hello: {e}");
                    continue;
                }
            };
            let s = data_stream(&ch, limit)?;
            if (hello.rank, hello.tag) == (peer, tag) {
                return Ok(s);
            }
            self.stash.insert((hello.rank, hello.tag), s);
        }
    }

    /// A connection to `peer` for pair tests: the lower rank connects, the higher accepts.
    pub fn pair_stream(&mut self, peer: u32, tag: u32) -> Result<TcpStream, ClusterError> {
        if self.rank < peer {
            self.connect_data(peer, tag, 0)
        } else {
            self.accept_data(peer, tag)
        }
    }
}

/// The data connections [`Group::ring_streams`] opened.
pub(crate) struct RingStreams {
    /// The next rank of the ring.
    pub next: u32,
    /// The previous rank of the ring.
    pub prev: u32,
    /// One connection to `next` per channel, in channel order.
    pub to_next: Vec<TcpStream>,
    /// One connection from `prev` per channel, in channel order.
    pub from_prev: Vec<TcpStream>,
    /// With a mesh, (peer, connection) for every other rank: the higher ranks, then the lower.
    pub mesh: Vec<(u32, TcpStream)>,
}

/// Opens data connections on behalf of a [`Group`], from another thread.
#[derive(Debug, Clone)]
pub struct Connector {
    rank: u32,
    peers: Vec<PeerInfo>,
    token: Token,
    timeout: Duration,
}

impl Connector {
    /// The same connector with `limit` instead of the group's timeout, for connecting and for
    /// every read and write on the streams it opens.
    pub fn within(mut self, limit: Duration) -> Connector {
        self.timeout = limit;
        self
    }

    /// Opens an authenticated data connection to `peer`, labelled `tag`; `index` picks which of
    /// the peer's data addresses (NICs) to use.
    pub fn connect_data(
        &self,
        peer: u32,
        tag: u32,
        index: usize,
    ) -> Result<TcpStream, ClusterError> {
        let info = self
            .peers
            .get(peer as usize)
            .ok_or(ClusterError::NotARank {
                role: "peer",
                rank: peer,
                world_size: self.peers.len() as u32,
            })?;
        let addrs = &info.data_addrs;
        let addr = addrs
            .get(index % addrs.len().max(1))
            .ok_or_else(|| ClusterError::NoDataAddress { peer: info.label() })?;
        let mut ch = Channel::connect(addr.as_str(), &self.token, self.timeout)
            .map_err(|e| peer_err(info, e))?;
        ch.set_peer_name(info.label());
        ch.send(&DataHello {
            rank: self.rank,
            tag,
        })?;
        data_stream(&ch, self.timeout).map_err(|e| peer_err(info, e))
    }
}

fn peer_err(info: &PeerInfo, e: WireError) -> ClusterError {
    ClusterError::Peer {
        peer: info.label(),
        why: fabrik_wire::with_causes(&e),
    }
}
