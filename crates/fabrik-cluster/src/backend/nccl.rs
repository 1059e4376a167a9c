//! GPU memory through NCCL, loaded at run time ([`crate::nccl_sweep::GpuRank`]).

use fabrik_gpu::LIBNCCL;
use fabrik_model::RankDevice;

use crate::nccl_sweep::{check_support, local_index, GpuRank};
use crate::ranks::process_env;
use crate::rendezvous::Group;
use crate::sweep::SweepConfig;
use crate::ClusterError;

use super::{Backend, OnRow};

/// The NCCL backend: this rank's GPU and, once connected, its communicator.
pub struct NcclBackend {
    gpu: GpuRank,
}

impl std::fmt::Debug for NcclBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NcclBackend")
            .field("device", &self.gpu.ordinal)
            .field("version", &self.gpu.version.to_string())
            .finish_non_exhaustive()
    }
}

impl NcclBackend {
    /// Loads CUDA and NCCL and picks this rank's GPU. Every rank reports its own failure to
    /// load or set up the GPU, so that rank 0's error names the rank (and its host) that lacks
    /// the library or the device.
    pub fn open(group: &mut Group, cfg: &SweepConfig) -> Result<NcclBackend, ClusterError> {
        let local = local_index(&process_env(), group.peers(), group.rank());
        let gpu = match GpuRank::open(local) {
            Ok(g) => g,
            Err(e) => return Err(group.fail(&ClusterError::Gpu(e))),
        };
        if let Err(e) = check_support(gpu.version, cfg) {
            return Err(group.fail(&e));
        }
        Ok(NcclBackend { gpu })
    }
}

impl Backend for NcclBackend {
    fn name(&self) -> &str {
        "nccl"
    }

    fn device(&self, group: &Group) -> RankDevice {
        self.gpu.device(group)
    }

    fn connect(&mut self, group: &mut Group, _cfg: &SweepConfig) -> Result<(), ClusterError> {
        self.gpu
            .connect(group)
            .map_err(|e| e.context("setting up the NCCL communicator"))
    }

    fn banner(&self) -> Option<String> {
        Some(format!(
            "# fabrik nccl backend: NCCL {} ({LIBNCCL}), CUDA driver {}.{}",
            self.gpu.version,
            self.gpu.driver_version / 1000,
            (self.gpu.driver_version % 1000) / 10
        ))
    }

    fn notes(&self, cfg: &SweepConfig) -> Vec<String> {
        vec![
            format!(
                "nccl {}, cuda driver {}",
                self.gpu.version, self.gpu.driver_version
            ),
            format!("warm-up {}, iterations {}", cfg.warmup, cfg.iters),
        ]
    }

    fn run_sweep(
        &mut self,
        group: &mut Group,
        cfg: &SweepConfig,
        on_row: OnRow<'_>,
    ) -> Result<(), ClusterError> {
        self.gpu.run_sweep(group, cfg, on_row)
    }
}
