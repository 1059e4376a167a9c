//! Nodes built in code for the rules' unit tests: a healthy base plus small mutations, the same
//! shape as the sysfs fixtures under `fixtures/doctor/`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use fabrik_model::*;

pub fn state(raw: &str) -> Option<StateValue> {
    Some(StateValue::parse(raw))
}

pub fn rate(text: &str) -> Option<LinkRate> {
    // Mirrors the kernel's `NNN Gb/sec (WX SPEED)` text.
    let gbps = text
        .split_whitespace()
        .next()
        .and_then(|n| n.parse::<f64>().ok());
    let inner = text
        .split_once('(')
        .and_then(|(_, r)| r.strip_suffix(')'))
        .unwrap_or("");
    let mut it = inner.split_whitespace();
    let width = it
        .next()
        .and_then(|w| w.strip_suffix('X'))
        .and_then(|w| w.parse().ok());
    let speed = it.next().map(str::to_string);
    Some(LinkRate {
        text: text.to_string(),
        gbps,
        width,
        speed,
    })
}

pub fn pci(address: &str, numa: i32, path: &[&str]) -> PciFunction {
    PciFunction {
        address: address.to_string(),
        vendor: Some("0x15b3".into()),
        device: Some("0x101b".into()),
        class: Some("0x020700".into()),
        numa_node: Some(numa),
        driver: Some("mlx5_core".into()),
        link: PciLink {
            current_speed: Some("16.0 GT/s PCIe".into()),
            current_speed_gts: Some(16.0),
            current_width: Some(16),
            max_speed: Some("16.0 GT/s PCIe".into()),
            max_speed_gts: Some(16.0),
            max_width: Some(16),
        },
        physfn: None,
        path: path.iter().map(|s| s.to_string()).collect(),
        relaxed_ordering: None,
    }
}

pub fn ib_port(number: u32, rate_text: &str) -> Port {
    Port {
        number,
        state: state("4: ACTIVE"),
        phys_state: state("5: LinkUp"),
        rate: rate(rate_text),
        link_layer: Some(LinkLayer::Infiniband),
        lid: Some("0x12".into()),
        sm_lid: Some("0x1".into()),
        active_mtu: None,
        max_mtu: None,
        netdev: None,
        gids: vec![Gid {
            index: 0,
            gid: "fe80:0000:0000:0000:0c42:a103:00f1:2a3c".into(),
            gid_type: Some(GidType::IbRoceV1),
            netdev: None,
            ipv4: None,
        }],
        counters: zero_counters(),
        hw_counters: BTreeMap::new(),
    }
}

pub fn zero_counters() -> BTreeMap<String, u64> {
    [
        "symbol_error",
        "link_downed",
        "link_error_recovery",
        "port_rcv_errors",
        "port_rcv_remote_physical_errors",
        "port_xmit_discards",
        "port_xmit_data",
        "port_rcv_data",
    ]
    .iter()
    .map(|k| (k.to_string(), 0))
    .collect()
}

pub fn roce_port(number: u32, netdev: &str, ip: &str) -> Port {
    let mapped = ipv4_mapped_gid(ip);
    Port {
        number,
        state: state("4: ACTIVE"),
        phys_state: state("5: LinkUp"),
        rate: rate("100 Gb/sec (2X HDR)"),
        link_layer: Some(LinkLayer::Ethernet),
        lid: Some("0x0".into()),
        sm_lid: Some("0x0".into()),
        active_mtu: None,
        max_mtu: None,
        netdev: Some(netdev.to_string()),
        gids: vec![
            Gid {
                index: 0,
                gid: "fe80:0000:0000:0000:1270:fdff:fe2c:3a10".into(),
                gid_type: Some(GidType::IbRoceV1),
                netdev: Some(netdev.into()),
                ipv4: None,
            },
            Gid {
                index: 1,
                gid: "fe80:0000:0000:0000:1270:fdff:fe2c:3a10".into(),
                gid_type: Some(GidType::RoceV2),
                netdev: Some(netdev.into()),
                ipv4: None,
            },
            Gid {
                index: 2,
                gid: mapped.clone(),
                gid_type: Some(GidType::IbRoceV1),
                netdev: Some(netdev.into()),
                ipv4: Some(ip.into()),
            },
            Gid {
                index: 3,
                gid: mapped,
                gid_type: Some(GidType::RoceV2),
                netdev: Some(netdev.into()),
                ipv4: Some(ip.into()),
            },
        ],
        counters: zero_counters(),
        hw_counters: [
            "np_cnp_sent",
            "rp_cnp_handled",
            "out_of_sequence",
            "packet_seq_err",
            "local_ack_timeout_err",
        ]
        .iter()
        .map(|k| (k.to_string(), 0))
        .collect(),
    }
}

