//! Expectations below the link state: the PCIe links on the path of every NIC and GPU
//! (`[pcie]`), NIC firmware settings and link quality (`[nic]`), and kernel log events that must
//! not be there (`[kernel_log]`). What a known-good node writes, and the comparison of a node
//! with it.

use std::collections::{BTreeMap, BTreeSet};

use fabrik_model::{Finding, KernelEvent, KernelEventKind, Node, PciFunction, Severity};

use super::file::*;
use super::{unverified, FIRMWARE, KERNEL_LOG, LINK_QUALITY, PCIE};
use crate::rules::link::{BOOT_GRACE_SECONDS, EFFECTIVE_BER_LIMIT, RAW_BER_LIMIT};
use crate::util::{ev, finding, pci_path};

/// The value every item gives, when all give the same one.
fn one<T: PartialEq + Clone>(values: impl IntoIterator<Item = Option<T>>) -> Option<T> {
    let mut it = values.into_iter();
    let first = it.next()??;
    it.all(|v| v.as_ref() == Some(&first)).then_some(first)
}

/// The NICs whose PCIe links are judged, by name: the hardware RDMA devices, or on a node
/// without any, the PCI network interfaces.
fn nic_functions(node: &Node) -> Vec<(String, &PciFunction)> {
    let mut out: Vec<(String, &PciFunction)> = node
        .rdma_devices
        .iter()
        .filter(|d| !d.is_software())
        .filter_map(|d| Some((d.name.clone(), d.pci.as_ref()?)))
        .collect();
    if out.is_empty() {
        out = node
            .net_interfaces
            .iter()
            .filter_map(|n| Some((n.name.clone(), n.pci.as_ref()?)))
            .collect();
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out.dedup_by(|a, b| a.1.address == b.1.address);
    out
}

fn gpu_functions(node: &Node) -> Vec<(String, &PciFunction)> {
    let mut out: Vec<(String, &PciFunction)> = node
        .gpus
        .iter()
        .map(|g| (format!("GPU {}", g.pci.address), &g.pci))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The kernel log class of an event, as `[kernel_log] absent` names it; link downs within the
/// boot grace (ports training at boot) belong to none.
pub(crate) fn klog_class(e: &KernelEvent) -> Option<&'static str> {
    match &e.kind {
        KernelEventKind::Xid { .. } => Some("xid"),
        KernelEventKind::Mlx5Health => Some("mlx5_health"),
        KernelEventKind::LinkDown => e
            .seconds
            .is_none_or(|s| s > BOOT_GRACE_SECONDS)
            .then_some("link_down"),
        KernelEventKind::LinkUp => None,
        KernelEventKind::Aer { severity } => {
            if severity.starts_with("Correct") {
                Some("aer_correctable")
            } else {
                Some("aer_uncorrectable")
            }
        }
        KernelEventKind::PinFailure => Some("pin_failure"),
    }
}

/// `force_relax(1)` is met by `force_relax(1)`, `force_relax` or `1`, case-insensitively.
pub(crate) fn setting_matches(want: &str, have: &str) -> bool {
    let (want, have) = (want.trim(), have.trim());
    if want.eq_ignore_ascii_case(have) {
        return true;
    }
    match have.split_once('(') {
        Some((word, rest)) => {
            let number = rest.trim_end_matches(')');
            want.eq_ignore_ascii_case(word.trim()) || want == number.trim()
        }
        None => false,
    }
}

/// `[pcie]`, `[nic]` and `[kernel_log]` as a known-good node meets them.
pub(super) fn from_node(node: &Node, e: &mut Expectations) {
    let speed = |fs: &[(String, &PciFunction)]| {
        one(fs
            .iter()
            .map(|(_, f)| f.link.current_speed_gts.map(|g| g.to_string())))
        .and_then(|g| g.parse::<f64>().ok())
    };
    let width = |fs: &[(String, &PciFunction)]| one(fs.iter().map(|(_, f)| f.link.current_width));
    let (nics, gpus) = (nic_functions(node), gpu_functions(node));
    let pcie = PcieExpect {
        nic_speed_gts: speed(&nics),
        nic_width: width(&nics),
        gpu_speed_gts: speed(&gpus),
        gpu_width: width(&gpus),
    };
    if pcie != PcieExpect::default() {
        e.pcie = Some(pcie);
    }

    let mut nic = NicExpect::default();
    if !node.nic_firmware.is_empty() {
        for name in crate::rules::firmware::RAIL_SETTINGS {
            if let Some(v) = one(node
                .nic_firmware
                .iter()
                .map(|f| f.settings.get(*name).map(|s| s.effective().to_string())))
            {
                nic.firmware.insert(name.to_string(), v);
            }
        }
    }
    let links = &node.link_quality;
    if !links.is_empty() {
        nic.fec = one(links.iter().map(|l| l.fec.clone()));
        // The public limits the link rules judge by, not the node's own BER: a healthy port's
        // BER moves by decades with the optic and the time since the counters were cleared.
        if links.iter().any(|l| l.effective_ber.is_some()) {
            nic.max_effective_ber = Some(EFFECTIVE_BER_LIMIT);
        }
        if links.iter().any(|l| l.raw_ber.is_some()) {
            nic.max_raw_ber = Some(RAW_BER_LIMIT);
        }
    }
    if nic != NicExpect::default() {
        e.nic = Some(nic);
    }

    if let Some(log) = &node.kernel_log {
        let seen: BTreeSet<&str> = log.events.iter().filter_map(klog_class).collect();
        let absent: Vec<String> = KLOG_CLASSES
            .iter()
            .filter(|c| !seen.contains(*c))
            .map(|c| c.to_string())
            .collect();
        if !absent.is_empty() {
            e.kernel_log = Some(KernelLogExpect { absent });
        }
    }
}

/// Compares a node with `[pcie]`, `[nic]` and `[kernel_log]`.
pub(super) fn check(node: &Node, expect: &Expectations, out: &mut Vec<Finding>) {
    if let Some(p) = &expect.pcie {
        pcie(node, p, out);
    }
    if let Some(n) = &expect.nic {
        firmware(node, &n.firmware, out);
        link_quality(node, n, out);
    }
    if let Some(k) = &expect.kernel_log {
        kernel_log(node, k, out);
    }
}

fn pcie(node: &Node, p: &PcieExpect, out: &mut Vec<Finding>) {
    let bridge = |a: &str| {
        node.pci_bridges
            .iter()
            .find(|b| b.address == a)
            .and_then(|b| b.function.as_ref())
    };
    let mut seen_bridges = BTreeSet::new();
    for (kind, fs, gts, lanes) in [
        ("NIC", nic_functions(node), p.nic_speed_gts, p.nic_width),
        ("GPU", gpu_functions(node), p.gpu_speed_gts, p.gpu_width),
    ] {
        if gts.is_none() && lanes.is_none() {
            continue;
        }
        let want = match (gts, lanes) {
            (Some(g), Some(w)) => format!("{g} GT/s x{w}"),
            (Some(g), None) => format!("{g} GT/s"),
            (None, Some(w)) => format!("x{w}"),
            (None, None) => unreachable!("both unset is skipped above"),
        };
        let key = if kind == "NIC" {
            "pcie.nic_*"
        } else {
            "pcie.gpu_*"
        };
        for (name, f) in &fs {
            let subject = if name.ends_with(&f.address) {
                name.clone()
            } else {
                format!("{name} ({})", f.address)
            };
            let l = &f.link;
            let (Some(cur_gts), Some(cur_w)) = (l.current_speed_gts, l.current_width) else {
                unverified(
                    out,
                    &subject,
                    format!("{key} = {want}"),
                    &pci_path(&f.address, "current_link_speed"),
                );
                continue;
            };
            let mut problems = vec![];
            if let Some(g) = gts {
                if cur_gts + 0.01 < g {
                    problems.push(format!("{cur_gts} GT/s where {g} GT/s is expected"));
                }
            }
            if let Some(w) = lanes {
                if cur_w < w {
                    problems.push(format!("x{cur_w} where x{w} is expected"));
                }
            }
            if !problems.is_empty() {
                out.push(finding(
                    PCIE,
                    Severity::Warning,
                    subject.clone(),
                    format!("the {kind}'s PCIe link runs at {}", problems.join(" and ")),
                    vec![
                        ev(
                            pci_path(&f.address, "current_link_speed"),
                            l.current_speed.clone().unwrap_or_else(|| format!("{cur_gts} GT/s")),
                        ),
                        ev(pci_path(&f.address, "current_link_width"), cur_w.to_string()),
                    ],
                    format!("Reseat the {kind} or its riser and check the slot's BIOS PCIe settings; `lspci -vv -s {}` shows LnkSta against LnkCap.", f.address),
                ));
            }
            // A bridge link above it that could carry the expected link and trained lower.
            for b in f.path.iter().filter_map(|a| bridge(a)) {
                if !seen_bridges.insert((kind, b.address.clone())) {
                    continue;
                }
                let bl = &b.link;
                let (Some(bg), Some(bw)) = (bl.current_speed_gts, bl.current_width) else {
                    continue;
                };
                let mut problems = vec![];
                if let Some(g) = gts {
                    if bg + 0.01 < g && bl.max_speed_gts.is_some_and(|m| m + 0.01 >= g) {
                        problems.push(format!("{bg} GT/s where {g} GT/s is expected"));
                    }
                }
                if let Some(w) = lanes {
                    if bw < w && bl.max_width.is_some_and(|m| m >= w) {
                        problems.push(format!("x{bw} where x{w} is expected"));
                    }
                }
                if problems.is_empty() {
                    continue;
                }
                out.push(finding(
                    PCIE,
                    Severity::Warning,
                    format!("bridge {}", b.address),
                    format!(
                        "the PCIe link of bridge {} on the path to {subject} runs at {}, below what it can do",
                        b.address,
                        problems.join(" and ")
                    ),
                    vec![
                        ev(
                            pci_path(&b.address, "current_link_speed"),
                            bl.current_speed.clone().unwrap_or_else(|| format!("{bg} GT/s")),
                        ),
                        ev(pci_path(&b.address, "current_link_width"), bw.to_string()),
                        ev(
                            pci_path(&b.address, "max_link_width"),
                            bl.max_width.map(|w| w.to_string()).unwrap_or_default(),
                        ),
                    ],
                    format!("Reseat the switch board, riser or cable at bridge {}; `lspci -vv -s {}` shows LnkSta against LnkCap.", b.address, b.address),
                ));
            }
        }
    }
}

fn firmware(node: &Node, want: &BTreeMap<String, String>, out: &mut Vec<Finding>) {
    if want.is_empty() {
        return;
    }
    if node.nic_firmware.is_empty() {
        unverified(
            out,
            "node",
            format!(
                "[nic.firmware] ({})",
                want.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
            "fabrik/cmd/mstconfig-<BDF>.txt",
        );
        return;
    }
    let mut devices: Vec<_> = node.nic_firmware.iter().collect();
    devices.sort_by(|a, b| a.device.cmp(&b.device));
    for d in devices {
        let subject = if d.device.is_empty() {
            "NIC".to_string()
        } else {
            d.device.clone()
        };
        let source = format!(
            "mstconfig -d {} q",
            d.pci.as_deref().unwrap_or(subject.as_str())
        );
        for (name, value) in want {
            match d.settings.get(name) {
                Some(s) if setting_matches(value, s.effective()) => {}
                Some(s) => out.push(finding(
                    FIRMWARE,
                    Severity::Warning,
                    subject.clone(),
                    format!(
                        "firmware setting {name} is `{}` where `{value}` is expected",
                        s.effective()
                    ),
                    vec![ev(source.clone(), format!("{name} {}", s.effective()))],
                    format!("`mstconfig -d {} set {name}={value}`, then reboot or `mstfwreset` so the firmware takes it.", d.pci.as_deref().unwrap_or("<dev>")),
                )),
                None => unverified(
                    out,
                    &subject,
                    format!("nic.firmware.{name} = `{value}`"),
                    &source,
                ),
            }
        }
    }
}

fn link_quality(node: &Node, n: &NicExpect, out: &mut Vec<Finding>) {
    if n.fec.is_none() && n.max_effective_ber.is_none() && n.max_raw_ber.is_none() {
        return;
    }
    if node.link_quality.is_empty() {
        unverified(
            out,
            "node",
            "[nic] fec/max_effective_ber/max_raw_ber".into(),
            "fabrik/cmd/mstlink-<BDF>.txt",
        );
        return;
    }
    let mut links: Vec<_> = node.link_quality.iter().collect();
    links.sort_by(|a, b| a.device.cmp(&b.device));
    for l in links {
        let subject = if l.device.is_empty() {
            "port".to_string()
        } else {
            l.device.clone()
        };
        let source = format!("mstlink -d {subject} -c");
        if let Some(want) = &n.fec {
            match &l.fec {
                Some(f) if f.to_ascii_lowercase().contains(&want.to_ascii_lowercase()) => {}
                Some(f) => out.push(finding(
                    LINK_QUALITY,
                    Severity::Warning,
                    subject.clone(),
                    format!("the port runs FEC `{f}` where `{want}` is expected"),
                    vec![ev(source.clone(), format!("FEC : {f}"))],
                    "Set the FEC on both ends alike (`mlxlink -d DEV --fec MODE` and the switch port); a link that negotiated another FEC corrects fewer errors or adds latency.",
                )),
                None => unverified(out, &subject, format!("nic.fec = `{want}`"), &source),
            }
        }
        for (what, limit, value, severity, key) in [
            (
                "effective (post-FEC)",
                n.max_effective_ber,
                l.effective_ber,
                Severity::Error,
                "Effective Physical BER",
            ),
            (
                "raw (pre-FEC)",
                n.max_raw_ber,
                l.raw_ber,
                Severity::Warning,
                "Raw Physical BER",
            ),
        ] {
            let Some(limit) = limit else { continue };
            match value {
                Some(b) if b <= limit => {}
                Some(b) => out.push(finding(
                    LINK_QUALITY,
                    severity,
                    subject.clone(),
                    format!("the port's {what} BER is {b:E} where at most {limit:E} is expected"),
                    vec![ev(source.clone(), format!("{key} : {b:E}"))],
                    "Clean the connectors and reseat or replace the module or cable, then clear the counters (`mlxlink -d DEV -pc`) and read them again.",
                )),
                None => unverified(
                    out,
                    &subject,
                    format!("the {what} BER limit {limit:E}"),
                    &source,
                ),
            }
        }
    }
}

fn kernel_log(node: &Node, k: &KernelLogExpect, out: &mut Vec<Finding>) {
    if k.absent.is_empty() {
        return;
    }
    let Some(log) = &node.kernel_log else {
        unverified(
            out,
            "node",
            format!("kernel_log.absent = [{}]", k.absent.join(", ")),
            "/dev/kmsg",
        );
        return;
    };
    for class in &k.absent {
        let hits: Vec<&KernelEvent> = log
            .events
            .iter()
            .filter(|e| klog_class(e) == Some(class.as_str()))
            .collect();
        if hits.is_empty() {
            continue;
        }
        let mut evidence: Vec<_> = hits
            .iter()
            .take(5)
            .map(|e| {
                ev(
                    format!(
                        "kernel log{}",
                        e.time.as_ref().map(|t| format!(" {t}")).unwrap_or_default()
                    ),
                    e.line.clone(),
                )
            })
            .collect();
        if hits.len() > 5 {
            evidence.push(ev("kernel log", format!("... {} more", hits.len() - 5)));
        }
        out.push(finding(
            KERNEL_LOG,
            Severity::Warning,
            "node",
            format!(
                "{} kernel log event(s) of class `{class}`, which the expectations say must be absent",
                hits.len()
            ),
            evidence,
            "Read the FAB-KLOG finding of the same events for what they mean and the fix; a node that logs them is not like the known-good one.",
        ));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn firmware_values_match_by_word_or_number() {
        assert!(setting_matches("force_relax(1)", "force_relax(1)"));
        assert!(setting_matches("force_relax", "force_relax(1)"));
        assert!(setting_matches("1", "force_relax(1)"));
        assert!(setting_matches("true", "True(1)"));
        assert!(setting_matches("8", "8"));
        assert!(!setting_matches("per_mkey", "force_relax(1)"));
        assert!(!setting_matches("0", "force_relax(1)"));
        assert!(!setting_matches("16", "8"));
    }
}
