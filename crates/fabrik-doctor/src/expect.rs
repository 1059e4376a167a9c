//! Expectations: what a node of a cluster must have, written once per machine type in a TOML
//! file, and the comparison of a probed [`Node`] with it. A node that lost a GPU or a rail looks
//! healthy to rules that only judge what is present; compared with what it should have, every
//! difference becomes a finding with the evidence read.
//!
//! Counts of GPUs are exact; RDMA devices and ACTIVE ports are minimums (a DGX's storage NICs
//! come and go with cabling, a missing rail does not). `rdma.link_layer`, when given, picks the
//! ports the other `[rdma]` fields judge, so storage Ethernet ports do not count as slow
//! InfiniBand rails. Versions match as prefixes at a component boundary: `535` matches
//! `535.161.08`, `535.16` does not.

use std::collections::BTreeMap;

use fabrik_model::{Finding, LinkLayer, Node, RdmaDevice, Severity};
use serde::{Deserialize, Serialize};

use crate::env::PlannedEnv;
use crate::rules::roce::recommended_gid_index;
use crate::util::{all_ports, dev_path, ev, finding, is_active, net_path, port_path, port_subject};
use crate::waive::Waiver;

/// Rule id of "GPU count or model differs from the expectations".
pub const GPUS: &str = "FAB-EXP-001";
/// Rule id of "Fewer RDMA devices or ACTIVE ports than expected".
pub const RDMA_COUNT: &str = "FAB-EXP-002";
/// Rule id of "Port rate or link layer differs from the expectations".
pub const LINK: &str = "FAB-EXP-003";
/// Rule id of "MTU differs from the expectations".
pub const MTU: &str = "FAB-EXP-004";
/// Rule id of "RoCE GID index, PFC, trust or ECN differs from the expectations".
pub const ROCE: &str = "FAB-EXP-005";
/// Rule id of "Peer-memory module or memlock differs from the expectations".
pub const GDR: &str = "FAB-EXP-006";
/// Rule id of "Driver, OFED, rdma-core, NCCL or firmware version differs from the expectations".
pub const VERSIONS: &str = "FAB-EXP-007";
/// Rule id of "An NCCL setting differs from the expectations".
pub const NCCL: &str = "FAB-EXP-008";
/// Rule id of "An expectation the node's data cannot confirm".
pub const UNVERIFIED: &str = "FAB-EXP-009";

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

    /// The expectations a known-good node meets: every fact it shows, as the file would say it.
    pub fn from_node(node: &Node) -> Self {
        let mut e = Expectations {
            name: node.hostname.as_ref().map(|h| format!("written from {h}")),
            ..Default::default()
        };
        if !node.gpus.is_empty() {
            let models: Vec<&str> = node
                .gpus
                .iter()
                .filter_map(|g| g.model.as_deref())
                .collect();
            let model = match models.first() {
                Some(first)
                    if models.len() == node.gpus.len() && models.iter().all(|m| m == first) =>
                {
                    Some(first.to_string())
                }
                _ => None,
            };
            e.gpus = Some(GpuExpect {
                count: Some(node.gpus.len()),
                model,
            });
        }
        let hw: Vec<&RdmaDevice> = node
            .rdma_devices
            .iter()
            .filter(|d| !d.is_software())
            .collect();
        if !hw.is_empty() {
            let active: Vec<_> = all_ports(node)
                .filter(|(d, p)| !d.is_software() && is_active(p))
                .collect();
            // The link layer most active ports share is the fabric's; the rest (storage,
            // management) is left to the device count.
            let mut layers: BTreeMap<String, usize> = BTreeMap::new();
            for (_, p) in &active {
                if let Some(ll) = layer_name(p.link_layer.as_ref()) {
                    *layers.entry(ll.to_string()).or_default() += 1;
                }
            }
            let link_layer = layers
                .iter()
                .max_by_key(|(_, n)| **n)
                .map(|(l, _)| l.clone());
            let judged: Vec<_> = active
                .iter()
                .filter(|(_, p)| {
                    link_layer.is_none()
                        || layer_name(p.link_layer.as_ref()) == link_layer.as_deref()
                })
                .collect();
            let one = |values: Vec<Option<String>>| -> Option<String> {
                let first = values.first()?.clone()?;
                values
                    .iter()
                    .all(|v| v.as_deref() == Some(&first))
                    .then_some(first)
            };
            let rate = one(judged
                .iter()
                .map(|(_, p)| p.rate.as_ref().and_then(|r| r.gbps).map(|g| g.to_string()))
                .collect())
            .and_then(|g| g.parse().ok());
            let is_ib = link_layer.as_deref() == Some("InfiniBand");
            let ib_mtu = if is_ib {
                one(judged
                    .iter()
                    .map(|(_, p)| p.active_mtu.map(|m| m.to_string()))
                    .collect())
                .and_then(|m| m.parse().ok())
            } else {
                None
            };
            let netdev_mtu = if link_layer.as_deref() == Some("Ethernet") {
                one(judged
                    .iter()
                    .map(|(_, p)| {
                        p.netdev
                            .as_deref()
                            .and_then(|n| node.net_interface(n))
                            .and_then(|i| i.mtu)
                            .map(|m| m.to_string())
                    })
                    .collect())
                .and_then(|m| m.parse().ok())
            } else {
                None
            };
            let mut judged_devs: Vec<&RdmaDevice> = judged.iter().map(|(d, _)| *d).collect();
            judged_devs.dedup_by(|a, b| a.name == b.name);
            let firmware = one(judged_devs.iter().map(|d| d.fw_ver.clone()).collect());
            e.rdma = Some(RdmaExpect {
                devices: Some(hw.len()),
                active_ports: Some(judged.len()),
                link_layer: link_layer.clone(),
                rate_gbps: rate,
                ib_mtu,
                netdev_mtu,
                firmware,
            });
            if link_layer.as_deref() == Some("Ethernet") {
                let gid_index = one(judged
                    .iter()
                    .map(|(_, p)| recommended_gid_index(p).map(|i| i.to_string()))
                    .collect())
                .and_then(|i| i.parse().ok());
                let nifs: Vec<_> = judged
                    .iter()
                    .filter_map(|(_, p)| p.netdev.as_deref().and_then(|n| node.net_interface(n)))
                    .collect();
                let pfc = one(nifs
                    .iter()
                    .map(|n| {
                        n.pfc
                            .as_ref()
                            .map(|p| format!("{:?}", p.enabled_priorities))
                    })
                    .collect())
                .and_then(|_| nifs.first().and_then(|n| n.pfc.as_ref()));
                let roce = RoceExpect {
                    gid_index,
                    pfc_priorities: pfc.map(|p| p.enabled_priorities.clone()),
                    trust: pfc.and_then(|p| p.trust.clone()),
                    ecn: None,
                };
                if roce != RoceExpect::default() {
                    e.roce = Some(roce);
                }
            }
        }
        let peer = ["nvidia_peermem", "nv_peer_mem"]
            .into_iter()
            .find(|m| node.has_module(m));
        let memlock = node.memlock.as_ref().map(|m| match m.soft_bytes {
            None => Memlock::Text("unlimited".into()),
            Some(b) => Memlock::Bytes(b),
        });
        if peer.is_some() || memlock.is_some() {
            e.host = Some(HostExpect {
                peer_memory: peer.map(str::to_string),
                memlock,
            });
        }
        let v = &node.versions;
        let versions = VersionExpect {
            nvidia_driver: v.nvidia_driver.clone(),
            ofed: v.ofed.clone(),
            rdma_core: v.rdma_core.clone(),
            nccl: v.nccl.clone(),
        };
        if versions != VersionExpect::default() {
            e.versions = Some(versions);
        }
        e
    }
}

