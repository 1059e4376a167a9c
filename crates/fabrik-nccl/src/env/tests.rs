#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use fabrik_model::*;

use super::*;

mod profiles;

pub(crate) fn iface(name: &str, ip: &[&str], default_route: bool) -> NetInterface {
    NetInterface {
        name: name.into(),
        kind: NetKind::Ethernet,
        mtu: Some(9000),
        operstate: Some("up".into()),
        speed_mbps: None,
        mac: None,
        ipv4: ip.iter().map(|s| s.to_string()).collect(),
        ipv6: vec![],
        driver: None,
        pci: None,
        rdma_device: None,
        default_route,
        ecn: None,
        pfc: None,
        statistics: BTreeMap::new(),
        ..Default::default()
    }
}

fn port(n: u32, state: &str, layer: &str, netdev: Option<&str>, gids: Vec<Gid>) -> Port {
    Port {
        number: n,
        state: Some(StateValue::parse(state)),
        phys_state: Some(StateValue::parse(if state.contains("ACTIVE") {
            "5: LinkUp"
        } else {
            "3: Disabled"
        })),
        rate: Some(LinkRate {
            text: "400 Gb/sec (4X NDR)".into(),
            gbps: Some(400.0),
            width: Some(4),
            speed: Some("NDR".into()),
        }),
        link_layer: Some(LinkLayer::parse(layer)),
        netdev: netdev.map(Into::into),
        gids,
        ..Port::default()
    }
}

fn gid(index: u32, ty: &str, ipv4: Option<&str>, netdev: &str) -> Gid {
    Gid {
        index,
        // As sysfs writes an IPv4-mapped GID: `::ffff:a.b.c.d` in hex groups.
        gid: ipv4.map_or("fe80:0000:0000:0000:0000:5eff:fe00:0001".into(), |ip| {
            let o = ip.parse::<std::net::Ipv4Addr>().unwrap().octets();
            format!(
                "0000:0000:0000:0000:0000:ffff:{:02x}{:02x}:{:02x}{:02x}",
                o[0], o[1], o[2], o[3]
            )
        }),
        gid_type: Some(GidType::parse(ty)),
        netdev: Some(netdev.into()),
        ipv4: ipv4.map(Into::into),
    }
}

fn dev(name: &str, ports: Vec<Port>) -> RdmaDevice {
    RdmaDevice {
        name: name.into(),
        ports,
        ..RdmaDevice::default()
    }
}

pub(crate) fn ib_node() -> Node {
    Node {
        rdma_devices: vec![
            dev(
                "mlx5_10",
                vec![port(1, "4: ACTIVE", "InfiniBand", None, vec![])],
            ),
            dev(
                "mlx5_0",
                vec![port(1, "4: ACTIVE", "InfiniBand", None, vec![])],
            ),
            dev(
                "mlx5_1",
                vec![port(1, "1: DOWN", "InfiniBand", None, vec![])],
            ),
        ],
        net_interfaces: vec![
            iface("eno1", &["10.0.0.5/24"], true),
            iface("docker0", &["172.17.0.1/16"], false),
        ],
        dev_infiniband: Some(vec!["uverbs0".into(), "uverbs1".into(), "rdma_cm".into()]),
        memlock: Some(MemlockLimit {
            soft_bytes: None,
            hard_bytes: None,
        }),
        ..Node::default()
    }
}

