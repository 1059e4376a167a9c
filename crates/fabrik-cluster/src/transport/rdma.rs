//! The `rdma` transport: links over RC queue pairs ([`crate::rdma_link`]) on a device every rank
//! opened, set up over the ranks' data connections.

use std::sync::Arc;

use fabrik_verbs::{PipeConfig, PipeDevice};

use crate::collective::{Comm, DEFAULT_CHUNK_BYTES};
use crate::link::Link;
use crate::rdma_link::{connect_comm, pair_link};
use crate::rendezvous::Group;
use crate::ClusterError;

use super::Transport;

/// RDMA verbs on an opened device, with the pipes' settings.
#[derive(Debug)]
pub struct Rdma {
    dev: Arc<PipeDevice>,
    pipe: PipeConfig,
}

impl Rdma {
    /// The transport over `dev`, its pipes set up with `pipe`.
    pub fn new(dev: Arc<PipeDevice>, pipe: PipeConfig) -> Rdma {
        Rdma { dev, pipe }
    }
}

impl Transport for Rdma {
    fn name(&self) -> &'static str {
        "rdma"
    }

    fn device(&self) -> Option<String> {
        Some(self.dev.device_port())
    }

    fn describe(&self) -> Option<String> {
        Some(self.dev.describe())
    }

    fn default_chunk_bytes(&self) -> usize {
        DEFAULT_CHUNK_BYTES
    }

    fn window(&self) -> Option<String> {
        Some(format!(
            "{} x {} B in flight per pipe",
            self.pipe.slots, self.pipe.chunk_bytes
        ))
    }

    fn connect_comm(
        &self,
        group: &mut Group,
        channels: usize,
        mesh: bool,
        chunk_bytes: usize,
    ) -> Result<Comm, ClusterError> {
        connect_comm(group, &self.dev, channels, mesh, chunk_bytes, &self.pipe)
    }

    fn pair_link(
        &self,
        group: &mut Group,
        peer: u32,
        tag: u32,
        rail: u32,
    ) -> Result<Box<dyn Link>, ClusterError> {
        if rail != 0 {
            return Err(ClusterError::Misuse(
                "per-rail pair tests run over TCP only",
            ));
        }
        Ok(Box::new(pair_link(
            group, &self.dev, peer, tag, &self.pipe,
        )?))
    }
}
