//! Launch files for an NCCL job: torchrun lines, `docker run`, Kubernetes Job/JobSet/PyTorchJob,
//! an sbatch script, or an MPI hostfile with its `mpirun` line, all carrying the environment
//! [`fabrik_nccl::Env`] decided.
//!
//! Every renderer is a pure function of the environment and the [`JobShape`].
#![warn(missing_docs)]

mod doc;
mod docker;
mod hostfile;
pub mod k8s;
pub mod options;
mod shape;
mod slurm;
mod torchrun;
mod words;

use std::fmt;
use std::str::FromStr;

use fabrik_nccl::Env;

pub use doc::{gpus_per_node, LaunchDoc};
pub use shape::{JobShape, K8sKind};

/// What to render.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// One `torchrun` line per node.
    Torchrun,
    /// One `docker run` line per node.
    Docker,
    /// A Kubernetes manifest ([`K8sKind`] says which object).
    K8s,
    /// An sbatch script.
    Slurm,
    /// An MPI hostfile and its `mpirun` line.
    Hostfile,
}

impl Kind {
    /// Every kind, in the order the CLI lists them.
    pub const ALL: [Kind; 5] = [
        Kind::Torchrun,
        Kind::Docker,
        Kind::K8s,
        Kind::Slurm,
        Kind::Hostfile,
    ];

    /// The name the CLI accepts (`torchrun`, `k8s`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Torchrun => "torchrun",
            Kind::Docker => "docker",
            Kind::K8s => "k8s",
            Kind::Slurm => "slurm",
            Kind::Hostfile => "hostfile",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Kind {
    type Err = LaunchError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Kind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| LaunchError::UnknownKind(s.to_string()))
    }
}

/// Why a launch file could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// A launch kind fabrik does not know.
    #[error("unknown launch kind {0:?}; known: {known}", known = Kind::ALL.map(Kind::as_str).join(", "))]
    UnknownKind(String),
    /// A Kubernetes object kind fabrik does not write.
    #[error("unknown Kubernetes kind {0:?}; known: job, jobset, pytorchjob")]
    UnknownK8sKind(String),
    /// The job shape does not fit the kind (no hosts for a hostfile, no image for k8s, ...).
    #[error("{0}")]
    Shape(String),
    /// The command does not split into shell words.
    #[error("--command {0:?} is not valid shell words (unbalanced quotes?)")]
    Command(String),
    /// A value that no shell quoting can carry (a NUL byte).
    #[error("{what} cannot be written for a shell: {reason}")]
    Unquotable {
        /// Which value (a variable's name, an argument).
        what: String,
        /// Why it cannot be quoted.
        reason: String,
    },
    /// The YAML serializer failed.
    #[error("writing YAML: {0}")]
    Yaml(String),
    /// A name given on the command line that can never be valid.
    #[error("{option}: {refused}")]
    Name {
        /// The option that gave it (`--hosts`).
        option: &'static str,
        /// The name and why it is refused.
        refused: fabrik_quote::Refused,
    },
    /// A name among a node's facts (a snapshot or a node document is someone else's data)
    /// that can never be valid.
    #[error("the node's {field}: {refused}; refusing to write it into a launch file")]
    NodeName {
        /// Which fact (`RDMA device`, `interface`).
        field: &'static str,
        /// The name and why it is refused.
        refused: fabrik_quote::Refused,
    },
}

/// Refuses a node whose device or interface names can never be valid: the names a launch file
/// or an environment carries (`NCCL_IB_HCA`, `NCCL_SOCKET_IFNAME`, device paths) come from
/// these facts, and a snapshot or a node document may be anyone's.
pub fn check_node(node: &fabrik_model::Node) -> Result<(), LaunchError> {
    use fabrik_quote::name;
    let bad = |field: &'static str| move |refused| LaunchError::NodeName { field, refused };
    for d in &node.rdma_devices {
        name::device(&d.name).map_err(bad("RDMA device"))?;
        for p in &d.ports {
            if let Some(n) = &p.netdev {
                name::interface(n).map_err(bad("port netdev"))?;
            }
            for g in &p.gids {
                if let Some(n) = &g.netdev {
                    name::interface(n).map_err(bad("GID netdev"))?;
                }
            }
        }
    }
    for i in &node.net_interfaces {
        name::interface(&i.name).map_err(bad("interface"))?;
        if let Some(d) = &i.rdma_device {
            name::device(d).map_err(bad("interface's RDMA device"))?;
        }
    }
    for d in node.dev_infiniband.iter().flatten() {
        name::device(d).map_err(bad("/dev/infiniband entry"))?;
    }
    for p in &node.gpu_nic_paths {
        // The NIC of a GPU path is an RDMA device, or a netdev where there is none.
        name::device(&p.nic)
            .or_else(|_| name::interface(&p.nic))
            .map_err(bad("GPU path NIC"))?;
    }
    Ok(())
}

/// Renders `kind` for `env` and `shape`. Names that can never be valid are refused first
/// ([`JobShape::check_names`]); every other value is written as data through
/// [`fabrik_quote`], so nothing in the shape or the environment can run as code.
pub fn render(kind: Kind, env: &Env, shape: &JobShape) -> Result<String, LaunchError> {
    shape.validate(kind)?;
    for v in &env.vars {
        words::var_name(&v.name)?;
    }
    match kind {
        Kind::Torchrun => torchrun::render(env, shape),
        Kind::Docker => docker::render(env, shape),
        Kind::K8s => k8s::render(env, shape),
        Kind::Slurm => slurm::render(env, shape),
        Kind::Hostfile => hostfile::render(env, shape),
    }
}

#[cfg(test)]
mod tests;
