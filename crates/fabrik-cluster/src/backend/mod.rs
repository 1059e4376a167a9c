//! What runs a collective sweep, behind one trait: host memory over a [`Transport`] (TCP,
//! RDMA verbs) or GPU memory through NCCL. `bench collective` ([`crate::bench`]) is written
//! against [`Backend`] alone.
//!
//! A backend opens on every rank ([`open`], where every backend is registered), says which
//! device each rank uses, connects, and runs the sweep. Adding one is its own module here, a
//! [`BackendChoice`] variant and its arm in [`open`]; a new way to move host memory is a
//! [`Transport`] instead, and every host backend gets it.

use fabrik_model::{CollectiveRow, RankDevice};

use crate::collective::AlgoChoice;
use crate::rendezvous::Group;
use crate::sweep::{SweepConfig, WrongElement};
use crate::transport::{RdmaSettings, Transport, TransportChoice};
use crate::ClusterError;

mod host;
mod nccl;

pub use host::Host;
pub use nccl::NcclBackend;

/// Where each finished row goes on rank 0, with the first wrong element of its size if any.
pub type OnRow<'a> = &'a mut dyn FnMut(&CollectiveRow, Option<&WrongElement>);

/// One way of running a collective sweep on every rank of a job.
pub trait Backend {
    /// The name the report carries (`tcp`, `rdma`, `nccl`).
    fn name(&self) -> &str;

    /// This rank's line of the header: host, device, bus id, what it is.
    fn device(&self, group: &Group) -> RankDevice;

    /// Connects this rank to the others (communicator, data links); every rank calls it at once.
    fn connect(&mut self, group: &mut Group, cfg: &SweepConfig) -> Result<(), ClusterError>;

    /// The line printed above the table, once connected.
    fn banner(&self) -> Option<String>;

    /// What the report's notes say about the run's settings, once connected.
    fn notes(&self, cfg: &SweepConfig) -> Vec<String>;

    /// Runs the sweep; rank 0 gets each finished row through `on_row`.
    fn run_sweep(
        &mut self,
        group: &mut Group,
        cfg: &SweepConfig,
        on_row: OnRow<'_>,
    ) -> Result<(), ClusterError>;
}

/// Which backend `bench collective --backend` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendChoice {
    /// Host memory over a transport (`tcp`, `rdma` or `auto`).
    Host(TransportChoice),
    /// GPU memory through NCCL (`nccl`).
    Nccl,
}

impl Default for BackendChoice {
    fn default() -> Self {
        BackendChoice::Host(TransportChoice::Tcp)
    }
}

impl std::str::FromStr for BackendChoice {
    type Err = ClusterError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "nccl" => Ok(BackendChoice::Nccl),
            other => other
                .parse()
                .map(BackendChoice::Host)
                .map_err(|_| ClusterError::Unknown {
                    what: "backend",
                    value: s.to_string(),
                    known: "tcp, rdma, auto or nccl",
                }),
        }
    }
}

/// How the backend runs, besides the sweep itself.
#[derive(Debug, Clone, Default)]
pub struct BackendOptions {
    /// Which backend.
    pub choice: BackendChoice,
    /// Host memory: parallel ring lanes per neighbour (spread over the data addresses).
    pub channels: usize,
    /// Host memory: the algorithm family.
    pub algo: AlgoChoice,
    /// Host memory: the pipelining chunk; `None` is the transport's default.
    pub chunk_bytes: Option<usize>,
    /// The RDMA transport's settings (`rdma`, and `auto` when it picks RDMA).
    pub rdma: RdmaSettings,
}

/// Opens the backend `opts` asks for on this rank, agreeing with the others where they must
/// (the transport), and failing on every rank, naming the first that could not, where one
/// cannot start. The registration of every backend.
pub fn open(
    group: &mut Group,
    opts: &BackendOptions,
    cfg: &SweepConfig,
) -> Result<Box<dyn Backend>, ClusterError> {
    Ok(match opts.choice {
        BackendChoice::Host(choice) => {
            let transport: Box<dyn Transport> = crate::transport::agree(group, choice, &opts.rdma)?;
            Box::new(Host::new(transport, opts))
        }
        BackendChoice::Nccl => Box::new(
            NcclBackend::open(group, cfg)
                .map_err(|e| e.context("the nccl backend could not start"))?,
        ),
    })
}
