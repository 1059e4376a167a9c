//! The job's shape: how many nodes and GPUs, what runs, where the rendezvous is.

use std::fmt;
use std::str::FromStr;

use crate::{Kind, LaunchError};

/// Which Kubernetes object the `k8s` kind writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum K8sKind {
    /// An Indexed `batch/v1` Job with a headless Service for stable pod names.
    #[default]
    Job,
    /// A `jobset.x-k8s.io/v1alpha2` JobSet (pod DNS names built in).
    JobSet,
    /// A Kubeflow `kubeflow.org/v1` PyTorchJob (the operator sets the rendezvous).
    PyTorchJob,
}

impl K8sKind {
    /// Every object kind, in the order the CLI lists them.
    pub const ALL: [K8sKind; 3] = [K8sKind::Job, K8sKind::JobSet, K8sKind::PyTorchJob];
    /// The name the CLI accepts (`job`, `jobset`, `pytorchjob`).
    pub fn as_str(self) -> &'static str {
        match self {
            K8sKind::Job => "job",
            K8sKind::JobSet => "jobset",
            K8sKind::PyTorchJob => "pytorchjob",
        }
    }
}

impl fmt::Display for K8sKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for K8sKind {
    type Err = LaunchError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        K8sKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s.to_ascii_lowercase())
            .ok_or_else(|| LaunchError::UnknownK8sKind(s.to_string()))
    }
}

/// The job's shape, whatever launcher renders it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobShape {
    /// Job name: Kubernetes object names, the Slurm job name.
    pub name: String,
    /// Number of nodes.
    pub nodes: u32,
    /// GPUs (ranks) per node.
    pub gpus_per_node: u32,
    /// Container image (docker and k8s need one).
    pub image: Option<String>,
    /// What torchrun starts on each node (`train.py --lr 3e-4`); for `mpirun`, the program each
    /// rank runs.
    pub command: String,
    /// The rendezvous port (`MASTER_PORT`).
    pub master_port: u16,
    /// The rendezvous host (`MASTER_ADDR`); the first of `hosts` when not given.
    pub master_addr: Option<String>,
    /// The nodes by name, one per node, when known (hostfile and sbatch need them).
    pub hosts: Vec<String>,
    /// Which Kubernetes object `k8s` writes.
    pub k8s_kind: K8sKind,
    /// A device-plugin resource that gives pods the RDMA devices (`rdma/hca_shared_devices_a`,
    /// `vpc.amazonaws.com/efa=32`: NAME or NAME=COUNT, 1 by default), instead of a privileged
    /// `/dev/infiniband` host path. Always requested when given.
    pub rdma_resource: Option<String>,
    /// The cloud instance type (`p5.48xlarge`): for AWS EFA, how many EFA interfaces to request
    /// when no node was probed.
    pub instance_type: Option<String>,
}

impl JobShape {
    /// Refuses names no launch file should carry (a host name with a newline, a job name with
    /// shell syntax, an image that would be read as an option), whatever the kind.
    pub fn check_names(&self) -> Result<(), LaunchError> {
        use fabrik_quote::name;
        let named = |option: &'static str| move |refused| LaunchError::Name { option, refused };
        name::job(&self.name).map_err(named("--name"))?;
        for h in &self.hosts {
            name::host(h).map_err(named("--hosts"))?;
        }
        if let Some(a) = &self.master_addr {
            name::host(a).map_err(named("--master-addr"))?;
        }
        if let Some(i) = &self.image {
            name::image(i).map_err(named("--image"))?;
        }
        if let Some(r) = &self.rdma_resource {
            let resource = r.split_once('=').map_or(r.as_str(), |(n, _)| n);
            name::resource(resource.trim()).map_err(named("--rdma-resource"))?;
        }
        Ok(())
    }

    pub(crate) fn validate(&self, kind: Kind) -> Result<(), LaunchError> {
        self.check_names()?;
        let err = |m: String| Err(LaunchError::Shape(m));
        if self.nodes == 0 {
            return err("--nodes must be at least 1".into());
        }
        if self.gpus_per_node == 0 {
            return err("--gpus-per-node must be at least 1".into());
        }
        if self.command.trim().is_empty() {
            return err("--command is empty".into());
        }
        if !self.hosts.is_empty() && self.hosts.len() != self.nodes as usize {
            return err(format!(
                "--hosts lists {} hosts but --nodes is {}",
                self.hosts.len(),
                self.nodes
            ));
        }
        if matches!(kind, Kind::Docker | Kind::K8s) && self.image.is_none() {
            return err(format!("{kind} needs --image"));
        }
        if kind == Kind::Hostfile && self.hosts.is_empty() {
            return err("hostfile needs --hosts h1,h2,...".into());
        }
        if matches!(kind, Kind::Torchrun | Kind::Docker) && self.rendezvous_host().is_none() {
            return err(format!("{kind} needs --master-addr or --hosts"));
        }
        if kind == Kind::K8s && !is_dns_label(&self.name) {
            return err(format!(
                "job name {:?} is not a DNS label (lowercase letters, digits, '-', at most 40 characters here so pod names stay under 63)",
                self.name
            ));
        }
        Ok(())
    }

    /// Where rank 0's torchrun listens: `--master-addr`, else the first host.
    pub fn rendezvous_host(&self) -> Option<&str> {
        self.master_addr
            .as_deref()
            .or_else(|| self.hosts.first().map(String::as_str))
    }

    /// The command split into words as a shell would.
    pub(crate) fn command_words(&self) -> Result<Vec<String>, LaunchError> {
        shlex::split(&self.command).ok_or_else(|| LaunchError::Command(self.command.clone()))
    }
}

fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 40
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}
