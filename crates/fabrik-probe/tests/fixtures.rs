//! Each node fixture under `fixtures/nodes/` reads as the machine it stands for.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use fabrik_model::{GidType, LinkLayer, NetKind, Node, PathType, PhysState, PortState};

fn fixture(name: &str) -> Node {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/nodes")
        .join(name);
    fabrik_probe::probe(&root).unwrap()
}

fn path(n: &Node, gpu: &str, nic: &str) -> Option<PathType> {
    n.gpu_nic_paths
        .iter()
        .find(|p| p.gpu == gpu && p.nic == nic)
        .and_then(|p| p.path_type)
}

#[test]
fn ib_ndr_8gpu() {
    let n = fixture("ib-ndr-8gpu");
    assert!(n.warnings.is_empty(), "{:?}", n.warnings);
    assert_eq!(n.rdma_devices.len(), 8);
    assert_eq!(n.gpus.len(), 8);
    for d in &n.rdma_devices {
        assert_eq!(d.ports.len(), 1);
        let p = &d.ports[0];
        assert_eq!(p.state.as_ref().unwrap().port_state(), PortState::Active);
        assert_eq!(
            p.phys_state.as_ref().unwrap().phys_state(),
            PhysState::LinkUp
        );
        let rate = p.rate.as_ref().unwrap();
        assert_eq!(rate.gbps, Some(400.0));
        assert_eq!(rate.width, Some(4));
        assert_eq!(rate.speed.as_deref(), Some("NDR"));
        assert_eq!(p.link_layer, Some(LinkLayer::Infiniband));
        assert_eq!(p.active_mtu, Some(4096));
        assert_eq!(p.sm_lid.as_deref(), Some("0x1"));
        assert_eq!(p.gids.len(), 1);
        assert_eq!(p.gids[0].gid_type, Some(GidType::IbRoceV1));
        assert_eq!(p.counters.get("port_xmit_data"), Some(&93847261048));
        assert_eq!(p.hw_counters.get("out_of_sequence"), Some(&0));
        assert_eq!(d.pci.as_ref().unwrap().link.current_speed_gts, Some(32.0));
        assert!(!d.pci.as_ref().unwrap().is_virtual_function());
    }
    let m0 = n.rdma_device("mlx5_0").unwrap();
    assert_eq!(m0.ports[0].lid.as_deref(), Some("0x21"));
    assert_eq!(m0.ports[0].netdev.as_deref(), Some("ibp27s0"));
    assert_eq!(m0.pci.as_ref().unwrap().numa_node, Some(0));
    // GPU i shares a switch with mlx5_i; the neighbour pair is PXB; other socket SYS.
    for (i, g) in n.gpus.iter().enumerate() {
        assert_eq!(
            path(&n, &g.pci.address, &format!("mlx5_{i}")),
            Some(PathType::PIX)
        );
        assert_eq!(g.model.as_deref(), Some("NVIDIA H100 80GB HBM3"));
        assert_eq!(g.minor, Some(i as u32));
    }
    assert_eq!(path(&n, "0000:1a:00.0", "mlx5_1"), Some(PathType::PXB));
    assert_eq!(path(&n, "0000:1a:00.0", "mlx5_2"), Some(PathType::NODE));
    assert_eq!(path(&n, "0000:1a:00.0", "mlx5_7"), Some(PathType::SYS));
    assert_eq!(n.gpu_nic_paths.len(), 64);
    // The captured `nvidia-smi topo -m` agrees with the PCI walk on all 64 pairs (no warning).
    assert!(n
        .command_captures
        .contains(&"nvidia-smi-topo-m".to_string()));
    let ib = n.net_interface("ibp27s0").unwrap();
    assert_eq!(ib.kind, NetKind::Ipoib);
    assert_eq!(ib.rdma_device.as_deref(), Some("mlx5_0"));
    assert_eq!(ib.ipv4, vec!["192.168.100.7/24"]);
    assert_eq!(n.net_interface("docker0").unwrap().kind, NetKind::Bridge);
    assert_eq!(n.net_interface("lo").unwrap().kind, NetKind::Loopback);
    let eno1 = n.net_interface("eno1").unwrap();
    assert!(eno1.default_route);
    assert_eq!(eno1.speed_mbps, Some(10000));
    assert!(n.has_module("nvidia_peermem"));
    assert!(n.has_module("mlx5_ib"));
    assert!(!n.has_module("xt_conntrack"));
    assert_eq!(
        n.modules
            .iter()
            .find(|m| m.name == "ib_uverbs")
            .unwrap()
            .refcount,
        Some(3)
    );
    assert!(n.memlock.as_ref().unwrap().is_unlimited());
    assert_eq!(n.iommu.enabled, Some(true));
    assert_eq!(n.iommu.passthrough, Some(true));
    assert_eq!(n.versions.nvidia_driver.as_deref(), Some("535.161.08"));
    assert_eq!(
        n.versions.ofed.as_deref(),
        Some("MLNX_OFED_LINUX-23.10-1.1.9.0")
    );
    assert_eq!(n.dev_infiniband.as_ref().unwrap().len(), 25);
    assert_eq!(n.os.virtualized, Some(false));
    // Bridges above every GPU and NIC; no lspci capture, so ACS is unknown.
    assert!(n.pci_bridges.iter().any(|b| b.address == "0000:16:00.0"));
    assert!(n.pci_bridges.iter().all(|b| b.acs_ctl_enabled.is_none()));
    // Every bridge on a GPU or NIC path carries its own link, read from its sysfs directory.
    for b in &n.pci_bridges {
        let f = b.function.as_ref().unwrap();
        assert_eq!(f.address, b.address);
        assert!(f.link.current_width.is_some(), "{}", b.address);
        assert!(f.link.max_speed_gts.is_some(), "{}", b.address);
    }
}

