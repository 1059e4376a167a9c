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
fn a_neighbour_table_smaller_than_the_on_link_peers_is_named() {
    use fabrik_model::{NeighbourLimits, NetKind};
    // 40 nodes on one /16 rail plus a /31 point-to-point link each: the /31 peers are not
    // on-link, so each node needs 39 entries.
    let mut nodes: Vec<Node> = (1..=40u8)
        .map(|i| {
            let mut n = bare_node();
            n.hostname = Some(format!("n{i}"));
            n.net_interfaces = vec![
                netif("lo", NetKind::Loopback, Some("127.0.0.1/8"), "unknown"),
                netif(
                    "eth0",
                    NetKind::Ethernet,
                    Some(&format!("10.1.0.{i}/16")),
                    "up",
                ),
                netif(
                    "eth1",
                    NetKind::Ethernet,
                    Some(&format!("172.16.{i}.0/31")),
                    "up",
                ),
            ];
            n.neighbour_limits = Some(NeighbourLimits {
                gc_thresh1: Some(128),
                gc_thresh2: Some(512),
                gc_thresh3: Some(1024),
            });
            n
        })
        .collect();
    assert!(check(&named(nodes.clone()))
        .iter()
        .all(|f| f.rule != NEIGHBOURS));
    // One node with a table of 32: 39 peers do not fit.
    nodes[4].neighbour_limits.as_mut().unwrap().gc_thresh3 = Some(32);
    // One node whose limits are unknown is left out.
    nodes[5].neighbour_limits = None;
    let f = check(&named(nodes));
    let x: Vec<&Finding> = f.iter().filter(|x| x.rule == NEIGHBOURS).collect();
    assert_eq!(x.len(), 1, "{x:#?}");
    assert_eq!(x[0].subject, "n5");
    assert_eq!(x[0].severity, Severity::Warning);
    assert!(
        x[0].message.contains("at least 39 neighbour"),
        "{}",
        x[0].message
    );
    assert!(x[0].message.contains("gc_thresh3 = 32"), "{}", x[0].message);
    assert!(x[0].fix.contains("gc_thresh3=256"), "{}", x[0].fix);
}

#[test]
fn a_thousand_nodes_count_their_peers_per_rail() {
    use fabrik_model::{NeighbourLimits, NetKind};
    // 1000 nodes on two /16 rails (999 peers on each) and a third /16 that only the even
    // nodes join (499 peers there): an odd node needs 1998 entries, an even one 2497.
    let nodes: Vec<Node> = (0..1000u32)
        .map(|i| {
            let mut n = bare_node();
            n.hostname = Some(format!("n{i}"));
            let (hi, lo) = (i / 250, i % 250 + 1);
            n.net_interfaces = vec![
                netif("lo", NetKind::Loopback, Some("127.0.0.1/8"), "unknown"),
                netif(
                    "eth0",
                    NetKind::Ethernet,
                    Some(&format!("10.1.{hi}.{lo}/16")),
                    "up",
                ),
                netif(
                    "eth1",
                    NetKind::Ethernet,
                    Some(&format!("10.2.{hi}.{lo}/16")),
                    "up",
                ),
            ];
            if i % 2 == 0 {
                let rail3 = format!("10.3.{hi}.{lo}/16");
                n.net_interfaces
                    .push(netif("eth2", NetKind::Ethernet, Some(&rail3), "up"));
            }
            let limit = match i {
                7 => 1024,
                8 => 2048,
                _ => 4096,
            };
            n.neighbour_limits = Some(NeighbourLimits {
                gc_thresh1: Some(128),
                gc_thresh2: Some(512),
                gc_thresh3: Some(limit),
            });
            n
        })
        .collect();
    let f = neighbour_tables(&named(nodes));
    let got: Vec<(&str, bool)> = f
        .iter()
        .map(|x| (x.subject.as_str(), x.rule == NEIGHBOURS))
        .collect();
    assert_eq!(got, [("n7", true), ("n8", true)], "{f:#?}");
    assert!(
        f[0].message.contains("at least 1998 neighbour"),
        "{}",
        f[0].message
    );
    assert!(
        f[1].message.contains("at least 2497 neighbour"),
        "{}",
        f[1].message
    );
    assert!(f[1].fix.contains("gc_thresh3=16384"), "{}", f[1].fix);
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
        [
            KERNEL,
            NVIDIA_DRIVER,
            FIRMWARE,
            LINK_RATES,
            PORT_BELOW_PEERS
        ]
        .into_iter()
        .collect()
    );
    assert!(f
        .iter()
        .all(|x| x.subject == "gpu3" || x.subject == "gpu3/mlx5_0:1"));
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
    // r3 has a GPU more than the two others: the job (8 per node) still runs.
    assert!(!by.contains_key(COUNTS));
    // Consequences: the MTU and GID index drifts let the job run; the extra GPU and the
    // rail nobody else can reach do not.
    let sev = |rule: &str| f.iter().find(|x| x.rule == rule).unwrap().severity;
    assert_eq!(sev(MTU), Severity::Warning);
    assert_eq!(sev(GID_INDEX), Severity::Warning);
    assert_eq!(sev(SUBNETS), Severity::Error);
}

