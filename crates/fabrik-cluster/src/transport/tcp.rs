//! The `tcp` transport: links over the ranks' authenticated data connections, one socket each.

use std::net::TcpStream;
use std::time::Duration;

use crate::collective::TCP_CHUNK_BYTES;
use crate::link::Link;
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

    fn follows_rails(&self) -> bool {
        true
    }

    fn link(
        &self,
        stream: TcpStream,
        _peer: &str,
        _wait: Duration,
    ) -> Result<Box<dyn Link>, ClusterError> {
        Ok(Box::new(TcpLink::new(stream)?))
    }
}