#[test]
fn roce_dualport() {
    let n = fixture("roce-dualport");
    assert_eq!(n.rdma_devices.len(), 3);
    let m0 = n.rdma_device("mlx5_0").unwrap();
    let p = &m0.ports[0];
    assert_eq!(p.link_layer, Some(LinkLayer::Ethernet));
    assert_eq!(p.lid, None);
    let idx: Vec<(u32, GidType)> = p
        .gids
        .iter()
        .map(|g| (g.index, g.gid_type.clone().unwrap()))
        .collect();
    assert_eq!(
        idx,
        vec![
            (0, GidType::IbRoceV1),
            (1, GidType::RoceV2),
            (2, GidType::IbRoceV1),
            (3, GidType::RoceV2)
        ]
    );
    assert_eq!(p.gids[3].ipv4.as_deref(), Some("192.168.100.1"));
    assert_eq!(p.gids[1].ipv4, None);
    assert!(p.gids[0].gid.starts_with("fe80:"));
    assert_eq!(p.gids[3].netdev.as_deref(), Some("ens1f0np0"));
    assert_eq!(p.hw_counters.get("np_cnp_sent"), Some(&4211));
    let e0 = n.net_interface("ens1f0np0").unwrap();
    assert_eq!(e0.mtu, Some(9000));
    assert_eq!(e0.rdma_device.as_deref(), Some("mlx5_0"));
    let pfc = e0.pfc.as_ref().unwrap();
    assert_eq!(pfc.enabled_priorities, vec![3]);
    assert_eq!(pfc.trust.as_deref(), Some("dscp"));
    assert_eq!(pfc.source, "/fabrik/cmd/mlnx_qos-ens1f0np0.txt");
    let ecn = e0.ecn.as_ref().unwrap();
    assert_eq!(ecn.np_enabled.get(&3), Some(&true));
    assert_eq!(ecn.rp_enabled.len(), 8);
    assert_eq!(e0.ipv4, vec!["192.168.100.1/24"]);
    assert!(e0.default_route);
    assert!(!n.net_interface("ens1f1np1").unwrap().default_route);
    // The VF: detected through physfn, with its broken numa_node and missing phys_state warned.
    let vf = n.rdma_device("mlx5_2").unwrap();
    let pci = vf.pci.as_ref().unwrap();
    assert!(pci.is_virtual_function());
    assert_eq!(pci.physfn.as_deref(), Some("0000:3b:00.0"));
    assert_eq!(pci.numa_node, None);
    assert_eq!(vf.ports[0].phys_state, None);
    assert_eq!(
        vf.ports[0].state.as_ref().unwrap().port_state(),
        PortState::Down
    );
    assert!(vf.ports[0].gids.is_empty());
    assert_eq!(n.warnings.len(), 2, "{:?}", n.warnings);
    assert!(n
        .warnings
        .iter()
        .any(|w| w.path.ends_with("0000:3b:00.2/numa_node")));
    assert!(n
        .warnings
        .iter()
        .any(|w| w.path == "/sys/class/infiniband/mlx5_2/ports/1/phys_state"));
    // GPU and NICs hang from different host bridges of one socket.
    assert_eq!(path(&n, "0000:18:00.0", "mlx5_0"), Some(PathType::NODE));
    // The PCI walk cannot place the VF (its NUMA node is unreadable); the captured
    // `nvidia-smi topo -m` can, and is taken.
    assert_eq!(path(&n, "0000:18:00.0", "mlx5_2"), Some(PathType::NODE));
    let rp = n
        .pci_bridges
        .iter()
        .find(|b| b.address == "0000:3a:00.0")
        .unwrap();
    assert_eq!(rp.acs_redirects(), Some(true));
    let gpu_rp = n
        .pci_bridges
        .iter()
        .find(|b| b.address == "0000:17:00.0")
        .unwrap();
    assert_eq!(gpu_rp.acs_redirects(), Some(false));
    assert!(n.has_module("nv_peer_mem"));
    assert!(!n.has_module("nvidia_peermem"));
    assert_eq!(n.memlock.as_ref().unwrap().soft_bytes, Some(65536));
}

