//! The report `fabrik logs` writes: a job summary, one entry per process, and findings.
//! `fabrik_parse::nccl_log` reads NCCL's log lines into it.

use std::collections::BTreeMap;

use crate::{Finding, Severity};
use serde::{Deserialize, Serialize};

/// The transport that carried inter-node traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Transport {
    /// NCCL's InfiniBand/RoCE verbs transport (`NET/IB`).
    #[serde(rename = "IB")]
    Ib,
    /// NCCL's TCP socket transport (`NET/Socket`).
    Socket,
    /// The AWS OFI (libfabric) plugin, EFA.
    #[serde(rename = "OFI")]
    Ofi,
    /// GCP's GPUDirect-TCPX plugin.
    #[serde(rename = "GPUDirectTCPX")]
    GpuDirectTcpx,
    /// GCP's GPUDirect-TCPXO (FasTrak) plugin.
    FasTrak,
    /// Processes of the job used different transports.
    Mixed,
    /// The log does not show the transport.
    Unknown,
}

impl Transport {
    /// The name JSON and tables use (`IB`, `Socket`, `OFI`, ...).
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

/// Whether NCCL loaded a network plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum PluginStatus {
    /// A plugin was loaded and used.
    Loaded,
    /// NCCL looked for `libnccl-net.so` and found none; it used its internal transports.
    NotFound,
    /// A plugin library was found but NCCL could not use it.
    Unusable,
    /// The log does not say.
    #[default]
    Unknown,
}

/// The network plugin NCCL reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct PluginInfo {
    /// Loaded, not found, unusable or unknown.
    pub status: PluginStatus,
    /// The plugin's own name (`IBext_v8`, `AWS Libfabric`, `GPUDirectTCPX_v7`, `NCCL RDMA Plugin v8`).
    pub name: Option<String>,
    /// The library path NCCL named, when it printed one.
    pub path: Option<String>,
    /// `Loaded collnet plugin SHARP` and the like.
    pub collnet: Option<String>,
}

/// An interface and its address, as in `Bootstrap : Using eth0:10.0.0.1<0>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Endpoint {
    /// The interface (`eth0`).
    pub interface: String,
    /// Its address, when printed.
    pub address: Option<String>,
}

/// A NIC of `NET/IB : Using [0]mlx5_0:1/RoCE`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IbNic {
    /// NCCL's index of the NIC (`[0]`).
    pub index: u32,
    /// The RDMA device (`mlx5_0`).
    pub device: String,
    /// The port, when printed.
    pub port: Option<u32>,
    /// `IB` or `RoCE`.
    pub link: Option<String>,
    /// The NIC is SHARP-capable (`/SHARP`).
    pub sharp: bool,
}

/// Whether GPUDirect RDMA is enabled for one HCA (`GPU Direct RDMA Enabled for HCA 0 'mlx5_0'`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GdrHca {
    /// The HCA's name (or its index, as NCCL before 2.7 printed it).
    pub hca: String,
    /// GPUDirect RDMA enabled for it.
    pub enabled: bool,
}

/// A communicator this process joined (`comm 0x.. rank 3 nranks 16 cudaDev 3 busId 1c000`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RankInfo {
    /// The process's rank in the communicator.
    pub rank: u32,
    /// Ranks in the communicator.
    pub nranks: Option<u32>,
    /// The CUDA device of the rank.
    pub cuda_dev: Option<u32>,
    /// The GPU's PCI bus id.
    pub bus_id: Option<String>,
}

/// A warning or error line, diagnosed, with how often it was seen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogIssue {
    /// The rule id (`FAB-NCCL-...`).
    pub rule: String,
    /// How bad it is.
    pub severity: Severity,
    /// The first message seen (cut to 300 characters).
    pub message: String,
    /// What it means, from the rule or NCCL's message catalog.
    pub cause: String,
    /// What to do about it.
    pub fix: String,
    /// How many times it was seen in this process.
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
    /// The host name of the log prefix, when there is one.
    pub host: Option<String>,
    /// The process id of the log prefix.
    pub pid: Option<u64>,
    /// The CUDA devices its lines name.
    pub cuda_devices: Vec<u32>,
    /// The ranks it joined.
    pub ranks: Vec<RankInfo>,
    /// Its NCCL version (`2.21.5`).
    pub nccl_version: Option<String>,
    /// CUDA runtime NCCL was built for (`+cuda12.2`).
    pub cuda_runtime: Option<String>,
    /// `cudaDriverVersion 12020` as `12.2`.
    pub cuda_driver: Option<String>,
    /// The bootstrap interface (`Bootstrap : Using eth0:...`).
    pub bootstrap: Option<Endpoint>,
    /// The network plugin.
    pub plugin: PluginInfo,
    /// The network as NCCL named it (`Using network IB`, or the `NET/<name>` of its channels).
    pub network: Option<String>,
    /// The transport that carried its inter-node traffic.
    pub transport: Option<Transport>,
    /// The NICs of `NET/IB : Using ...`.
    pub ib_nics: Vec<IbNic>,
    /// `[RO]`: PCIe relaxed ordering in use for IB memory registrations.
    pub relaxed_ordering: bool,
    /// Out-of-band interface of `NET/IB : Using ... ; OOB eth0:...`.
    pub ib_oob: Option<Endpoint>,
    /// `NET/IB : No device found.`
    pub ib_no_device: bool,
    /// The interfaces of `NET/Socket : Using ...`.
    pub socket_interfaces: Vec<Endpoint>,
    /// Libfabric provider (`efa`) of the AWS OFI plugin.
    pub ofi_provider: Option<String>,
    /// GPUDirect RDMA in use on its channels: `true`, `false`, `null` when not shown.
    pub gdr: Option<bool>,
    /// GPUDirect RDMA per HCA, as NCCL reported it.
    pub gdr_hcas: Vec<GdrHca>,
    /// Channel connections counted by transport (`NET/IB/GDRDMA`, `P2P/IPC`, `SHM`...).
    pub channels: BTreeMap<String, u64>,
    /// NVLink SHARP (NVLS) in use.
    pub nvls: Option<bool>,
    /// CollNet in use.
    pub collnet: Option<bool>,
    /// SHARP in use.
    pub sharp: Option<bool>,
    /// Settings NCCL reported as set by the environment.
    pub env: BTreeMap<String, String>,
    /// Sockets carried this process's traffic although it saw RDMA NICs, a plugin, or tried IB.
    pub socket_fallback: bool,
    /// Why TCP sockets carried this process's traffic, when they did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket_reason: Option<String>,
    /// Its warnings and errors, diagnosed.
    pub issues: Vec<LogIssue>,
    /// NCCL lines it printed.
    pub lines: u64,
}