/// Two RoCE ports with the IPv4 RoCE v2 GID at index 3, PFC on priority 3 with DSCP trust, and
/// a front-end port carrying the default route.
pub(crate) fn roce_node() -> Node {
    let mut e0 = iface("ens1f0np0", &["192.168.1.10/24"], false);
    let mut e1 = iface("ens1f1np1", &["192.168.2.10/24"], false);
    for (i, e) in [&mut e0, &mut e1].into_iter().enumerate() {
        e.pfc = Some(Pfc {
            enabled_priorities: vec![3],
            trust: Some("dscp".into()),
            source: format!("fabrik/cmd/mlnx_qos-ens1f{i}.txt"),
        });
    }
    let front = iface("eth0", &["10.0.0.5/24"], true);
    let gids = |netdev: &str, ip: &str| {
        vec![
            gid(0, "IB/RoCE v1", None, netdev),
            gid(1, "RoCE v2", None, netdev),
            gid(2, "IB/RoCE v1", Some(ip), netdev),
            gid(3, "RoCE v2", Some(ip), netdev),
        ]
    };
    Node {
        rdma_devices: vec![
            dev(
                "mlx5_0",
                vec![port(
                    1,
                    "4: ACTIVE",
                    "Ethernet",
                    Some("ens1f0np0"),
                    gids("ens1f0np0", "192.168.1.10"),
                )],
            ),
            dev(
                "mlx5_1",
                vec![port(
                    1,
                    "4: ACTIVE",
                    "Ethernet",
                    Some("ens1f1np1"),
                    gids("ens1f1np1", "192.168.2.10"),
                )],
            ),
            dev(
                "mlx5_2",
                vec![port(
                    1,
                    "4: ACTIVE",
                    "Ethernet",
                    Some("eth0"),
                    gids("eth0", "10.0.0.5"),
                )],
            ),
        ],
        net_interfaces: vec![front, e0, e1],
        dev_infiniband: Some(vec!["uverbs0".into()]),
        ..Node::default()
    }
}

pub(crate) fn socket_node() -> Node {
    Node {
        net_interfaces: vec![
            NetInterface {
                kind: NetKind::Loopback,
                ..iface("lo", &["127.0.0.1/8"], false)
            },
            iface("eth0", &["172.18.0.3/16"], true),
        ],
        ..Node::default()
    }
}

fn gen(profile: Profile, node: Option<&Node>) -> Env {
    let empty = BTreeMap::new();
    generate(&Request {
        profile,
        node,
        existing: &empty,
        keep_env: false,
    })
    .unwrap()
}

fn val<'a>(env: &'a Env, name: &str) -> Option<&'a str> {
    env.var(name).map(|v| v.value.as_str())
}

fn a_gpu() -> Gpu {
    Gpu {
        pci: PciFunction::default(),
        model: Some("NVIDIA H100 80GB HBM3".into()),
        uuid: None,
        minor: Some(0),
        ..Default::default()
    }
}

#[test]
fn auto_on_infiniband_lists_active_ports_in_natural_order() {
    // A GPU node (a node without GPUs is warned about, see below).
    let mut node = ib_node();
    node.gpus.push(a_gpu());
    let env = gen(Profile::Auto, Some(&node));
    assert_eq!(env.profile, "generic-ib");
    assert_eq!(env.transport, Transport::Infiniband);
    assert_eq!(val(&env, "NCCL_IB_HCA"), Some("=mlx5_0:1,mlx5_10:1"));
    assert_eq!(val(&env, "NCCL_SOCKET_IFNAME"), Some("=eno1"));
    assert_eq!(val(&env, "NCCL_IB_DISABLE"), None);
    assert!(env
        .notes
        .iter()
        .any(|n| n.message.contains("mlx5_1:1 is not active")));
    assert!(env.runtime.needs_rdma_devices && env.runtime.ipc_lock);
    assert_eq!(env.warnings().count(), 0, "{:?}", env.notes);
}

#[test]
fn auto_on_roce_derives_gid_and_traffic_class() {
    let env = gen(Profile::Auto, Some(&roce_node()));
    assert_eq!(env.transport, Transport::Roce);
    assert_eq!(val(&env, "NCCL_IB_HCA"), Some("=mlx5_0:1,mlx5_1:1"));
    assert_eq!(val(&env, "NCCL_IB_GID_INDEX"), Some("3"));
    assert_eq!(val(&env, "NCCL_IB_TC"), Some("106"));
    assert_eq!(val(&env, "NCCL_SOCKET_IFNAME"), Some("=eth0"));
    assert!(env.summary.contains("GID index 3"), "{}", env.summary);
}