#[test]
fn gcp_a3() {
    let n = fixture("gcp-a3");
    assert!(n.warnings.is_empty(), "{:?}", n.warnings);
    assert!(n.rdma_devices.is_empty());
    assert_eq!(n.dev_infiniband, None);
    assert_eq!(n.gpus.len(), 8);
    let gve: Vec<&str> = n
        .net_interfaces
        .iter()
        .filter(|i| i.driver.as_deref() == Some("gve"))
        .map(|i| i.name.as_str())
        .collect();
    assert_eq!(gve, vec!["eth0", "eth1", "eth2", "eth3", "eth4"]);
    assert_eq!(n.net_interface("eth1").unwrap().mtu, Some(8244));
    assert_eq!(n.net_interface("eth1").unwrap().speed_mbps, Some(200000));
    assert_eq!(n.net_interface("eth0").unwrap().ipv4, vec!["10.128.0.5/32"]);
    // Without RDMA, distances are to the PCI netdevs; eth0 has no NUMA node (-1).
    assert_eq!(
        n.net_interface("eth0")
            .unwrap()
            .pci
            .as_ref()
            .unwrap()
            .numa_node,
        None
    );
    assert_eq!(path(&n, "0000:07:00.0", "eth1"), Some(PathType::PIX));
    assert_eq!(path(&n, "0000:08:00.0", "eth1"), Some(PathType::PIX));
    assert_eq!(path(&n, "0000:07:00.0", "eth2"), Some(PathType::PHB));
    assert_eq!(n.os.virtualized, Some(true));
    assert_eq!(n.versions.nvidia_driver.as_deref(), Some("550.90.07"));
    assert!(!n.has_module("nvidia_peermem"));
}

#[test]
fn aws_p5() {
    let n = fixture("aws-p5");
    assert!(n.warnings.is_empty(), "{:?}", n.warnings);
    assert_eq!(n.rdma_devices.len(), 8);
    for d in &n.rdma_devices {
        assert!(d.name.starts_with("efa_"));
        assert_eq!(d.node_type.as_deref(), Some("7: unspecified"));
        assert_eq!(d.pci.as_ref().unwrap().driver.as_deref(), Some("efa"));
        let p = &d.ports[0];
        assert_eq!(p.link_layer, Some(LinkLayer::Other("Unknown".into())));
        assert_eq!(p.rate.as_ref().unwrap().gbps, Some(100.0));
        assert_eq!(p.netdev, None);
        assert_eq!(p.gids[0].gid_type, None);
        assert_eq!(p.hw_counters.get("rdma_read_bytes"), Some(&0));
    }
    assert_eq!(path(&n, "0000:13:00.0", "efa_0"), Some(PathType::PIX));
    assert_eq!(path(&n, "0000:13:00.0", "efa_4"), Some(PathType::SYS));
    assert!(n.has_module("efa"));
    assert!(n.has_module("gdrdrv"));
    assert_eq!(n.net_interface("ens32").unwrap().speed_mbps, None);
}

#[test]
fn sandbox_vm_snapshot() {
    let n = fixture("sandbox-vm");
    assert!(n.rdma_devices.is_empty());
    assert!(n.gpus.is_empty());
    let eth0 = n.net_interface("eth0").unwrap();
    assert_eq!(eth0.driver.as_deref(), Some("virtio_net"));
    assert_eq!(eth0.pci.as_ref().unwrap().address, "0000:00:03.0");
    assert!(eth0.default_route);
    assert_eq!(n.net_interface("lo").unwrap().kind, NetKind::Loopback);
    assert_eq!(n.net_interface("ifb0").unwrap().kind, NetKind::Virtual);
    assert!(n.command_captures.contains(&"ip-o-addr".to_string()));
}

