//! The data paths between ranks, behind one trait: the host-memory collectives ([`Comm`]) and
//! pair tests run over whatever [`Transport`] the ranks agreed on.
//!
//! A transport opens the [`Link`]s an algorithm runs over: a communicator's ring lanes (and the
//! mesh) with [`Transport::connect_comm`], one two-way link for a pair test with
//! [`Transport::pair_link`]. The ranks agree on one with [`agree`], which is also where a
//! transport is registered: adding one is its own module here, a [`TransportChoice`] variant
//! and its arm in [`agree`]; the collectives, the `bench collective` run ([`crate::bench`]) and
//! the command line need no change.
//!
//! The pair matrix still takes a link-opening closure (`matrix::PairOpener`); it adopts this
//! trait by taking `&dyn Transport` and calling [`Transport::pair_link`] where it calls the
//! closure (see ARCHITECTURE.md).

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use fabrik_verbs::{LocalOptions, MemKind, PipeConfig, PipeDevice};

use crate::collective::Comm;
use crate::link::Link;
use crate::rdma_link::{all_ranks_have_rdma, open_everywhere};
use crate::rendezvous::Group;
use crate::ClusterError;

mod rdma;
mod tcp;

pub use rdma::Rdma;
pub use tcp::Tcp;

/// A data path between ranks: opens the links the host-memory collectives and pair tests run
/// over. Every rank of a job holds the same transport (see [`agree`]).
pub trait Transport: Debug + Send + Sync {
    /// The name reports carry (`tcp`, `rdma`).
    fn name(&self) -> &'static str;

    /// What the path runs on, for notes and headers (`rxe0:1 GID index 1 (...), MTU 1024`);
    /// `None` when the name says it all.
    fn describe(&self) -> Option<String> {
        None
    }

    /// The device and port it runs on (`rxe0:1`), when it runs on one.
    fn device(&self) -> Option<String> {
        None
    }

    /// The receive granularity of the collectives over this transport when none is asked for.
    fn default_chunk_bytes(&self) -> usize;

    /// A note on how data is kept in flight (`8 x 262144 B in flight per pipe`), if the
    /// transport has such a setting.
    fn window(&self) -> Option<String> {
        None
    }

    /// Opens the communicator: `channels` ring lanes (at least one) and, with `mesh`, a link to
    /// every other rank; every rank calls this at once.
    fn connect_comm(
        &self,
        group: &mut Group,
        channels: usize,
        mesh: bool,
        chunk_bytes: usize,
    ) -> Result<Comm, ClusterError>;

    /// A two-way link to `peer` for a pair test, labelled `tag`, over the peer's `rail`-th data
    /// address; both ends call this at once.
    fn pair_link(
        &self,
        group: &mut Group,
        peer: u32,
        tag: u32,
        rail: u32,
    ) -> Result<Box<dyn Link>, ClusterError>;
}

/// Which transport a run asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TransportChoice {
    /// TCP over the ranks' data addresses.
    #[default]
    Tcp,
    /// RDMA verbs (RC queue pairs) on every rank, or the run fails naming the rank that has none.
    Rdma,
    /// RDMA when every rank has a usable device, else TCP.
    Auto,
}

impl TransportChoice {
    /// Every choice's name, as `--transport` and `--backend` take it.
    pub const NAMES: &'static str = "tcp, rdma or auto";
}

impl std::str::FromStr for TransportChoice {
    type Err = ClusterError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "tcp" => Ok(TransportChoice::Tcp),
            "rdma" => Ok(TransportChoice::Rdma),
            "auto" => Ok(TransportChoice::Auto),
            _ => Err(ClusterError::Unknown {
                what: "transport",
                value: s.to_string(),
                known: TransportChoice::NAMES,
            }),
        }
    }
}

/// How the RDMA transport uses its device, as `--device`, `--gid-index`, `--rdma-mtu`,
/// `--rdma-chunk` and `--rdma-slots` set it; the time limits are the job's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RdmaSettings {
    /// The device; `None` picks the first with an ACTIVE port.
    pub device: Option<String>,
    /// The port, from 1.
    pub port: u8,
    /// The GID index; `None` is the one NCCL would use (RoCE) or 0 (InfiniBand).
    pub gid_index: Option<u32>,
    /// Path MTU in bytes; `None` is the port's active MTU.
    pub mtu: Option<u32>,
    /// Bytes per RDMA message.
    pub chunk_bytes: usize,
    /// Messages in flight per pipe.
    pub slots: u32,
}

impl Default for RdmaSettings {
    fn default() -> Self {
        RdmaSettings {
            device: None,
            port: 1,
            gid_index: None,
            mtu: None,
            chunk_bytes: 256 << 10,
            slots: 8,
        }
    }
}

impl RdmaSettings {
    /// How this rank opens its device, every wait bounded by `timeout`.
    pub fn local_options(&self, timeout: Duration) -> LocalOptions {
        LocalOptions {
            device: self.device.clone(),
            port: self.port,
            gid_index: self.gid_index,
            mtu: self.mtu,
            mem: MemKind::Host,
            timeout,
            ..LocalOptions::default()
        }
    }

    /// The pipes' settings, checked; every wait bounded by `timeout`.
    pub fn pipe_config(&self, timeout: Duration) -> Result<PipeConfig, ClusterError> {
        let cfg = PipeConfig {
            chunk_bytes: self.chunk_bytes,
            slots: self.slots,
            timeout,
        };
        cfg.validate()?;
        Ok(cfg)
    }
}

/// Resolves `choice` on every rank alike: `Rdma` opens the device everywhere (failing on every
/// rank, naming the first that could not), `Auto` picks RDMA only when every rank has a usable
/// device. Returns the RDMA device when the ranks agreed on RDMA, `None` for TCP.
pub fn agree_rdma(
    group: &mut Group,
    choice: TransportChoice,
    opts: &LocalOptions,
) -> Result<Option<Arc<PipeDevice>>, ClusterError> {
    let rdma = match choice {
        TransportChoice::Tcp => false,
        TransportChoice::Rdma => true,
        TransportChoice::Auto => all_ranks_have_rdma(group, opts)?,
    };
    if !rdma {
        return Ok(None);
    }
    let rank = group.rank();
    open_everywhere(group, opts)
        .map(Some)
        .map_err(|e| e.context(format!("rank {rank} opening the RDMA device")))
}

/// The transport every rank agreed on for `choice` (see [`agree_rdma`]); the registration of
/// every transport.
pub fn agree(
    group: &mut Group,
    choice: TransportChoice,
    rdma: &RdmaSettings,
) -> Result<Box<dyn Transport>, ClusterError> {
    let opts = rdma.local_options(group.timeout());
    Ok(match agree_rdma(group, choice, &opts)? {
        None => Box::new(Tcp),
        Some(dev) => {
            let pipe = rdma.pipe_config(group.timeout())?;
            Box::new(Rdma::new(dev, pipe))
        }
    })
}
