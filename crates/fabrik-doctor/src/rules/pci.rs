//! PCIe: degraded links, ACS redirect between GPUs and NICs, IOMMU translation.

use std::collections::BTreeSet;

use fabrik_model::{Finding, NetKind, Node, PciFunction, Severity};

use crate::util::*;

/// Rule id of "PCIe link below its maximum speed or width".
pub const PCIE_LINK: &str = "FAB-PCI-001";
/// Rule id of "ACS redirect enabled on PCIe bridges between GPUs and NICs".
pub const ACS_REDIRECT: &str = "FAB-PCI-002";
/// Rule id of "IOMMU on and not in passthrough (bare metal)".
pub const IOMMU_TRANSLATED: &str = "FAB-PCI-003";
/// Rule id of "Relaxed ordering disabled on an RDMA NIC's PCIe function".
pub const RELAXED_ORDERING: &str = "FAB-PCIE-001";
/// Rule id of "PCIe uncorrectable errors logged (AER)".
pub const AER_UNCORRECTABLE: &str = "FAB-PCIE-002";
/// Rule id of "PCIe correctable errors logged (AER)".
pub const AER_CORRECTABLE: &str = "FAB-PCIE-003";

#[derive(Clone, Copy, PartialEq)]
enum DeviceKind {
    Gpu,
    Nic,
}

/// Usable PCIe bandwidth in Gb/s at `gts` per lane over `width` lanes: 8b/10b encoding up to
/// 5 GT/s (Gen1/2), 128b/130b from 8 GT/s (Gen3+).
fn pcie_gbps(gts: f64, width: u32) -> f64 {
    let efficiency = if gts < 8.0 { 0.8 } else { 128.0 / 130.0 };
    gts * efficiency * f64::from(width)
}

fn check_link(
    kind: DeviceKind,
    label: &str,
    pci: &PciFunction,
    needed_gbps: Option<f64>,
    out: &mut Vec<Finding>,
) {
    let l = &pci.link;
    let mut problems = vec![];
    let mut severity = Severity::Info;
    if let (Some(cur), Some(max)) = (l.current_width, l.max_width) {
        if cur < max {
            problems.push(format!("width x{cur} of x{max}"));
            severity = Severity::Warning;
        }
    }
    if let (Some(cur), Some(max)) = (l.current_speed_gts, l.max_speed_gts) {
        if cur + 0.01 < max {
            problems.push(format!("speed {cur} GT/s of {max} GT/s"));
            // GPUs lower their PCIe speed when idle to save power, so a slow GPU link read at
            // rest is not a fault by itself; a NIC does not do that.
            if kind == DeviceKind::Nic {
                severity = Severity::Warning;
            }
        }
    }
    if problems.is_empty() {
        return;
    }
    // A narrower or slower link that still carries the NIC's own line rate costs nothing: a
    // 1 GbE management NIC wired x1, or an NDR200 HCA in a Gen4 x16 slot.
    let mut enough_note = String::new();
    if let (Some(need), Some(gts), Some(width)) =
        (needed_gbps, l.current_speed_gts, l.current_width)
    {
        let have = pcie_gbps(gts, width);
        if kind == DeviceKind::Nic && have >= need {
            severity = Severity::Info;
            enough_note = format!(
                " (still {have:.0} Gb/s of PCIe for a {need} Gb/s link, so not a bottleneck)"
            );
        }
    }
    let idle_note = if kind == DeviceKind::Gpu && severity == Severity::Info {
        " (GPUs drop PCIe speed when idle; read it again under load, e.g. `nvidia-smi -q -d PCI` during a run)"
    } else {
        ""
    };
    out.push(finding(
        PCIE_LINK,
        severity,
        label.to_string(),
        format!(
            "PCIe link of {label} ({}) runs below its maximum: {}{idle_note}{enough_note}",
            pci.address,
            problems.join(", ")
        ),
        vec![
            ev(pci_path(&pci.address, "current_link_width"), l.current_width.map(|w| w.to_string()).unwrap_or_default()),
            ev(pci_path(&pci.address, "max_link_width"), l.max_width.map(|w| w.to_string()).unwrap_or_default()),
            ev(pci_path(&pci.address, "current_link_speed"), l.current_speed.clone().unwrap_or_default()),
            ev(pci_path(&pci.address, "max_link_speed"), l.max_speed.clone().unwrap_or_default()),
        ],
        format!("Reseat the card or riser of {label}, check the slot's wiring (some slots are x8 electrically) and BIOS PCIe settings; `lspci -vv -s {}` shows LnkSta against LnkCap.", pci.address),
    ));
}