fn layer_name(ll: Option<&LinkLayer>) -> Option<&'static str> {
    match ll? {
        LinkLayer::Infiniband => Some("InfiniBand"),
        LinkLayer::Ethernet => Some("Ethernet"),
        LinkLayer::Other(_) => None,
    }
}

/// Whether `found` starts with the expected version at a component boundary.
pub fn version_matches(expected: &str, found: &str) -> bool {
    let (expected, found) = (expected.trim(), found.trim());
    match found.strip_prefix(expected) {
        Some(rest) => {
            rest.is_empty()
                || !(rest.starts_with(|c: char| c.is_ascii_alphanumeric())
                    && expected.ends_with(|c: char| c.is_ascii_alphanumeric()))
        }
        None => false,
    }
}

const FIX_GPU: &str = "A GPU missing from the PCI bus has fallen off (Xid 79) or was never seen: check `nvidia-smi`, `dmesg | grep -i xid`, reseat or replace it; a different model means the node is not of this type.";
const FIX_RAIL: &str = "Find the missing device or port: driver loaded (`mlx5_core`, `mlx5_ib`), `ibstat`, cable and switch port; until repaired, keep multi-node jobs off the node.";

/// Compares a node with the expectations: one finding per difference, an info for each
/// expectation the node's data cannot confirm. `env` is the planned NCCL environment, when
/// one is given.
pub fn check_expectations(
    node: &Node,
    expect: &Expectations,
    env: Option<&PlannedEnv>,
) -> Vec<Finding> {
    let mut out = vec![];
    if let Some(g) = &expect.gpus {
        gpus(node, g, &mut out);
    }
    if let Some(r) = &expect.rdma {
        rdma(node, r, &mut out);
    }
    if let Some(ro) = &expect.roce {
        roce(node, ro, &mut out);
    }
    if let Some(h) = &expect.host {
        host(node, h, &mut out);
    }
    if let Some(v) = &expect.versions {
        versions(node, v, &mut out);
    }
    nccl(&expect.nccl, env, &mut out);
    fabrik_model::sort_findings(&mut out);
    out
}

