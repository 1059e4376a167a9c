//! NIC firmware settings (`mstconfig q`): ATS, settings that differ between NICs of one node,
//! changes waiting for a reboot.

use std::collections::BTreeMap;

use fabrik_model::{Finding, NicFirmware, Node, Severity};

use crate::util::*;

/// Rule id of "ATS disabled in the NIC firmware".
pub const ATS_OFF: &str = "FAB-FW-001";
/// Rule id of "Firmware settings differ between NICs of one node".
pub const SETTINGS_DIFFER: &str = "FAB-FW-002";
/// Rule id of "Firmware setting changed, waiting for a reboot".
pub const PENDING: &str = "FAB-FW-003";

/// Settings whose difference between rails changes how traffic flows (mstflint's
/// `mlxconfig_host.db` describes each).
pub(crate) const RAIL_SETTINGS: &[&str] = &[
    "PCI_WR_ORDERING",
    "ATS_ENABLED",
    "ADVANCED_PCI_SETTINGS",
    "MAX_ACC_OUT_READ",
    "SRIOV_EN",
    "NUM_OF_VFS",
    "LINK_TYPE_P1",
    "LINK_TYPE_P2",
    "ROCE_CONTROL",
    "ROCE_ADAPTIVE_ROUTING_EN",
    "ROCE_CC_PRIO_MASK_P1",
    "ROCE_CC_PRIO_MASK_P2",
    "CNP_DSCP_P1",
    "CNP_802P_PRIO_P1",
    "PCI_ATOMIC_MODE",
    "CQE_COMPRESSION",
];

fn name(f: &NicFirmware) -> String {
    if f.device.is_empty() {
        "NIC".to_string()
    } else {
        f.device.clone()
    }
}

/// `False(0)` → `False`, `per_mkey(0)` → `per_mkey`: the text mstconfig gives a number.
fn word(v: &str) -> &str {
    v.split('(').next().unwrap_or(v).trim()
}

/// Rule [`ATS_OFF`]: "ATS disabled in the NIC firmware".
pub fn ats_off(node: &Node) -> Vec<Finding> {
    let mut out = vec![];
    for f in &node.nic_firmware {
        let Some(s) = f.settings.get("ATS_ENABLED") else {
            continue;
        };
        if !word(s.effective()).eq_ignore_ascii_case("false") {
            continue;
        }
        out.push(finding(
            ATS_OFF,
            Severity::Info,
            name(f),
            format!("ATS is disabled in the firmware of {}: GPUDirect RDMA from a VM that is given this NIC (or its VFs) goes through the host IOMMU's translation on every access, far below line rate; on bare metal without an IOMMU in translation mode it does not matter", name(f)),
            vec![ev(format!("mstconfig -d {} q: ATS_ENABLED", name(f)), s.effective().to_string())],
            format!("Where VMs use GPUDirect RDMA: `mstconfig -d {} set ATS_ENABLED=true`, reboot, and configure ACS on the host for ATS as NVIDIA's VM guide describes.", name(f)),
        ));
    }
    out
}

/// Rule [`SETTINGS_DIFFER`]: "Firmware settings differ between NICs of one node".
pub fn settings_differ(node: &Node) -> Vec<Finding> {
    // NICs of one type only: a management NIC of another family is another network.
    let mut by_type: BTreeMap<String, Vec<&NicFirmware>> = BTreeMap::new();
    for f in &node.nic_firmware {
        by_type
            .entry(f.device_type.clone().unwrap_or_default())
            .or_default()
            .push(f);
    }
    let mut out = vec![];
    for (ty, nics) in by_type {
        if nics.len() < 2 {
            continue;
        }
        for key in RAIL_SETTINGS {
            let values: BTreeMap<String, Vec<String>> =
                nics.iter().fold(BTreeMap::new(), |mut m, f| {
                    if let Some(s) = f.settings.get(*key) {
                        m.entry(s.effective().to_string())
                            .or_insert_with(Vec::new)
                            .push(name(f));
                    }
                    m
                });
            if values.len() < 2 {
                continue;
            }
            let layout = values
                .iter()
                .map(|(v, devs)| format!("{v} on {}", devs.join(", ")))
                .collect::<Vec<_>>()
                .join("; ");
            out.push(finding(
                SETTINGS_DIFFER,
                Severity::Warning,
                "node",
                format!(
                    "{key} differs between the {} NICs of this node ({layout}): rails that are configured differently behave differently, and the odd one out is usually the one nobody meant to change",
                    if ty.is_empty() { "same-type".to_string() } else { ty.clone() }
                ),
                values
                    .iter()
                    .flat_map(|(v, devs)| devs.iter().map(move |d| ev(format!("mstconfig -d {d} q: {key}"), v.clone())))
                    .collect(),
                format!("Set {key} alike on every rail (`mstconfig -d DEV set {key}=VALUE`, then reboot or reset the firmware with `mstfwreset`)."),
            ));
        }
    }
    out
}

/// Rule [`PENDING`]: "Firmware setting changed, waiting for a reboot".
pub fn pending(node: &Node) -> Vec<Finding> {
    let mut out = vec![];
    for f in &node.nic_firmware {
        let changed: Vec<(&String, &str, &str)> = f
            .settings
            .iter()
            .filter_map(|(k, s)| {
                let cur = s.current.as_deref()?;
                (cur != s.next_boot).then_some((k, cur, s.next_boot.as_str()))
            })
            .collect();
        if changed.is_empty() {
            continue;
        }
        out.push(finding(
            PENDING,
            Severity::Info,
            name(f),
            format!(
                "{} has firmware settings that take effect only after a reboot or firmware reset ({}): the NIC still runs with the current values",
                name(f),
                changed.iter().map(|(k, c, n)| format!("{k} {c} -> {n}")).collect::<Vec<_>>().join(", ")
            ),
            changed
                .iter()
                .map(|(k, c, n)| ev(format!("mstconfig -d {} -e q: {k}", name(f)), format!("current {c}, next boot {n}")))
                .collect(),
            format!("Reboot the node or reset the firmware (`mstfwreset -d {} reset`) when the node is idle.", name(f)),
        ));
    }
    out
}