fn ipv4_mapped_gid(ip: &str) -> String {
    let o: Vec<u8> = ip.split('.').map(|x| x.parse().unwrap()).collect();
    assert_eq!(o.len(), 4);
    format!(
        "0000:0000:0000:0000:0000:ffff:{:02x}{:02x}:{:02x}{:02x}",
        o[0], o[1], o[2], o[3]
    )
}

pub fn hca(name: &str, address: &str, numa: i32, path: &[&str], ports: Vec<Port>) -> RdmaDevice {
    RdmaDevice {
        name: name.into(),
        node_type: Some("1: CA".into()),
        node_guid: Some("0c42:a103:00f1:2a3c".into()),
        sys_image_guid: Some("0c42:a103:00f1:2a3c".into()),
        fw_ver: Some("28.39.1002".into()),
        hca_type: Some("MT4129".into()),
        board_id: Some("MT_0000000838".into()),
        pci: Some(pci(address, numa, path)),
        ports,
    }
}

pub fn gpu(address: &str, numa: i32, path: &[&str]) -> Gpu {
    let mut p = pci(address, numa, path);
    p.vendor = Some("0x10de".into());
    p.device = Some("0x2330".into());
    p.class = Some("0x030200".into());
    p.driver = Some("nvidia".into());
    p.link.current_speed = Some("32.0 GT/s PCIe".into());
    p.link.current_speed_gts = Some(32.0);
    p.link.max_speed = Some("32.0 GT/s PCIe".into());
    p.link.max_speed_gts = Some(32.0);
    Gpu {
        pci: p,
        model: Some("NVIDIA H100 80GB HBM3".into()),
        uuid: None,
        minor: Some(0),
    }
}

pub fn netif(name: &str, kind: NetKind, ip: Option<&str>, operstate: &str) -> NetInterface {
    NetInterface {
        name: name.into(),
        kind,
        mtu: Some(1500),
        operstate: Some(operstate.into()),
        speed_mbps: None,
        mac: None,
        ipv4: ip.map(|s| vec![s.to_string()]).unwrap_or_default(),
        ipv6: vec![],
        driver: None,
        pci: None,
        rdma_device: None,
        default_route: false,
        ecn: None,
        pfc: None,
        statistics: BTreeMap::new(),
    }
}

fn host_basics(hostname: &str) -> Node {
    let mut lo = netif("lo", NetKind::Loopback, Some("127.0.0.1/8"), "unknown");
    lo.mtu = Some(65536);
    let mut eth0 = netif("eth0", NetKind::Ethernet, Some("10.0.0.11/24"), "up");
    eth0.default_route = true;
    eth0.driver = Some("ixgbe".into());
    Node {
        schema_version: SCHEMA_VERSION,
        root: "/".into(),
        hostname: Some(hostname.into()),
        os: OsInfo {
            kernel: Some("5.15.0-105-generic".into()),
            kernel_cmdline: Some("BOOT_IMAGE=/vmlinuz ro quiet".into()),
            distro: Some("Ubuntu 22.04.4 LTS".into()),
            virtualized: Some(false),
        },
        net_interfaces: vec![eth0, lo],
        memlock: Some(MemlockLimit {
            soft_bytes: None,
            hard_bytes: None,
        }),
        iommu: IommuInfo {
            cmdline_flags: vec![],
            groups_present: Some(false),
            enabled: Some(false),
            passthrough: Some(false),
        },
        versions: Versions {
            nvidia_driver: Some("535.161.08".into()),
            ofed: Some("MLNX_OFED_LINUX-23.10-1.1.9.0".into()),
            rdma_core: Some("2307mlnx47".into()),
            nic_driver: Some("23.10-1.1.9".into()),
            nccl: None,
            nvidia_open_kernel_module: Some(false),
        },
        ..Default::default()
    }
}

/// This machine's shape: one virtio NIC, no GPU, no RDMA.
pub fn bare_node() -> Node {
    let mut n = host_basics("bare");
    n.memlock = Some(MemlockLimit {
        soft_bytes: Some(8 * 1024 * 1024),
        hard_bytes: Some(8 * 1024 * 1024),
    });
    n.versions = Versions::default();
    n.os.virtualized = Some(true);
    n
}

