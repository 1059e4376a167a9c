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
    /// `[pcie]`: the PCIe links of the NICs and GPUs and of the bridges above them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcie: Option<PcieExpect>,
    /// `[nic]`: NIC firmware settings (`mstconfig q`) and link quality (`mstlink`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nic: Option<NicExpect>,
    /// `[kernel_log]`: kernel log events that must not be there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_log: Option<KernelLogExpect>,
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
    /// The share of the link rate a run must reach where no line above is given (0 to 1;
    /// default [`crate::passline::DEFAULT_FRACTION`], 0.9).
    pub pass_fraction: Option<f64>,
}

/// `[pcie]` of an expectations file: the least PCIe link every NIC and GPU trains to, judged on
/// the device's own link and on each bridge link above it that could carry it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PcieExpect {
    /// Each NIC's link runs at least this speed (GT/s, sysfs `current_link_speed`: 16, 32).
    pub nic_speed_gts: Option<f64>,
    /// Each NIC's link is at least this wide (lanes, sysfs `current_link_width`).
    pub nic_width: Option<u32>,
    /// Each GPU's link runs at least this speed (GT/s).
    pub gpu_speed_gts: Option<f64>,
    /// Each GPU's link is at least this wide (lanes).
    pub gpu_width: Option<u32>,
}

/// `[nic]` of an expectations file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NicExpect {
    /// Firmware settings every NIC that `mstconfig q` reads holds, by mstconfig's name: the
    /// value as mstconfig prints it (`force_relax(1)`), or its word or number alone
    /// (`force_relax`, `1`, `True`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub firmware: BTreeMap<String, String>,
    /// The FEC every port's `mstlink` reports (`Standard_RS-FEC - (544,514)`), as a text the
    /// reported mode holds, case-insensitively.
    pub fec: Option<String>,
    /// The highest effective (post-FEC) BER a port may show (`Effective Physical BER`).
    pub max_effective_ber: Option<f64>,
    /// The highest raw (pre-FEC) BER a port may show (`Raw Physical BER`).
    pub max_raw_ber: Option<f64>,
}

/// `[kernel_log]` of an expectations file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelLogExpect {
    /// Classes of kernel log event that must not be in the log: each of [`KLOG_CLASSES`].
    #[serde(default)]
    pub absent: Vec<String>,
}

/// The kernel log classes `[kernel_log] absent` may name: NVIDIA Xid errors, mlx5 health
/// events, link downs after the boot grace, PCIe AER correctable and uncorrectable events,
/// memory pinning failures.
pub const KLOG_CLASSES: [&str; 6] = [
    "xid",
    "mlx5_health",
    "link_down",
    "aer_correctable",
    "aer_uncorrectable",
    "pin_failure",
];

/// The PCIe link speeds, GT/s (PCIe 1.0 to 6.0).
pub const PCIE_SPEEDS: [f64; 6] = [2.5, 5.0, 8.0, 16.0, 32.0, 64.0];
/// The PCIe link widths, lanes.
pub const PCIE_WIDTHS: [u32; 7] = [1, 2, 4, 8, 12, 16, 32];