/// Rule [`PCIE_LINK`]: "PCIe link below its maximum speed or width".
pub fn pcie_link(node: &Node) -> Vec<Finding> {
    let mut out = vec![];
    let mut seen = BTreeSet::new();
    for dev in devices(node) {
        if let Some(pci) = &dev.pci {
            if pci.physfn.is_none() && seen.insert(pci.address.clone()) {
                // Ports of one function share its PCIe link: their rates add up.
                let rates: Vec<f64> = dev
                    .ports
                    .iter()
                    .filter(|p| is_active(p))
                    .filter_map(|p| p.rate.as_ref().and_then(|r| r.gbps))
                    .collect();
                let need = (!rates.is_empty()).then(|| rates.iter().sum());
                check_link(DeviceKind::Nic, &dev.name, pci, need, &mut out);
            }
        }
    }
    for nif in interfaces(node) {
        if nif.kind != NetKind::Ethernet && nif.kind != NetKind::Ipoib {
            continue;
        }
        if let Some(pci) = &nif.pci {
            if pci.physfn.is_none() && seen.insert(pci.address.clone()) {
                let need = nif.speed_mbps.map(|m| m as f64 / 1000.0);
                check_link(DeviceKind::Nic, &nif.name, pci, need, &mut out);
            }
        }
    }
    for gpu in &node.gpus {
        if seen.insert(gpu.pci.address.clone()) {
            check_link(
                DeviceKind::Gpu,
                &format!("GPU {}", gpu.pci.address),
                &gpu.pci,
                None,
                &mut out,
            );
        }
    }
    path_links(node, &mut out);
    out
}

/// The links between the bridges on a GPU's or NIC's path (root port to switch, switch to
/// switch): a link that trained narrower than both of its ends can go starves every device
/// below it, and the endpoint's own files do not show it.
///
/// Which of two neighbouring bridges faces which is not in sysfs (the port type is), so a pair
/// counts as one link only when both ends report the same current speed and width, as the two
/// ends of one link do; the most either end can go bounds the link. The pair below the last
/// bridge (to the endpoint) is the endpoint's own check above.
fn path_links(node: &Node, out: &mut Vec<Finding>) {
    let bridge = |a: &str| {
        node.pci_bridges
            .iter()
            .find(|b| b.address == a)
            .and_then(|b| b.function.as_ref())
    };
    let mut seen = BTreeSet::new();
    let paths = node
        .gpus
        .iter()
        .map(|g| &g.pci)
        .chain(node.rdma_devices.iter().filter_map(|d| d.pci.as_ref()))
        .chain(node.net_interfaces.iter().filter_map(|n| n.pci.as_ref()))
        .map(|p| p.path.as_slice());
    for path in paths {
        let Some((_, bridges)) = path.split_last() else {
            continue;
        };
        for pair in bridges.windows(2) {
            let (Some(up), Some(down)) = (bridge(&pair[0]), bridge(&pair[1])) else {
                continue;
            };
            if !seen.insert((up.address.clone(), down.address.clone())) {
                continue;
            }
            let (a, b) = (&up.link, &down.link);
            let (Some(width), Some(gts)) = (a.current_width, a.current_speed_gts) else {
                continue;
            };
            if b.current_width != Some(width)
                || b.current_speed_gts.is_none_or(|g| (g - gts).abs() > 0.01)
            {
                continue;
            }
            let mut problems = vec![];
            let mut severity = Severity::Info;
            if let (Some(x), Some(y)) = (a.max_width, b.max_width) {
                let max = x.min(y);
                if width < max {
                    problems.push(format!("width x{width} of x{max}"));
                    severity = Severity::Warning;
                }
            }
            if let (Some(x), Some(y)) = (a.max_speed_gts, b.max_speed_gts) {
                let max = x.min(y);
                if gts + 0.01 < max {
                    problems.push(format!("speed {gts} GT/s of {max} GT/s"));
                    severity = Severity::Warning;
                }
            }
            if problems.is_empty() {
                continue;
            }
            let subject = format!("bridge {}", down.address);
            let mut evidence = vec![];
            for f in [up, down] {
                let l = &f.link;
                let show = |v: Option<String>| v.unwrap_or_default();
                evidence.push(ev(
                    pci_path(&f.address, "current_link_width"),
                    show(l.current_width.map(|w| w.to_string())),
                ));
                evidence.push(ev(
                    pci_path(&f.address, "max_link_width"),
                    show(l.max_width.map(|w| w.to_string())),
                ));
                evidence.push(ev(
                    pci_path(&f.address, "current_link_speed"),
                    show(l.current_speed.clone()),
                ));
                evidence.push(ev(
                    pci_path(&f.address, "max_link_speed"),
                    show(l.max_speed.clone()),
                ));
            }
            out.push(finding(
                PCIE_LINK,
                severity,
                subject,
                format!(
                    "the PCIe link between {} and {} on the path to the GPUs and NICs below runs below what both ends can do: {}; every device below it shares the narrower link",
                    up.address,
                    down.address,
                    problems.join(", ")
                ),
                evidence,
                format!("Reseat the switch board, riser or cable between {} and {}, and check the BIOS PCIe settings of the root port; `lspci -vv -s {}` shows LnkSta against LnkCap.", up.address, down.address, down.address),
            ));
        }
    }
}

