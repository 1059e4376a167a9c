//! Host-memory collectives ([`crate::collective::Comm`]) over whichever transport the ranks
//! agreed on.

use fabrik_model::RankDevice;

use crate::collective::{AlgoChoice, CollOp, Comm};
use crate::rendezvous::Group;
use crate::sweep::{counts, run_sweep, SweepConfig};
use crate::transport::Transport;
use crate::ClusterError;

use super::{Backend, BackendOptions, OnRow};

/// The host-memory backend: a communicator over a [`Transport`].
#[derive(Debug)]
pub struct Host {
    transport: Box<dyn Transport>,
    channels: usize,
    algo: AlgoChoice,
    chunk_bytes: usize,
    comm: Option<Comm>,
    algos: String,
}

impl Host {
    /// The backend over `transport` with the lanes, algorithm and chunk of `opts`.
    pub fn new(transport: Box<dyn Transport>, opts: &BackendOptions) -> Host {
        let chunk_bytes = opts
            .chunk_bytes
            .unwrap_or_else(|| transport.default_chunk_bytes());
        Host {
            transport,
            channels: opts.channels,
            algo: opts.algo,
            chunk_bytes,
            comm: None,
            algos: String::new(),
        }
    }
}

/// This rank's index on its host as the launcher says (`LOCAL_RANK`), else 0: the header's
/// device column.
fn local_rank() -> u32 {
    std::env::var("LOCAL_RANK")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .unwrap_or(0)
}

impl Backend for Host {
    fn name(&self) -> &str {
        self.transport.name()
    }

    fn device(&self, group: &Group) -> RankDevice {
        let via = match self.transport.device() {
            Some(dev) => format!("{} {dev}", self.transport.name()),
            None => self.transport.name().to_string(),
        };
        RankDevice {
            rank: group.rank(),
            group: Some(0),
            pid: Some(u64::from(std::process::id())),
            host: group.peers()[group.rank() as usize].host.clone(),
            device: Some(local_rank()),
            bus_id: Some("host".into()),
            name: Some(format!("host memory ({via}, {} channels)", self.channels)),
        }
    }

    fn connect(&mut self, group: &mut Group, cfg: &SweepConfig) -> Result<(), ClusterError> {
        let mesh = cfg.op == CollOp::Alltoall || self.algo.needs_mesh();
        let mut comm = self
            .transport
            .connect_comm(group, self.channels.max(1), mesh, self.chunk_bytes)
            .map_err(|e| e.context("opening data connections"))?;
        comm.set_algo(self.algo);
        let by_size: Vec<(u64, usize)> = cfg
            .sizes
            .iter()
            .map(|&s| (s, counts(cfg.op, cfg.dtype, s, group.size()).3 as usize))
            .collect();
        self.algos = comm.algorithms_by_size(cfg.op, &by_size);
        self.comm = Some(comm);
        Ok(())
    }

    fn banner(&self) -> Option<String> {
        Some(format!(
            "# Algorithm ({}): {}",
            self.algo.name(),
            self.algos
        ))
    }

    fn notes(&self, cfg: &SweepConfig) -> Vec<String> {
        let mut notes = vec![
            format!(
                "channels {}, chunk {} B, warm-up {}, iterations {}",
                self.channels, self.chunk_bytes, cfg.warmup, cfg.iters
            ),
            format!("algorithm ({}): {}", self.algo.name(), self.algos),
        ];
        if let (Some(dev), Some(window)) = (self.transport.describe(), self.transport.window()) {
            notes.push(format!("{}: {dev}, {window}", self.transport.name()));
        }
        notes
    }

    fn run_sweep(
        &mut self,
        group: &mut Group,
        cfg: &SweepConfig,
        on_row: OnRow<'_>,
    ) -> Result<(), ClusterError> {
        let comm = self
            .comm
            .as_ref()
            .ok_or(ClusterError::Misuse("the host backend runs once connected"))?;
        run_sweep(group, comm, cfg, on_row)
    }
}
