//! The doctor findings a pasted command output supports, under the doctor's own rule ids where
//! one exists (FAB-PORT-001/002/004, FAB-ROCE-001/002, FAB-QOS-001).

use std::collections::BTreeSet;

use fabrik_model::{Evidence, Finding, Severity};
use serde::Serialize;

use super::ibdev2netdev::NetdevMap;
use super::ibstat::Ibstat;
use super::ibv_devinfo::DevinfoPort;
use super::mlnx_qos::MlnxQos;
use super::show_gids::{GidRow, RoceV2Index};
use super::topo::GpuNearestNic;

fn finding(
    rule: &str,
    severity: Severity,
    subject: String,
    message: String,
    evidence: Vec<(String, String)>,
    fix: &str,
) -> Finding {
    Finding {
        rule: rule.to_string(),
        severity,
        subject,
        message,
        evidence: evidence
            .into_iter()
            .map(|(path, value)| Evidence { path, value })
            .collect(),
        fix: fix.to_string(),
    }
}

/// A port's state and physical state, from any of the tools, checked the same way.
fn port_findings(
    tool: &str,
    subject: String,
    state: Option<&str>,
    phys: Option<&str>,
    out: &mut Vec<Finding>,
) {
    let active = |s: &str| {
        let s = s.to_ascii_lowercase();
        s == "active" || s == "port_active"
    };
    if let Some(s) = state.filter(|s| !active(s)) {
        out.push(finding(
            "FAB-PORT-001",
            Severity::Error,
            subject.clone(),
            format!("RDMA port is {s}, not ACTIVE"),
            vec![(format!("{tool}: State"), s.to_string())],
            "Check the cable and the switch port; on InfiniBand a subnet manager must run; on RoCE bring the netdev up.",
        ));
    }
    let linkup = |s: &str| {
        let s = s.to_ascii_lowercase().replace('_', "");
        s == "linkup"
    };
    if let Some(p) = phys.filter(|p| !linkup(p)) {
        out.push(finding(
            "FAB-PORT-002",
            Severity::Error,
            subject,
            format!("physical link is {p}, not LinkUp (Polling: no peer trains with it; Disabled: switched off)"),
            vec![(format!("{tool}: Physical state"), p.to_string())],
            "Polling: check the cable, transceiver and the far end's port; Disabled: enable the port (switch or `ibportstate`/`mlxlink`).",
        ));
    }
}

fn rate_findings(tool: &str, rates: &[(String, f64)], out: &mut Vec<Finding>) {
    let distinct: BTreeSet<u64> = rates.iter().map(|(_, r)| (r * 1000.0) as u64).collect();
    if distinct.len() > 1 {
        out.push(finding(
            "FAB-PORT-004",
            Severity::Warning,
            "node".to_string(),
            "active ports run at different rates; a collective runs at the pace of its slowest rail"
                .to_string(),
            rates
                .iter()
                .map(|(s, r)| (format!("{tool}: {s} Rate"), format!("{r} Gb/s")))
                .collect(),
            "Find why the slower port trained low (cable, transceiver, switch port) with `mlxlink`.",
        ));
    }
}

/// `ibstat`: ports not active (FAB-PORT-001) or not linked up (FAB-PORT-002), active ports slower
/// than the others (FAB-PORT-004).
pub fn ibstat(st: &Ibstat) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut rates = Vec::new();
    for p in &st.ports {
        let subject = format!("{}:{}", p.device, p.port);
        port_findings(
            "ibstat",
            subject.clone(),
            p.state.as_deref(),
            p.phys_state.as_deref(),
            &mut out,
        );
        if p.state.as_deref() == Some("Active") {
            if let Some(r) = p.rate_gbps {
                rates.push((subject, r));
            }
        }
    }
    rate_findings("ibstat", &rates, &mut out);
    out
}

/// `ibv_devinfo`: ports not active (FAB-PORT-001) or not linked up (FAB-PORT-002), active ports
/// slower than the others (FAB-PORT-004).
pub fn ibv_devinfo(ports: &[DevinfoPort]) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut rates = Vec::new();
    for p in ports {
        let subject = format!("{}:{}", p.device, p.port);
        port_findings(
            "ibv_devinfo",
            subject.clone(),
            p.state.as_deref(),
            p.phys_state.as_deref(),
            &mut out,
        );
        if let (Some(r), Some("PORT_ACTIVE")) = (p.rate_gbps, p.state.as_deref()) {
            rates.push((subject, r));
        }
    }
    rate_findings("ibv_devinfo", &rates, &mut out);
    out
}