#[test]
fn every_fixture_reads_back_through_a_snapshot() {
    for name in ["ib-ndr-8gpu", "roce-dualport", "gcp-a3", "aws-p5"] {
        let src = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/nodes")
            .join(name);
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("copy");
        let mut opts = fabrik_probe::snapshot::SnapshotOptions::new(out.clone());
        opts.source_root = src.clone();
        fabrik_probe::snapshot::capture(&opts).unwrap();
        let mut a = fabrik_probe::probe(&src).unwrap();
        let mut b = fabrik_probe::probe(&out).unwrap();
        a.root.clear();
        b.root.clear();
        // Command captures are among the names probing reads, so they travel too.
        assert!(!a.rdma_devices.is_empty() || !a.gpus.is_empty(), "{name}");
        assert_eq!(a, b, "{name}");
    }
}

#[test]
fn a_snapshot_address_list_wins_over_proc_net() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let dev = root.join("sys/devices/virtual/net/eth9");
    std::fs::create_dir_all(&dev).unwrap();
    std::fs::write(dev.join("type"), "1\n").unwrap();
    std::fs::write(dev.join("mtu"), "1460\n").unwrap();
    std::fs::create_dir_all(root.join("sys/class/net")).unwrap();
    std::os::unix::fs::symlink(
        "../../devices/virtual/net/eth9",
        root.join("sys/class/net/eth9"),
    )
    .unwrap();
    std::fs::create_dir_all(root.join("fabrik/cmd")).unwrap();
    std::fs::write(
        root.join("fabrik/addresses.txt"),
        "eth9 inet 10.128.0.5/32\neth9 inet6 fe80::1/64\n",
    )
    .unwrap();
    std::fs::write(
        root.join("fabrik/cmd/ip-o-addr.txt"),
        "2: eth9    inet 10.9.9.9/24 scope global eth9\\       valid_lft forever\n",
    )
    .unwrap();
    let n = fabrik_probe::probe(root).unwrap();
    let eth9 = n.net_interface("eth9").unwrap();
    assert_eq!(eth9.ipv4, vec!["10.128.0.5/32"]);
    assert_eq!(eth9.ipv6, vec!["fe80::1/64"]);
    assert_eq!(eth9.kind, NetKind::Virtual);
}

