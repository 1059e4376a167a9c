//! The report `fabrik logs` writes: a job summary, one entry per process, and findings.

use std::collections::BTreeMap;

use fabrik_model::{Finding, Severity};
use serde::{Deserialize, Serialize};

/// The transport that carried inter-node traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Transport {
    #[serde(rename = "IB")]
    Ib,
    Socket,
    #[serde(rename = "OFI")]
    Ofi,
    #[serde(rename = "GPUDirectTCPX")]
    GpuDirectTcpx,
    FasTrak,
    Mixed,
    Unknown,
}

impl Transport {
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Ib => "IB",
            Transport::Socket => "Socket",
            Transport::Ofi => "OFI",
            Transport::GpuDirectTcpx => "GPUDirectTCPX",
            Transport::FasTrak => "FasTrak",
            Transport::Mixed => "Mixed",
            Transport::Unknown => "Unknown",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum PluginStatus {
    /// A plugin was loaded and used.
    Loaded,
    /// NCCL looked for `libnccl-net.so` and found none; it used its internal transports.
    NotFound,
    /// A plugin library was found but NCCL could not use it.
    Unusable,
    #[default]
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct PluginInfo {
    pub status: PluginStatus,
    /// The plugin's own name (`IBext_v8`, `AWS Libfabric`, `GPUDirectTCPX_v7`, `NCCL RDMA Plugin v8`).
    pub name: Option<String>,
    pub path: Option<String>,
    /// `Loaded collnet plugin SHARP` and the like.
    pub collnet: Option<String>,
}

/// An interface and its address, as in `Bootstrap : Using eth0:10.0.0.1<0>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Endpoint {
    pub interface: String,
    pub address: Option<String>,
}

/// A NIC of `NET/IB : Using [0]mlx5_0:1/RoCE`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IbNic {
    pub index: u32,
    pub device: String,
    pub port: Option<u32>,
    /// `IB` or `RoCE`.
    pub link: Option<String>,
    pub sharp: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GdrHca {
    pub hca: String,
    pub enabled: bool,
}

/// A communicator this process joined (`comm 0x.. rank 3 nranks 16 cudaDev 3 busId 1c000`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RankInfo {
    pub rank: u32,
    pub nranks: Option<u32>,
    pub cuda_dev: Option<u32>,
    pub bus_id: Option<String>,
}

/// A warning or error line, diagnosed, with how often it was seen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogIssue {
    pub rule: String,
    pub severity: Severity,
    /// The first message seen (cut to 300 characters).
    pub message: String,
    pub cause: String,
    pub fix: String,
    pub count: u64,
    /// `FILE:LINE` of the first occurrence.
    pub first_seen: String,
    /// The ncclResult the line or its `-> N` trace carries: `ncclInternalError (3)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// Position of the first occurrence among all lines read (orders failures across processes).
    #[serde(default)]
    pub order: u64,
    /// The CUDA device of the line it was first seen on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_dev: Option<u32>,
}

/// What one process (`host:pid`) printed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ProcessReport {
    pub host: Option<String>,
    pub pid: Option<u64>,
    pub cuda_devices: Vec<u32>,
    pub ranks: Vec<RankInfo>,
    pub nccl_version: Option<String>,
    /// CUDA runtime NCCL was built for (`+cuda12.2`).
    pub cuda_runtime: Option<String>,
    /// `cudaDriverVersion 12020` as `12.2`.
    pub cuda_driver: Option<String>,
    pub bootstrap: Option<Endpoint>,
    pub plugin: PluginInfo,
    /// The network as NCCL named it (`Using network IB`, or the `NET/<name>` of its channels).
    pub network: Option<String>,
    pub transport: Option<Transport>,
    pub ib_nics: Vec<IbNic>,
    /// `[RO]`: PCIe relaxed ordering in use for IB memory registrations.
    pub relaxed_ordering: bool,
    /// Out-of-band interface of `NET/IB : Using ... ; OOB eth0:...`.
    pub ib_oob: Option<Endpoint>,
    /// `NET/IB : No device found.`
    pub ib_no_device: bool,
    pub socket_interfaces: Vec<Endpoint>,
    /// Libfabric provider (`efa`) of the AWS OFI plugin.
    pub ofi_provider: Option<String>,
    pub gdr: Option<bool>,
    pub gdr_hcas: Vec<GdrHca>,
    /// Channel connections counted by transport (`NET/IB/GDRDMA`, `P2P/IPC`, `SHM`...).
    pub channels: BTreeMap<String, u64>,
    pub nvls: Option<bool>,
    pub collnet: Option<bool>,
    pub sharp: Option<bool>,
    /// Settings NCCL reported as set by the environment.
    pub env: BTreeMap<String, String>,
    /// Sockets carried this process's traffic although it saw RDMA NICs, a plugin, or tried IB.
    pub socket_fallback: bool,
    /// Why TCP sockets carried this process's traffic, when they did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket_reason: Option<String>,
    pub issues: Vec<LogIssue>,
    pub lines: u64,
}

/// The one-line answer: what carried the traffic, with GDR or not, and whether it fell back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub transport: Transport,
    /// The network plugin's own name, when a plugin carried the traffic.
    pub plugin: Option<String>,
    /// `true`/`false`; `null` when the log does not show it.
    pub gdr: Option<bool>,
    /// Sockets carried inter-node traffic although the log shows RDMA devices, a plugin, or an
    /// IB attempt.
    pub socket_fallback: bool,
    pub nccl_version: Option<String>,
    pub hosts: u32,
    pub processes: u32,
    /// Size of the largest communicator seen (`nranks`), when printed.
    pub nranks: Option<u32>,
    /// Error-severity issues, counted once per process and rule.
    pub errors: u32,
    pub warnings: u32,
    pub nvls: Option<bool>,
    pub collnet: Option<bool>,
    /// One sentence for humans.
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogReport {
    pub schema_version: u32,
    pub inputs: Vec<String>,
    pub summary: Summary,
    pub host_names: Vec<String>,
    pub processes: Vec<ProcessReport>,
    /// Job-level findings (fallback, GDR off, mixed versions) and every issue as a finding.
    pub findings: Vec<Finding>,
    pub lines_read: u64,
    pub nccl_lines: u64,
    /// An NCCL RAS report (`ncclras` text or JSON) found among the inputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ras: Option<crate::ras::RasReport>,
}
