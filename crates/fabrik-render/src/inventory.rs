//! `fabrik inventory`: one node's fabric as text. Every value comes from the node (sysfs, a
//! snapshot), so the whole text passes through [`visible_lines`] on its way to a terminal.

use std::fmt::Write as _;

use fabrik_model::text::{visible, visible_lines};
use fabrik_model::{GidType, LinkLayer, Node, PathType};

/// A value read from the node, on one line (a newline in it could forge the next line).
/// A value read from the node, shown (never sent) to the terminal; `-` when unknown.
fn opt<T: std::fmt::Display>(v: &Option<T>) -> String {
    visible(&crate::dash(v)).into_owned()
}

/// The node as text for people: devices and ports with their GIDs, interfaces, GPUs, the
/// GPU/NIC topology and the node-wide facts. A summary; the JSON is the full record.
pub fn text(n: &Node) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "node {}  (root {})\nkernel {}  distro {}  virtualized {}",
        opt(&n.hostname),
        n.root,
        opt(&n.os.kernel),
        opt(&n.os.distro),
        opt(&n.os.virtualized)
    );
    let _ = writeln!(s, "\nRDMA devices: {}", n.rdma_devices.len());
    for d in &n.rdma_devices {
        let pci = d.pci.as_ref();
        let link = pci.map(|p| {
            format!(
                "{} x{}",
                opt(&p.link.current_speed),
                opt(&p.link.current_width)
            )
        });
        let _ = writeln!(
            s,
            "  {}  {}  fw {}  guid {}  pci {}  numa {}  pcie {}{}",
            d.name,
            opt(&d.hca_type),
            opt(&d.fw_ver),
            opt(&d.node_guid),
            pci.map_or("-".to_string(), |p| p.address.clone()),
            opt(&pci.and_then(|p| p.numa_node)),
            link.unwrap_or_else(|| "-".into()),
            if pci.is_some_and(|p| p.is_virtual_function()) {
                "  (SR-IOV VF)"
            } else {
                ""
            }
        );
        for p in &d.ports {
            let _ = writeln!(
                s,
                "    port {}  {}  {}  {}  {}  netdev {}  mtu {}  lid {}  gids {}",
                p.number,
                p.state.as_ref().map_or("-".to_string(), |v| v.name.clone()),
                p.phys_state
                    .as_ref()
                    .map_or("-".to_string(), |v| v.name.clone()),
                p.rate.as_ref().map_or("-".to_string(), |r| r.text.clone()),
                p.link_layer.as_ref().map_or("-".to_string(), |l| match l {
                    LinkLayer::Infiniband => "InfiniBand".to_string(),
                    LinkLayer::Ethernet => "Ethernet".to_string(),
                    LinkLayer::Other(o) => o.clone(),
                }),
                opt(&p.netdev),
                opt(&p.active_mtu),
                opt(&p.lid),
                p.gids.len()
            );
            for g in &p.gids {
                let ty = match &g.gid_type {
                    Some(GidType::IbRoceV1) => "IB/RoCE v1".to_string(),
                    Some(GidType::RoceV2) => "RoCE v2".to_string(),
                    Some(GidType::Other(o)) => o.clone(),
                    None => "-".to_string(),
                };
                let _ = writeln!(
                    s,
                    "      gid[{}] {}  {}  {}{}",
                    g.index,
                    g.gid,
                    ty,
                    opt(&g.netdev),
                    g.ipv4
                        .as_ref()
                        .map_or(String::new(), |v| format!("  ({v})"))
                );
            }
        }
    }
    let _ = writeln!(s, "\nNetwork interfaces: {}", n.net_interfaces.len());
    for i in &n.net_interfaces {
        let mut extra = String::new();
        if let Some(r) = &i.rdma_device {
            let _ = write!(extra, "  rdma {r}");
        }
        if i.default_route {
            extra.push_str("  default-route");
        }
        if let Some(p) = &i.pfc {
            let _ = write!(
                extra,
                "  pfc {:?} trust {}",
                p.enabled_priorities,
                opt(&p.trust)
            );
        }
        if let Some(e) = &i.ecn {
            let on: Vec<u8> = e
                .np_enabled
                .iter()
                .filter(|(_, v)| **v)
                .map(|(k, _)| *k)
                .collect();
            let _ = write!(extra, "  ecn-np {on:?}");
        }
        let _ = writeln!(
            s,
            "  {:<12} {:<9} mtu {:<5} {:<8} speed {:<6} driver {:<10} pci {:<12} {} {}{}",
            i.name,
            format!("{:?}", i.kind).to_lowercase(),
            opt(&i.mtu),
            opt(&i.operstate),
            opt(&i.speed_mbps),
            opt(&i.driver),
            i.pci
                .as_ref()
                .map_or("-".to_string(), |p| p.address.clone()),
            i.ipv4.join(","),
            i.ipv6.join(","),
            extra
        );
    }
    let _ = writeln!(s, "\nGPUs: {}", n.gpus.len());
    for g in &n.gpus {
        let _ = writeln!(
            s,
            "  {}  {}  numa {}  pcie {} x{}",
            g.pci.address,
            opt(&g.model),
            opt(&g.pci.numa_node),
            opt(&g.pci.link.current_speed),
            opt(&g.pci.link.current_width)
        );
    }
    if !n.gpu_nic_paths.is_empty() {
        let mut nics: Vec<&str> = Vec::new();
        for p in &n.gpu_nic_paths {
            if !nics.contains(&p.nic.as_str()) {
                nics.push(&p.nic);
            }
        }
        let _ = write!(s, "\nGPU/NIC topology\n  {:<14}", "");
        for nic in &nics {
            let _ = write!(s, "{nic:>9}");
        }
        s.push('\n');
        for g in &n.gpus {
            let _ = write!(s, "  {:<14}", g.pci.address);
            for nic in &nics {
                let t = n
                    .gpu_nic_paths
                    .iter()
                    .find(|p| p.gpu == g.pci.address && p.nic == *nic)
                    .and_then(|p| p.path_type)
                    .map_or("?", PathType::as_str);
                let _ = write!(s, "{t:>9}");
            }
            s.push('\n');
        }
    }
    let acs: Vec<&str> = n
        .pci_bridges
        .iter()
        .filter(|b| b.acs_redirects() == Some(true))
        .map(|b| b.address.as_str())
        .collect();
    if !acs.is_empty() {
        let _ = writeln!(
            s,
            "\nBridges redirecting peer-to-peer (ACS): {}",
            acs.join(", ")
        );
    }
    let mods: Vec<String> = n.modules.iter().map(|m| m.name.clone()).collect();
    let _ = writeln!(
        s,
        "\nModules: {}",
        if mods.is_empty() {
            "-".into()
        } else {
            mods.join(" ")
        }
    );
    let _ = writeln!(
        s,
        "/dev/infiniband: {}",
        n.dev_infiniband
            .as_ref()
            .map_or("absent".to_string(), |v| v.join(" "))
    );
    let _ = writeln!(
        s,
        "memlock: {}",
        n.memlock
            .as_ref()
            .map_or("-".to_string(), |m| match m.soft_bytes {
                None => "unlimited".to_string(),
                Some(b) => format!("{b} bytes"),
            })
    );
    let _ = writeln!(
        s,
        "IOMMU: enabled {}  passthrough {}  cmdline [{}]",
        opt(&n.iommu.enabled),
        opt(&n.iommu.passthrough),
        n.iommu.cmdline_flags.join(" ")
    );
    let _ = writeln!(
        s,
        "versions: nvidia {}  ofed {}  nic driver {}",
        opt(&n.versions.nvidia_driver),
        opt(&n.versions.ofed),
        opt(&n.versions.nic_driver)
    );
    if !n.command_captures.is_empty() {
        let _ = writeln!(s, "captures: {}", n.command_captures.join(" "));
    }
    if !n.warnings.is_empty() {
        let _ = writeln!(s, "\nWarnings: {}", n.warnings.len());
        for w in &n.warnings {
            let _ = writeln!(s, "  {}: {}", w.path, w.message);
        }
    }
    // Every line is the node's text: no escape sequence of a snapshot reaches the terminal.
    visible_lines(&s).into_owned()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_text_cannot_drive_the_terminal() {
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/nodes/real-procfs");
        let mut node = fabrik_probe::probe(&fixture).unwrap();
        // What a hostile snapshot's fw_ver and host name could hold: a window-title change, a
        // screen clear, a C1 CSI and a forged line.
        node.rdma_devices[0].fw_ver = Some("2.31.5050\x1b]0;pwned\x07\x1b[2J".into());
        node.hostname = Some("gpu01\u{9b}1m\nERROR forged".into());
        let t = text(&node);
        assert!(!t.chars().any(|c| c.is_control() && c != '\n'), "{t:?}");
        assert!(t.contains("fw 2.31.5050\\x1b]0;pwned\\x07\\x1b[2J"), "{t}");
        assert!(t.contains("node gpu01\\u{9b}1m\\nERROR forged"), "{t}");
        assert!(!t.lines().any(|l| l.starts_with("ERROR forged")));
    }
}
