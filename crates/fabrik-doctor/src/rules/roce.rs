//! RoCE: routable GIDs and the index NCCL should use, MTU, PFC and ECN.

use std::collections::BTreeMap;

use fabrik_model::{Finding, Gid, GidType, Node, Severity};

use crate::util::*;

/// Rule id of "RoCE port without a RoCE v2 GID carrying an IP address".
pub const NO_V2_GID: &str = "FAB-ROCE-001";
/// Rule id of "RoCE v2 GID index differs between ports of one node".
pub const GID_INDEX_DIFFERS: &str = "FAB-ROCE-002";
/// Rule id of "RDMA MTU too small".
pub const MTU: &str = "FAB-MTU-001";
/// Rule id of "PFC off on a RoCE interface".
pub const PFC_OFF: &str = "FAB-QOS-001";
/// Rule id of "RoCE ECN (DCQCN) off".
pub const ECN_OFF: &str = "FAB-QOS-002";

/// RoCE needs an Ethernet MTU that holds a 4096-byte RoCE payload plus its headers; NVIDIA's
/// guidance is an MTU of at least 4200 (9000 is usual).
pub const ROCE_MIN_NETDEV_MTU: u32 = 4200;
/// The largest IB MTU (`IBV_MTU_4096`), in bytes: what RDMA ports should run at.
pub const IB_FULL_MTU: u32 = 4096;

fn is_ip_gid(g: &Gid) -> bool {
    g.ipv4.is_some() || !g.gid.starts_with("fe80:")
}

/// The index NCCL 2.21+ selects by itself on a RoCE port, when it is a routable RoCE v2 IPv4
/// GID: fabrik-nccl's one GID policy, shared with `fabrik env`, launch and the bench.
pub use fabrik_model::gid::policy::recommended_gid_index;

/// Rule [`NO_V2_GID`]: "RoCE port without a RoCE v2 GID carrying an IP address".
pub fn no_v2_gid(node: &Node) -> Vec<Finding> {
    let mut out = vec![];
    for (dev, port) in all_ports(node) {
        // iWARP (RDMA over TCP) has no RoCE GID types, PFC or ECN needs.
        if !is_roce(port) || !is_active(port) || dev.is_iwarp() {
            continue;
        }
        let has_v2_ip = port
            .gids
            .iter()
            .any(|g| g.gid_type == Some(GidType::RoceV2) && is_ip_gid(g));
        if has_v2_ip {
            continue;
        }
        let mut evidence: Vec<_> = port
            .gids
            .iter()
            .map(|g| {
                ev(
                    port_path(dev, port, &format!("gid_attrs/types/{}", g.index)),
                    format!(
                        "{} ({})",
                        match &g.gid_type {
                            Some(GidType::RoceV2) => "RoCE v2".to_string(),
                            Some(GidType::IbRoceV1) => "IB/RoCE v1".to_string(),
                            Some(GidType::Other(o)) => o.clone(),
                            None => "unknown".to_string(),
                        },
                        g.gid
                    ),
                )
            })
            .collect();
        if evidence.is_empty() {
            evidence.push(ev(port_path(dev, port, "gids"), "no non-zero GID"));
        }
        let netdev = port.netdev.clone().unwrap_or_else(|| "<netdev>".into());
        out.push(finding(
            NO_V2_GID,
            Severity::Error,
            port_subject(dev, port),
            format!("RoCE port has no RoCE v2 GID carrying an IP address: the netdev {netdev} has no IP (or only link-local), so NCCL cannot form routable RoCE v2 connections"),
            evidence,
            format!("Give {netdev} an IP address on the RDMA network (`ip addr add 192.168.X.Y/24 dev {netdev}`, or in netplan/NetworkManager); the kernel then adds RoCE v2 GIDs for it. Check with `show_gids` or `ibv_devinfo -v`."),
        ));
    }
    out
}

/// Rule [`GID_INDEX_DIFFERS`]: "RoCE v2 GID index differs between ports of one node".
pub fn gid_index_differs(node: &Node) -> Vec<Finding> {
    let mut by_index: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    let mut evidence = vec![];
    for (dev, port) in all_ports(node) {
        if !is_roce(port) || !is_active(port) || dev.is_software() || dev.is_iwarp() {
            continue;
        }
        if let Some(i) = recommended_gid_index(port) {
            by_index.entry(i).or_default().push(port_subject(dev, port));
            evidence.push(ev(
                port_path(dev, port, &format!("gid_attrs/types/{i}")),
                "RoCE v2",
            ));
        }
    }
    if by_index.len() < 2 {
        return vec![];
    }
    let layout = by_index
        .iter()
        .map(|(i, ports)| format!("index {i} on {}", ports.join(", ")))
        .collect::<Vec<_>>()
        .join("; ");
    vec![finding(
        GID_INDEX_DIFFERS,
        Severity::Warning,
        "node",
        format!("the RoCE v2 IPv4 GID NCCL selects sits at different indexes on different ports ({layout}); a single NCCL_IB_GID_INDEX cannot fit them all"),
        evidence,
        "Leave NCCL_IB_GID_INDEX unset with NCCL 2.21 or newer (it then picks a RoCE v2 GID per device); with older NCCL make the GID tables alike (same IP setup on every RoCE netdev, no extra addresses or VLANs on some of them).",
    )]
}