/// The PCI functions of the node's GPUs, RDMA devices and network interfaces, each once, with
/// the name findings give it.
fn functions(node: &Node) -> Vec<(String, &PciFunction)> {
    let mut seen = BTreeSet::new();
    let mut out = vec![];
    let gpus = node
        .gpus
        .iter()
        .map(|g| (format!("GPU {}", g.pci.address), &g.pci));
    let nics = devices(node)
        .into_iter()
        .filter_map(|d| Some((d.name.clone(), d.pci.as_ref()?)));
    let nets = interfaces(node)
        .into_iter()
        .filter_map(|n| Some((n.name.clone(), n.pci.as_ref()?)));
    let bridges = node
        .pci_bridges
        .iter()
        .filter_map(|b| Some((format!("bridge {}", b.address), b.function.as_ref()?)));
    for (label, pci) in nics.chain(gpus).chain(nets).chain(bridges) {
        if seen.insert(pci.address.as_str()) {
            out.push((label, pci));
        }
    }
    out
}

/// `NAME (0000:17:00.0)`, or the label alone when it names the address (`bridge 0000:17:00.0`).
fn labelled(label: &str, pci: &PciFunction) -> String {
    if label.ends_with(pci.address.as_str()) {
        label.to_string()
    } else {
        format!("{label} ({})", pci.address)
    }
}

/// Rule [`RELAXED_ORDERING`]: "Relaxed ordering disabled on an RDMA NIC's PCIe function".
pub fn relaxed_ordering(node: &Node) -> Vec<Finding> {
    let mut out = vec![];
    for dev in devices(node) {
        let Some(pci) = &dev.pci else { continue };
        if dev.is_software() || pci.relaxed_ordering != Some(false) {
            continue;
        }
        out.push(finding(
            RELAXED_ORDERING,
            Severity::Warning,
            dev.name.clone(),
            format!(
                "relaxed ordering is disabled in the PCIe Device Control of {}: the NIC may not mark its writes relaxed, so NCCL's IBV_ACCESS_RELAXED_ORDERING (NCCL_IB_PCI_RELAXED_ORDERING) has no effect, and where the platform or a VM needs relaxed ordering GPUDirect RDMA writes into GPU memory run far below line rate",
                labelled(&dev.name, pci)
            ),
            vec![ev(format!("lspci -vvv -s {} (DevCtl)", pci.address), "RlxdOrd-")],
            format!("First check whether the kernel turned it off on purpose: it clears the bit below root ports with relaxed-ordering errata (`dmesg | grep -i relaxed`). If not, set it (`setpci -s {} CAP_EXP+08.w=0010:0010`, bit 4 of Device Control; not persistent) or find the BIOS or hypervisor setting that clears it; in a VM the hypervisor must pass relaxed ordering through.", pci.address),
        ));
    }
    out
}