#[test]
fn roce_pcp_trust_sets_service_level_instead() {
    let mut node = roce_node();
    for i in &mut node.net_interfaces {
        if let Some(p) = &mut i.pfc {
            p.trust = Some("pcp".into());
            p.enabled_priorities = vec![4];
        }
    }
    let env = gen(Profile::GenericRoce, Some(&node));
    assert_eq!(val(&env, "NCCL_IB_SL"), Some("4"));
    assert_eq!(val(&env, "NCCL_IB_TC"), None);
}

#[test]
fn roce_dscp_priority_four_gives_dscp_34() {
    let mut node = roce_node();
    for i in &mut node.net_interfaces {
        if let Some(p) = &mut i.pfc {
            p.enabled_priorities = vec![4];
        }
    }
    let env = gen(Profile::GenericRoce, Some(&node));
    // DSCP 34 (AF41) << 2 | ECT(0)
    assert_eq!(val(&env, "NCCL_IB_TC"), Some("138"));
}

#[test]
fn roce_without_pfc_facts_says_so_and_sets_no_tc() {
    let mut node = roce_node();
    for i in &mut node.net_interfaces {
        i.pfc = None;
    }
    let env = gen(Profile::GenericRoce, Some(&node));
    assert_eq!(val(&env, "NCCL_IB_TC"), None);
    assert!(env.warnings().any(|n| n.message.contains("PFC settings")));
}

#[test]
fn roce_gid_index_that_differs_between_ports_is_not_guessed() {
    let mut node = roce_node();
    let p = &mut node.rdma_devices[1].ports[0];
    p.gids.retain(|g| g.index != 3);
    p.gids
        .push(gid(5, "RoCE v2", Some("192.168.2.10"), "ens1f1np1"));
    let env = gen(Profile::GenericRoce, Some(&node));
    assert_eq!(val(&env, "NCCL_IB_GID_INDEX"), None);
    let w: Vec<_> = env.warnings().map(|n| n.message.clone()).collect();
    assert!(
        w.iter()
            .any(|m| m.contains("mlx5_0:1: 3") && m.contains("mlx5_1:1: 5")),
        "{w:?}"
    );
}

#[test]
fn roce_gid_index_is_the_one_nccl_selects_even_with_a_vlan_address_first() {
    // A VLAN on the port put its GIDs (2, 3) before the netdev's own (now 4, 5). NCCL's
    // ncclIbGetGidIndex takes the first RoCE v2 IPv4 entry, 3, whatever its netdev; fabrik used
    // to say 5 here (the netdev's own address) while the doctor said 3.
    let mut node = roce_node();
    for d in &mut node.rdma_devices {
        let p = &mut d.ports[0];
        let nd = p.netdev.clone().unwrap();
        let own: Vec<Gid> = p
            .gids
            .iter()
            .filter(|g| g.ipv4.is_some())
            .cloned()
            .collect();
        p.gids.retain(|g| g.ipv4.is_none());
        p.gids.push(gid(
            2,
            "IB/RoCE v1",
            Some("10.0.100.5"),
            &format!("{nd}.100"),
        ));
        p.gids
            .push(gid(3, "RoCE v2", Some("10.0.100.5"), &format!("{nd}.100")));
        for (k, mut g) in own.into_iter().enumerate() {
            g.index = 4 + k as u32;
            p.gids.push(g);
        }
    }
    let env = gen(Profile::GenericRoce, Some(&node));
    assert_eq!(val(&env, "NCCL_IB_GID_INDEX"), Some("3"));
    for d in &node.rdma_devices {
        assert_eq!(
            fabrik_model::gid::policy::recommended_gid_index(&d.ports[0]),
            Some(3)
        );
    }
}