/// Rule [`MTU`]: "RDMA MTU too small".
pub fn mtu(node: &Node) -> Vec<Finding> {
    let mut out = vec![];
    for (dev, port) in all_ports(node) {
        if !is_active(port) {
            continue;
        }
        if is_roce(port) {
            let Some(netdev) = &port.netdev else { continue };
            let Some(nif) = node.net_interface(netdev) else {
                continue;
            };
            let Some(m) = nif.mtu else { continue };
            if m < ROCE_MIN_NETDEV_MTU {
                out.push(finding(
                    MTU,
                    Severity::Warning,
                    port_subject(dev, port),
                    format!("RoCE netdev {netdev} has MTU {m}: below {ROCE_MIN_NETDEV_MTU} the RoCE path MTU drops below 4096 (to 1024 at MTU 1500), multiplying packets and per-packet overhead"),
                    vec![ev(net_path(netdev, "mtu"), m.to_string())],
                    format!("Set the MTU of {netdev} to 9000 (or at least {ROCE_MIN_NETDEV_MTU}) on the host and make sure the switch ports allow it: `ip link set {netdev} mtu 9000`, and persist it in the network configuration."),
                ));
            }
        } else if is_ib(port) {
            if let Some(m) = port.active_mtu {
                if m < IB_FULL_MTU {
                    out.push(finding(
                        MTU,
                        Severity::Warning,
                        port_subject(dev, port),
                        format!("InfiniBand active MTU is {m}, below {IB_FULL_MTU}"),
                        vec![ev("fabrik/cmd/ibv_devinfo.txt (active_mtu)", m.to_string())],
                        "Raise the MTU in the subnet manager partition configuration (opensm `partitions.conf`: `mtu=5` for 4096) and check the switches' MTU capability.",
                    ));
                }
            }
        }
    }
    out
}

fn roce_netdevs(node: &Node) -> Vec<(String, &fabrik_model::NetInterface)> {
    let mut v = vec![];
    for (dev, port) in all_ports(node) {
        if !is_roce(port) || !is_active(port) || dev.is_software() || dev.is_iwarp() {
            continue;
        }
        if let Some(nd) = &port.netdev {
            if let Some(nif) = node.net_interface(nd) {
                v.push((port_subject(dev, port), nif));
            }
        }
    }
    v
}

/// Rule [`PFC_OFF`]: "PFC off on a RoCE interface".
pub fn pfc_off(node: &Node) -> Vec<Finding> {
    let mut out = vec![];
    for (subject, nif) in roce_netdevs(node) {
        let Some(pfc) = &nif.pfc else { continue };
        if !pfc.enabled_priorities.is_empty() {
            continue;
        }
        out.push(finding(
            PFC_OFF,
            Severity::Warning,
            subject,
            format!("PFC is off on every priority of {}: RoCE traffic is lossy, and each drop costs a go-back-N retransmission (see out_of_sequence/packet_seq_err counters)", nif.name),
            vec![ev(pfc.source.clone(), "PFC enabled on no priority")],
            format!("Enable PFC on the RoCE priority on host and switch alike, e.g. `mlnx_qos -i {} --pfc 0,0,0,1,0,0,0,0 --trust dscp` for priority 3, and set NCCL_IB_TC to the matching traffic class (e.g. 106 for DSCP 26). Only skip PFC where the fabric is designed lossy with ECN-based congestion control.", nif.name),
        ));
    }
    out
}