#[test]
fn infiniband_beside_roce_is_an_error() {
    let mut nodes: Vec<Node> = (1..=3)
        .map(|i| healthy_ib_node(&format!("gpu{i}")))
        .collect();
    nodes.push(healthy_roce_node("gpu4", 4));
    let f = check(&named(nodes));
    let x: Vec<&Finding> = f.iter().filter(|x| x.rule == LINK_LAYER).collect();
    assert_eq!(x.len(), 1);
    assert_eq!(x[0].subject, "gpu4");
    assert_eq!(x[0].severity, Severity::Error);
    assert!(
        x[0].message
            .contains("`RoCE (Ethernet)` on gpu4, `InfiniBand` on 3 of 4 nodes"),
        "{}",
        x[0].message
    );
    assert_eq!(x[0].evidence.len(), 4);
    // Alike fabrics: nothing.
    let ib = named((1..=2).map(|i| healthy_ib_node(&format!("g{i}"))).collect());
    assert!(check(&ib).iter().all(|x| x.rule != LINK_LAYER));
}

#[test]
fn fewer_gpus_or_rails_is_an_error_with_the_counts() {
    let mut nodes: Vec<Node> = (1..=3)
        .map(|i| healthy_ib_node(&format!("gpu{i}")))
        .collect();
    let gone = nodes[1].gpus.len() - 1;
    nodes[1].gpus.truncate(gone);
    nodes[2].rdma_devices[0].ports[0].state = state("1: DOWN");
    let f = check(&named(nodes));
    let c: Vec<&Finding> = f.iter().filter(|x| x.rule == COUNTS).collect();
    assert_eq!(c.len(), 2, "{c:?}");
    assert!(c.iter().all(|x| x.severity == Severity::Error));
    assert!(c.iter().any(|x| x.subject == "gpu2"
        && x.message
            .contains(&format!("{gone} GPUs where peers have {}", gone + 1))));
    assert!(c
        .iter()
        .any(|x| x.subject == "gpu3" && x.message.contains("active RDMA ports where peers have")));
    assert_eq!(c[0].evidence.len(), 3);
    // Two nodes, no majority: still only the one with fewer.
    let mut two: Vec<Node> = (1..=2).map(|i| healthy_ib_node(&format!("g{i}"))).collect();
    two[0].gpus.pop();
    let f = check(&named(two));
    let c: Vec<&Finding> = f.iter().filter(|x| x.rule == COUNTS).collect();
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].subject, "g1");
}

#[test]
fn a_subnet_is_unroutable_only_without_a_route_or_point_to_point_addressing() {
    let moved = |nodes: &mut Vec<Node>, cidr: &str| {
        nodes[1]
            .net_interfaces
            .iter_mut()
            .find(|i| i.name == "ens11f0np0")
            .unwrap()
            .ipv4 = vec![cidr.into()];
    };
    let base = || -> Vec<Node> {
        (1..=3)
            .map(|i| healthy_roce_node(&format!("r{i}"), i))
            .collect()
    };
    let mut nodes = base();
    moved(&mut nodes, "10.9.0.2/24");
    let f = check(&named(nodes.clone()));
    let s = f.iter().find(|x| x.rule == SUBNETS).unwrap();
    assert_eq!(s.severity, Severity::Error);
    assert!(
        s.message
            .contains("cannot reach r1 (no counterpart for 10.9.0.0/24, 192.168.11.0/24), r3"),
        "{}",
        s.message
    );
    // The same drift through a routed interface is a warning.
    nodes[1]
        .net_interfaces
        .iter_mut()
        .find(|i| i.name == "ens11f0np0")
        .unwrap()
        .default_route = true;
    let f = check(&named(nodes));
    assert_eq!(
        f.iter().find(|x| x.rule == SUBNETS).unwrap().severity,
        Severity::Warning
    );
    // /31 per NIC: an L3 fabric, routed by design.
    let mut nodes = base();
    moved(&mut nodes, "10.9.0.3/31");
    let f = check(&named(nodes));
    assert_eq!(
        f.iter().find(|x| x.rule == SUBNETS).unwrap().severity,
        Severity::Warning
    );
    // A wider prefix that contains the peers' subnet reaches them on-link.
    let mut nodes = base();
    moved(&mut nodes, "192.168.11.2/16");
    let f = check(&named(nodes));
    assert_eq!(
        f.iter().find(|x| x.rule == SUBNETS).unwrap().severity,
        Severity::Warning
    );
}