#[test]
fn usable_rdma_is_never_disabled_by_auto() {
    for node in [ib_node(), roce_node()] {
        let env = gen(Profile::Auto, Some(&node));
        assert_eq!(val(&env, "NCCL_IB_DISABLE"), None);
    }
}

#[test]
fn all_ports_down_falls_back_to_sockets_with_reason() {
    let mut node = ib_node();
    for d in &mut node.rdma_devices {
        for p in &mut d.ports {
            p.state = Some(StateValue::parse("1: DOWN"));
        }
    }
    let env = gen(Profile::Auto, Some(&node));
    assert_eq!(env.transport, Transport::Socket);
    assert_eq!(val(&env, "NCCL_IB_DISABLE"), Some("1"));
    assert!(env
        .var("NCCL_IB_DISABLE")
        .unwrap()
        .reason
        .contains("no RDMA port is usable"));
}

#[test]
fn soft_roce_is_not_used_for_jobs() {
    let mut node = socket_node();
    node.rdma_devices = vec![dev(
        "rxe0",
        vec![port(1, "4: ACTIVE", "Ethernet", Some("eth0"), vec![])],
    )];
    let env = gen(Profile::Auto, Some(&node));
    assert_eq!(env.transport, Transport::Socket);
    assert!(env
        .notes
        .iter()
        .any(|n| n.message.contains("rxe0 is a software RDMA device")));
}

#[test]
fn efa_devices_select_the_aws_profile() {
    let mut node = socket_node();
    node.rdma_devices = (0..4)
        .map(|i| {
            dev(
                &format!("efa_{i}"),
                vec![port(1, "4: ACTIVE", "Unspecified", None, vec![])],
            )
        })
        .collect();
    let env = gen(Profile::Auto, Some(&node));
    assert_eq!(env.profile, "aws-efa");
    assert_eq!(env.transport, Transport::Efa);
    assert_eq!(
        env.runtime
            .k8s_resources
            .get("vpc.amazonaws.com/efa")
            .map(String::as_str),
        Some("4")
    );
    // Modern aws-ofi-nccl needs none of the legacy variables.
    assert_eq!(val(&env, "FI_EFA_USE_DEVICE_RDMA"), None);
    assert_eq!(val(&env, "NCCL_PROTO"), None);
}

/// rdma-core 27+ names EFA devices after their PCI slot (`rdmap115s0` on p5): the driver or
/// Amazon's EFA PCI ids tell, and Amazon's ENA (0x1d0f:0xec20) is no EFA.
#[test]
fn renamed_efa_devices_are_known_by_driver_or_pci_ids() {
    let pci = |driver: Option<&str>, device: &str| PciFunction {
        driver: driver.map(Into::into),
        vendor: Some("0x1d0f".into()),
        device: Some(device.into()),
        ..PciFunction::default()
    };
    for (driver, device) in [(Some("efa"), "0xefa1"), (None, "0xefa2")] {
        let mut node = socket_node();
        let mut d = dev(
            "rdmap115s0",
            vec![port(1, "4: ACTIVE", "Unspecified", None, vec![])],
        );
        d.pci = Some(pci(driver, device));
        node.rdma_devices = vec![d];
        let env = gen(Profile::Auto, Some(&node));
        assert_eq!(env.profile, "aws-efa", "{driver:?} {device}");
        assert_eq!(env.transport, Transport::Efa);
    }
    let mut node = socket_node();
    let mut d = dev(
        "rdmap0s6",
        vec![port(1, "4: ACTIVE", "Unspecified", None, vec![])],
    );
    d.pci = Some(pci(Some("ena"), "0xec20"));
    node.rdma_devices = vec![d];
    assert_ne!(gen(Profile::Auto, Some(&node)).profile, "aws-efa");
}