fn unverified(out: &mut Vec<Finding>, subject: &str, what: String, path: &str) {
    out.push(finding(
        UNVERIFIED,
        Severity::Info,
        subject,
        format!("cannot verify the expectation {what}: the node's data does not show it"),
        vec![ev(path, "not read")],
        "Snapshot the node with `fabrik snapshot` as root so the fact is captured, or drop the expectation.",
    ));
}

fn gpus(node: &Node, g: &GpuExpect, out: &mut Vec<Finding>) {
    let mut addrs: Vec<&str> = node.gpus.iter().map(|g| g.pci.address.as_str()).collect();
    addrs.sort_unstable();
    if let Some(count) = g.count {
        if node.gpus.len() != count {
            out.push(finding(
                GPUS,
                Severity::Error,
                "node",
                format!(
                    "{} GPU(s) found where {count} are expected",
                    node.gpus.len()
                ),
                vec![ev(
                    "/sys/bus/pci/devices (vendor 0x10de, display class)",
                    if addrs.is_empty() {
                        "none".to_string()
                    } else {
                        addrs.join(" ")
                    },
                )],
                FIX_GPU,
            ));
        }
    }
    if let Some(model) = &g.model {
        let want = model.to_ascii_lowercase();
        let mut gpus: Vec<_> = node.gpus.iter().collect();
        gpus.sort_by(|a, b| a.pci.address.cmp(&b.pci.address));
        for gpu in gpus {
            match &gpu.model {
                Some(m) if m.to_ascii_lowercase().contains(&want) => {}
                Some(m) => out.push(finding(
                    GPUS,
                    Severity::Error,
                    format!("gpu {}", gpu.pci.address),
                    format!("GPU model `{m}` is not the expected `{model}`"),
                    vec![ev(
                        format!("/sys/bus/pci/devices/{}", gpu.pci.address),
                        m.clone(),
                    )],
                    FIX_GPU,
                )),
                None => unverified(
                    out,
                    &format!("gpu {}", gpu.pci.address),
                    format!("gpus.model = `{model}`"),
                    &format!("/sys/bus/pci/devices/{}/device", gpu.pci.address),
                ),
            }
        }
    }
}

fn judged_layer(r: &RdmaExpect) -> Option<LinkLayer> {
    r.link_layer.as_deref().map(LinkLayer::parse)
}