/// Uncorrectable errors that the PCIe base specification says configuration reads of absent
/// functions and probing set (Unsupported Request): alone they are noted, not warned about.
const ADVISORY_UNCORRECTABLE: &[&str] = &["UnsupReq"];

/// Rule [`AER_UNCORRECTABLE`]: "PCIe uncorrectable errors logged (AER)".
pub fn aer_uncorrectable(node: &Node) -> Vec<Finding> {
    let mut out = vec![];
    for (label, pci) in functions(node) {
        let Some(aer) = &pci.aer else { continue };
        let fatal_count = aer.counts.get("TOTAL_ERR_FATAL").copied().unwrap_or(0);
        let nonfatal_count = aer.counts.get("TOTAL_ERR_NONFATAL").copied().unwrap_or(0);
        let (severity, what) = if !aer.fatal.is_empty() || fatal_count > 0 {
            (Severity::Error, "fatal")
        } else if nonfatal_count > 0
            || aer
                .nonfatal
                .iter()
                .any(|b| !ADVISORY_UNCORRECTABLE.contains(&b.as_str()))
        {
            (Severity::Warning, "non-fatal")
        } else if !aer.nonfatal.is_empty() {
            (Severity::Info, "advisory")
        } else {
            continue;
        };
        let mut evidence = vec![];
        if !aer.fatal.is_empty() || !aer.nonfatal.is_empty() {
            let bits: Vec<String> = aer
                .fatal
                .iter()
                .chain(&aer.nonfatal)
                .map(|b| format!("{b}+"))
                .collect();
            evidence.push(ev(
                format!("lspci -vvv -s {} (UESta)", pci.address),
                bits.join(" "),
            ));
        }
        for (file, n) in [
            ("aer_dev_fatal", fatal_count),
            ("aer_dev_nonfatal", nonfatal_count),
        ] {
            if n > 0 {
                evidence.push(ev(pci_path(&pci.address, file), n.to_string()));
            }
        }
        out.push(finding(
            AER_UNCORRECTABLE,
            severity,
            label.clone(),
            format!(
                "{} has logged {what} uncorrectable PCIe errors ({}): data on this link was lost or a transaction failed; NCCL over this device can hang or fail, and the driver may reset the device",
                labelled(&label, pci),
                aer.fatal
                    .iter()
                    .chain(&aer.nonfatal)
                    .cloned()
                    .chain((fatal_count > 0).then(|| format!("{fatal_count} fatal counted")))
                    .chain((nonfatal_count > 0).then(|| format!("{nonfatal_count} non-fatal counted")))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            evidence,
            format!("Look for the AER events in the kernel log (`dmesg | grep -i aer`) to see when they happen; reseat the card or riser, check the slot and cables, and update the NIC/GPU firmware and BIOS. The status bits clear with `setpci -s {} ECAP_AER+04.l=ffffffff` once fixed.", pci.address),
        ));
    }
    out
}

/// Rule [`AER_CORRECTABLE`]: "PCIe correctable errors logged (AER)".
pub fn aer_correctable(node: &Node) -> Vec<Finding> {
    let mut out = vec![];
    for (label, pci) in functions(node) {
        let Some(aer) = &pci.aer else { continue };
        // AdvNonFatalErr signals an uncorrectable error handled as advisory: not a link error.
        let bits: Vec<&String> = aer
            .correctable
            .iter()
            .filter(|b| b.as_str() != "AdvNonFatalErr")
            .collect();
        // The kernel's counts since boot, the same errors less the advisory one.
        let counted: Vec<(&str, u64)> = aer
            .counts
            .iter()
            .filter_map(|(k, n)| Some((k.strip_prefix("correctable:")?, *n)))
            .filter(|(name, n)| *n > 0 && *name != "NonFatalErr")
            .collect();
        if bits.is_empty() && counted.is_empty() {
            continue;
        }
        let mut named: Vec<String> = bits.iter().map(|b| b.to_string()).collect();
        for (name, n) in &counted {
            named.retain(|b| b != name);
            named.push(format!("{name} {n}"));
        }
        let mut evidence = vec![];
        if !bits.is_empty() {
            evidence.push(ev(
                format!("lspci -vvv -s {} (CESta)", pci.address),
                bits.iter()
                    .map(|b| format!("{b}+"))
                    .collect::<Vec<_>>()
                    .join(" "),
            ));
        }
        if !counted.is_empty() {
            evidence.push(ev(
                pci_path(&pci.address, "aer_dev_correctable"),
                counted
                    .iter()
                    .map(|(name, n)| format!("{name} {n}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            ));
        }
        out.push(finding(
            AER_CORRECTABLE,
            Severity::Info,
            label.clone(),
            format!(
                "{} has seen correctable PCIe errors ({}): the link recovered (replay), but receiver and bad-TLP/DLLP errors that keep coming mean a marginal link that costs bandwidth",
                labelled(&label, pci),
                named.join(", ")
            ),
            evidence,
            format!("Watch whether they grow: the kernel counts them in /sys/bus/pci/devices/{}/aer_dev_correctable. Errors that keep rising point at the slot, riser or card.", pci.address),
        ));
    }
    out
}

/// Rule [`ACS_REDIRECT`]: "ACS redirect enabled on PCIe bridges between GPUs and NICs".
pub fn acs_redirect(node: &Node) -> Vec<Finding> {
    if node.os.virtualized == Some(true) {
        // In a VM the hypervisor owns ACS; passthrough needs it, and the guest's view of the
        // bridges is virtual anyway.
        return vec![];
    }
    let on_paths: BTreeSet<&str> = node
        .gpus
        .iter()
        .map(|g| &g.pci)
        .chain(node.rdma_devices.iter().filter_map(|d| d.pci.as_ref()))
        .flat_map(|p| p.path.iter().map(String::as_str))
        .collect();
    let mut out = vec![];
    let mut bridges: Vec<_> = node.pci_bridges.iter().collect();
    bridges.sort_by(|a, b| a.address.cmp(&b.address));
    for bridge in bridges {
        if bridge.acs_redirects() != Some(true) {
            continue;
        }
        if !on_paths.is_empty() && !on_paths.contains(bridge.address.as_str()) {
            continue;
        }
        let bits = bridge.acs_ctl_enabled.clone().unwrap_or_default();
        let (severity, where_) = match node.os.virtualized {
            Some(false) => (Severity::Error, "on bare metal"),
            _ => (
                Severity::Warning,
                "(fabrik could not tell whether this is a VM)",
            ),
        };
        out.push(finding(
            ACS_REDIRECT,
            severity,
            format!("bridge {}", bridge.address),
            format!(
                "ACS redirect is enabled {where_} on PCIe bridge {}{}: peer-to-peer traffic (GPUDirect RDMA, GPU-to-GPU over PCIe) through it is forced up to the root complex, which cuts bandwidth and can hang NCCL",
                bridge.address,
                if on_paths.is_empty() {
                    " (which devices sit below it is not known here)"
                } else {
                    " between GPUs and NICs"
                }
            ),
            vec![ev(
                format!("lspci -vvv -s {} (ACSCtl)", bridge.address),
                bits.iter().map(|b| format!("{b}+")).collect::<Vec<_>>().join(" "),
            )],
            format!("Disable ACS on the bridges between GPUs and NICs on bare metal: in the BIOS (\"ACS\"/\"PCIe ACS control\"), or at boot with `setpci -s {} ECAP_ACS+0x6.w=0000` for each bridge (not persistent). Keep ACS only where VMs need device isolation.", bridge.address),
        ));
    }
    out
}

/// Rule [`IOMMU_TRANSLATED`]: "IOMMU on and not in passthrough (bare metal)".
pub fn iommu_translated(node: &Node) -> Vec<Finding> {
    if node.os.virtualized == Some(true) || (node.rdma_devices.is_empty() && node.gpus.is_empty()) {
        return vec![];
    }
    if node.iommu.enabled != Some(true) || node.iommu.passthrough != Some(false) {
        return vec![];
    }
    let flags = if node.iommu.cmdline_flags.is_empty() {
        "(none)".to_string()
    } else {
        node.iommu.cmdline_flags.join(" ")
    };
    vec![finding(
        IOMMU_TRANSLATED,
        Severity::Warning,
        "node",
        "the IOMMU is on and not in passthrough mode: every DMA of the NICs and GPUs is translated, which costs bandwidth and, with ACS, can break GPUDirect peer-to-peer traffic".to_string(),
        vec![
            ev("/proc/cmdline", flags),
            ev("/sys/kernel/iommu_groups", match node.iommu.groups_present { Some(true) => "groups present", Some(false) => "no groups", None => "unknown" }),
        ],
        "On bare-metal GPU nodes boot with `iommu=pt` (Intel: `intel_iommu=on iommu=pt`; AMD: `amd_iommu=on iommu=pt`), or disable the IOMMU if no VM passthrough is needed; update the bootloader (`update-grub`) and reboot.",
    )]
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::testkit::*;
    use fabrik_model::PciBridge;
    use std::collections::BTreeMap;

    #[test]
    fn full_links_fire_nothing() {
        let n = healthy_ib_node("a");
        assert!(pcie_link(&n).is_empty());
        assert!(acs_redirect(&n).is_empty());
        assert!(iommu_translated(&n).is_empty());
    }

    #[test]
    fn nic_width_and_speed_drop_warn_gpu_speed_drop_is_info() {
        let mut n = healthy_ib_node("a");
        let l = &mut n.rdma_devices[3].pci.as_mut().unwrap().link;
        l.current_width = Some(8);
        l.current_speed = Some("8.0 GT/s PCIe".into());
        l.current_speed_gts = Some(8.0);
        let g = &mut n.gpus[1].pci.link;
        g.current_speed = Some("2.5 GT/s PCIe".into());
        g.current_speed_gts = Some(2.5);
        let f = pcie_link(&n);
        assert_eq!(f.len(), 2);
        let nic = f.iter().find(|x| x.subject == "mlx5_3").unwrap();
        assert_eq!(nic.severity, Severity::Warning);
        assert!(nic.message.contains("width x8 of x16"));
        let gpu = f.iter().find(|x| x.subject.starts_with("GPU")).unwrap();
        assert_eq!(gpu.severity, Severity::Info);
        assert!(gpu.message.contains("idle"));
    }

    fn bridge(address: &str, width: u32, max_width: u32, gts: f64) -> PciBridge {
        let mut f = pci(address, 0, &[]);
        f.link.current_width = Some(width);
        f.link.max_width = Some(max_width);
        f.link.current_speed_gts = Some(gts);
        f.link.max_speed_gts = Some(32.0);
        PciBridge {
            address: address.into(),
            acs_ctl_enabled: None,
            function: Some(f),
        }
    }

    #[test]
    fn a_narrow_link_between_path_bridges_is_named_and_healthy_paths_are_quiet() {
        let mut n = healthy_ib_node("a");
        let path = n.rdma_devices[0].pci.as_ref().unwrap().path.clone();
        assert!(path.len() >= 3, "{path:?}");
        let (up, down) = (path[0].clone(), path[1].clone());
        n.pci_bridges = vec![bridge(&up, 16, 16, 32.0), bridge(&down, 16, 16, 32.0)];
        assert!(pcie_link(&n).is_empty());
        // The root port and the switch's upstream port both report x8 of x16.
        n.pci_bridges = vec![bridge(&up, 8, 16, 32.0), bridge(&down, 8, 16, 32.0)];
        let f = pcie_link(&n);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Warning);
        assert_eq!(f[0].subject, format!("bridge {down}"));
        assert!(f[0].message.contains("width x8 of x16"), "{}", f[0].message);
        // Two neighbours whose current links differ are not the two ends of one link.
        n.pci_bridges = vec![bridge(&up, 16, 16, 32.0), bridge(&down, 8, 16, 32.0)];
        assert!(pcie_link(&n).is_empty());
        // An x8 switch behind an x16 root port: x8 is all the link can do.
        n.pci_bridges = vec![bridge(&up, 8, 16, 32.0), bridge(&down, 8, 8, 32.0)];
        assert!(pcie_link(&n).is_empty());
    }

    #[test]
    fn kernel_aer_counts_on_a_path_bridge_fire_and_zero_counts_stay_quiet() {
        use fabrik_model::PciAer;
        let mut n = healthy_ib_node("a");
        let path = n.rdma_devices[0].pci.as_ref().unwrap().path.clone();
        let mut b = bridge(&path[1], 16, 16, 32.0);
        let zero: BTreeMap<String, u64> = [
            ("TOTAL_ERR_COR", 0),
            ("TOTAL_ERR_NONFATAL", 0),
            ("TOTAL_ERR_FATAL", 0),
            ("correctable:RxErr", 0),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        if let Some(f) = b.function.as_mut() {
            f.aer = Some(PciAer {
                counts: zero.clone(),
                ..PciAer::default()
            });
        }
        n.pci_bridges = vec![b.clone()];
        assert!(aer_uncorrectable(&n).is_empty());
        assert!(aer_correctable(&n).is_empty());
        let mut counts = zero;
        counts.insert("TOTAL_ERR_COR".into(), 7);
        counts.insert("correctable:RxErr".into(), 5);
        counts.insert("correctable:NonFatalErr".into(), 2);
        counts.insert("TOTAL_ERR_NONFATAL".into(), 1);
        if let Some(f) = b.function.as_mut() {
            f.aer = Some(PciAer {
                counts,
                ..PciAer::default()
            });
        }
        n.pci_bridges = vec![b];
        let subject = format!("bridge {}", path[1]);
        let c = aer_correctable(&n);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].subject, subject);
        assert!(c[0].message.contains("RxErr 5"), "{}", c[0].message);
        assert!(
            !c[0].message.contains("NonFatalErr"),
            "the advisory one is left out"
        );
        let u = aer_uncorrectable(&n);
        assert_eq!(u.len(), 1);
        assert_eq!(u[0].severity, Severity::Warning);
        assert!(
            u[0].message.contains("1 non-fatal counted"),
            "{}",
            u[0].message
        );
    }

    #[test]
    fn a_link_that_still_carries_the_line_rate_is_info() {
        let mut n = healthy_ib_node("a");
        // A Gen5 x16 NDR HCA trained at Gen4 x16: 252 Gb/s cannot carry 400 Gb/s.
        let l = &mut n.rdma_devices[0].pci.as_mut().unwrap().link;
        l.current_speed_gts = Some(16.0);
        l.max_speed_gts = Some(32.0);
        l.current_width = Some(16);
        l.max_width = Some(16);
        let f = pcie_link(&n);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Warning);
        // The same slot for an NDR200 (200 Gb/s) port is enough.
        n.rdma_devices[0].ports[0].rate.as_mut().unwrap().gbps = Some(200.0);
        let f = pcie_link(&n);
        assert_eq!(f[0].severity, Severity::Info);
        assert!(
            f[0].message.contains("not a bottleneck"),
            "{}",
            f[0].message
        );
        assert!((pcie_gbps(2.5, 1) - 2.0).abs() < 1e-9);
        assert!((pcie_gbps(8.0, 16) - 126.03).abs() < 0.01);
    }

    #[test]
    fn acs_redirect_on_a_path_bridge_is_an_error_on_bare_metal_only() {
        let mut n = healthy_ib_node("a");
        let sw = n.gpus[0].pci.path[1].clone();
        n.pci_bridges.push(PciBridge {
            address: sw.clone(),
            acs_ctl_enabled: Some(vec![
                "SrcValid".into(),
                "ReqRedir".into(),
                "CmpltRedir".into(),
            ]),
            function: None,
        });
        n.pci_bridges.push(PciBridge {
            address: "0000:ff:00.0".into(),
            acs_ctl_enabled: Some(vec!["ReqRedir".into()]),
            function: None,
        });
        let f = acs_redirect(&n);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Error);
        assert_eq!(f[0].subject, format!("bridge {sw}"));
        n.os.virtualized = Some(true);
        assert!(acs_redirect(&n).is_empty());
        n.os.virtualized = None;
        assert_eq!(acs_redirect(&n)[0].severity, Severity::Warning);
    }

    #[test]
    fn iommu_without_passthrough_fires() {
        let mut n = healthy_ib_node("a");
        n.iommu.enabled = Some(true);
        n.iommu.passthrough = Some(false);
        n.iommu.cmdline_flags = vec!["intel_iommu=on".into()];
        let f = iommu_translated(&n);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].evidence[0].value, "intel_iommu=on");
        n.iommu.passthrough = Some(true);
        assert!(iommu_translated(&n).is_empty());
    }
}
