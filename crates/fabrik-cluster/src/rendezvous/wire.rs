//! The rendezvous' wire protocol: the messages ranks exchange over fabrik's authenticated
//! control channel (joining, gathers and broadcasts, failure reports) and the first message of
//! every data connection. Each is one length-bounded frame of `fabrik_wire`.

use std::net::TcpStream;
use std::time::Duration;

use fabrik_wire::{Channel, WireError};
use serde::{Deserialize, Serialize};

use super::PeerInfo;

/// What a rank says about itself when it joins.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Hello {
    pub(super) rank: u32,
    pub(super) world_size: u32,
    pub(super) host: String,
    pub(super) pid: u32,
    pub(super) data_port: u16,
    pub(super) data_ips: Vec<String>,
}

/// Rank 0's answer to a [`Hello`]: the table of every rank, or why the job will not start.
#[derive(Debug, Serialize, Deserialize)]
pub(super) enum Welcome {
    Table(Vec<PeerInfo>),
    Abort(String),
}

/// The first message on a data connection: who opened it, and for what (the tag).
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct DataHello {
    pub(super) rank: u32,
    pub(super) tag: u32,
}

/// What a member sends up to rank 0 in a gather: its value, or why it failed.
#[derive(Debug, Serialize, Deserialize)]
pub(super) enum Up<T> {
    Ok(T),
    Failed(String),
}

/// What rank 0 sends down: the value, or that the run is over.
#[derive(Debug, Serialize, Deserialize)]
pub(super) enum Down<T> {
    Ok(T),
    Abort(String),
}

/// `ip:port`, with an IPv6 address bracketed.
pub(super) fn join_addr(ip: &str, port: u16) -> String {
    if ip.contains(':') {
        format!("[{ip}]:{port}")
    } else {
        format!("{ip}:{port}")
    }
}

/// The data stream under an authenticated channel, with every wait bounded by `timeout`.
pub(super) fn data_stream(ch: &Channel, timeout: Duration) -> Result<TcpStream, WireError> {
    let s = ch.stream().try_clone().map_err(|source| WireError::Io {
        peer: ch.peer().to_string(),
        source,
    })?;
    let _ = s.set_nodelay(true);
    let t = Some(timeout.max(Duration::from_millis(1)));
    let _ = s.set_read_timeout(t);
    let _ = s.set_write_timeout(t);
    Ok(s)
}