/// An iWARP device (Intel i40iw, node_type `4: RNIC`) reports link layer InfiniBand on older
/// kernels, but NCCL's IB transport cannot use RDMA over TCP: it stays out of NCCL_IB_HCA.
#[test]
fn iwarp_devices_stay_out_of_nccl_ib_hca_with_a_note() {
    let mut node = ib_node();
    let mut iw = dev(
        "i40iw0",
        vec![port(1, "4: ACTIVE", "InfiniBand", None, vec![])],
    );
    iw.node_type = Some("4: RNIC".into());
    node.rdma_devices.push(iw);
    let env = gen(Profile::Auto, Some(&node));
    assert_eq!(val(&env, "NCCL_IB_HCA"), Some("=mlx5_0:1,mlx5_10:1"));
    assert!(env.notes.iter().any(|n| n
        .message
        .contains("i40iw0 is an iWARP device (node_type 4: RNIC)")));

    // By node type alone: irdma in iWARP mode keeps the irdma name.
    let mut node = socket_node();
    let mut iw = dev(
        "irdma0",
        vec![port(1, "4: ACTIVE", "InfiniBand", None, vec![])],
    );
    iw.node_type = Some("4: RNIC".into());
    node.rdma_devices = vec![iw];
    let env = gen(Profile::Auto, Some(&node));
    assert_eq!(val(&env, "NCCL_IB_HCA"), None);
    assert_eq!(env.transport, Transport::Socket);
}

#[test]
fn memlock_and_missing_uverbs_are_warned_for_rdma() {
    let mut node = ib_node();
    node.memlock = Some(MemlockLimit {
        soft_bytes: Some(65536),
        hard_bytes: Some(65536),
    });
    node.dev_infiniband = Some(vec!["rdma_cm".into()]);
    let env = gen(Profile::Auto, Some(&node));
    let w: Vec<_> = env.warnings().map(|n| n.message.clone()).collect();
    assert!(w.iter().any(|m| m.contains("64 KiB")), "{w:?}");
    assert!(w.iter().any(|m| m.contains("no uverbs")), "{w:?}");
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Arbitrary PFC priorities and trust strings never panic and never set both TC and SL.
        #[test]
        fn qos_never_panics(prios in proptest::collection::vec(0u8..8, 0..4), trust in "[a-z]{0,5}") {
            let mut node = roce_node();
            for i in &mut node.net_interfaces {
                if let Some(p) = &mut i.pfc {
                    p.enabled_priorities = prios.clone();
                    p.trust = Some(trust.clone());
                }
            }
            let env = gen(Profile::GenericRoce, Some(&node));
            prop_assert!(!(env.var("NCCL_IB_TC").is_some() && env.var("NCCL_IB_SL").is_some()));
        }
    }
}

#[test]
fn default_route_roce_port_with_fabric_pfc_stays_and_is_flagged() {
    // A dual-port NIC whose first port also carries the default route, PFC alike on both.
    let mut node = roce_node();
    node.rdma_devices.retain(|d| d.name != "mlx5_2");
    node.net_interfaces.retain(|i| i.name != "eth0");
    node.net_interfaces[0].default_route = true;
    let env = gen(Profile::Auto, Some(&node));
    assert_eq!(val(&env, "NCCL_IB_HCA"), Some("=mlx5_0:1,mlx5_1:1"));
    assert_eq!(val(&env, "NCCL_SOCKET_IFNAME"), Some("=ens1f0np0"));
    assert_eq!(val(&env, "NCCL_IB_TC"), Some("106"));
    assert!(env.warnings().any(|n| n
        .message
        .contains("mlx5_0:1 (ens1f0np0) also carries the default route")));
}

#[test]
fn front_end_roce_port_without_pfc_is_left_out() {
    let env = gen(Profile::Auto, Some(&roce_node()));
    assert!(env.notes.iter().any(|n| n
        .message
        .contains("mlx5_2:1 (eth0) carries the default route and lacks the PFC")));
}

mod node_props {
    use super::*;
    use proptest::prelude::*;