fn rdma(node: &Node, r: &RdmaExpect, out: &mut Vec<Finding>) {
    let layer = judged_layer(r);
    let hw: Vec<&RdmaDevice> = crate::util::devices(node)
        .into_iter()
        .filter(|d| !d.is_software())
        .collect();
    if let Some(want) = r.devices {
        if hw.len() < want {
            out.push(finding(
                RDMA_COUNT,
                Severity::Error,
                "node",
                format!(
                    "{} hardware RDMA device(s) found where at least {want} are expected",
                    hw.len()
                ),
                vec![ev(
                    "/sys/class/infiniband",
                    hw.iter()
                        .map(|d| d.name.as_str())
                        .collect::<Vec<_>>()
                        .join(" "),
                )],
                FIX_RAIL,
            ));
        }
    }
    let ports: Vec<_> = all_ports(node)
        .filter(|(d, p)| {
            !d.is_software()
                && layer
                    .as_ref()
                    .is_none_or(|l| p.link_layer.as_ref() == Some(l))
        })
        .collect();
    let active: Vec<_> = ports.iter().filter(|(_, p)| is_active(p)).collect();
    if let Some(want) = r.active_ports {
        if active.len() < want {
            let not_active: Vec<String> = all_ports(node)
                .filter(|(d, p)| !d.is_software() && !is_active(p))
                .map(|(d, p)| {
                    format!(
                        "{} {}",
                        port_subject(d, p),
                        p.state
                            .as_ref()
                            .map(|s| s.name.as_str())
                            .unwrap_or("state unknown")
                    )
                })
                .collect();
            let mut evidence = vec![ev(
                "/sys/class/infiniband/*/ports/*/state",
                format!(
                    "ACTIVE{}: {}",
                    r.link_layer
                        .as_deref()
                        .map(|l| format!(" {l}"))
                        .unwrap_or_default(),
                    active
                        .iter()
                        .map(|(d, p)| port_subject(d, p))
                        .collect::<Vec<_>>()
                        .join(" ")
                ),
            )];
            if !not_active.is_empty() {
                evidence.push(ev(
                    "/sys/class/infiniband/*/ports/*/state",
                    format!("not ACTIVE: {}", not_active.join(", ")),
                ));
            }
            out.push(finding(
                RDMA_COUNT,
                Severity::Error,
                "node",
                format!(
                    "{} ACTIVE{} port(s) where at least {want} are expected: a rail is missing",
                    active.len(),
                    r.link_layer
                        .as_deref()
                        .map(|l| format!(" {l}"))
                        .unwrap_or_default()
                ),
                evidence,
                FIX_RAIL,
            ));
        }
    }
    // With no link layer given every active port is judged; a port of another layer is then
    // itself a difference worth naming.
    if let Some(l) = &layer {
        if r.active_ports.is_some() || r.rate_gbps.is_some() {
            for (d, p) in
                all_ports(node).filter(|(d, p)| !d.is_software() && !d.is_efa() && is_active(p))
            {
                if p.link_layer.as_ref() != Some(l) && ports.is_empty() {
                    out.push(finding(
                        LINK,
                        Severity::Error,
                        port_subject(d, p),
                        format!(
                            "link layer is {} where {} is expected",
                            layer_name(p.link_layer.as_ref()).unwrap_or("unknown"),
                            r.link_layer.as_deref().unwrap_or_default()
                        ),
                        vec![ev(port_path(d, p, "link_layer"), layer_name(p.link_layer.as_ref()).unwrap_or("unknown"))],
                        "Set the port's link type (`mlxconfig -d <dev> set LINK_TYPE_P1=1` for IB, 2 for Ethernet) to the fabric's.",
                    ));
                }
            }
        }
    }
    for (d, p) in &active {
        let subject = port_subject(d, p);
        if let Some(want) = r.rate_gbps {
            match p.rate.as_ref() {
                Some(rate) => match rate.gbps {
                    Some(g) if (g - want).abs() < 0.5 => {}
                    Some(g) => out.push(finding(
                        LINK,
                        if g < want { Severity::Error } else { Severity::Warning },
                        subject.clone(),
                        format!("port runs at {} where {want} Gb/s is expected", rate.text),
                        vec![ev(port_path(d, p, "rate"), rate.text.clone())],
                        "A lower rate means failed lanes or a wrong cable/transceiver: `mlxlink -d <dev> -p <port>`, reseat or replace; a higher one means the node is not of this type.",
                    )),
                    None => unverified(out, &subject, format!("rdma.rate_gbps = {want}"), &port_path(d, p, "rate")),
                },
                None => unverified(out, &subject, format!("rdma.rate_gbps = {want}"), &port_path(d, p, "rate")),
            }
        }
        if let Some(want) = r.ib_mtu {
            if crate::util::is_ib(p) {
                match p.active_mtu {
                    Some(m) if m == want => {}
                    Some(m) => out.push(finding(
                        MTU,
                        Severity::Warning,
                        subject.clone(),
                        format!("InfiniBand active MTU is {m} where {want} is expected"),
                        vec![ev("fabrik/cmd/ibv_devinfo.txt", format!("active_mtu: {m}"))],
                        "Set the MTU in the subnet manager's partition configuration (`mtu=5` for 4096 in partitions.conf).",
                    )),
                    None => unverified(out, &subject, format!("rdma.ib_mtu = {want}"), "fabrik/cmd/ibv_devinfo.txt"),
                }
            }
        }
        if let Some(want) = r.netdev_mtu {
            if crate::util::is_roce(p) {
                let nif = p.netdev.as_deref().and_then(|n| node.net_interface(n));
                match nif.and_then(|n| n.mtu.map(|m| (n, m))) {
                    Some((_, m)) if m == want => {}
                    Some((n, m)) => out.push(finding(
                        MTU,
                        Severity::Warning,
                        subject.clone(),
                        format!("{} has MTU {m} where {want} is expected", n.name),
                        vec![ev(net_path(&n.name, "mtu"), m.to_string())],
                        format!("`ip link set {} mtu {want}` and make it persistent; the switch ports must carry it too.", n.name),
                    )),
                    None => unverified(out, &subject, format!("rdma.netdev_mtu = {want}"), "/sys/class/net/<netdev>/mtu"),
                }
            }
        }
    }
    if let Some(want) = &r.firmware {
        let mut seen = std::collections::BTreeSet::new();
        for (d, _) in &active {
            if d.is_efa() || !seen.insert(d.name.clone()) {
                continue;
            }
            match &d.fw_ver {
                Some(f) if version_matches(want, f) => {}
                Some(f) => out.push(finding(
                    VERSIONS,
                    Severity::Warning,
                    d.name.clone(),
                    format!("HCA firmware {f} is not the expected {want}"),
                    vec![ev(dev_path(d, "fw_ver"), f.clone())],
                    "Flash the expected firmware (`mlxfwmanager --online -u` or the vendor's bundle) and reset the device.",
                )),
                None => unverified(out, &d.name, format!("rdma.firmware = `{want}`"), &dev_path(d, "fw_ver")),
            }
        }
    }
}

