//! The `tcp` transport: links over the ranks' authenticated data connections, one socket each.

use crate::collective::{Comm, TCP_CHUNK_BYTES};
use crate::link::Link;
use crate::rendezvous::Group;
use crate::tcp_link::TcpLink;
use crate::ClusterError;

use super::Transport;

/// TCP over the data addresses the ranks announced at the rendezvous.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tcp;

impl Transport for Tcp {
    fn name(&self) -> &'static str {
        "tcp"
    }

    fn default_chunk_bytes(&self) -> usize {
        TCP_CHUNK_BYTES
    }

    fn connect_comm(
        &self,
        group: &mut Group,
        channels: usize,
        mesh: bool,
        chunk_bytes: usize,
    ) -> Result<Comm, ClusterError> {
        Comm::connect(group, channels, mesh, chunk_bytes)
    }

    fn pair_link(
        &self,
        group: &mut Group,
        peer: u32,
        tag: u32,
        rail: u32,
    ) -> Result<Box<dyn Link>, ClusterError> {
        // The lower rank connects to the peer's `rail`-th address, the higher accepts.
        let stream = if group.rank() < peer {
            group.connect_data(peer, tag, rail as usize)?
        } else {
            group.accept_data(peer, tag)?
        };
        Ok(Box::new(TcpLink::new(stream)?))
    }
}