/// `ibdev2netdev`: RDMA ports not active or their interfaces down (FAB-PORT-001).
pub fn ibdev2netdev(maps: &[NetdevMap]) -> Vec<Finding> {
    let mut out = Vec::new();
    for m in maps {
        let subject = format!("{}:{}", m.device, m.port);
        if let Some(s) = &m.port_state {
            port_findings("ibdev2netdev -v", subject.clone(), Some(s), None, &mut out);
        }
        if m.netdev_up == Some(false) {
            // On RoCE the netdev down is the port down; on InfiniBand it is only IPoIB, which
            // NCCL needs for nothing but its bootstrap when no other interface is given.
            out.push(finding(
                "FAB-PORT-001",
                Severity::Warning,
                subject,
                format!("netdev {} is Down (on RoCE the RDMA port is unusable; on InfiniBand only IPoIB is down)", m.netdev),
                vec![("ibdev2netdev".to_string(), format!("{} port {} ==> {} (Down)", m.device, m.port, m.netdev))],
                "For RoCE bring the interface up (`ip link set IF up`, cable); for InfiniBand check `ibstat` for the port itself.",
            ));
        }
    }
    out
}

/// `show_gids`: RoCE ports without a RoCE v2 GID that carries an IPv4 address (FAB-ROCE-001/002),
/// and the GID index NCCL_IB_GID_INDEX wants (FAB-ROCE-INDEX).
pub fn show_gids(rows: &[GidRow], idx: &[RoceV2Index]) -> Vec<Finding> {
    let mut out = Vec::new();
    // Only RoCE ports: show_gids prints an InfiniBand port's GID with an empty netdev column.
    for e in idx {
        let roce = rows
            .iter()
            .any(|r| r.device == e.device && r.port == e.port && r.netdev.is_some());
        if roce && e.index.is_none() {
            out.push(finding(
                "FAB-ROCE-001",
                Severity::Error,
                format!("{}:{}", e.device, e.port),
                "no RoCE v2 GID carrying an IPv4 address: NCCL and perftest cannot build a routable RoCE v2 path on this port".to_string(),
                vec![("show_gids".to_string(), format!("{} port {}: no v2 row with an IPv4 address", e.device, e.port))],
                "Give the port's netdev an IPv4 address (the GID table then gets a RoCE v2 entry for it), or leave this device out of NCCL_IB_HCA.",
            ));
        }
    }
    let indices: BTreeSet<u32> = idx.iter().filter_map(|e| e.index).collect();
    if indices.len() > 1 {
        out.push(finding(
            "FAB-ROCE-002",
            Severity::Warning,
            "node".to_string(),
            "the RoCE v2 IPv4 GID index differs between ports; one NCCL_IB_GID_INDEX does not fit all (NCCL >= 2.21 picks per port when it is unset)".to_string(),
            idx.iter()
                .filter_map(|e| e.index.map(|i| (format!("show_gids: {}:{}", e.device, e.port), i.to_string())))
                .collect(),
            "Leave NCCL_IB_GID_INDEX unset on NCCL >= 2.21 (it finds the RoCE v2 IPv4 GID), or set NCCL_IB_ROCE_VERSION_NUM=2 and NCCL_IB_ADDR_FAMILY=AF_INET.",
        ));
    } else if let Some(i) = indices.first() {
        out.push(finding(
            "FAB-ROCE-INDEX",
            Severity::Info,
            "node".to_string(),
            format!("the RoCE v2 GID carrying an IPv4 address is index {i} on every RoCE port: NCCL_IB_GID_INDEX={i}, perftest -x {i}"),
            idx.iter()
                .filter_map(|e| e.index.map(|x| (format!("show_gids: {}:{}", e.device, e.port), format!("{x} {}", e.ipv4.map(|a| a.to_string()).unwrap_or_default()))))
                .collect(),
            "Nothing to fix.",
        ));
    }
    out
}

/// `mlnx_qos`: the trust state and the PFC priorities (FAB-QOS-001, FAB-QOS-PFC).
pub fn mlnx_qos(q: &MlnxQos) -> Vec<Finding> {
    let mut out = Vec::new();
    let trust = q.trust.as_deref().unwrap_or("not shown");
    match &q.pfc_enabled {
        Some(on) if on.is_empty() => out.push(finding(
            "FAB-QOS-001",
            Severity::Warning,
            "mlnx_qos".to_string(),
            format!("PFC is off on every priority (trust {trust}): RoCE traffic is lossy unless the fabric relies on ECN alone"),
            vec![("mlnx_qos: PFC configuration enabled".to_string(), "0 0 0 0 0 0 0 0".to_string())],
            "Enable PFC on the RoCE priority the switches use (commonly 3): `mlnx_qos -i IF --pfc 0,0,0,1,0,0,0,0`, and `--trust dscp`.",
        )),
        Some(on) => {
            let lossless = q.lossless_dscp();
            let tc = if trust == "dscp" && !lossless.is_empty() {
                let list: Vec<String> = lossless
                    .iter()
                    .map(|d| format!("DSCP {d} -> NCCL_IB_TC={}", u32::from(*d) * 4))
                    .collect();
                format!("; lossless with trust dscp only for {}", list.join(", "))
            } else if trust == "pcp" {
                "; trust pcp: the priority comes from the VLAN PCP bits (NCCL_IB_SL), untagged traffic gets none".to_string()
            } else {
                String::new()
            };
            out.push(finding(
                "FAB-QOS-PFC",
                Severity::Info,
                "mlnx_qos".to_string(),
                format!("PFC on priorities {on:?}, trust {trust}{tc}"),
                vec![("mlnx_qos: PFC configuration enabled".to_string(), format!("{on:?}"))],
                "Nothing to fix if NCCL_IB_TC (or NCCL_IB_SL under pcp) lands on a PFC priority and the switches agree.",
            ));
        }
        None => out.push(finding(
            "FAB-QOS-PFC",
            Severity::Info,
            "mlnx_qos".to_string(),
            format!("trust {trust}; the PFC table is not in this text, so PFC is unknown"),
            vec![("mlnx_qos".to_string(), format!("trust {trust}"))],
            "Paste the whole `mlnx_qos -i IF` output to check PFC.",
        )),
    }
    out
}