fn roce(node: &Node, ro: &RoceExpect, out: &mut Vec<Finding>) {
    let ports: Vec<_> = all_ports(node)
        .filter(|(d, p)| {
            !d.is_software() && !d.is_iwarp() && crate::util::is_roce(p) && is_active(p)
        })
        .collect();
    for (d, p) in ports {
        let subject = port_subject(d, p);
        if let Some(want) = ro.gid_index {
            let found = recommended_gid_index(p);
            if found != Some(want) {
                out.push(finding(
                    ROCE,
                    Severity::Warning,
                    subject.clone(),
                    match found {
                        Some(i) => format!("the RoCE v2 GID with the port's IPv4 address is at index {i} where {want} is expected (NCCL_IB_GID_INDEX)"),
                        None => format!("no RoCE v2 GID with an IPv4 address, where one at index {want} is expected"),
                    },
                    vec![ev(port_path(d, p, "gid_attrs/types"), found.map(|i| format!("RoCE v2 IPv4 at {i}")).unwrap_or_else(|| "none".into()))],
                    "Give the netdev its IPv4 address the same way on every node (the GID table follows the address setup), or leave NCCL_IB_GID_INDEX unset with NCCL ≥ 2.21.",
                ));
            }
        }
        let nif = p.netdev.as_deref().and_then(|n| node.net_interface(n));
        let pfc = nif.and_then(|n| n.pfc.as_ref());
        if ro.pfc_priorities.is_some() || ro.trust.is_some() {
            match (nif, pfc) {
                (Some(n), Some(pfc)) => {
                    if let Some(want) = &ro.pfc_priorities {
                        let mut a = pfc.enabled_priorities.clone();
                        a.sort_unstable();
                        let mut b = want.clone();
                        b.sort_unstable();
                        if a != b {
                            out.push(finding(
                                ROCE,
                                Severity::Warning,
                                subject.clone(),
                                format!("PFC is enabled on priorities {a:?} of {} where {b:?} are expected", n.name),
                                vec![ev(pfc.source.clone(), format!("PFC enabled {a:?}"))],
                                format!("`mlnx_qos -i {} --pfc <8 flags>` with 1 on the expected priorities; the switch must match.", n.name),
                            ));
                        }
                    }
                    if let Some(want) = &ro.trust {
                        match &pfc.trust {
                            Some(t) if t.eq_ignore_ascii_case(want) => {}
                            Some(t) => out.push(finding(
                                ROCE,
                                Severity::Warning,
                                subject.clone(),
                                format!("{} trusts {t} where {want} is expected", n.name),
                                vec![ev(pfc.source.clone(), format!("Priority trust state: {t}"))],
                                format!("`mlnx_qos -i {} --trust {want}`.", n.name),
                            )),
                            None => unverified(
                                out,
                                &subject,
                                format!("roce.trust = `{want}`"),
                                &pfc.source,
                            ),
                        }
                    }
                }
                _ => unverified(
                    out,
                    &subject,
                    "roce.pfc_priorities/trust".into(),
                    "fabrik/cmd/mlnx_qos-<netdev>.txt",
                ),
            }
        }
        if let Some(want) = ro.ecn {
            match nif.and_then(|n| n.ecn.as_ref().map(|e| (n, e))) {
                Some((n, ecn)) => {
                    let prios: Vec<u8> = ro
                        .pfc_priorities
                        .clone()
                        .unwrap_or_else(|| ecn.np_enabled.keys().copied().collect());
                    let on = |p: &u8| {
                        ecn.np_enabled.get(p) == Some(&true) && ecn.rp_enabled.get(p) == Some(&true)
                    };
                    let enabled = if ro.pfc_priorities.is_some() {
                        prios.iter().all(on)
                    } else {
                        prios.iter().any(on)
                    };
                    if enabled != want {
                        out.push(finding(
                            ROCE,
                            Severity::Warning,
                            subject.clone(),
                            format!("ECN is {} on {} where it is expected {}", if enabled { "on" } else { "off" }, n.name, if want { "on" } else { "off" }),
                            vec![ev(net_path(&n.name, "ecn/roce_np/enable"), format!("np {:?} rp {:?}", ecn.np_enabled, ecn.rp_enabled))],
                            format!("`echo {} > /sys/class/net/{}/ecn/roce_np/enable/<prio>` and the same for roce_rp.", u8::from(want), n.name),
                        ));
                    }
                }
                None => unverified(
                    out,
                    &subject,
                    format!("roce.ecn = {want}"),
                    "/sys/class/net/<netdev>/ecn",
                ),
            }
        }
    }
}

