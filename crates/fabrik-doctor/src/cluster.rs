//! Cross-node rules: what must match on every node of a job.
//!
//! Each rule computes one value per node, groups the nodes by it and names the nodes outside
//! the largest group (the drifted ones). With no strict majority (a 2-2 split) every node is
//! named. Nodes where the value is unknown are left out rather than guessed.

use std::collections::{BTreeMap, BTreeSet};

use fabrik_model::{Finding, Node, Severity};

use crate::rules::roce::recommended_gid_index;
use crate::util::*;

pub const KERNEL: &str = "FAB-X-001";
pub const NVIDIA_DRIVER: &str = "FAB-X-002";
pub const RDMA_STACK: &str = "FAB-X-003";
pub const FIRMWARE: &str = "FAB-X-004";
pub const LINK_RATES: &str = "FAB-X-005";
pub const COUNTS: &str = "FAB-X-006";
pub const MTU: &str = "FAB-X-007";
pub const GID_INDEX: &str = "FAB-X-008";
pub const SUBNETS: &str = "FAB-X-009";

/// A node and the name the report gives it (hostname, or the root directory).
#[derive(Debug, Clone)]
pub struct NamedNode {
    pub name: String,
    pub node: Node,
}

struct Drift<'a> {
    rule: &'static str,
    severity: Severity,
    what: &'a str,
    path: &'a str,
    fix: &'a str,
}