/// prometheus/procfs `testdata/fixtures.ttar`: real sysfs from an Omni-Path HFI (hfi1), a
/// ConnectX-3 (mlx4, two QDR ports) and a ConnectX-4 Lx VF (mlx5), unpacked by
/// fixtures/nodes/ttar.py. Every value read as the kernel wrote it; what the archive lacks
/// (node_type, /proc) is unknown and warned about, never guessed.
#[test]
fn real_procfs_sysfs() {
    let n = fixture("real-procfs");
    let names: Vec<&str> = n.rdma_devices.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["hfi1_0", "mlx4_0", "mlx5_0"]);
    let hfi = &n.rdma_devices[0];
    assert_eq!(hfi.fw_ver.as_deref(), Some("1.27.0"));
    assert!(hfi.board_id.as_deref().unwrap().contains("Omni-Path"));
    let r = hfi.ports[0].rate.as_ref().unwrap();
    assert_eq!(
        (r.gbps, r.width, r.speed.as_deref()),
        (Some(100.0), Some(4), Some("EDR"))
    );
    assert_eq!(hfi.ports[0].counters["port_rcv_data"], 345091702026);
    let mlx4 = &n.rdma_devices[1];
    assert_eq!(mlx4.hca_type.as_deref(), Some("MT4099"));
    assert_eq!(mlx4.ports.len(), 2);
    for p in &mlx4.ports {
        assert_eq!(p.rate.as_ref().unwrap().speed.as_deref(), Some("QDR"));
        assert_eq!(p.rate.as_ref().unwrap().gbps, Some(40.0));
        assert_eq!(p.link_layer, Some(LinkLayer::Infiniband));
    }
    let mlx5 = &n.rdma_devices[2];
    assert_eq!(mlx5.node_guid.as_deref(), Some("0a7f:bc12:45ef:d23b"));
    let p = &mlx5.ports[0];
    assert_eq!(p.rate.as_ref().unwrap().width, Some(1));
    // This archive's phys_state reads `4: ACTIVE`, a pairing the kernel never writes (4 is
    // PortConfigurationTraining): unknown, with a warning, not a training link.
    let ps = p.phys_state.as_ref().unwrap();
    assert_eq!(ps.code, None);
    assert_eq!(ps.phys_state(), PhysState::Unknown);
    assert!(n
        .warnings
        .iter()
        .any(|w| w.path.ends_with("mlx5_0/ports/1/phys_state") && w.message.contains("disagree")));
    assert_eq!(p.hw_counters["local_ack_timeout_err"], 131);
    assert!(
        !p.hw_counters.contains_key("lifespan"),
        "a setting, not a counter"
    );
    assert!(p.hw_counters.contains_key("roce_slow_restart"));
    assert!(n
        .warnings
        .iter()
        .any(|w| w.path == "/sys/class/infiniband/hfi1_0/node_type"));
    let eth0 = n.net_interfaces.iter().find(|i| i.name == "eth0").unwrap();
    assert_eq!(eth0.kind, NetKind::Ethernet);
    assert_eq!(eth0.pci.as_ref().unwrap().address, "0000:00:1f.6");
    assert_eq!(eth0.pci.as_ref().unwrap().numa_node, None, "numa_node -1");
    assert_eq!(eth0.speed_mbps, Some(1000));
    // procfs's test AER files count 1..48 per error. The non-fatal file's last line reads
    // `TOTAL_ERR_FATAL 48`: the total is the file's, whatever its line says.
    let aer = eth0.pci.as_ref().unwrap().aer.as_ref().unwrap();
    assert_eq!(aer.counts["TOTAL_ERR_COR"], 9);
    assert_eq!(aer.counts["TOTAL_ERR_FATAL"], 28);
    assert_eq!(aer.counts["TOTAL_ERR_NONFATAL"], 48);
    assert_eq!(aer.counts["correctable:RxErr"], 1);
    assert_eq!(aer.counts["fatal:DLP"], 11);
    assert_eq!(aer.counts["nonfatal:DLP"], 31);
    assert!(
        aer.correctable.is_empty(),
        "status bits come from lspci, not sysfs"
    );
}

/// prometheus/node_exporter `collector/fixtures/sys.ttar`: an Intel X722 iWARP device (i40iw)
/// whose counters all read `N/A (no PMA)`, a ConnectX-3, bonding with `bonding_masters` (a plain
/// file among the interfaces) and an eth0 whose archived directory lost its `device` link.
#[test]
fn real_node_exporter_sysfs() {
    let n = fixture("real-node-exporter");
    let iw = &n.rdma_devices[0];
    assert_eq!(iw.name, "i40iw0");
    let p = &iw.ports[0];
    let r = p.rate.as_ref().unwrap();
    // Kernels before 5.x printed no lane name for SDR: `10 Gb/sec (4X)`.
    assert_eq!(
        (r.gbps, r.width, r.speed.as_deref()),
        (Some(10.0), Some(4), Some("SDR"))
    );
    assert!(p.counters.is_empty(), "N/A (no PMA) is unknown, not 0");
    let mlx4 = &n.rdma_devices[1];
    assert_eq!(mlx4.ports[0].counters["port_xmit_wait"], 4294967295);
    assert_eq!(mlx4.ports[0].counters["port_rcv_packets"], 6825908347);
    let names: Vec<&str> = n.net_interfaces.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(
        names,
        ["bond0", "dmz", "eth0", "int"],
        "bonding_masters is no interface"
    );
    assert!(
        !n.warnings
            .iter()
            .any(|w| w.path.contains("bonding_masters")),
        "{:?}",
        n.warnings
    );
    let eth0 = n.net_interfaces.iter().find(|i| i.name == "eth0").unwrap();
    assert_eq!(eth0.kind, NetKind::Ethernet, "below a PCI function");
    let bond0 = n.net_interfaces.iter().find(|i| i.name == "bond0").unwrap();
    assert_eq!(bond0.kind, NetKind::Virtual);
    // The ixgbe-like function 0000:45:00.0 has every AER count at 0.
    let f = n
        .network_functions
        .iter()
        .find(|f| f.address == "0000:45:00.0")
        .unwrap();
    let aer = f.aer.as_ref().unwrap();
    assert_eq!(aer.counts["TOTAL_ERR_COR"], 0);
    assert_eq!(aer.counts["TOTAL_ERR_NONFATAL"], 0);
    assert_eq!(aer.counts["TOTAL_ERR_FATAL"], 0);
    assert_eq!(aer.counts.len(), 3 + 8 + 18 + 18);
}

