//! The kernel log: NVIDIA Xid errors, mlx5 health, link flaps, PCIe AER events, memory that
//! could not be pinned for GPUDirect RDMA.

use std::collections::BTreeMap;

use fabrik_model::{Finding, KernelEvent, KernelEventKind, Node, Severity};

use crate::rules::link::BOOT_GRACE_SECONDS;
use crate::util::*;

/// Rule id of "NVIDIA Xid errors in the kernel log".
pub const XID: &str = "FAB-KLOG-001";
/// Rule id of "mlx5 firmware health events in the kernel log".
pub const MLX5_HEALTH: &str = "FAB-KLOG-002";
/// Rule id of "Links going down in the kernel log".
pub const LINK_FLAPS: &str = "FAB-KLOG-003";
/// Rule id of "PCIe AER errors in the kernel log".
pub const AER: &str = "FAB-KLOG-004";
/// Rule id of "Memory pinning for GPUDirect RDMA failed".
pub const PIN_FAILURE: &str = "FAB-KLOG-005";

/// Evidence lines per finding.
const MAX_EVIDENCE: usize = 5;

fn events(node: &Node) -> &[KernelEvent] {
    node.kernel_log
        .as_ref()
        .map_or(&[], |l| l.events.as_slice())
}

fn evidence(list: &[&KernelEvent]) -> Vec<fabrik_model::Evidence> {
    let mut e: Vec<_> = list
        .iter()
        .take(MAX_EVIDENCE)
        .map(|x| {
            ev(
                format!(
                    "kernel log{}",
                    x.time.as_ref().map(|t| format!(" {t}")).unwrap_or_default()
                ),
                x.line.clone(),
            )
        })
        .collect();
    if list.len() > MAX_EVIDENCE {
        e.push(ev(
            "kernel log",
            format!("... {} more", list.len() - MAX_EVIDENCE),
        ));
    }
    e
}

/// How bad an Xid is, from the action NVIDIA's catalog recommends for it.
fn xid_severity(action: Option<&str>) -> Severity {
    match action {
        Some("IGNORE") | Some("NONE") => Severity::Info,
        Some("RESTART_APP") | Some("UPDATE_SWFW") | Some("CHECK_UVM") | None => Severity::Warning,
        Some(_) => Severity::Error,
    }
}

/// Rule [`XID`]: "NVIDIA Xid errors in the kernel log".
pub fn xid(node: &Node) -> Vec<Finding> {
    let mut by: BTreeMap<(u32, String), Vec<&KernelEvent>> = BTreeMap::new();
    for e in events(node) {
        if let KernelEventKind::Xid { code, .. } = &e.kind {
            by.entry((*code, e.device.clone().unwrap_or_default()))
                .or_default()
                .push(e);
        }
    }
    let mut out = vec![];
    for ((code, device), list) in by {
        let (meaning, action) = match &list[0].kind {
            KernelEventKind::Xid {
                meaning, action, ..
            } => (meaning.clone(), action.clone()),
            _ => (None, None),
        };
        let gpu = if device.is_empty() {
            "a GPU".to_string()
        } else {
            format!("GPU {device}")
        };
        out.push(finding(
            XID,
            xid_severity(action.as_deref()),
            if device.is_empty() { "node".to_string() } else { format!("GPU {device}") },
            format!(
                "Xid {code} on {gpu}, {} time{}: {}{}",
                list.len(),
                if list.len() == 1 { "" } else { "s" },
                meaning.as_deref().unwrap_or("not in NVIDIA's Xid catalog as fabrik knows it"),
                action.as_deref().map(|a| format!(" (NVIDIA's catalog recommends {a})")).unwrap_or_default()
            ),
            evidence(&list),
            "Follow NVIDIA's Xid catalog for this Xid: RESET_GPU means `nvidia-smi -r` or a reboot before the GPU is used again; RESTART_BM means a reboot (a GPU that fell off the bus needs one); RESTART_APP means the job; keep the node out of jobs until then.",
        ));
    }
    out
}