/// The one-line answer: what carried the traffic, with GDR or not, and whether it fell back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The transport that carried inter-node traffic (`Mixed` when processes differ).
    pub transport: Transport,
    /// The network plugin's own name, when a plugin carried the traffic.
    pub plugin: Option<String>,
    /// `true`/`false`; `null` when the log does not show it.
    pub gdr: Option<bool>,
    /// Sockets carried inter-node traffic although the log shows RDMA devices, a plugin, or an
    /// IB attempt.
    pub socket_fallback: bool,
    /// The NCCL version most processes printed.
    pub nccl_version: Option<String>,
    /// Distinct hosts seen.
    pub hosts: u32,
    /// Processes seen.
    pub processes: u32,
    /// Size of the largest communicator seen (`nranks`), when printed.
    pub nranks: Option<u32>,
    /// Error-severity issues, counted once per process and rule.
    pub errors: u32,
    /// Warning-severity issues, counted once per process and rule.
    pub warnings: u32,
    /// NVLink SHARP (NVLS) in use.
    pub nvls: Option<bool>,
    /// CollNet in use.
    pub collnet: Option<bool>,
    /// One sentence for humans.
    pub text: String,
}

/// The whole result of `fabrik logs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogReport {
    /// The JSON schema version of this document.
    pub schema_version: u32,
    /// The inputs read, by name.
    pub inputs: Vec<String>,
    /// The job summary.
    pub summary: Summary,
    /// The hosts seen, sorted.
    pub host_names: Vec<String>,
    /// One entry per process.
    pub processes: Vec<ProcessReport>,
    /// Job-level findings (fallback, GDR off, mixed versions) and every issue as a finding.
    pub findings: Vec<Finding>,
    /// Lines read, NCCL's and others.
    pub lines_read: u64,
    /// Lines that carry NCCL's prefix.
    pub nccl_lines: u64,
    /// An NCCL RAS report (`ncclras` text or JSON) found among the inputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ras: Option<crate::ras::RasReport>,
    /// `NCCL DIAG` reports (RAS and active diagnostics, NCCL 2.31+) found among the inputs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diag: Vec<crate::ras::DiagReport>,
    /// The peers of RAS monitor events (`ncclras -m`) found among the inputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ras_monitor: Option<crate::ras::PeerTable>,
}

/// The JSON document of `fabrik parse ras` and `fabrik ras`: the RAS parts of a [`LogReport`]
/// and the peers in trouble, without the log's process list.
#[derive(Debug, Serialize)]
pub struct RasDocument<'a> {
    /// The JSON schema version of this document.
    pub schema_version: u32,
    /// Always `ncclras`.
    pub source: &'static str,
    /// The RAS report, if one was found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ras: Option<&'a crate::ras::RasReport>,
    /// The `NCCL DIAG` reports.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub diag: &'a [crate::ras::DiagReport],
    /// Every peer the monitor events named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub monitor: Option<&'a crate::ras::PeerTable>,
    /// The monitor's peers that are not alive.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub troubled_peers: Vec<&'a crate::ras::PeerRow>,
    /// The report's findings.
    pub findings: &'a [Finding],
}

impl LogReport {
    /// Whether `fabrik logs` fails on this report: an error, a fallback to sockets, or an error
    /// finding (job-level ones, such as loopback across hosts or the first failure, included).
    pub fn failed(&self) -> bool {
        self.summary.errors > 0
            || self.summary.socket_fallback
            || crate::has_problems(&self.findings, false)
    }

    /// The RAS document of this report.
    pub fn ras_document(&self) -> RasDocument<'_> {
        RasDocument {
            schema_version: crate::SCHEMA_VERSION,
            source: "ncclras",
            ras: self.ras.as_ref(),
            diag: &self.diag,
            monitor: self.ras_monitor.as_ref(),
            troubled_peers: self
                .ras_monitor
                .as_ref()
                .map(|t| t.troubled())
                .unwrap_or_default(),
            findings: &self.findings,
        }
    }
}
