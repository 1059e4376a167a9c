//! `fabrik launch`'s flags for the job's shape, read into a [`JobShape`] with the probed node's
//! GPU count as the default ([`ShapeOptions::shape`]).

use fabrik_model::Node;

use crate::{gpus_per_node, JobShape, K8sKind};

/// The job's shape as the command line gives it.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct ShapeOptions {
    /// Number of nodes.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 1))]
    pub nodes: u32,
    /// GPUs (ranks) per node; defaults to the GPUs found on the probed node, else 8.
    #[cfg_attr(feature = "clap", arg(long))]
    pub gpus_per_node: Option<u32>,
    /// Container image (docker and k8s).
    #[cfg_attr(feature = "clap", arg(long))]
    pub image: Option<String>,
    /// What torchrun runs on each node (`train.py --lr 3e-4`); for hostfile, the program each
    /// MPI rank runs.
    #[cfg_attr(feature = "clap", arg(long))]
    pub command: String,
    /// The rendezvous port (MASTER_PORT).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 29500))]
    pub master_port: u16,
    /// Rank 0's address; defaults to the first of --hosts (k8s and slurm derive it).
    #[cfg_attr(feature = "clap", arg(long))]
    pub master_addr: Option<String>,
    /// Comma-separated host names, one per node.
    #[cfg_attr(feature = "clap", arg(long, value_delimiter = ','))]
    pub hosts: Vec<String>,
    /// Which Kubernetes object `k8s` writes.
    #[cfg_attr(feature = "clap", arg(long, default_value = "job",
        value_parser = named::<K8sKind>(K8sKind::ALL.map(K8sKind::as_str))))]
    pub k8s_kind: K8sKind,
    /// Job name (Kubernetes object names, Slurm job name).
    #[cfg_attr(feature = "clap", arg(long, default_value = "fabrik-job"))]
    pub name: String,
    /// Kubernetes device-plugin resource for RDMA devices (`rdma/hca_shared_devices_a`, or
    /// NAME=COUNT such as `vpc.amazonaws.com/efa=32`) instead of a privileged /dev/infiniband
    /// host path.
    #[cfg_attr(feature = "clap", arg(long))]
    pub rdma_resource: Option<String>,
    /// Cloud instance type (`p5.48xlarge`): with --profile aws-efa and no probed node, how many
    /// EFA interfaces the pods request.
    #[cfg_attr(feature = "clap", arg(long))]
    pub instance_type: Option<String>,
}

impl ShapeOptions {
    /// The shape, with GPUs per node from `node` when not given.
    pub fn shape(&self, node: Option<&Node>) -> JobShape {
        JobShape {
            name: self.name.clone(),
            nodes: self.nodes,
            gpus_per_node: gpus_per_node(self.gpus_per_node, node),
            image: self.image.clone(),
            command: self.command.clone(),
            master_port: self.master_port,
            master_addr: self.master_addr.clone(),
            hosts: self.hosts.clone(),
            k8s_kind: self.k8s_kind,
            rdma_resource: self.rdma_resource.clone(),
            instance_type: self.instance_type.clone(),
        }
    }
}

/// A value among the names this crate gives its targets ([`crate::Kind::ALL`]) and Kubernetes
/// objects ([`K8sKind::ALL`]), so a new one needs no change in the command line.
#[cfg(feature = "clap")]
pub fn named<T>(
    names: impl IntoIterator<Item = &'static str>,
) -> impl clap::builder::TypedValueParser<Value = T>
where
    T: std::str::FromStr<Err = crate::LaunchError> + Clone + Send + Sync + 'static,
{
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(names).try_map(|s| s.parse::<T>())
}
