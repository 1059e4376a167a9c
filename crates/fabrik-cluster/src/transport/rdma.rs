//! The `rdma` transport: links over RC queue pairs ([`crate::rdma_link`]) on a device every rank
//! opened, set up over the ranks' data connections.

use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use fabrik_verbs::{PipeConfig, PipeDevice};

use crate::collective::DEFAULT_CHUNK_BYTES;
use crate::link::Link;
use crate::rdma_link::RdmaLink;
use crate::ClusterError;

use super::Transport;

/// RDMA verbs on an opened device, with the pipes' settings.
#[derive(Debug)]
pub struct Rdma {
    dev: Arc<PipeDevice>,
    pipe: PipeConfig,
}

impl Rdma {
    /// The transport over `dev`, its pipes set up with `pipe` (their timeout is each link's
    /// wait limit).
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

    fn counter_port(&self) -> Option<(String, u32)> {
        Some((self.dev.name().to_string(), u32::from(self.dev.port())))
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

    fn link(
        &self,
        stream: TcpStream,
        peer: &str,
        wait: Duration,
    ) -> Result<Box<dyn Link>, ClusterError> {
        let pipe = PipeConfig {
            timeout: wait,
            ..self.pipe.clone()
        };
        Ok(Box::new(RdmaLink::connect(&self.dev, stream, peer, &pipe)?))
    }
}
