//! The expectations file: its tables, and the checks that refuse a file that cannot be right.

use std::collections::BTreeMap;

use fabrik_model::LinkLayer;
use serde::{Deserialize, Serialize};

use crate::waive::Waiver;

/// Why an expectations file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ExpectError {
    /// The file is not valid TOML or has an unknown key.
    #[error("expectations file {source_name}: {message}")]
    Toml {
        /// The file's name, as messages show it.
        source_name: String,
        /// The TOML parser's message.
        message: String,
    },
    /// The file parses but holds a value that cannot be right.
    #[error("expectations file {source_name}: {message}")]
    Invalid {
        /// The file's name, as messages show it.
        source_name: String,
        /// What is wrong with it.
        message: String,
    },
    /// Expectations could not be serialised (the serialiser's message).
    #[error("cannot write expectations as TOML: {0}")]
    Write(String),
}

/// A cluster file: one machine type's expected facts, and the waivers that go with it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expectations {
    /// What the file describes (`NVIDIA DGX H100`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `[gpus]`: how many GPUs, of which model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus: Option<GpuExpect>,
    /// `[rdma]`: RDMA devices, ports, rates, MTUs and firmware.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdma: Option<RdmaExpect>,
    /// `[roce]`: GID index, PFC, trust and ECN.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roce: Option<RoceExpect>,
    /// `[host]`: peer-memory module and memlock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostExpect>,
    /// `[versions]`: driver and library version prefixes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub versions: Option<VersionExpect>,
    /// NCCL (and FI_*, UCX_*) settings the job environment must hold, checked against the
    /// planned environment when one is given.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub nccl: BTreeMap<String, String>,
    /// `[bandwidth]`: the lines benchmark results must reach.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<BandwidthExpect>,
    /// `[[waive]]`: findings to remove or soften, with a reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waive: Vec<Waiver>,
}

/// `[gpus]` of an expectations file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuExpect {
    /// Exactly this many GPUs.
    pub count: Option<usize>,
    /// A text every GPU's model name holds, case-insensitively (`H100`).
    pub model: Option<String>,
}

/// `[rdma]` of an expectations file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RdmaExpect {
    /// At least this many hardware RDMA devices (rxe/siw do not count).
    pub devices: Option<usize>,
    /// At least this many ACTIVE hardware ports (of `link_layer` when given).
    pub active_ports: Option<usize>,
    /// `InfiniBand` or `Ethernet`, as sysfs `link_layer` writes it.
    pub link_layer: Option<String>,
    /// Every judged ACTIVE port runs at this rate (Gb/s, sysfs `rate`).
    pub rate_gbps: Option<f64>,
    /// InfiniBand active MTU of every judged port (bytes: 4096).
    pub ib_mtu: Option<u32>,
    /// MTU of every RoCE port's netdev (bytes: 9000).
    pub netdev_mtu: Option<u32>,
    /// Firmware (`fw_ver`) of every judged device, a version prefix.
    pub firmware: Option<String>,
}

/// `[roce]` of an expectations file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoceExpect {
    /// The index of the RoCE v2 GID with the port's IPv4 address (NCCL_IB_GID_INDEX).
    pub gid_index: Option<u32>,
    /// The priorities with PFC enabled (`mlnx_qos`), exactly.
    pub pfc_priorities: Option<Vec<u8>>,
    /// `dscp` or `pcp` (`mlnx_qos` trust state).
    pub trust: Option<String>,
    /// ECN enabled (notification and reaction point) on the PFC priorities, or on any when no
    /// PFC priority is expected.
    pub ecn: Option<bool>,
}

/// `[host]` of an expectations file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostExpect {
    /// The GPUDirect RDMA module that must be loaded (`nvidia_peermem`).
    pub peer_memory: Option<String>,
    /// `unlimited`, or the least number of bytes the soft limit may be.
    pub memlock: Option<Memlock>,
}

/// `memlock` of `[host]`: a number of bytes, or `unlimited`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Memlock {
    /// At least this many bytes.
    Bytes(u64),
    /// A word; only `unlimited` is valid.
    Text(String),
}

/// `[versions]` of an expectations file: each a prefix the node's version must start with.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VersionExpect {
    /// NVIDIA driver version prefix (`550.`).
    pub nvidia_driver: Option<String>,
    /// OFED version prefix.
    pub ofed: Option<String>,
    /// rdma-core version prefix.
    pub rdma_core: Option<String>,
    /// NCCL version prefix.
    pub nccl: Option<String>,
}

/// Pass lines for the benchmarks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BandwidthExpect {
    /// Point-to-point bandwidth one NIC must reach (Gb/s, as perftest's `BW average` × 8/1000).
    pub p2p_gbps_per_nic: Option<f64>,
    /// all_reduce bus bandwidth over the whole node at large sizes (GB/s, as nccl-tests prints).
    pub all_reduce_busbw_gbs: Option<f64>,
}

impl Expectations {
    /// Reads a cluster file; `source_name` names it in errors.
    pub fn parse(source_name: &str, text: &str) -> Result<Self, ExpectError> {
        let e: Expectations = toml::from_str(text).map_err(|err| ExpectError::Toml {
            source_name: source_name.to_string(),
            message: err.to_string(),
        })?;
        e.validate(source_name)?;
        Ok(e)
    }

    fn validate(&self, source_name: &str) -> Result<(), ExpectError> {
        let invalid = |message: String| ExpectError::Invalid {
            source_name: source_name.to_string(),
            message,
        };
        if let Some(ll) = self.rdma.as_ref().and_then(|r| r.link_layer.as_deref()) {
            if matches!(LinkLayer::parse(ll), LinkLayer::Other(_)) {
                return Err(invalid(format!(
                    "rdma.link_layer `{ll}` is neither `InfiniBand` nor `Ethernet`"
                )));
            }
        }
        if let Some(Memlock::Text(t)) = self.host.as_ref().and_then(|h| h.memlock.as_ref()) {
            if t != "unlimited" {
                return Err(invalid(format!(
                    "host.memlock `{t}` is neither `unlimited` nor a number of bytes"
                )));
            }
        }
        for w in &self.waive {
            w.validate().map_err(invalid)?;
        }
        Ok(())
    }

    /// Writes the file back (what `fabrik expect --from-root` prints).
    pub fn to_toml(&self) -> Result<String, ExpectError> {
        toml::to_string(self).map_err(|e| ExpectError::Write(e.to_string()))
    }
}