/// 8 GPUs, 8 NDR HCAs each under the same PCIe switch as one GPU (PIX), peer memory loaded.
pub fn healthy_ib_node(hostname: &str) -> Node {
    let mut n = host_basics(hostname);
    for i in 0..8u32 {
        let numa = if i < 4 { 0 } else { 1 };
        let root = format!("0000:{:02x}:01.0", 0x10 * (i + 1));
        let sw = format!("0000:{:02x}:00.0", 0x10 * (i + 1) + 1);
        let gpu_addr = format!("0000:{:02x}:00.0", 0x10 * (i + 1) + 3);
        let nic_addr = format!("0000:{:02x}:00.0", 0x10 * (i + 1) + 2);
        let mut g = gpu(&gpu_addr, numa, &[&root, &sw, &gpu_addr]);
        g.minor = Some(i);
        n.gpus.push(g);
        let name = format!("mlx5_{i}");
        n.rdma_devices.push(hca(
            &name,
            &nic_addr,
            numa,
            &[&root, &sw, &nic_addr],
            vec![ib_port(1, "400 Gb/sec (4X NDR)")],
        ));
        n.gpu_nic_paths.push(GpuNicPath {
            gpu: gpu_addr.clone(),
            nic: name.clone(),
            nic_pci: nic_addr.clone(),
            path_type: Some(PathType::PIX),
            same_numa: Some(true),
        });
    }
    // Every other pair is at least NODE/SYS away; only the nearest NIC matters to the rules.
    let gpus: Vec<String> = n.gpus.iter().map(|g| g.pci.address.clone()).collect();
    let nics: Vec<(String, String)> = n
        .rdma_devices
        .iter()
        .map(|d| (d.name.clone(), d.pci.as_ref().unwrap().address.clone()))
        .collect();
    for (gi, g) in gpus.iter().enumerate() {
        for (ni, (name, addr)) in nics.iter().enumerate() {
            if gi != ni {
                let same = (gi < 4) == (ni < 4);
                n.gpu_nic_paths.push(GpuNicPath {
                    gpu: g.clone(),
                    nic: name.clone(),
                    nic_pci: addr.clone(),
                    path_type: Some(if same { PathType::NODE } else { PathType::SYS }),
                    same_numa: Some(same),
                });
            }
        }
    }
    for m in [
        "mlx5_core",
        "mlx5_ib",
        "ib_uverbs",
        "nvidia",
        "nvidia_peermem",
    ] {
        n.modules.push(KernelModule {
            name: m.into(),
            refcount: Some(0),
            version: None,
        });
    }
    let mut dev: Vec<String> = (0..8).map(|i| format!("uverbs{i}")).collect();
    dev.push("rdma_cm".into());
    n.dev_infiniband = Some(dev);
    n
}

/// Two single-port RoCE NICs (rails on 192.168.1x.0/24), PFC on priority 3, ECN on, MTU 9000.
pub fn healthy_roce_node(hostname: &str, host_octet: u8) -> Node {
    let mut n = host_basics(hostname);
    for i in 0..2u32 {
        let addr = format!("0000:{:02x}:00.0", 0x30 + i);
        let root = format!("0000:{:02x}:01.0", 0x20 + i);
        let name = format!("mlx5_{i}");
        let mut ports = vec![];
        let netdev = format!("ens{}f0np0", 10 + i);
        let ip = format!("192.168.{}.{host_octet}", 10 + i);
        ports.push(roce_port(1, &netdev, &ip));
        let mut d = hca(&name, &addr, 0, &[&root, &addr], ports);
        d.hca_type = Some("MT4125".into());
        d.fw_ver = Some("22.39.1002".into());
        n.rdma_devices.push(d);
        let mut nif = netif(&netdev, NetKind::Ethernet, Some(&format!("{ip}/24")), "up");
        nif.mtu = Some(9000);
        nif.driver = Some("mlx5_core".into());
        nif.rdma_device = Some(name.clone());
        nif.pfc = Some(Pfc {
            enabled_priorities: vec![3],
            trust: Some("dscp".into()),
            source: format!("fabrik/cmd/mlnx_qos-{netdev}.txt"),
        });
        nif.ecn = Some(RoceEcn {
            np_enabled: (0..8).map(|p| (p, true)).collect(),
            rp_enabled: (0..8).map(|p| (p, true)).collect(),
        });
        n.net_interfaces.push(nif);
    }
    for m in ["mlx5_core", "mlx5_ib", "ib_uverbs"] {
        n.modules.push(KernelModule {
            name: m.into(),
            refcount: Some(0),
            version: None,
        });
    }
    n.dev_infiniband = Some(vec!["uverbs0".into(), "uverbs1".into(), "rdma_cm".into()]);
    n
}