#[test]
fn the_host_whose_tcp_buffers_are_capped_is_named() {
    let mut nodes: Vec<Node> = (1..=4)
        .map(|i| healthy_ib_node(&format!("gpu{i}")))
        .collect();
    // Debian's and the kernel's defaults on three nodes, a cap of 8 KiB on the fourth.
    for n in &mut nodes {
        n.tcp_buffers = Some(fabrik_model::TcpBuffers {
            rmem: Some([4096, 131072, 6291456]),
            wmem: Some([4096, 16384, 4194304]),
        });
    }
    assert!(check(&named(nodes.clone()))
        .iter()
        .all(|f| f.rule != TCP_BUFFERS));
    nodes[3].tcp_buffers = Some(fabrik_model::TcpBuffers {
        rmem: Some([4096, 8192, 8192]),
        wmem: Some([4096, 8192, 8192]),
    });
    let f = check(&named(nodes.clone()));
    let x: Vec<&Finding> = f.iter().filter(|x| x.rule == TCP_BUFFERS).collect();
    assert_eq!(x.len(), 1, "{x:#?}");
    assert_eq!(x[0].subject, "gpu4");
    assert!(
        x[0].message
            .contains("`8192 / 8192 bytes` on gpu4, `6291456 / 4194304 bytes` on 3 of 4 nodes"),
        "{}",
        x[0].message
    );
    // A node whose limits are unknown (no /proc/sys in the root) is not a vote.
    nodes[3].tcp_buffers = None;
    assert!(check(&named(nodes)).iter().all(|f| f.rule != TCP_BUFFERS));
}

#[test]
fn the_host_whose_socket_interface_mtu_differs_is_named() {
    let mut nodes: Vec<Node> = (1..=4)
        .map(|i| healthy_ib_node(&format!("gpu{i}")))
        .collect();
    assert!(check(&named(nodes.clone()))
        .iter()
        .all(|f| f.rule != SOCKET_MTU));
    // eth0 carries NCCL's bootstrap on these nodes (no ib* interface); gpu2's is at 9000.
    nodes[1]
        .net_interfaces
        .iter_mut()
        .find(|i| i.name == "eth0")
        .unwrap()
        .mtu = Some(9000);
    let f = check(&named(nodes.clone()));
    let x: Vec<&Finding> = f.iter().filter(|x| x.rule == SOCKET_MTU).collect();
    assert_eq!(x.len(), 1, "{x:#?}");
    assert_eq!(x[0].subject, "gpu2");
    assert!(
        x[0].message
            .contains("`9000` on gpu2, `1500` on 3 of 4 nodes"),
        "{}",
        x[0].message
    );
    assert_eq!(x[0].evidence.len(), 4);
    // An interface NCCL would not pick (down) does not count.
    nodes[1]
        .net_interfaces
        .iter_mut()
        .find(|i| i.name == "eth0")
        .unwrap()
        .mtu = Some(1500);
    let mut spare = netif(
        "eth9",
        fabrik_model::NetKind::Ethernet,
        Some("10.9.0.2/24"),
        "down",
    );
    spare.mtu = Some(9000);
    nodes[2].net_interfaces.push(spare);
    assert!(check(&named(nodes)).iter().all(|f| f.rule != SOCKET_MTU));
}

#[test]
fn a_port_below_its_model_on_the_other_nodes_is_named_with_what_fell_short() {
    let mut nodes: Vec<Node> = (1..=3)
        .map(|i| healthy_ib_node(&format!("gpu{i}")))
        .collect();
    assert!(check(&named(nodes.clone()))
        .iter()
        .all(|f| f.rule != PORT_BELOW_PEERS));
    // gpu3's mlx5_5 lost three lanes; the node has no other slow port to compare with.
    nodes[2].rdma_devices[5].ports[0].rate = rate("100 Gb/sec (1X NDR)");
    let f = check(&named(nodes.clone()));
    let x: Vec<&Finding> = f.iter().filter(|x| x.rule == PORT_BELOW_PEERS).collect();
    assert_eq!(x.len(), 1, "{x:#?}");
    assert_eq!(x[0].subject, "gpu3/mlx5_5:1");
    assert!(
        x[0].message.contains("1X of 4X lanes trained")
            && x[0].message.contains("where 23 of the job's 24"),
        "{}",
        x[0].message
    );
    // Two nodes, one all at HDR: the slower is named, port by port.
    let mut two: Vec<Node> = (1..=2).map(|i| healthy_ib_node(&format!("g{i}"))).collect();
    for d in &mut two[0].rdma_devices {
        d.ports[0].rate = rate("200 Gb/sec (4X HDR)");
    }
    let f = check(&named(two));
    let x: Vec<&Finding> = f.iter().filter(|x| x.rule == PORT_BELOW_PEERS).collect();
    assert_eq!(x.len(), 8);
    assert!(
        x.iter()
            .all(|f| f.subject.starts_with("g1/")
                && f.message.contains("lanes at HDR instead of NDR"))
    );
    // A software device is never judged by its rate.
    let mut soft: Vec<Node> = (1..=2).map(|i| healthy_ib_node(&format!("s{i}"))).collect();
    soft[0].rdma_devices[0].name = "rxe0".into();
    soft[1].rdma_devices[0].name = "rxe0".into();
    soft[0].rdma_devices[0].ports[0].rate = rate("10 Gb/sec (1X QDR)");
    assert!(check(&named(soft))
        .iter()
        .all(|f| f.rule != PORT_BELOW_PEERS));
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