/// The InfiniBand MTUs (IBTA: 256 to 4096 bytes; `enum ibv_mtu`).
pub const IB_MTUS: [u32; 5] = [256, 512, 1024, 2048, 4096];
/// The smallest MTU an IPv4 netdev may have (RFC 791's 68 bytes, the kernel's `ETH_MIN_MTU`).
pub const NETDEV_MTU_MIN: u32 = 68;
/// The largest MTU a netdev may have (`IP_MAX_MTU`, 65535).
pub const NETDEV_MTU_MAX: u32 = 65_535;
/// More than any RDMA port signals: 12X XDR, the widest and fastest port the kernel's sysfs
/// `rate` can print, is 2400 Gb/s.
pub const MAX_PORT_GBPS: f64 = 3_200.0;
/// More all_reduce bus bandwidth than any node reaches (NVLink 5 is 1800 GB/s per GPU).
pub const MAX_BUSBW_GBS: f64 = 10_000.0;

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
        self.check_values().map_err(invalid)?;
        for w in &self.waive {
            w.validate().map_err(invalid)?;
        }
        Ok(())
    }

    /// Refuses values no node can have, so that a typo or a wrong unit is not silently a
    /// difference on every node (or on none): rates and bandwidths finite and positive within
    /// what a port can signal, MTUs of the sizes the standards define, priorities 0 to 7.
    fn check_values(&self) -> Result<(), String> {
        fn positive(key: &str, v: Option<f64>, max: f64, unit: &str) -> Result<(), String> {
            match v {
                Some(x) if !x.is_finite() || x <= 0.0 => {
                    Err(format!("{key} = {x} is not a positive number of {unit}"))
                }
                Some(x) if x > max => Err(format!(
                    "{key} = {x} {unit} is more than any port or node carries (at most {max}): \
                     is it in another unit?"
                )),
                _ => Ok(()),
            }
        }
        fn text(key: &str, v: Option<&str>) -> Result<(), String> {
            match v {
                Some(t) if t.trim().is_empty() => Err(format!("{key} is empty")),
                _ => Ok(()),
            }
        }
        if let Some(g) = &self.gpus {
            text("gpus.model", g.model.as_deref())?;
        }
        if let Some(r) = &self.rdma {
            positive("rdma.rate_gbps", r.rate_gbps, MAX_PORT_GBPS, "Gb/s")?;
            if let Some(m) = r.ib_mtu {
                if !IB_MTUS.contains(&m) {
                    return Err(format!(
                        "rdma.ib_mtu = {m} is not an InfiniBand MTU (one of {IB_MTUS:?} bytes)"
                    ));
                }
            }
            if let Some(m) = r.netdev_mtu {
                if !(NETDEV_MTU_MIN..=NETDEV_MTU_MAX).contains(&m) {
                    return Err(format!(
                        "rdma.netdev_mtu = {m} is outside the MTUs a netdev can have \
                         ({NETDEV_MTU_MIN} to {NETDEV_MTU_MAX} bytes)"
                    ));
                }
            }
            text("rdma.firmware", r.firmware.as_deref())?;
        }
        if let Some(ro) = &self.roce {
            if let Some(p) = &ro.pfc_priorities {
                if let Some(bad) = p.iter().find(|p| **p > 7) {
                    return Err(format!(
                        "roce.pfc_priorities holds {bad}: priorities are 0 to 7"
                    ));
                }
                let mut sorted = p.clone();
                sorted.sort_unstable();
                sorted.dedup();
                if sorted.len() != p.len() {
                    return Err(format!("roce.pfc_priorities {p:?} names a priority twice"));
                }
            }
            if let Some(t) = &ro.trust {
                if !["pcp", "dscp"].contains(&t.to_ascii_lowercase().as_str()) {
                    return Err(format!("roce.trust `{t}` is neither `pcp` nor `dscp`"));
                }
            }
        }
        if let Some(h) = &self.host {
            text("host.peer_memory", h.peer_memory.as_deref())?;
            if let Some(Memlock::Bytes(0)) = h.memlock {
                return Err(
                    "host.memlock = 0 bytes: give `unlimited` or a least number of bytes".into(),
                );
            }
        }
        if let Some(v) = &self.versions {
            for (k, val) in [
                ("versions.nvidia_driver", &v.nvidia_driver),
                ("versions.ofed", &v.ofed),
                ("versions.rdma_core", &v.rdma_core),
                ("versions.nccl", &v.nccl),
            ] {
                text(k, val.as_deref())?;
            }
        }
        if let Some(b) = &self.bandwidth {
            positive(
                "bandwidth.p2p_gbps_per_nic",
                b.p2p_gbps_per_nic,
                MAX_PORT_GBPS * 2.0,
                "Gb/s",
            )?;
            positive(
                "bandwidth.all_reduce_busbw_gbs",
                b.all_reduce_busbw_gbs,
                MAX_BUSBW_GBS,
                "GB/s",
            )?;
            if let Some(f) = b.pass_fraction {
                if !(f.is_finite() && f > 0.0 && f <= 1.0) {
                    return Err(format!(
                        "bandwidth.pass_fraction = {f} is not a share of the link rate (above 0, at most 1)"
                    ));
                }
            }
        }
        if let Some(p) = &self.pcie {
            for (key, v) in [
                ("pcie.nic_speed_gts", p.nic_speed_gts),
                ("pcie.gpu_speed_gts", p.gpu_speed_gts),
            ] {
                if let Some(g) = v {
                    if !PCIE_SPEEDS.iter().any(|s| (s - g).abs() < 0.01) {
                        return Err(format!(
                            "{key} = {g} is not a PCIe link speed (one of {PCIE_SPEEDS:?} GT/s)"
                        ));
                    }
                }
            }
            for (key, v) in [
                ("pcie.nic_width", p.nic_width),
                ("pcie.gpu_width", p.gpu_width),
            ] {
                if let Some(w) = v {
                    if !PCIE_WIDTHS.contains(&w) {
                        return Err(format!(
                            "{key} = {w} is not a PCIe link width (one of {PCIE_WIDTHS:?} lanes)"
                        ));
                    }
                }
            }
        }
        if let Some(n) = &self.nic {
            for (key, v) in [
                ("nic.max_effective_ber", n.max_effective_ber),
                ("nic.max_raw_ber", n.max_raw_ber),
            ] {
                if let Some(b) = v {
                    if !(b.is_finite() && b > 0.0 && b < 1.0) {
                        return Err(format!(
                            "{key} = {b} is not a bit error ratio (above 0, below 1: 1e-12)"
                        ));
                    }
                }
            }
            text("nic.fec", n.fec.as_deref())?;
            for (k, v) in &n.firmware {
                let name_ok = !k.is_empty()
                    && k.chars()
                        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
                if !name_ok {
                    return Err(format!(
                        "[nic.firmware] key `{k}` is not an mstconfig setting name (capitals, digits and _)"
                    ));
                }
                text(&format!("nic.firmware.{k}"), Some(v))?;
            }
        }
        if let Some(k) = &self.kernel_log {
            for c in &k.absent {
                if !KLOG_CLASSES.contains(&c.as_str()) {
                    return Err(format!(
                        "kernel_log.absent names `{c}`, which is none of {}",
                        KLOG_CLASSES.join(", ")
                    ));
                }
            }
        }
        for key in self.nccl.keys() {
            let well_formed = key.strip_prefix("NCCL_").is_some_and(|rest| {
                !rest.is_empty()
                    && rest
                        .chars()
                        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
            });
            if !well_formed {
                return Err(format!(
                    "[nccl] key `{key}` is not an NCCL variable (NCCL_ followed by capitals, digits and _)"
                ));
            }
            if let fabrik_nccl::vars::Check::Misspelled { nearest, .. } =
                fabrik_nccl::vars::check(key)
            {
                return Err(format!(
                    "[nccl] key `{key}` is read by no release of NCCL or its plugins: did you mean `{}`?",
                    nearest.name
                ));
            }
        }
        Ok(())
    }

    /// Writes the file back (what `fabrik expect --from-root` prints).
    pub fn to_toml(&self) -> Result<String, ExpectError> {
        toml::to_string(self).map_err(|e| ExpectError::Write(e.to_string()))
    }

    /// The file `fabrik expect --from-root ROOT` writes: these expectations, headed by a
    /// warning that they come from one node taken as known-good (`root`) and want review.
    pub fn to_reviewed_toml(&self, root: &str) -> Result<String, ExpectError> {
        Ok(format!(
            "# Written by `fabrik expect --from-root {root}` from a node taken as known-good: review\n# every value before using it as the cluster's expectations.\n\n{}",
            self.to_toml()?
        ))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn values_out_of_range_or_in_the_wrong_unit_are_refused() {
        for (text, says) in [
            ("[rdma]\nrate_gbps = nan\n", "not a positive number"),
            ("[rdma]\nrate_gbps = -400\n", "not a positive number"),
            ("[rdma]\nrate_gbps = 0\n", "not a positive number"),
            ("[rdma]\nrate_gbps = 400000000000\n", "another unit"),
            ("[rdma]\nib_mtu = 1\n", "not an InfiniBand MTU"),
            ("[rdma]\nib_mtu = 4092\n", "not an InfiniBand MTU"),
            ("[rdma]\nnetdev_mtu = 9\n", "outside the MTUs"),
            ("[rdma]\nfirmware = \" \"\n", "empty"),
            ("[roce]\npfc_priorities = [3, 8]\n", "0 to 7"),
            ("[roce]\npfc_priorities = [3, 3]\n", "twice"),
            ("[roce]\ntrust = \"dcsp\"\n", "neither `pcp` nor `dscp`"),
            ("[host]\nmemlock = 0\n", "0 bytes"),
            (
                "[bandwidth]\np2p_gbps_per_nic = inf\n",
                "not a positive number",
            ),
            (
                "[bandwidth]\nall_reduce_busbw_gbs = -1\n",
                "not a positive number",
            ),
            ("[nccl]\nnccl_ib_hca = \"mlx5\"\n", "not an NCCL variable"),
            ("[bandwidth]\npass_fraction = 90\n", "not a share"),
            (
                "[nccl]\nNCCL_IB_HCAS = \"mlx5\"\n",
                "did you mean `NCCL_IB_HCA`?",
            ),
            ("[bandwidth]\npass_fraction = 0\n", "not a share"),
            ("[versions]\nofed = \"\"\n", "empty"),
            ("[pcie]\nnic_speed_gts = 15\n", "not a PCIe link speed"),
            ("[pcie]\ngpu_width = 3\n", "not a PCIe link width"),
            ("[nic]\nmax_raw_ber = 2\n", "not a bit error ratio"),
            (
                "[nic]\nmax_effective_ber = -1e-12\n",
                "not a bit error ratio",
            ),
            (
                "[nic.firmware]\npci_wr_ordering = \"1\"\n",
                "not an mstconfig setting name",
            ),
            ("[nic.firmware]\nATS_ENABLED = \"\"\n", "empty"),
            ("[kernel_log]\nabsent = [\"xids\"]\n", "none of"),
        ] {
            let e = Expectations::parse("t", text).unwrap_err().to_string();
            assert!(e.contains(says), "{text}: {e}");
        }
        for ok in [
            "[rdma]\nrate_gbps = 400\nib_mtu = 4096\nnetdev_mtu = 9000\n",
            "[roce]\npfc_priorities = [3]\ntrust = \"dscp\"\n",
            "[host]\nmemlock = 65536\n",
            "[bandwidth]\np2p_gbps_per_nic = 380\nall_reduce_busbw_gbs = 460\n",
            "[bandwidth]\npass_fraction = 0.85\n",
            "[pcie]\nnic_speed_gts = 32\nnic_width = 16\ngpu_speed_gts = 2.5\n",
            "[nic]\nfec = \"RS-FEC\"\nmax_raw_ber = 1e-5\n[nic.firmware]\nPCI_WR_ORDERING = \"force_relax(1)\"\n",
            "[kernel_log]\nabsent = [\"xid\", \"mlx5_health\"]\n",
        ] {
            Expectations::parse("t", ok).unwrap();
        }
    }

    #[test]
    fn every_shipped_file_is_accepted() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/expect");
        let mut seen = 0;
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "toml") {
                let text = std::fs::read_to_string(&p).unwrap();
                Expectations::parse(&p.display().to_string(), &text).unwrap();
                seen += 1;
            }
        }
        assert!(seen >= 10, "{seen}");
    }

    #[test]
    fn a_waiver_of_an_unknown_rule_id_names_the_nearest_known_one() {
        let file = Expectations::parse("t", "[[waive]]\nrule = \"FAB-PORT-01\"\nreason = \"x\"\n")
            .unwrap_err()
            .to_string();
        assert!(file.contains("nearest known: FAB-PORT-001"), "{file}");
    }

    #[test]
    fn file_waivers_without_reason_or_with_a_time_are_refused() {
        for (text, says) in [
            ("[[waive]]\nrule = \"FAB-PORT-001\"\n", "reason"),
            (
                "[[waive]]\nrule = \"FAB-PORT-001\"\nreason = \"\"\n",
                "the waiver of FAB-PORT-001 has no reason",
            ),
            (
                "[[waive]]\nrule = \"FAB-PORT-001\"\nreason = \"x\"\nexpires = 2026-03-01T10:00:00Z\n",
                "expires of the FAB-PORT-001 waiver must be a date (2026-12-31)",
            ),
            (
                "[[waive]]\nrule = \"FAB-PORT-001\"\nreason = \"x\"\nseverity = \"fatal\"\n",
                "fatal",
            ),
        ] {
            let e = Expectations::parse("t", text)
                .err()
                .unwrap_or_else(|| panic!("accepted: {text}"))
                .to_string();
            assert!(e.starts_with("expectations file t: "), "{e}");
            assert!(e.contains(says), "{text}: {e}");
        }
    }
}