    fn arb_port() -> impl Strategy<Value = Port> {
        (
            1u32..3,
            prop::sample::select(vec!["4: ACTIVE", "1: DOWN", "2: INIT", "garbage", ""]),
            prop::sample::select(vec!["InfiniBand", "Ethernet", "Unknown", ""]),
            prop::option::of(prop::sample::select(vec!["eth0", "ens1", "ib0"])),
            prop::collection::vec(
                (
                    0u32..8,
                    prop::sample::select(vec!["RoCE v2", "IB/RoCE v1", "x"]),
                    prop::option::of("10\\.0\\.0\\.[0-9]"),
                ),
                0..4,
            ),
        )
            .prop_map(|(n, st, ll, nd, gids)| Port {
                number: n,
                state: Some(StateValue::parse(st)),
                link_layer: Some(LinkLayer::parse(ll)),
                netdev: nd.map(Into::into),
                gids: gids
                    .into_iter()
                    .map(|(i, t, ip)| gid(i, t, ip.as_deref(), "eth0"))
                    .collect(),
                ..Port::default()
            })
    }

    proptest! {
        /// Any mix of devices, ports, GIDs and interfaces yields an environment (auto never
        /// fails with a node), and NCCL_IB_DISABLE is set only when no port is usable.
        #[test]
        fn auto_never_panics_and_never_disables_usable_rdma(
            devs in prop::collection::vec(
                (prop::sample::select(vec!["mlx5_0", "mlx5_1", "rxe0", "efa_0", "bnxt_re0"]), prop::collection::vec(arb_port(), 0..3)),
                0..4,
            ),
            ifs in prop::collection::vec((prop::sample::select(vec!["eth0", "ens1", "ib0", "docker0", "lo"]), any::<bool>()), 0..4),
        ) {
            let node = Node {
                rdma_devices: devs.into_iter().map(|(n, p)| dev(n, p)).collect(),
                net_interfaces: ifs.into_iter().map(|(n, d)| iface(n, &["10.0.0.1/24"], d)).collect(),
                ..Node::default()
            };
            let env = gen(Profile::Auto, Some(&node));
            let inv = fabric::inventory(&node);
            if inv.has_usable() {
                prop_assert!(env.var("NCCL_IB_DISABLE").is_none());
            }
            prop_assert!(crate::env::render::shell(&env).is_ok());
        }
    }
}

#[test]
fn hcas_far_from_every_gpu_are_left_out_when_others_are_near() {
    let mut node = ib_node();
    let gpu = |addr: &str| Gpu {
        pci: PciFunction {
            address: addr.into(),
            ..PciFunction::default()
        },
        model: None,
        uuid: None,
        minor: None,
        ..Default::default()
    };
    node.gpus = vec![gpu("0000:1b:00.0"), gpu("0000:9a:00.0")];
    let path = |g: &str, nic: &str, t: PathType| GpuNicPath {
        gpu: g.into(),
        nic: nic.into(),
        nic_pci: String::new(),
        path_type: Some(t),
        same_numa: None,
    };
    node.gpu_nic_paths = vec![
        path("0000:1b:00.0", "mlx5_0", PathType::PIX),
        path("0000:9a:00.0", "mlx5_0", PathType::SYS),
        path("0000:1b:00.0", "mlx5_10", PathType::NODE),
        path("0000:9a:00.0", "mlx5_10", PathType::SYS),
    ];
    let env = gen(Profile::Auto, Some(&node));
    assert_eq!(val(&env, "NCCL_IB_HCA"), Some("=mlx5_0:1"));
    assert!(env.notes.iter().any(|n| n
        .message
        .contains("mlx5_10:1 is not near any GPU (closest path NODE)")));
    // Without any near HCA nothing is dropped.
    node.gpu_nic_paths.retain(|p| p.nic != "mlx5_0");
    let env = gen(Profile::Auto, Some(&node));
    assert_eq!(val(&env, "NCCL_IB_HCA"), Some("=mlx5_0:1,mlx5_10:1"));
}