fn host(node: &Node, h: &HostExpect, out: &mut Vec<Finding>) {
    if let Some(module) = &h.peer_memory {
        let modules_read = !node.modules.is_empty();
        if !modules_read {
            unverified(
                out,
                "node",
                format!("host.peer_memory = `{module}`"),
                "/proc/modules",
            );
        } else if !node.has_module(module) {
            out.push(finding(
                GDR,
                Severity::Error,
                "node",
                format!("the peer-memory module {module} is not loaded: NCCL cannot use GPUDirect RDMA and stages every transfer through host memory"),
                vec![ev("/proc/modules", format!("no {module}"))],
                format!("`modprobe {module}` (and load it at boot), or enable DMA-BUF with the GPU driver and kernel that support it."),
            ));
        }
    }
    if let Some(want) = &h.memlock {
        match &node.memlock {
            None => unverified(out, "node", "host.memlock".into(), "/proc/self/limits"),
            Some(limit) => {
                let (ok, want_text) = match want {
                    Memlock::Text(_) => (limit.is_unlimited(), "unlimited".to_string()),
                    Memlock::Bytes(b) => (
                        limit.soft_bytes.is_none_or(|s| s >= *b),
                        format!("at least {b} bytes"),
                    ),
                };
                if !ok {
                    out.push(finding(
                        GDR,
                        Severity::Warning,
                        "node",
                        format!("max locked memory is {} bytes where {want_text} is expected", limit.soft_bytes.map(|b| b.to_string()).unwrap_or_else(|| "unlimited".into())),
                        vec![ev("/proc/self/limits", format!("Max locked memory {}", limit.soft_bytes.map(|b| b.to_string()).unwrap_or_else(|| "unlimited".into())))],
                        "`* soft memlock unlimited` and `* hard memlock unlimited` in /etc/security/limits.conf; `LimitMEMLOCK=infinity` for services.",
                    ));
                }
            }
        }
    }
}