/// `nvidia-smi topo -m`: each GPU's nearest NIC and what it implies for NCCL.
#[derive(Debug, Clone, Serialize)]
pub struct TopoAdvice {
    /// NICs nearest to at least one GPU, in GPU order: NCCL_IB_HCA when other NICs exist.
    pub nccl_ib_hca: Vec<String>,
}

/// `nvidia-smi topo -m`: each GPU's nearest NICs and how far they are (FAB-TOPO-NIC), with the
/// `NCCL_IB_HCA` that keeps NCCL on the GPU-near NICs.
pub fn topo(near: &[GpuNearestNic], all_nics: &BTreeSet<String>) -> (Vec<Finding>, TopoAdvice) {
    let mut out = Vec::new();
    let mut hca: Vec<String> = Vec::new();
    for g in near {
        for n in &g.nics {
            if !hca.contains(n) {
                hca.push(n.clone());
            }
        }
        let far = matches!(g.path.as_str(), "PHB" | "NODE" | "SYS" | "SOC");
        out.push(finding(
            "FAB-TOPO-NIC",
            if far { Severity::Warning } else { Severity::Info },
            format!("GPU{}", g.gpu),
            if far {
                format!("nearest NIC {} is {} away: above NCCL's default NCCL_NET_GDR_LEVEL (PXB), so NCCL will not use GPUDirect RDMA for this GPU and stages through host memory", g.nics.join(","), g.path)
            } else {
                format!("nearest NIC {} ({})", g.nics.join(","), g.path)
            },
            vec![("nvidia-smi topo -m".to_string(), format!("GPU{} {} {}", g.gpu, g.nics.join(","), g.path))],
            if far {
                "Nothing to do if the platform has no closer NIC; NCCL_NET_GDR_LEVEL=SYS forces GDR where the platform supports P2P over that path (measure before keeping it)."
            } else {
                "Nothing to fix."
            },
        ));
    }
    // GPU n's own NIC is often not NICn/mlx5_n (fixture topo/03: GPU1 -> mlx5_3): NCCL reads
    // the PCI topology itself, but scripts that pin rank n to mlx5_n pick a far NIC.
    let crossed: Vec<String> = near
        .iter()
        .filter(|g| g.nics.len() == 1 && matches!(g.path.as_str(), "PIX" | "PXB"))
        .filter(|g| {
            let n = &g.nics[0];
            let digits = n.len() - n.trim_end_matches(|c: char| c.is_ascii_digit()).len();
            n[n.len() - digits..].parse::<usize>().ok() != Some(g.gpu)
        })
        .map(|g| format!("GPU{} -> {}", g.gpu, g.nics[0]))
        .collect();
    if !crossed.is_empty() {
        out.push(finding(
            "FAB-TOPO-NIC",
            Severity::Info,
            "node".to_string(),
            format!(
                "the NIC nearest to a GPU does not carry the GPU's number ({}): NCCL finds it from the PCI topology, but a launcher that maps local rank n to NIC n (UCX_NET_DEVICES, NCCL_IB_HCA per rank) sends those GPUs' traffic through a far NIC",
                crossed.join(", ")
            ),
            crossed
                .iter()
                .map(|c| ("nvidia-smi topo -m".to_string(), c.clone()))
                .collect(),
            "Map ranks to NICs by this table (or leave the choice to NCCL), not by index.",
        ));
    }
    let unused: Vec<&String> = all_nics.iter().filter(|n| !hca.contains(n)).collect();
    if !unused.is_empty() && !hca.is_empty() {
        out.push(finding(
            "FAB-TOPO-NIC",
            Severity::Info,
            "node".to_string(),
            format!(
                "NICs {} are nearest to no GPU (storage or management NICs, or far rails): NCCL_IB_HCA={} keeps NCCL on the GPU-near ones",
                unused.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(","),
                hca.join(",")
            ),
            unused
                .iter()
                .map(|n| ("nvidia-smi topo -m".to_string(), format!("{n}: nearest to no GPU")))
                .collect(),
            "Set NCCL_IB_HCA to the GPU-near NICs if NCCL picks the others.",
        ));
    }
    (out, TopoAdvice { nccl_ib_hca: hca })
}
