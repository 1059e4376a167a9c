//! The PCIe side of a node: its PCI functions (link, AER, relaxed ordering), the bridges
//! between GPUs and NICs, the GPUs, and how far each GPU sits from each NIC.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A PCI function and where it sits in the PCIe tree.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PciFunction {
    /// `0000:17:00.0`
    pub address: String,
    /// `0x15b3`
    pub vendor: Option<String>,
    /// `0x1021`
    pub device: Option<String>,
    /// `0x020700`
    pub class: Option<String>,
    /// `None` when the kernel reports -1 (no NUMA information).
    pub numa_node: Option<i32>,
    /// Bound kernel driver (`mlx5_core`, `nvidia`).
    pub driver: Option<String>,
    /// Negotiated and maximum PCIe link.
    pub link: PciLink,
    /// The physical function's address when this is an SR-IOV virtual function.
    pub physfn: Option<String>,
    /// PCI addresses from the root port down to this function (this one last), as the
    /// `/sys/devices/pci…` path shows them.
    pub path: Vec<String>,
    /// PCIe Device Control: whether the function may issue relaxed-ordering writes (`RlxdOrd`
    /// in `lspci -vvv`), where read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relaxed_ordering: Option<bool>,
    /// PCIe Device Control: the largest read request, bytes (`MaxReadReq`), where read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_read_request: Option<u32>,
    /// PCIe Advanced Error Reporting, where read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aer: Option<PciAer>,
}

/// PCIe Advanced Error Reporting of one function: the status bits `lspci -vvv` shows (set
/// since the last clear), and the kernel's counts (`aer_dev_correctable`, `aer_dev_nonfatal`,
/// `aer_dev_fatal`) where read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PciAer {
    /// Correctable error status bits set (`CESta`: `RxErr`, `BadTLP`, `BadDLLP`...).
    pub correctable: Vec<String>,
    /// Uncorrectable error status bits set that the severity register makes non-fatal.
    pub nonfatal: Vec<String>,
    /// Uncorrectable error status bits set that the severity register makes fatal (`UESvrt`).
    pub fatal: Vec<String>,
    /// The kernel's counts since boot from sysfs: the totals `TOTAL_ERR_COR`,
    /// `TOTAL_ERR_NONFATAL`, `TOTAL_ERR_FATAL` (each from its own file), and each error's own
    /// as `KIND:NAME` (`correctable:RxErr`, `nonfatal:DLP`, `fatal:DLP`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counts: BTreeMap<String, u64>,
}

impl PciFunction {
    /// Whether this is an SR-IOV virtual function (it has a `physfn`).
    pub fn is_virtual_function(&self) -> bool {
        self.physfn.is_some()
    }
}

/// PCIe link state from `current_link_speed`/`width` and `max_link_speed`/`width`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PciLink {
    /// As the kernel writes it: `16.0 GT/s PCIe`, `8 GT/s`, `Unknown`.
    pub current_speed: Option<String>,
    /// `current_speed` in GT/s.
    pub current_speed_gts: Option<f64>,
    /// Negotiated lane count (`x16` is 16).
    pub current_width: Option<u32>,
    /// As the kernel writes `max_link_speed`.
    pub max_speed: Option<String>,
    /// `max_speed` in GT/s.
    pub max_speed_gts: Option<f64>,
    /// Maximum lane count.
    pub max_width: Option<u32>,
}

/// An NVIDIA GPU.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Gpu {
    /// Its PCI function.
    pub pci: PciFunction,
    /// `NVIDIA H100 80GB HBM3`, from `/proc/driver/nvidia/gpus/ADDR/information` or NVML.
    pub model: Option<String>,
    /// `GPU-...` UUID, where readable.
    pub uuid: Option<String>,
    /// `/dev/nvidiaN`.
    pub minor: Option<u32>,
    /// NVLinks and their speed (`nvidia-smi nvlink -s`), where captured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nvlinks: Vec<crate::NvLink>,
}

impl Gpu {
    /// A GPU known by its PCI function alone, every other fact unknown.
    pub fn new(pci: PciFunction) -> Self {
        Gpu {
            pci,
            model: None,
            uuid: None,
            minor: None,
            nvlinks: vec![],
        }
    }
}

/// `nvidia-smi topo -m` connection types, nearest first.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub enum PathType {
    /// Same PCIe switch port (at most one bridge).
    PIX,
    /// Several PCIe bridges, without crossing the host bridge.
    PXB,
    /// Through a PCIe host bridge (same root complex).
    PHB,
    /// Across host bridges within one NUMA node.
    NODE,
    /// Across NUMA nodes (SMP interconnect).
    SYS,
}

impl PathType {
    /// The `nvidia-smi topo -m` name.
    pub fn as_str(self) -> &'static str {
        match self {
            PathType::PIX => "PIX",
            PathType::PXB => "PXB",
            PathType::PHB => "PHB",
            PathType::NODE => "NODE",
            PathType::SYS => "SYS",
        }
    }
}

/// How far one GPU is from one NIC on the PCIe tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GpuNicPath {
    /// GPU PCI address.
    pub gpu: String,
    /// RDMA device name, or the netdev name on nodes without RDMA.
    pub nic: String,
    /// The NIC's PCI address.
    pub nic_pci: String,
    /// `None` when the PCI paths were not readable.
    pub path_type: Option<PathType>,
    /// Whether both sit on the same NUMA node; `None` when either is unknown.
    pub same_numa: Option<bool>,
}

/// A PCIe bridge or switch port between GPUs and NICs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PciBridge {
    /// PCI address (`0000:16:02.0`).
    pub address: String,
    /// ACS control bits reported enabled (`SrcValid`, `ReqRedir`, `CmpltRedir`...) from `lspci -vvv`.
    pub acs_ctl_enabled: Option<Vec<String>>,
    /// The bridge's own PCIe function (its link and AER status), where a pasted `lspci -vvv`
    /// showed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<PciFunction>,
}

impl PciBridge {
    /// ACS request or completion redirect forces peer-to-peer traffic up to the root complex.
    pub fn acs_redirects(&self) -> Option<bool> {
        self.acs_ctl_enabled.as_ref().map(|bits| {
            bits.iter()
                .any(|b| b == "ReqRedir" || b == "CmpltRedir" || b == "UpstreamFwd")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acs_redirect_detection() {
        let b = PciBridge {
            address: "0000:00:01.0".into(),
            acs_ctl_enabled: Some(vec!["SrcValid".into(), "ReqRedir".into()]),
            function: None,
        };
        assert_eq!(b.acs_redirects(), Some(true));
        let quiet = PciBridge {
            address: "0000:00:01.0".into(),
            acs_ctl_enabled: Some(vec![]),
            function: None,
        };
        assert_eq!(quiet.acs_redirects(), Some(false));
    }
}