/// Rule [`MLX5_HEALTH`]: "mlx5 firmware health events in the kernel log".
pub fn mlx5_health(node: &Node) -> Vec<Finding> {
    let mut by: BTreeMap<String, Vec<&KernelEvent>> = BTreeMap::new();
    for e in events(node) {
        if e.kind == KernelEventKind::Mlx5Health {
            by.entry(e.device.clone().unwrap_or_default())
                .or_default()
                .push(e);
        }
    }
    let mut out = vec![];
    for (device, list) in by {
        let fatal = list.iter().any(|e| {
            e.line.contains("health compromised")
                || e.line.contains("Fatal error")
                || e.line.contains("synd 0x")
                || e.line.contains("FW fatal")
        });
        let nic = if device.is_empty() {
            "an mlx5 NIC".to_string()
        } else {
            device.clone()
        };
        out.push(finding(
            MLX5_HEALTH,
            if fatal { Severity::Error } else { Severity::Warning },
            if device.is_empty() { "node".to_string() } else { device.clone() },
            format!(
                "{nic} reported {} firmware health event{}{}: RDMA on it stops or the driver resets it",
                list.len(),
                if list.len() == 1 { "" } else { "s" },
                if fatal { ", including a fatal error or a syndrome" } else { " (command timeouts or a recovery)" }
            ),
            evidence(&list),
            "Collect the firmware dump (`devlink health dump show pci/BDF reporter fw_fatal`), update the NIC firmware, and if it repeats have the NIC replaced; the node should not run jobs until the device recovered.",
        ));
    }
    out
}

/// Rule [`LINK_FLAPS`]: "Links going down in the kernel log".
pub fn link_flaps(node: &Node) -> Vec<Finding> {
    let mut by: BTreeMap<String, Vec<&KernelEvent>> = BTreeMap::new();
    for e in events(node) {
        // The driver brings its ports down and up while it starts: not a flap.
        let after_boot = e.seconds.is_none_or(|s| s > BOOT_GRACE_SECONDS);
        if e.kind == KernelEventKind::LinkDown && after_boot {
            by.entry(e.device.clone().unwrap_or_default())
                .or_default()
                .push(e);
        }
    }
    let mut out = vec![];
    for (device, list) in by {
        out.push(finding(
            LINK_FLAPS,
            Severity::Warning,
            if device.is_empty() { "node".to_string() } else { device.clone() },
            format!(
                "the link of {} went down {} time{} after the node had started: a flapping link drops NCCL connections and stalls collectives while it retrains",
                if device.is_empty() { "an interface" } else { &device },
                list.len(),
                if list.len() == 1 { "" } else { "s" }
            ),
            evidence(&list),
            "Check the cable, the module and the switch port (`mlxlink -d DEV -c -m` for errors and the module); a link that keeps going down needs its cable or optic replaced.",
        ));
    }
    out
}

/// Rule [`AER`]: "PCIe AER errors in the kernel log".
pub fn aer(node: &Node) -> Vec<Finding> {
    let mut by: BTreeMap<(String, String), Vec<&KernelEvent>> = BTreeMap::new();
    for e in events(node) {
        if let KernelEventKind::Aer { severity } = &e.kind {
            by.entry((e.device.clone().unwrap_or_default(), severity.clone()))
                .or_default()
                .push(e);
        }
    }
    let mut out = vec![];
    for ((device, sev), list) in by {
        let severity = if sev.contains("Fatal") && !sev.contains("Non-Fatal") {
            Severity::Error
        } else if sev.starts_with("Uncorrect") {
            Severity::Warning
        } else {
            Severity::Info
        };
        out.push(finding(
            AER,
            severity,
            if device.is_empty() { "node".to_string() } else { device.clone() },
            format!(
                "{} PCIe {sev} error{} reported by AER{}",
                list.len(),
                if list.len() == 1 { "" } else { "s" },
                if device.is_empty() { String::new() } else { format!(" for {device}") }
            ),
            evidence(&list),
            "Uncorrectable errors lose transactions (the device may be reset); correctable ones that keep coming mean a marginal link. Reseat the card or riser, check the slot, update firmware and BIOS.",
        ));
    }
    out
}

/// Rule [`PIN_FAILURE`]: "Memory pinning for GPUDirect RDMA failed".
pub fn pin_failure(node: &Node) -> Vec<Finding> {
    let list: Vec<&KernelEvent> = events(node)
        .iter()
        .filter(|e| e.kind == KernelEventKind::PinFailure)
        .collect();
    if list.is_empty() {
        return vec![];
    }
    vec![finding(
        PIN_FAILURE,
        Severity::Error,
        "node",
        format!(
            "GPU memory could not be pinned for GPUDirect RDMA {} time{} (nvidia_p2p_get_pages failed): NCCL's registrations of GPU buffers fail, and jobs abort or fall back",
            list.len(),
            if list.len() == 1 { "" } else { "s" }
        ),
        evidence(&list),
        "Check that nvidia-peermem matches the loaded NVIDIA driver (reload it after a driver update), that the GPU's BAR1 is not exhausted (`nvidia-smi -q -d MEMORY`), or use dma-buf (NCCL_DMABUF_ENABLE=1 with the open kernel module).",
    )]
}
