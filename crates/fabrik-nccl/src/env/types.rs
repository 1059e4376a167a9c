//! The generated environment: variables with their reasons and sources, what could not be
//! decided, and the runtime facts a launcher needs (devices, mounts, host network).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One environment variable fabrik proposes, with why and where the value comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvVar {
    /// The variable's name (`NCCL_IB_HCA`).
    pub name: String,
    /// The value fabrik proposes.
    pub value: String,
    /// One line: why this value, with the facts it rests on.
    pub reason: String,
    /// A URL of the vendor documentation the value comes from, or `environment` for a value
    /// kept from the caller's environment.
    pub source: String,
}

/// How much a [`Note`] matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoteLevel {
    /// Worth knowing; nothing to do.
    Info,
    /// The job may not run as intended until the user acts.
    Warning,
}

/// Something the user must know: a fact fabrik could not establish, a conflict, a step the
/// environment alone does not cover.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Note {
    /// How much it matters.
    pub level: NoteLevel,
    /// What the user must know, in one or two sentences.
    pub message: String,
    /// A URL of the documentation behind it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

impl Note {
    /// An info note without a source.
    pub fn info(message: impl Into<String>) -> Self {
        Note {
            level: NoteLevel::Info,
            message: message.into(),
            source: None,
        }
    }
    /// A warning note without a source.
    pub fn warning(message: impl Into<String>) -> Self {
        Note {
            level: NoteLevel::Warning,
            message: message.into(),
            source: None,
        }
    }
    /// The note with the URL behind it.
    pub fn with_source(mut self, source: &str) -> Self {
        self.source = Some(source.to_string());
        self
    }
}

/// How NCCL will move data between nodes with this environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    /// Verbs over InfiniBand.
    Infiniband,
    /// Verbs over RoCE v2.
    Roce,
    /// NCCL's TCP socket transport.
    Socket,
    /// GCP GPUDirect-TCPX / TCPXO net plugins.
    GpudirectTcpx,
    /// GCP GPUDirect-TCPXO (A3 Mega).
    GpudirectTcpxo,
    /// AWS EFA through the aws-ofi-nccl plugin.
    Efa,
}

impl Transport {
    /// The snake_case name JSON uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Infiniband => "infiniband",
            Transport::Roce => "roce",
            Transport::Socket => "socket",
            Transport::GpudirectTcpx => "gpudirect_tcpx",
            Transport::GpudirectTcpxo => "gpudirect_tcpxo",
            Transport::Efa => "efa",
        }
    }
}

/// A host path the job's container needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mount {
    /// Kubernetes volume name.
    pub name: String,
    /// The path on the host.
    pub host_path: String,
    /// The path inside the container.
    pub container_path: String,
    /// Where the same content lives on a Kubernetes node when it differs from the VM image
    /// (GKE keeps the NVIDIA libraries under `/home/kubernetes/bin/nvidia/lib64`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k8s_host_path: Option<String>,
    /// Only for `docker run` (Kubernetes delivers it another way).
    #[serde(default)]
    pub docker_only: bool,
}

impl Mount {
    /// A mount used by docker and Kubernetes alike, at the same host path for both.
    pub fn new(name: &str, host_path: &str, container_path: &str) -> Self {
        Mount {
            name: name.into(),
            host_path: host_path.into(),
            container_path: container_path.into(),
            k8s_host_path: None,
            docker_only: false,
        }
    }
}

/// An extra container the platform needs next to the job (GCP's receive-datapath-manager).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sidecar {
    /// The container's name.
    pub name: String,
    /// The container image.
    pub image: String,
    /// Its entry point.
    pub command: Vec<String>,
    /// Its arguments.
    pub args: Vec<String>,
    /// Linux capabilities it needs (`NET_ADMIN`).
    pub capabilities: Vec<String>,
    /// Host paths it needs.
    pub mounts: Vec<Mount>,
    /// Its environment.
    pub env: Vec<(String, String)>,
    /// A URL of the documentation that describes it.
    pub source: String,
}

/// What a launcher must give the job besides the variables.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Runtime {
    /// The job talks verbs: it needs `/dev/infiniband` (or an RDMA device resource) and locked
    /// memory.
    pub needs_rdma_devices: bool,
    /// The platform puts the RDMA devices into the pod itself: when asked by label (Alibaba
    /// ACS) or through the resource in `k8s_resources` (AWS EFA's device plugin). Kubernetes
    /// manifests then need no `/dev/infiniband` host path and no other RDMA resource.
    pub k8s_rdma_injected: bool,
    /// The job must share the host's network namespace.
    pub host_network: bool,
    /// Add `IPC_LOCK` so verbs can pin memory.
    pub ipc_lock: bool,
    /// GPUs are passed as `/dev/nvidiaN` device nodes and driver mounts rather than through the
    /// NVIDIA container toolkit (`--gpus all`), as GCP documents for Container-Optimized OS.
    pub gpu_device_nodes: bool,
    /// Extra `docker run` flags the platform documents (`--userns=host`...).
    pub docker_extra_args: Vec<String>,
    /// Extra device paths for `docker run --device`.
    pub devices: Vec<String>,
    /// Host paths the job's container needs.
    pub mounts: Vec<Mount>,
    /// Pod labels the platform requires (`alibabacloud.com/hpn-type: rdma`).
    pub k8s_labels: BTreeMap<String, String>,
    /// Pod annotations the platform requires (GKE's multi-network ones).
    pub k8s_annotations: BTreeMap<String, String>,
    /// Extra resource limits (`vpc.amazonaws.com/efa`).
    pub k8s_resources: BTreeMap<String, String>,
    /// A container the pod needs beside the job.
    pub k8s_sidecar: Option<Sidecar>,
    /// `/dev/shm` size for docker and the k8s memory-backed volume.
    pub shm_size: String,
}

/// A variable that was already in the caller's environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExistingVar {
    /// The variable's name.
    pub name: String,
    /// Its value in the caller's environment.
    pub value: String,
    /// What fabrik would have set, if anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proposed: Option<String>,
    /// `kept` (the existing value is used) or `overridden` (fabrik's value replaces it).
    pub action: ExistingAction,
}

/// What happened to a variable that was already set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExistingAction {
    /// The caller's value stays.
    Kept,
    /// fabrik's value replaces it.
    Overridden,
}

/// The whole answer of `fabrik env`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Env {
    /// The JSON schema version of this document.
    pub schema_version: u32,
    /// The profile whose rules made these variables (`auto` resolves to one of the others).
    pub profile: String,
    /// What was asked for (`auto` or a profile name).
    pub requested_profile: String,
    /// How NCCL will move data between nodes.
    pub transport: Transport,
    /// One sentence a person can act on: which fabric NCCL will use and through what.
    pub summary: String,
    /// The variables, in the order they are written.
    pub vars: Vec<EnvVar>,
    /// What the user must know besides the variables.
    pub notes: Vec<Note>,
    /// NCCL_*/FI_*/UCX_* variables found in the caller's environment.
    pub existing: Vec<ExistingVar>,
    /// What the launcher must give the job besides the variables.
    pub runtime: Runtime,
}

impl Env {
    /// The proposed variable `name`, if any.
    pub fn var(&self, name: &str) -> Option<&EnvVar> {
        self.vars.iter().find(|v| v.name == name)
    }

    /// The warning notes.
    pub fn warnings(&self) -> impl Iterator<Item = &Note> {
        self.notes.iter().filter(|n| n.level == NoteLevel::Warning)
    }
}