fn drift(d: Drift<'_>, values: Vec<(&str, Option<String>)>) -> Vec<Finding> {
    let mut groups: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for (name, v) in &values {
        if let Some(v) = v {
            groups.entry(v.clone()).or_default().push(name);
        }
    }
    if groups.len() < 2 {
        return vec![];
    }
    let biggest = groups.values().map(Vec::len).max().unwrap_or(0);
    let leaders: Vec<&String> = groups
        .iter()
        .filter(|(_, n)| n.len() == biggest)
        .map(|(v, _)| v)
        .collect();
    let majority = if leaders.len() == 1 {
        Some(leaders[0].clone())
    } else {
        None
    };
    let evidence: Vec<_> = values
        .iter()
        .filter_map(|(n, v)| v.as_ref().map(|v| ev(format!("{n}:{}", d.path), v.clone())))
        .collect();
    let mut out = vec![];
    for (value, names) in &groups {
        if majority.as_ref() == Some(value) {
            continue;
        }
        for name in names {
            let message = match &majority {
                Some(m) => format!(
                    "{} differs: `{value}` on {name}, `{m}` on {} of {} nodes",
                    d.what,
                    groups[m].len(),
                    values.len()
                ),
                None => format!(
                    "{} differs across nodes with no majority: {}",
                    d.what,
                    groups
                        .iter()
                        .map(|(v, n)| format!("`{v}` on {}", n.join(", ")))
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
            };
            out.push(finding(
                d.rule,
                d.severity,
                name.to_string(),
                message,
                evidence.clone(),
                d.fix,
            ));
        }
    }
    out
}

fn sorted_join<I: IntoIterator<Item = String>>(it: I) -> String {
    let set: BTreeSet<String> = it.into_iter().collect();
    set.into_iter().collect::<Vec<_>>().join(", ")
}

pub fn check(nodes: &[NamedNode]) -> Vec<Finding> {
    if nodes.len() < 2 {
        return vec![];
    }
    let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
    let per = |f: &dyn Fn(&Node) -> Option<String>| -> Vec<(&str, Option<String>)> {
        nodes
            .iter()
            .zip(&names)
            .map(|(n, name)| (*name, f(&n.node)))
            .collect()
    };
    let mut out = vec![];
    out.extend(drift(Drift { rule: KERNEL, severity: Severity::Warning, what: "kernel", path: "/proc/sys/kernel/osrelease",
        fix: "Run the same kernel on every node of a job (RDMA and GPU drivers are built against it)." },
        per(&|n| n.os.kernel.clone())));
    out.extend(drift(Drift { rule: NVIDIA_DRIVER, severity: Severity::Warning, what: "NVIDIA driver", path: "/proc/driver/nvidia/version",
        fix: "Install the same NVIDIA driver version on every node (mixed drivers give different CUDA/NCCL behaviour and peer-memory support)." },
        per(&|n| n.versions.nvidia_driver.clone())));
    out.extend(drift(
        Drift {
            rule: RDMA_STACK,
            severity: Severity::Warning,
            what: "OFED (`ofed_info -s`)",
            path: "fabrik/cmd/ofed_info.txt",
            fix: "Install the same MLNX_OFED/DOCA-OFED or distro rdma-core release on every node.",
        },
        per(&|n| n.versions.ofed.clone()),
    ));
    out.extend(drift(
        Drift {
            rule: RDMA_STACK,
            severity: Severity::Warning,
            what: "rdma-core",
            path: "rdma-core version",
            fix: "Install the same MLNX_OFED/DOCA-OFED or distro rdma-core release on every node.",
        },
        per(&|n| n.versions.rdma_core.clone()),
    ));
    let models: BTreeSet<String> = nodes
        .iter()
        .flat_map(|n| verbs_hardware(&n.node).map(model_key).collect::<Vec<_>>())
        .collect();
    for model in &models {
        let what = format!("firmware of the {model} HCAs");
        out.extend(drift(Drift { rule: FIRMWARE, severity: Severity::Warning, what: &what, path: "/sys/class/infiniband/*/fw_ver",
            fix: "Flash the same firmware on every HCA of the same model (`mlxfwmanager --online -u` or the vendor bundle), then reboot or reset the devices." },
            per(&|n| {
                let fws: Vec<String> = verbs_hardware(n).filter(|d| &model_key(d) == model).filter_map(|d| d.fw_ver.clone()).collect();
                if fws.is_empty() { None } else { Some(sorted_join(fws)) }
            })));
    }
    out.extend(drift(Drift { rule: LINK_RATES, severity: Severity::Warning, what: "active link rates", path: "/sys/class/infiniband/*/ports/*/rate",
        fix: "Bring every node's ports to the same rate (cables, transceivers, switch port speed). A fabric with mixed rates (FDR and HDR) runs collectives at the slowest node's pace." },
        per(&|n| {
            let rates: Vec<String> = verbs_hardware(n)
                .flat_map(|d| d.ports.iter())
                .filter(|p| is_active(p))
                .filter_map(|p| p.rate.as_ref().map(|r| r.text.clone()))
                .collect();
            if rates.is_empty() { None } else {
                let mut counts: BTreeMap<String, usize> = BTreeMap::new();
                for r in rates { *counts.entry(r).or_default() += 1; }
                Some(counts.iter().map(|(r, c)| format!("{c}x {r}")).collect::<Vec<_>>().join(", "))
            }
        })));
    out.extend(drift(Drift { rule: COUNTS, severity: Severity::Warning, what: "the number of GPUs / RDMA devices / active ports", path: "gpus/rdma_devices/active ports",
        fix: "Find what is missing on the odd node (a GPU fallen off the bus, an HCA without driver, a port down) before running jobs across it; NCCL's rings and rails assume alike nodes." },
        per(&|n| {
            let active = all_ports(n).filter(|(d, p)| !d.is_software() && is_active(p)).count();
            Some(format!("{} GPUs / {} RDMA devices / {} active ports", n.gpus.len(), n.rdma_devices.len(), active))
        })));
    out.extend(drift(Drift { rule: MTU, severity: Severity::Warning, what: "RDMA MTU (RoCE netdev MTU / IB active MTU)", path: "/sys/class/net/*/mtu",
        fix: "Use one MTU for the RDMA network on every node and switch (9000 for RoCE, 4096 IB MTU)." },
        per(&|n| {
            let mut m: Vec<String> = vec![];
            for (_, p) in all_ports(n).filter(|(d, p)| !d.is_software() && is_active(p)) {
                if is_roce(p) {
                    if let Some(mtu) = p.netdev.as_deref().and_then(|nd| n.net_interface(nd)).and_then(|i| i.mtu) {
                        m.push(format!("RoCE netdev {mtu}"));
                    }
                } else if let Some(a) = p.active_mtu {
                    m.push(format!("IB {a}"));
                }
            }
            if m.is_empty() { None } else { Some(sorted_join(m)) }
        })));
    out.extend(drift(Drift { rule: GID_INDEX, severity: Severity::Warning, what: "RoCE v2 IPv4 GID index", path: "/sys/class/infiniband/*/ports/*/gid_attrs/types/*",
        fix: "Make the GID tables alike on every node (same addressing on the RoCE netdevs), or leave NCCL_IB_GID_INDEX unset with NCCL ≥ 2.21, which selects per device." },
        per(&|n| {
            let idx: Vec<String> = all_ports(n)
                .filter(|(d, p)| !d.is_software() && !d.is_iwarp() && is_roce(p) && is_active(p))
                .filter_map(|(_, p)| recommended_gid_index(p).map(|i| i.to_string()))
                .collect();
            if idx.is_empty() { None } else { Some(sorted_join(idx)) }
        })));
    out.extend(drift(Drift { rule: SUBNETS, severity: Severity::Warning, what: "IPv4 subnets of the RoCE interfaces", path: "/sys/class/net/<roce netdev> addresses",
        fix: "Put each rail's RoCE interfaces in the same subnet on every node (or route between the subnets with RoCE v2 and matching GID types)." },
        per(&|n| {
            let nets: Vec<String> = all_ports(n)
                .filter(|(d, p)| !d.is_software() && is_roce(p) && is_active(p))
                .filter_map(|(_, p)| p.netdev.as_deref().and_then(|nd| n.net_interface(nd)))
                .flat_map(|i| i.ipv4.iter().filter_map(|a| ipv4_network(a)).collect::<Vec<_>>())
                .collect();
            if nets.is_empty() { None } else { Some(sorted_join(nets)) }
        })));
    out
}

/// `192.168.10.7/24` → `192.168.10.0/24`.
pub fn ipv4_network(cidr: &str) -> Option<String> {
    let (addr, len) = cidr.split_once('/')?;
    let len: u32 = len.parse().ok()?;
    if len > 32 {
        return None;
    }
    let ip: std::net::Ipv4Addr = addr.parse().ok()?;
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    let net = std::net::Ipv4Addr::from(u32::from(ip) & mask);
    Some(format!("{net}/{len}"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::testkit::*;

    fn named(nodes: Vec<Node>) -> Vec<NamedNode> {
        nodes
            .into_iter()
            .map(|n| NamedNode {
                name: n.hostname.clone().unwrap(),
                node: n,
            })
            .collect()
    }

    #[test]
    fn identical_nodes_fire_nothing() {
        let nodes = named(
            (1..=4)
                .map(|i| healthy_ib_node(&format!("gpu{i}")))
                .collect(),
        );
        assert!(check(&nodes).is_empty());
        let roce = named(
            (1..=4)
                .map(|i| healthy_roce_node(&format!("r{i}"), i))
                .collect(),
        );
        assert!(check(&roce).is_empty());
    }

    #[test]
    fn the_drifted_node_is_named() {
        let mut nodes: Vec<Node> = (1..=4)
            .map(|i| healthy_ib_node(&format!("gpu{i}")))
            .collect();
        let d = &mut nodes[2];
        d.os.kernel = Some("5.15.0-91-generic".into());
        d.versions.nvidia_driver = Some("535.129.03".into());
        d.rdma_devices[0].fw_ver = Some("28.37.1014".into());
        d.rdma_devices[0].ports[0].rate = rate("200 Gb/sec (4X HDR)");
        let f = check(&named(nodes));
        let rules: BTreeSet<&str> = f.iter().map(|x| x.rule.as_str()).collect();
        assert_eq!(
            rules,
            [KERNEL, NVIDIA_DRIVER, FIRMWARE, LINK_RATES]
                .into_iter()
                .collect()
        );
        assert!(f.iter().all(|x| x.subject == "gpu3"));
        let k = f.iter().find(|x| x.rule == KERNEL).unwrap();
        assert!(k.message.contains(
            "kernel differs: `5.15.0-91-generic` on gpu3, `5.15.0-105-generic` on 3 of 4 nodes"
        ));
        assert_eq!(k.evidence.len(), 4);
    }

    #[test]
    fn counts_mtu_gid_and_subnets_drift() {
        let mut nodes: Vec<Node> = (1..=3)
            .map(|i| healthy_roce_node(&format!("r{i}"), i))
            .collect();
        let d = &mut nodes[1];
        d.net_interfaces
            .iter_mut()
            .find(|i| i.name == "ens10f0np0")
            .unwrap()
            .mtu = Some(1500);
        d.rdma_devices[0].ports[0].gids[3].index = 4;
        d.net_interfaces
            .iter_mut()
            .find(|i| i.name == "ens11f0np0")
            .unwrap()
            .ipv4 = vec!["192.168.99.2/24".into()];
        nodes[2].gpus.push(gpu("0000:99:00.0", 0, &[]));
        let f = check(&named(nodes));
        let by: BTreeMap<&str, Vec<&str>> = f.iter().fold(BTreeMap::new(), |mut m, x| {
            m.entry(x.rule.as_str())
                .or_insert_with(Vec::new)
                .push(x.subject.as_str());
            m
        });
        assert_eq!(by[MTU], vec!["r2"]);
        assert_eq!(by[GID_INDEX], vec!["r2"]);
        assert_eq!(by[SUBNETS], vec!["r2"]);
        assert_eq!(by[COUNTS], vec!["r3"]);
    }

    #[test]
    fn a_tie_names_every_node() {
        let mut nodes: Vec<Node> = (1..=2)
            .map(|i| healthy_ib_node(&format!("gpu{i}")))
            .collect();
        nodes[1].os.kernel = Some("6.1.0".into());
        let f = check(&named(nodes));
        assert_eq!(f.len(), 2);
        assert!(f[0].message.contains("no majority"));
    }

    proptest::proptest! {
        #[test]
        fn network_parsing_never_panics(s in ".{0,40}") {
            let _ = ipv4_network(&s);
        }
    }

    #[test]
    fn networks_are_computed() {
        assert_eq!(
            ipv4_network("192.168.10.7/24").as_deref(),
            Some("192.168.10.0/24")
        );
        assert_eq!(ipv4_network("10.1.2.3/8").as_deref(), Some("10.0.0.0/8"));
        assert_eq!(ipv4_network("10.1.2.3/0").as_deref(), Some("0.0.0.0/0"));
        assert_eq!(ipv4_network("nonsense"), None);
        assert_eq!(ipv4_network("1.2.3.4/40"), None);
    }
}
