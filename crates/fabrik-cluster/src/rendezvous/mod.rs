//! Joining the ranks: rank 0 listens, every other rank connects with the shared token and says
//! who it is; rank 0 checks the ranks are unique and complete and sends everyone the table.
//! The control connections stay open for barriers, gathers and failure reports; data moves on
//! separate connections opened from the table ([`Group::connect_data`], [`Group::accept_data`]).
//!
//! One job per module: `membership` (who is in the job: [`join`]), `deadlines` (how long each
//! wait may take and how a silent rank is named), `wire` (the messages on the control channel)
//! and `data` (data connections); this module holds the [`Group`] and its control operations.

use std::collections::HashMap;
use std::net::{IpAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use fabrik_wire::{Channel, Token, WireError};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::ClusterError;

mod data;
mod deadlines;
mod membership;
#[cfg(test)]
mod tests;
mod wire;

pub use data::Connector;
pub use membership::join;

use deadlines::AFTER_FAILURE;
use wire::{Down, Up};

/// How a rank joins.
#[derive(Debug, Clone)]
pub struct JoinConfig {
    /// This rank, from 0.
    pub rank: u32,
    /// Number of ranks.
    pub world_size: u32,
    /// `host:port` of rank 0's rendezvous.
    pub master: String,
    /// The shared secret every rank proves it holds.
    pub token: Token,
    /// Every wait (joining, each control and data read or write) gives up after this.
    pub timeout: Duration,
    /// This rank's host name, for the header and for error messages.
    pub host: String,
    /// Addresses peers should open data connections to (one per NIC to use); empty: the address
    /// this rank reaches rank 0 from.
    pub data_ips: Vec<IpAddr>,
}

/// One rank as the others see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerInfo {
    /// Its rank.
    pub rank: u32,
    /// Its host name (or `--name`).
    pub host: String,
    /// Its process id.
    pub pid: u32,
    /// `ip:port` data listeners, one per NIC.
    pub data_addrs: Vec<String>,
}

impl PeerInfo {
    /// `rank 3 (node-b, 10.0.0.4)`: how errors name a peer.
    pub fn label(&self) -> String {
        let ip = self
            .data_addrs
            .first()
            .and_then(|a| a.rsplit_once(':').map(|(h, _)| h.to_string()));
        match ip {
            Some(ip) if ip != self.host => format!("rank {} ({}, {})", self.rank, self.host, ip),
            _ => format!("rank {} ({})", self.rank, self.host),
        }
    }
}

enum Ctrl {
    /// Rank 0: a control channel per rank (index = rank; `None` for itself).
    Root(Vec<Option<Channel>>),
    Member(Channel),
}

/// The joined ranks: the table, the control connections and this rank's data listener.
pub struct Group {
    rank: u32,
    peers: Vec<PeerInfo>,
    token: Token,
    timeout: Duration,
    ctrl: Ctrl,
    listener: TcpListener,
    stash: HashMap<(u32, u32), TcpStream>,
    /// What went wrong in a rendezvous that still succeeded (refused or stalled connections).
    notes: Vec<String>,
}

impl std::fmt::Debug for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group")
            .field("rank", &self.rank)
            .field("peers", &self.peers)
            .finish_non_exhaustive()
    }
}

impl Group {
    /// This rank.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// Number of ranks.
    pub fn size(&self) -> u32 {
        self.peers.len() as u32
    }

    /// Every rank, indexed by rank.
    pub fn peers(&self) -> &[PeerInfo] {
        &self.peers
    }

    /// The limit on every wait.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Rank 0: connections the rendezvous refused or closed on its way to success (each also
    /// logged as a warning).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Rank `rank`'s [`PeerInfo::label`]; `rank N` for a rank not in the group.
    pub fn label(&self, rank: u32) -> String {
        self.peers
            .get(rank as usize)
            .map(PeerInfo::label)
            .unwrap_or_else(|| format!("rank {rank}"))
    }

    /// Raises (or lowers) the largest control message accepted from now on, e.g. to gather
    /// whole node inventories.
    pub fn set_max_frame(&mut self, max: u32) {
        match &mut self.ctrl {
            Ctrl::Member(ch) => ch.set_max_frame(max),
            Ctrl::Root(chans) => chans
                .iter_mut()
                .flatten()
                .for_each(|c| c.set_max_frame(max)),
        }
    }

    /// Distinct host names in rank order.
    pub fn hosts(&self) -> Vec<String> {
        let mut hosts: Vec<String> = Vec::new();
        for p in &self.peers {
            if !hosts.contains(&p.host) {
                hosts.push(p.host.clone());
            }
        }
        hosts
    }