/// Rule [`ECN_OFF`]: "RoCE ECN (DCQCN) off".
pub fn ecn_off(node: &Node) -> Vec<Finding> {
    let mut out = vec![];
    for (subject, nif) in roce_netdevs(node) {
        let Some(ecn) = &nif.ecn else { continue };
        let pfc_priorities = match &nif.pfc {
            Some(p) if !p.enabled_priorities.is_empty() => Some(p.enabled_priorities.clone()),
            _ => None,
        };
        let relevant: Vec<u8> = pfc_priorities.clone().unwrap_or_else(|| (0..8).collect());
        let off: Vec<u8> = relevant
            .iter()
            .copied()
            .filter(|p| {
                ecn.np_enabled.get(p) == Some(&false) || ecn.rp_enabled.get(p) == Some(&false)
            })
            .collect();
        // Judge only what was read: priorities with no ECN file are unknown, not off.
        let judged = relevant
            .iter()
            .filter(|p| ecn.np_enabled.contains_key(p) || ecn.rp_enabled.contains_key(p))
            .count();
        if off.is_empty() || judged == 0 || (pfc_priorities.is_none() && off.len() < judged) {
            continue;
        }
        let mut evidence = vec![];
        for p in &off {
            if let Some(v) = ecn.np_enabled.get(p) {
                evidence.push(ev(
                    net_path(&nif.name, &format!("ecn/roce_np/enable/{p}")),
                    u8::from(*v).to_string(),
                ));
            }
            if let Some(v) = ecn.rp_enabled.get(p) {
                evidence.push(ev(
                    net_path(&nif.name, &format!("ecn/roce_rp/enable/{p}")),
                    u8::from(*v).to_string(),
                ));
            }
        }
        out.push(finding(
            ECN_OFF,
            Severity::Warning,
            subject,
            format!("RoCE ECN (DCQCN) is off on priority {} of {}: without congestion notification, congestion turns into PFC pauses or drops", off.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(","), nif.name),
            evidence,
            format!("Enable the notification point and reaction point for the RoCE priority: `echo 1 > /sys/class/net/{0}/ecn/roce_np/enable/P` and `echo 1 > /sys/class/net/{0}/ecn/roce_rp/enable/P`, and ECN marking on the switch queues.", nif.name),
        ));
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::testkit::*;
    use fabrik_model::Pfc;

    #[test]
    fn healthy_roce_fires_nothing_and_recommends_index_3() {
        let n = healthy_roce_node("r", 1);
        assert!(no_v2_gid(&n).is_empty());
        assert!(gid_index_differs(&n).is_empty());
        assert!(mtu(&n).is_empty());
        assert!(pfc_off(&n).is_empty());
        assert!(ecn_off(&n).is_empty());
        assert_eq!(recommended_gid_index(&n.rdma_devices[0].ports[0]), Some(3));
    }

    #[test]
    fn iwarp_ports_are_not_judged_as_roce() {
        let mut n = healthy_roce_node("r", 1);
        for d in &mut n.rdma_devices {
            d.node_type = Some("4: RNIC".into());
            d.ports[0].gids.truncate(1);
        }
        for i in &mut n.net_interfaces {
            i.pfc = None;
        }
        assert!(no_v2_gid(&n).is_empty());
        assert!(pfc_off(&n).is_empty());
        assert!(ecn_off(&n).is_empty());
        // The same ports as RoCE fire.
        n.rdma_devices[0].node_type = Some("1: CA".into());
        assert_eq!(no_v2_gid(&n).len(), 1);
    }

    #[test]
    fn a_port_without_ip_gids_fires() {
        let mut n = healthy_roce_node("r", 1);
        n.rdma_devices[1].ports[0].gids.truncate(2);
        let f = no_v2_gid(&n);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].subject, "mlx5_1:1");
        assert_eq!(f[0].evidence.len(), 2);
        assert!(f[0].evidence[1].value.starts_with("RoCE v2"));
    }

    #[test]
    fn differing_indexes_fire() {
        let mut n = healthy_roce_node("r", 1);
        let p = &mut n.rdma_devices[1].ports[0];
        p.gids[3].index = 5;
        let f = gid_index_differs(&n);
        assert_eq!(f.len(), 1);
        assert!(f[0]
            .message
            .contains("index 3 on mlx5_0:1; index 5 on mlx5_1:1"));
    }

    #[test]
    fn small_mtu_fires() {
        let mut n = healthy_roce_node("r", 1);
        n.net_interfaces
            .iter_mut()
            .find(|i| i.name == "ens10f0np0")
            .unwrap()
            .mtu = Some(1500);
        let f = mtu(&n);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].evidence[0].path, "/sys/class/net/ens10f0np0/mtu");
        let mut ib = healthy_ib_node("a");
        ib.rdma_devices[0].ports[0].active_mtu = Some(2048);
        assert_eq!(mtu(&ib).len(), 1);
    }

    #[test]
    fn pfc_and_ecn_off_fire() {
        let mut n = healthy_roce_node("r", 1);
        let nif = n
            .net_interfaces
            .iter_mut()
            .find(|i| i.name == "ens11f0np0")
            .unwrap();
        nif.pfc = Some(Pfc {
            enabled_priorities: vec![],
            trust: Some("pcp".into()),
            source: "fabrik/cmd/mlnx_qos-ens11f0np0.txt".into(),
        });
        let nif0 = n
            .net_interfaces
            .iter_mut()
            .find(|i| i.name == "ens10f0np0")
            .unwrap();
        nif0.ecn.as_mut().unwrap().np_enabled.insert(3, false);
        let p = pfc_off(&n);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].subject, "mlx5_1:1");
        let e = ecn_off(&n);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].subject, "mlx5_0:1");
        assert!(e[0].message.contains("priority 3"));
    }
}