/// The neighbour table's thresholds, one integer per file as the kernel writes them; an
/// unreadable value is unknown, a root without `/proc/sys` has none; a snapshot keeps them.
#[test]
fn neighbour_table_limits_are_read_and_travel_in_a_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let neigh = root.join("proc/sys/net/ipv4/neigh/default");
    std::fs::create_dir_all(&neigh).unwrap();
    std::fs::write(neigh.join("gc_thresh1"), "128\n").unwrap();
    std::fs::write(neigh.join("gc_thresh2"), "not a number\n").unwrap();
    std::fs::write(neigh.join("gc_thresh3"), "1024\n").unwrap();
    // A netdev, so that the snapshot sees a node.
    let dev = root.join("sys/devices/virtual/net/eth9");
    std::fs::create_dir_all(&dev).unwrap();
    std::fs::write(dev.join("type"), "1\n").unwrap();
    std::fs::create_dir_all(root.join("sys/class/net")).unwrap();
    std::os::unix::fs::symlink(
        "../../devices/virtual/net/eth9",
        root.join("sys/class/net/eth9"),
    )
    .unwrap();
    let n = fabrik_probe::probe(&root).unwrap();
    let l = n.neighbour_limits.clone().expect("limits read");
    assert_eq!(
        (l.gc_thresh1, l.gc_thresh2, l.gc_thresh3),
        (Some(128), None, Some(1024))
    );
    let out = dir.path().join("copy");
    let mut opts = fabrik_probe::snapshot::SnapshotOptions::new(out.clone());
    opts.source_root = root.clone();
    fabrik_probe::snapshot::capture(&opts).unwrap();
    assert_eq!(
        fabrik_probe::probe(&out).unwrap().neighbour_limits,
        n.neighbour_limits
    );
    std::fs::remove_dir_all(root.join("proc")).unwrap();
    assert_eq!(fabrik_probe::probe(&root).unwrap().neighbour_limits, None);
}

/// `probe_nics` reads the NICs as `probe` does, and nothing else.
#[test]
fn probe_nics_reads_the_nics_alone() {
    for name in [
        "ib-ndr-8gpu",
        "roce-dualport",
        "softroce-rxe",
        "real-procfs",
    ] {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/nodes")
            .join(name);
        let full = fabrik_probe::probe(&root).unwrap();
        let nics = fabrik_probe::probe_nics(&root).unwrap();
        assert!(!nics.net_interfaces.is_empty(), "{name}");
        assert_eq!(nics.net_interfaces, full.net_interfaces, "{name}");
        assert_eq!(nics.rdma_devices, full.rdma_devices, "{name}");
        assert!(
            nics.gpus.is_empty() && nics.gpu_nic_paths.is_empty(),
            "{name}"
        );
    }
}

#[test]
fn the_kernel_is_read_from_proc_version_when_the_release_file_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // A root is a node when it has a sysfs.
    std::fs::create_dir_all(root.join("sys/class")).unwrap();
    std::fs::create_dir_all(root.join("proc/sys/kernel")).unwrap();
    let banner = "Linux version 6.1.0-26-amd64 (debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14) 12.2.0, GNU ld (GNU Binutils for Debian) 2.40) #1 SMP PREEMPT_DYNAMIC Debian 6.1.112-1 (2024-09-30)\n";
    std::fs::write(root.join("proc/version"), banner).unwrap();
    let n = fabrik_probe::probe(root).unwrap();
    assert_eq!(n.os.kernel.as_deref(), Some("6.1.0-26-amd64"));
    assert!(
        !n.warnings.iter().any(|w| w.path.contains("kernel")),
        "{:?}",
        n.warnings
    );
    // Both: the release file wins, and a disagreement is said.
    std::fs::write(root.join("proc/sys/kernel/osrelease"), "6.1.0-28-amd64\n").unwrap();
    let n = fabrik_probe::probe(root).unwrap();
    assert_eq!(n.os.kernel.as_deref(), Some("6.1.0-28-amd64"));
    assert!(
        n.warnings
            .iter()
            .any(|w| w.path == "/proc/version" && w.message.contains("6.1.0-26-amd64")),
        "{:?}",
        n.warnings
    );
}