    /// Sends `value` to rank 0; rank 0 gets everyone's in rank order. A member that reported a
    /// failure, or whose connection dropped, makes this an error at rank 0 naming it.
    pub fn gather<T: Serialize + DeserializeOwned>(
        &mut self,
        value: T,
    ) -> Result<Option<Vec<T>>, ClusterError> {
        match &mut self.ctrl {
            Ctrl::Member(ch) => {
                ch.send(&Up::Ok(value))?;
                Ok(None)
            }
            Ctrl::Root(chans) => {
                let mut out = Vec::with_capacity(chans.len());
                let mut mine = Some(value);
                let mut failures = Vec::new();
                let mut quiet = Vec::new();
                // Once one rank failed, the rest share one short window rather than each
                // getting the full timeout (27 stuck ranks would otherwise take 27 timeouts).
                let mut window: Option<Instant> = None;
                for (r, slot) in chans.iter_mut().enumerate() {
                    let Some(ch) = slot else {
                        if let Some(v) = mine.take() {
                            out.push(v);
                        }
                        continue;
                    };
                    let full = failures.is_empty() && quiet.is_empty();
                    if !full {
                        let until = *window.get_or_insert_with(|| Instant::now() + AFTER_FAILURE);
                        let left = until.saturating_duration_since(Instant::now());
                        let _ = ch.set_timeout(left.max(Duration::from_millis(50)));
                    }
                    match ch.recv::<Up<T>>() {
                        Ok(Up::Ok(v)) => out.push(v),
                        Ok(Up::Failed(why)) => failures.push(format!("{}: {why}", ch.peer())),
                        Err(WireError::Closed { .. }) => failures.push(format!(
                            "{} died or exited (its control connection closed)",
                            self.peers[r].label()
                        )),
                        Err(WireError::Timeout { .. }) if !full => {
                            quiet.push((r, AFTER_FAILURE.as_secs_f64(), false))
                        }
                        Err(WireError::Timeout { secs, .. }) => quiet.push((r, secs, full)),
                        Err(e) => failures.push(fabrik_wire::with_causes(&e)),
                    }
                }
                let quiet = self.name_quiet(&quiet, &failures.join("; "));
                failures.splice(0..0, quiet);
                if failures.is_empty() {
                    Ok(Some(out))
                } else {
                    self.abort_all(&failures.join("; "));
                    Err(ClusterError::Aborted(failures.join("; ")))
                }
            }
        }
    }

    /// Rank 0 sends `value` to everyone; everyone returns it.
    pub fn broadcast<T: Serialize + DeserializeOwned + Clone>(
        &mut self,
        value: Option<T>,
    ) -> Result<T, ClusterError> {
        match &mut self.ctrl {
            Ctrl::Member(ch) => {
                // Rank 0 may itself wait a whole timeout on a silent rank (and a little more on
                // the rest) before it answers: outwait it, so that its verdict, which names the
                // silent rank, arrives rather than a timeout naming rank 0.
                let _ = ch.set_timeout(self.timeout * 2 + Duration::from_secs(5));
                let got = ch.recv::<Down<T>>();
                let _ = ch.set_timeout(self.timeout);
                match got? {
                    Down::Ok(v) => Ok(v),
                    Down::Abort(why) => Err(ClusterError::Aborted(why)),
                }
            }
            Ctrl::Root(chans) => {
                let v = value.ok_or(ClusterError::Misuse(
                    "rank 0 must supply the broadcast value",
                ))?;
                for ch in chans.iter_mut().flatten() {
                    ch.send(&Down::Ok(v.clone()))?;
                }
                Ok(v)
            }
        }
    }

    /// Everyone waits until everyone is here.
    pub fn barrier(&mut self) -> Result<(), ClusterError> {
        self.gather(())?;
        self.broadcast(Some(()))
    }

    /// Called on a failure: a member tells rank 0 why (best effort); rank 0 collects what the
    /// others say, so the error it prints names the rank that actually died rather than the
    /// neighbour whose connection closed in consequence.
    pub fn fail(&mut self, err: &ClusterError) -> ClusterError {
        match &mut self.ctrl {
            Ctrl::Member(ch) => {
                let _ = ch.send(&Up::<()>::Failed(err.to_string()));
                ClusterError::Aborted(err.to_string())
            }
            Ctrl::Root(chans) => {
                let mut dead = Vec::new();
                let mut said = Vec::new();
                let mut quiet = Vec::new();
                // One short window for all of them: ranks that are still blocked on a peer
                // will not report in time and must not stretch the failure out.
                let window = Duration::from_secs(3);
                let deadline = Instant::now() + window;
                for (r, slot) in chans.iter_mut().enumerate() {
                    let Some(ch) = slot else { continue };
                    let left = deadline.saturating_duration_since(Instant::now());
                    let _ = ch.set_timeout(left.max(Duration::from_millis(50)));
                    match ch.recv::<Up<serde_json::Value>>() {
                        Ok(Up::Failed(why)) => said.push(format!("{}: {why}", ch.peer())),
                        Ok(Up::Ok(_)) => {}
                        Err(WireError::Closed { .. }) => dead.push(format!(
                            "{} died or exited without a report",
                            self.peers[r].label()
                        )),
                        Err(WireError::Timeout { .. }) => {
                            quiet.push((r, window.as_secs_f64(), false))
                        }
                        Err(_) => {}
                    }
                }
                let blame = format!("{err}; {}", said.join("; "));
                let mut parts = self.name_quiet(&quiet, &blame);
                parts.extend(dead);
                parts.push(format!("rank 0: {err}"));
                parts.extend(said);
                let why = parts.join("; ");
                self.abort_all(&why);
                ClusterError::Aborted(why)
            }
        }
    }

    fn abort_all(&mut self, why: &str) {
        if let Ctrl::Root(chans) = &mut self.ctrl {
            for ch in chans.iter_mut().flatten() {
                let _ = ch.send(&Down::<()>::Abort(why.to_string()));
            }
        }
    }
}