fn versions(node: &Node, v: &VersionExpect, out: &mut Vec<Finding>) {
    let found = &node.versions;
    for (name, want, have, path) in [
        (
            "nvidia_driver",
            &v.nvidia_driver,
            &found.nvidia_driver,
            "/proc/driver/nvidia/version",
        ),
        ("ofed", &v.ofed, &found.ofed, "fabrik/cmd/ofed_info.txt"),
        (
            "rdma_core",
            &v.rdma_core,
            &found.rdma_core,
            "rdma-core version",
        ),
        ("nccl", &v.nccl, &found.nccl, "NCCL version"),
    ] {
        let Some(want) = want else { continue };
        match have {
            Some(h) if version_matches(want, h) => {}
            Some(h) => out.push(finding(
                VERSIONS,
                Severity::Warning,
                "node",
                format!("{name} is {h} where {want} is expected"),
                vec![ev(path, h.clone())],
                "Install the cluster's release on this node (or update the expectations if the whole cluster moved).",
            )),
            None => unverified(out, "node", format!("versions.{name} = `{want}`"), path),
        }
    }
}

fn nccl(expected: &BTreeMap<String, String>, env: Option<&PlannedEnv>, out: &mut Vec<Finding>) {
    if expected.is_empty() {
        return;
    }
    let Some(env) = env else {
        unverified(
            out,
            "env",
            format!(
                "[nccl] ({}): no planned environment was given (--env-file or --env)",
                expected.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
            "env:",
        );
        return;
    };
    for (key, want) in expected {
        let have = env.get(key);
        if have == Some(want.as_str()) {
            continue;
        }
        out.push(finding(
            NCCL,
            Severity::Warning,
            format!("env {key}"),
            match have {
                Some(h) => format!("{key}={h} in {} where {want} is expected", env.source),
                None => format!(
                    "{key} is not set in {} where {want} is expected",
                    env.source
                ),
            },
            vec![ev(PlannedEnv::evidence_path(key), have.unwrap_or("unset"))],
            format!("Set {key}={want} in the job's environment (or /etc/nccl.conf)."),
        ));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::testkit::*;

    fn ids(f: &[Finding]) -> Vec<(&str, Severity, &str)> {
        f.iter()
            .map(|f| (f.rule.as_str(), f.severity, f.subject.as_str()))
            .collect()
    }

    const IB: &str = r#"
name = "test"
[gpus]
count = 8
[rdma]
active_ports = 4
link_layer = "InfiniBand"
rate_gbps = 400
"#;

    #[test]
    fn versions_match_at_component_boundaries() {
        assert!(version_matches("535", "535.161.08"));
        assert!(version_matches("535.161.08", "535.161.08"));
        assert!(!version_matches("535.16", "535.161.08"));
        assert!(version_matches(
            "MLNX_OFED_LINUX-23.10",
            "MLNX_OFED_LINUX-23.10-1.1.9.0"
        ));
        assert!(!version_matches("550", "535.161.08"));
    }

    #[test]
    fn a_file_with_an_unknown_key_or_bad_value_is_refused() {
        assert!(Expectations::parse("t", "[gpus]\ncont = 8\n").is_err());
        assert!(Expectations::parse("t", "[rdma]\nlink_layer = \"Infiniband2\"\n").is_err());
        assert!(Expectations::parse("t", "[host]\nmemlock = \"lots\"\n").is_err());
        assert!(Expectations::parse("t", "[host]\nmemlock = 65536\n").is_ok());
    }

    #[test]
    fn the_healthy_node_meets_what_it_was_written_from() {
        for n in [healthy_ib_node("a"), healthy_roce_node("r", 1)] {
            let e = Expectations::from_node(&n);
            let back = Expectations::parse("t", &e.to_toml().unwrap()).unwrap();
            assert_eq!(back, e);
            assert!(
                check_expectations(&n, &e, None).is_empty(),
                "{:?}",
                check_expectations(&n, &e, None)
            );
        }
    }

    #[test]
    fn a_lost_gpu_and_a_dead_rail_and_a_slow_port_are_named() {
        let mut n = healthy_ib_node("a");
        let e = Expectations::parse("t", IB).unwrap();
        let gpus = n.gpus.len();
        let ports = n.rdma_devices.len();
        assert!(gpus < 8 || ports < 4 || check_expectations(&n, &e, None).is_empty());
        // Make the node the shape the file says before breaking it.
        let mut e = e;
        e.gpus.as_mut().unwrap().count = Some(gpus);
        e.rdma.as_mut().unwrap().active_ports = Some(ports);
        assert!(check_expectations(&n, &e, None).is_empty());
        n.gpus.pop();
        n.rdma_devices[1].ports[0].state = state("1: DOWN");
        n.rdma_devices[2].ports[0].rate = rate("200 Gb/sec (4X HDR)");
        let f = check_expectations(&n, &e, None);
        let got = ids(&f);
        assert!(got.contains(&(GPUS, Severity::Error, "node")), "{got:?}");
        assert!(
            got.contains(&(RDMA_COUNT, Severity::Error, "node")),
            "{got:?}"
        );
        let slow = port_subject(&n.rdma_devices[2], &n.rdma_devices[2].ports[0]);
        assert!(
            got.contains(&(LINK, Severity::Error, slow.as_str())),
            "{got:?}"
        );
        assert_eq!(f.len(), 3, "{got:?}");
        let rail = f.iter().find(|f| f.rule == RDMA_COUNT).unwrap();
        assert!(
            rail.evidence.iter().any(|e| e.value.contains("DOWN")),
            "{rail:?}"
        );
    }

    #[test]
    fn roce_settings_differences_are_warnings_with_the_capture_as_evidence() {
        let n = healthy_roce_node("r", 1);
        let mut e = Expectations::from_node(&n);
        let roce = e.roce.as_mut().unwrap();
        roce.gid_index = Some(roce.gid_index.unwrap() + 1);
        roce.pfc_priorities = Some(vec![4]);
        let f = check_expectations(&n, &e, None);
        assert!(
            f.iter()
                .all(|f| f.rule == ROCE && f.severity == Severity::Warning),
            "{f:?}"
        );
        assert!(f.iter().any(|f| f.message.contains("index")), "{f:?}");
        assert!(f.iter().any(|f| f.message.contains("PFC")), "{f:?}");
    }

    #[test]
    fn nccl_settings_need_an_environment_and_name_each_difference() {
        let n = healthy_ib_node("a");
        let e = Expectations::parse(
            "t",
            "[nccl]\nNCCL_IB_HCA = \"mlx5\"\nNCCL_NET_GDR_LEVEL = \"PXB\"\n",
        )
        .unwrap();
        let f = check_expectations(&n, &e, None);
        assert_eq!(ids(&f), vec![(UNVERIFIED, Severity::Info, "env")]);
        let env = PlannedEnv::parse("t", "NCCL_IB_HCA=mlx5\nNCCL_NET_GDR_LEVEL=SYS\n");
        let f = check_expectations(&n, &e, Some(&env));
        assert_eq!(
            ids(&f),
            vec![(NCCL, Severity::Warning, "env NCCL_NET_GDR_LEVEL")]
        );
    }

    #[test]
    fn missing_peer_memory_and_old_driver_are_found() {
        let mut n = healthy_ib_node("a");
        n.versions.nvidia_driver = Some("535.161.08".into());
        let e = Expectations::parse(
            "t",
            "[host]\npeer_memory = \"nvidia_peermem\"\n[versions]\nnvidia_driver = \"550\"\n",
        )
        .unwrap();
        n.modules.retain(|m| m.name != "nvidia_peermem");
        let f = check_expectations(&n, &e, None);
        let got = ids(&f);
        if n.modules.is_empty() {
            assert!(got.contains(&(UNVERIFIED, Severity::Info, "node")));
        } else {
            assert!(got.contains(&(GDR, Severity::Error, "node")), "{got:?}");
        }
        assert!(
            got.contains(&(VERSIONS, Severity::Warning, "node")),
            "{got:?}"
        );
    }
}
