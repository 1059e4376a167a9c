//! The tools added for issue 29: every real paste in fixtures/commands/<tool>/ read against the
//! ground truth its README row gives. Findings on these pastes are in
//! crates/fabrik-doctor/tests/pasted.rs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use fabrik_model::KernelEventKind;
use fabrik_parse::formats::paste::Tool;
use fabrik_parse::formats::{
    Dmesg, Ethtool, EthtoolModule, EthtoolStats, Format, Ibdiagnet, Iblinkinfo, Ibstatus,
    IbvDevinfo, Lspci, MstStatus, Mstconfig, Mstlink, NvlinkStatus, RocmTopo, ShowGids,
};

/// The fixture of `tool` whose name starts with `prefix` (`01`).
fn text(tool: &str, prefix: &str) -> String {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/commands")
        .join(tool);
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix))
        })
        .collect();
    assert_eq!(names.len(), 1, "{tool}/{prefix}*: {names:?}");
    std::fs::read_to_string(names.remove(0)).unwrap()
}

/// Every fixture folder of a tool added here has at least three real pastes, and each one is
/// read by its tool.
#[test]
fn every_new_tool_reads_each_of_its_pastes() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/commands");
    for (dir, tool) in [
        ("ibstatus", "ibstatus"),
        ("mst_status", "mst_status"),
        ("mstconfig", "mstconfig"),
        ("mstlink", "mstlink"),
        ("ethtool", "ethtool"),
        ("ethtool_stats", "ethtool-S"),
        ("ethtool_module", "ethtool-m"),
        ("dmesg", "dmesg"),
        ("lspci", "lspci"),
        ("nvlink", "nvlink"),
        ("ibdiagnet", "ibdiagnet"),
        ("iblinkinfo", "iblinkinfo"),
        ("rocm_topo", "rocm_topo"),
    ] {
        let t = Tool::ALL.iter().find(|t| t.name() == tool).expect(tool);
        let mut n = 0;
        for f in std::fs::read_dir(root.join(dir)).unwrap() {
            let p = f.unwrap().path();
            let s = std::fs::read_to_string(&p).unwrap();
            assert!(t.read(&s).is_ok(), "{} not read", p.display());
            n += 1;
        }
        assert!(n >= 3, "{dir}: {n} pastes");
    }
}

#[test]
fn ibstatus_ports() {
    let f = Ibstatus::parse(&text("ibstatus", "01")).unwrap();
    assert_eq!(f.ports.len(), 3);
    assert!(f
        .ports
        .iter()
        .all(|p| p.state.as_deref() == Some("4: ACTIVE")
            && p.rate.as_deref() == Some("100 Gb/sec (4X EDR)")
            && p.link_layer.as_deref() == Some("Ethernet")));

    let f = Ibstatus::parse(&text("ibstatus", "02")).unwrap();
    let p0 = &f.ports[0];
    assert_eq!((p0.device.as_str(), p0.port), ("mlx5_0", 1));
    assert_eq!(p0.state.as_deref(), Some("1: DOWN"));
    assert_eq!(p0.phys_state.as_deref(), Some("3: Disabled"));
    assert_eq!(f.ports[1].state.as_deref(), Some("4: ACTIVE"));

    let f = Ibstatus::parse(&text("ibstatus", "03")).unwrap();
    assert_eq!(f.ports.len(), 4);
    assert_eq!(f.ports[0].sm_lid.as_deref(), Some("0x1"));
    assert_eq!(f.ports[0].base_lid.as_deref(), Some("0xf"));
    assert_eq!(
        f.ports[0].default_gid.as_deref(),
        Some("fe80:0000:0000:0000:506b:4b03:00f5:ce9c")
    );

    // The ibstat block before the ibstatus run is not read as ibstatus.
    let f = Ibstatus::parse(&text("ibstatus", "04")).unwrap();
    let names: Vec<_> = f.ports.iter().map(|p| p.device.as_str()).collect();
    assert_eq!(names, ["mlx5_0", "mlx5_1"]);
    assert!(f
        .ports
        .iter()
        .all(|p| p.rate.as_deref() == Some("200 Gb/sec (4X HDR)")));

    let f = Ibstatus::parse(&text("ibstatus", "05")).unwrap();
    assert_eq!(f.ports.len(), 1);
    assert_eq!(f.ports[0].rate.as_deref(), Some("25 Gb/sec (1X EDR)"));
}

#[test]
fn mst_status_devices() {
    let f = MstStatus::parse(&text("mst_status", "01")).unwrap();
    assert_eq!(f.devices.len(), 1);
    assert_eq!(
        f.devices[0].mst.as_deref(),
        Some("/dev/mst/mt4117_pciconf0")
    );
    assert_eq!(f.devices[0].pci.as_deref(), Some("0000:06:00.0"));

    let f = MstStatus::parse(&text("mst_status", "02")).unwrap();
    let pcis: Vec<_> = f.devices.iter().filter_map(|d| d.pci.as_deref()).collect();
    assert_eq!(pcis, ["0000:0f:00.0", "0000:92:00.0", "0000:e1:00.0"]);

    let f = MstStatus::parse(&text("mst_status", "03")).unwrap();
    assert_eq!(f.devices.len(), 2);
    let d1 = f
        .devices
        .iter()
        .find(|d| d.rdma.as_deref() == Some("mlx5_1"))
        .unwrap();
    assert!(d1.net.as_deref().unwrap().contains("p1"));
    assert!(f.devices.iter().all(|d| d.numa.is_none()));

    let f = MstStatus::parse(&text("mst_status", "04")).unwrap();
    assert_eq!(f.devices.len(), 2);
    assert!(f.devices.iter().all(|d| d.numa == Some(0)));

    let f = MstStatus::parse(&text("mst_status", "05")).unwrap();
    assert_eq!(f.devices[0].pci.as_deref(), Some("0000:65:00.0"));
}

#[test]
fn mstconfig_settings() {
    let f = Mstconfig::parse(&text("mstconfig", "01")).unwrap();
    assert_eq!(f.devices.len(), 1);
    let d = &f.devices[0];
    assert_eq!(d.device_type.as_deref(), Some("ConnectX4LX"));
    let v = |k: &str| d.settings.get(k).map(|s| s.next_boot.as_str());
    assert_eq!(v("SRIOV_EN"), Some("True(1)"));
    assert_eq!(v("NUM_OF_VFS"), Some("8"));
    assert_eq!(v("ROCE_CONTROL"), Some("ROCE_ENABLE(2)"));
    assert_eq!(v("ATS_ENABLED"), None);
    assert!(d.settings.len() > 100, "{}", d.settings.len());

    // A `set` table's `New` column is a proposal: the state is its `Next Boot` column.
    let f = Mstconfig::parse(&text("mstconfig", "02")).unwrap();
    assert_eq!(f.devices.len(), 2);
    for d in &f.devices {
        assert_eq!(d.settings["LINK_TYPE_P1"].next_boot, "IB(1)");
    }

    let f = Mstconfig::parse(&text("mstconfig", "03")).unwrap();
    assert_eq!(f.devices[0].settings["SRIOV_EN"].next_boot, "0");

    let f = Mstconfig::parse(&text("mstconfig", "04")).unwrap();
    assert_eq!(f.devices[0].settings["LINK_TYPE_P2"].next_boot, "IB(1)");
}

#[test]
fn mstlink_link_quality() {
    let f = Mstlink::parse(&text("mstlink", "01")).unwrap();
    assert_eq!(f.links.len(), 2);
    for l in &f.links {
        assert_eq!(l.state.as_deref(), Some("Active"));
        assert_eq!(l.effective_errors, Some(0));
        assert_eq!(l.raw_errors_per_lane, [0, 0, 0, 0]);
        assert!(l.module.is_some());
    }

    let f = Mstlink::parse(&text("mstlink", "02")).unwrap();
    let with_ber: Vec<_> = f.links.iter().filter(|l| l.raw_ber.is_some()).collect();
    assert_eq!(with_ber.len(), 8);
    assert!(with_ber.iter().all(|l| l.effective_errors == Some(0)));

    let f = Mstlink::parse(&text("mstlink", "03")).unwrap();
    let l = f.links.iter().find(|l| l.raw_ber.is_some()).unwrap();
    assert_eq!(l.raw_errors_per_lane, [26711, 0, 0, 9108]);
    assert_eq!(l.raw_ber, Some(3e-12));

    let f = Mstlink::parse(&text("mstlink", "04")).unwrap();
    assert_eq!(f.links[0].width, Some(4));
    assert!(f.links[0].raw_ber.is_none());
}

#[test]
fn ethtool_settings() {
    let s = |n: &str| {
        Ethtool::parse(&text("ethtool", n))
            .unwrap()
            .interfaces
            .remove(0)
            .settings
    };
    let a = s("01");
    assert_eq!(
        (a.speed_mbps, a.max_supported_mbps, a.max_partner_mbps),
        (Some(100), Some(1000), Some(100))
    );
    assert_eq!(a.link_detected, Some(true));
    assert_eq!(s("02").speed_mbps, Some(100));
    assert_eq!(s("03").speed_mbps, Some(1000));
    let d = s("04");
    assert_eq!((d.speed_mbps, d.link_detected), (None, Some(true)));
    let e = s("05");
    assert_eq!((e.speed_mbps, e.max_partner_mbps), (Some(100_000), None));
}

#[test]
fn ethtool_stats_counters() {
    let f = EthtoolStats::parse(&text("ethtool_stats", "01")).unwrap();
    assert_eq!(f.interfaces.len(), 1);
    assert_eq!(f.interfaces[0].stats["rx_discards_phy"], 58_591_428_329);
    assert_eq!(f.interfaces[0].stats["rx_out_of_buffer"], 990_473_555);

    let f = EthtoolStats::parse(&text("ethtool_stats", "02")).unwrap();
    let names: Vec<_> = f
        .interfaces
        .iter()
        .map(|i| i.interface.as_deref().unwrap_or("?"))
        .collect();
    assert_eq!(names, ["enp139s0f1np1", "lan0"]);
    assert_eq!(f.interfaces[1].stats["rx_corrected_bits_phy"], 191_025_837);

    // What the monitor reads from a captured `ethtool -S`: complaints and per-ring names too.
    let f = EthtoolStats::read("Cannot get stats strings information: Operation not supported\n");
    assert_eq!(f.interfaces[0].complaints.len(), 1);
    assert!(EthtoolStats::parse("no stats available\n").is_none());
    let f =
        EthtoolStats::read("NIC statistics:\n     [0]: rx_ucast_packets: 5\n     rx_bytes: n/a\n");
    assert_eq!(f.interfaces[0].stats["[0]: rx_ucast_packets"], 5);
    assert_eq!(f.interfaces[0].unreadable["rx_bytes"], "n/a");

    let f = EthtoolStats::parse(&text("ethtool_stats", "03")).unwrap();
    assert_eq!(f.interfaces[0].stats.len(), 12);
    assert!(f.interfaces[0].stats.values().all(|v| *v == 0));
}

#[test]
fn dmesg_events() {
    let log = Dmesg::parse(&text("dmesg", "01")).unwrap();
    assert_eq!(log.events.len(), 2);
    assert!(log.events.iter().all(|e| matches!(
        &e.kind,
        KernelEventKind::Xid { code: 32, action: Some(a), .. } if a == "RESTART_APP"
    )));
    assert_eq!(log.events[0].device.as_deref(), Some("0000:01:00"));

    let log = Dmesg::parse(&text("dmesg", "02")).unwrap();
    let devices: std::collections::BTreeSet<_> = log
        .events
        .iter()
        .filter_map(|e| e.device.as_deref())
        .collect();
    assert_eq!(devices.len(), 6);
    assert!(log
        .events
        .iter()
        .all(|e| e.kind == KernelEventKind::Mlx5Health));

    for (n, dev) in [("03", "0000:02:00.0"), ("04", "0000:00:1d.0")] {
        let log = Dmesg::parse(&text("dmesg", n)).unwrap();
        assert!(!log.events.is_empty());
        assert!(log.events.iter().all(|e| e.device.as_deref() == Some(dev)
            && matches!(&e.kind, KernelEventKind::Aer { severity } if severity.starts_with("Correct"))));
    }

    let log = Dmesg::parse(&text("dmesg", "05")).unwrap();
    assert_eq!(log.events.len(), 5);
    assert!(log.events.iter().all(|e| e.kind == KernelEventKind::LinkUp));
}

#[test]
fn lspci_functions() {
    let f = Lspci::parse(&text("lspci", "01")).unwrap();
    assert_eq!(f.functions.len(), 1);
    assert_eq!(f.functions[0].address, "0000:40:01.1");
    assert_eq!(f.functions[0].numa_node, Some(1));
    assert_eq!(
        f.functions[0].acs_ctl.as_deref().unwrap(),
        ["SrcValid", "ReqRedir", "CmpltRedir", "UpstreamFwd"]
    );

    // Quoted-printable: `=3D` and soft line breaks do not hide the link, DevCtl or AER.
    let f = Lspci::parse(&text("lspci", "02")).unwrap();
    let rp = &f.functions[0];
    assert_eq!(
        (
            rp.link_status.unwrap().speed_gts,
            rp.link_status.unwrap().width
        ),
        (Some(2.5), Some(1))
    );
    assert_eq!(
        (rp.link_cap.unwrap().speed_gts, rp.link_cap.unwrap().width),
        (Some(8.0), Some(16))
    );
    assert_eq!(rp.relaxed_ordering, Some(false));
    assert_eq!(rp.max_read_request, Some(128));
    assert_eq!(rp.correctable.as_deref().unwrap(), ["RxErr"]);

    // Lines wrapped by a mailer: continuation lines do not overwrite LnkCap.
    let f = Lspci::parse(&text("lspci", "03")).unwrap();
    assert_eq!(f.functions.len(), 2);
    let gpu_audio = &f.functions[0];
    assert_eq!(gpu_audio.link_cap.unwrap().speed_gts, Some(8.0));
    assert_eq!(gpu_audio.link_status.unwrap().speed_gts, Some(2.5));
    assert_eq!(gpu_audio.relaxed_ordering, Some(true));
    assert_eq!(f.functions[1].link_status.unwrap().speed_gts, Some(16.0));

    // `lspci -vvs BDF | grep`: the device comes from the command line.
    let f = Lspci::parse(&text("lspci", "04")).unwrap();
    let links: Vec<_> = f
        .functions
        .iter()
        .map(|x| {
            (
                x.address.as_str(),
                x.link_status.unwrap().width,
                x.link_cap.unwrap().width,
            )
        })
        .collect();
    assert_eq!(
        links,
        [
            ("0000:03:00.0", Some(4), Some(8)),
            ("0000:07:00.0", Some(16), Some(16))
        ]
    );

    let f = Lspci::parse(&text("lspci", "05")).unwrap();
    assert_eq!(f.functions[0].link_status.unwrap().width, Some(2));
    assert!(f.functions[0].link_cap.is_none());

    let f = Lspci::parse(&text("lspci", "06")).unwrap();
    assert!(f.functions[0].access_denied);
    assert_eq!(f.functions[0].driver.as_deref(), Some("r8169"));
    assert_eq!(f.functions[0].vendor_id.as_deref(), Some("10ec"));
}

#[test]
fn nvlink_links() {
    let inactive = |n: &str| -> Vec<(u32, Vec<u32>)> {
        NvlinkStatus::parse(&text("nvlink", n))
            .unwrap()
            .gpus
            .iter()
            .map(|g| {
                (
                    g.gpu,
                    g.links
                        .iter()
                        .filter(|l| l.gbps.is_none())
                        .map(|l| l.link)
                        .collect(),
                )
            })
            .collect()
    };
    assert_eq!(inactive("01"), [(3, vec![3, 5])]);
    assert_eq!(
        inactive("02"),
        [
            (0, vec![4, 5, 10, 11, 16, 17]),
            (1, vec![4, 5, 10, 11, 16, 17])
        ]
    );
    let f = NvlinkStatus::parse(&text("nvlink", "03")).unwrap();
    assert_eq!(f.gpus.len(), 1);
    assert_eq!(f.gpus[0].links.len(), 12);
    assert!(f.gpus[0].links.iter().all(|l| l.gbps == Some(25.0)));
    let f = NvlinkStatus::parse(&text("nvlink", "04")).unwrap();
    assert_eq!(
        f.gpus.iter().map(|g| g.links.len()).collect::<Vec<_>>(),
        [18, 2]
    );
    assert_eq!(f.gpus[0].name.as_deref(), Some("NVIDIA GB200"));
    let f = NvlinkStatus::parse(&text("nvlink", "05")).unwrap();
    assert_eq!(
        f.gpus[0].links.iter().map(|l| l.link).collect::<Vec<_>>(),
        [0, 17]
    );
}

#[test]
fn ibdiagnet_stages() {
    let counts = |n: &str| -> Vec<(String, u64, u64)> {
        Ibdiagnet::parse(&text("ibdiagnet", n))
            .unwrap()
            .checks
            .into_iter()
            .filter(|c| c.errors > 0 || c.warnings > 0)
            .map(|c| (c.stage, c.errors, c.warnings))
            .collect()
    };
    assert_eq!(counts("01"), [("IPoIB Subnets Check".into(), 0, 1)]);
    assert_eq!(
        counts("02"),
        [
            ("Specific Link Speed Check".into(), 0, 5),
            ("IPoIB Subnets Check".into(), 0, 1)
        ]
    );
    // `Warnings` before `Errors` in ibdiagnet 2's header.
    assert_eq!(counts("03"), [("Discovery".into(), 0, 3)]);
    assert_eq!(
        counts("04"),
        [
            ("Discovery".into(), 0, 3),
            ("Nodes Information".into(), 0, 16),
            ("Speed / Width checks".into(), 15, 0)
        ]
    );
    assert_eq!(
        Ibdiagnet::parse(&text("ibdiagnet", "01"))
            .unwrap()
            .checks
            .len(),
        8
    );
}

#[test]
fn iblinkinfo_links() {
    let links = |n: &str| Iblinkinfo::parse(&text("iblinkinfo", n)).unwrap().links;
    let l = links("01");
    assert_eq!(l.len(), 2);
    assert_eq!(l[0].node, "m01 HCA-3");
    assert_eq!(l[0].peer.as_deref(), Some("m02 HCA-1"));
    assert_eq!(l[0].speed.as_deref(), Some("25.78125 Gbps"));

    let count = |l: &[fabrik_model::FabricLink]| {
        let up = l
            .iter()
            .filter(|x| x.state.as_deref() == Some("Active"))
            .count();
        (l.len(), up)
    };
    assert_eq!(count(&links("02")), (40, 8));
    assert_eq!(count(&links("03")), (6, 6));
    assert_eq!(count(&links("04")), (27, 18));
    let l = links("04");
    assert!(l
        .iter()
        .any(|x| x.node == "teaker-9 HCA-1" && x.port == 2 && x.peer_port == Some(14)));
    let l = links("05");
    assert_eq!(l.len(), 2);
    assert_eq!(l[0].node, "hxa-su2-leaf-r2");
    assert_eq!(
        l[0].could_be.as_deref(),
        Some("Could be 12X Could be 10.0 Gbps")
    );
    assert_eq!(l[1].state.as_deref(), Some("Down"));
}

#[test]
fn rocm_topo_matrices() {
    let f = RocmTopo::parse(&text("rocm_topo", "01")).unwrap();
    assert_eq!(f.pairs.len(), 2);
    assert!(f
        .pairs
        .iter()
        .all(|p| p.link_type.as_deref() == Some("PCIE")));

    let f = RocmTopo::parse(&text("rocm_topo", "02")).unwrap();
    assert_eq!(f.pairs.len(), 12);
    assert!(f
        .pairs
        .iter()
        .all(|p| p.link_type.as_deref() == Some("XGMI")
            && p.weight == Some(15)
            && p.hops == Some(1)));
    assert_eq!(f.numa.get(&3), Some(&3));

    let f = RocmTopo::parse(&text("rocm_topo", "03")).unwrap();
    let pcie = f
        .pairs
        .iter()
        .filter(|p| p.link_type.as_deref() == Some("PCIE"))
        .count();
    assert_eq!((f.pairs.len(), pcie), (56, 32));
    assert!(f
        .pairs
        .iter()
        .filter(|p| p.link_type.as_deref() == Some("PCIE"))
        .all(|p| p.weight == Some(72) && p.hops == Some(3)));
    assert_eq!(f.numa.get(&5), Some(&1));

    let f = RocmTopo::parse(&text("rocm_topo", "04")).unwrap();
    assert_eq!(f.numa.len(), 4);

    let f = RocmTopo::parse(&text("rocm_topo", "05")).unwrap();
    assert_eq!(f.gpus.len(), 1);
    assert!(f.pairs.is_empty());
}

/// The reads issue 29 asked to complete: GUIDs, the GID table of `ibv_devinfo -v`, a fragment
/// without its `hca_id:` line, and a `show_gids` line on the right netdev.
#[test]
fn partial_reads_completed() {
    let f = fabrik_parse::formats::Ibstat::parse(&text("ibstat", "01")).unwrap();
    assert_eq!(f.ports[0].port_guid.as_deref(), Some("0xb8599f030022626e"));
    assert_eq!(f.ports[0].node_guid.as_deref(), Some("0xb8599f030022626e"));

    let f = IbvDevinfo::parse(&text("ibv_devinfo", "06")).unwrap();
    assert_eq!(f.ports.len(), 1);
    let p = &f.ports[0];
    // The paste elided the `port:` line: its number is unknown.
    assert_eq!((p.device.as_str(), p.port), ("bnxt_re2", 0));
    assert_eq!(p.phys_state.as_deref(), Some("LINK_UP (5)"));
    let gids: Vec<_> = p
        .gids
        .iter()
        .map(|g| (g.index, g.gid.as_str(), g.gid_type.as_deref()))
        .collect();
    assert_eq!(
        gids,
        [
            (
                0,
                "fe80:0000:0000:0000:b226:28ff:fed3:b0f0",
                Some("IB/RoCE v1")
            ),
            (
                1,
                "fe80:0000:0000:0000:b226:28ff:fed3:b0f0",
                Some("RoCE v2")
            ),
            (
                2,
                "0000:0000:0000:0000:0000:ffff:c0aa:0165",
                Some("IB/RoCE v1")
            ),
            (
                3,
                "0000:0000:0000:0000:0000:ffff:c0aa:0165",
                Some("RoCE v2")
            ),
        ]
    );

    // A fragment from `port:` on: the device is unknown but its ports are read.
    let frag = "                port:   1\n                        state:                  PORT_ACTIVE (4)\n                        active_mtu:             4096 (5)\n                        link_layer:             InfiniBand\n";
    let f = IbvDevinfo::parse(frag).unwrap();
    assert_eq!(f.ports.len(), 1);
    assert_eq!(f.ports[0].active_mtu, Some(4096));

    // Two netdevs with one IP (a bond and its slave): each GID line keeps its own netdev.
    let two = "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\n---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---\nmlx5_0\t1\t3\t0000:0000:0000:0000:0000:ffff:0a00:0001\t10.0.0.1  \tv2\tbond0\nmlx5_1\t1\t3\t0000:0000:0000:0000:0000:ffff:0a00:0001\t10.0.0.1  \tv2\tens2f1\n";
    let f = ShowGids::parse(two).unwrap();
    let on: Vec<_> = f
        .roce_v2_ipv4
        .iter()
        .map(|e| (e.device.as_str(), e.netdev.as_deref()))
        .collect();
    assert_eq!(on, [("mlx5_0", Some("bond0")), ("mlx5_1", Some("ens2f1"))]);
}

/// `ethtool -m`: identity, readings, flags and thresholds of each paste (ground truth in
/// fixtures/commands/README.md), and what each module says is wrong with it.
#[test]
fn ethtool_module_diagnostics() {
    use fabrik_parse::formats::ethtool_module::alarms;
    // A 10G SR SFP whose receiver gets -33.98 dBm: its rx power low alarm and warning are On.
    let f = EthtoolModule::parse(&text("ethtool_module", "01")).unwrap();
    assert_eq!(f.modules.len(), 1);
    let m = &f.modules[0];
    assert_eq!(m.interface, "ens22f0");
    assert_eq!(m.identifier.as_deref(), Some("0x03 (SFP)"));
    assert_eq!(m.vendor.as_deref(), Some("FINISAR CORP."));
    assert_eq!(m.part_number.as_deref(), Some("FTLX8571D3BCL-HD"));
    assert_eq!(m.serial.as_deref(), Some("AQ70P4U"));
    assert_eq!(
        m.transceiver_type.as_deref(),
        Some("10G Ethernet: 10G Base-SR")
    );
    assert_eq!(m.temperature_c, Some(30.14));
    assert_eq!(m.voltage_v, Some(3.344));
    assert_eq!(m.lanes.len(), 1);
    assert_eq!(m.lanes[0].lane, 0);
    assert_eq!(m.lanes[0].bias_ma, Some(7.934));
    assert_eq!(m.lanes[0].tx_power_mw, Some(0.5734));
    assert_eq!(m.lanes[0].rx_power_mw, Some(0.0004));
    assert_eq!(m.flags_implemented, Some(true));
    assert_eq!(m.flags_read, 20);
    let set: Vec<(&str, bool)> = m
        .flags_set
        .iter()
        .map(|f| (f.name.as_str(), f.alarm))
        .collect();
    assert_eq!(
        set,
        [
            ("Laser rx power low alarm", true),
            ("Laser rx power low warning", false)
        ]
    );
    let bias = &m.thresholds["bias"];
    assert_eq!(
        (
            bias.high_alarm,
            bias.low_alarm,
            bias.high_warning,
            bias.low_warning
        ),
        (Some(11.8), Some(4.0), Some(10.8), Some(5.0))
    );
    // The paste is cut inside `Laser output power high alarm threshold`: nothing of it is read.
    assert!(!m.thresholds.contains_key("tx_power"));
    assert_eq!(alarms(m), ["Laser rx power low alarm"]);

    // Fiber unplugged, cut before the diagnostics: identity only, redacted as posted.
    let f = EthtoolModule::parse(&text("ethtool_module", "02")).unwrap();
    let m = &f.modules[0];
    assert_eq!(
        (
            m.identifier.as_deref(),
            m.vendor.as_deref(),
            m.part_number.as_deref()
        ),
        (Some("0x03 (SFP)"), Some("FS"), Some("XXXXXXXXXXXXXXX"))
    );
    assert!(m.lanes.is_empty() && m.temperature_c.is_none());
    assert!(alarms(m).is_empty());

    // A QSFP28 behind a root prompt, tab-indented, cut in the middle of its part number.
    let f = EthtoolModule::parse(&text("ethtool_module", "03")).unwrap();
    let m = &f.modules[0];
    assert_eq!(m.interface, "p1p1");
    assert_eq!(m.identifier.as_deref(), Some("0x11 (QSFP28)"));
    assert_eq!(
        m.transceiver_type.as_deref(),
        Some("100G Ethernet: 100G Base-SR4 or 25GBase-SR")
    );
    assert_eq!(m.part_number.as_deref(), Some("QSFP28-SR4-"));

    // The diagnostics alone, between `...` lines and prose: a healthy SFP.
    let f = EthtoolModule::parse(&text("ethtool_module", "04")).unwrap();
    let m = &f.modules[0];
    assert_eq!(m.interface, "enp5s0f1");
    assert_eq!(m.temperature_c, Some(41.55));
    assert_eq!(m.lanes[0].bias_ma, Some(32.45));
    assert_eq!(m.lanes[0].tx_power_mw, Some(0.4374));
    assert_eq!(m.lanes[0].rx_power_mw, Some(0.5784));
    assert!(m.identifier.is_none() && alarms(m).is_empty());

    // A QSFP+ SR4 in an e-mail, with one lane lit: four channels, 56 flags all Off, the
    // thresholds (tx power's left zero by the module), then a kernel patch that is no module.
    let f = EthtoolModule::parse(&text("ethtool_module", "05")).unwrap();
    assert_eq!(f.modules.len(), 1);
    let m = &f.modules[0];
    assert_eq!(m.interface, "eth2");
    assert_eq!(m.identifier.as_deref(), Some("0x0d (QSFP+)"));
    assert_eq!(m.vendor.as_deref(), Some("AVAGO"));
    assert_eq!(m.temperature_c, Some(42.17));
    assert_eq!(m.voltage_v, Some(3.2917));
    let lanes: Vec<_> = m
        .lanes
        .iter()
        .map(|l| (l.lane, l.bias_ma, l.tx_power_mw, l.rx_power_mw))
        .collect();
    assert_eq!(
        lanes,
        [
            (1, Some(6.662), Some(0.7119), Some(0.7682)),
            (2, Some(0.0), Some(0.0), Some(0.0)),
            (3, Some(0.0), Some(0.0), Some(0.0)),
            (4, Some(0.0), Some(0.0), Some(0.0)),
        ]
    );
    assert_eq!(m.flags_read, 16 + 8 + 16 + 16);
    assert!(m.flags_set.is_empty(), "{:?}", m.flags_set);
    let rx = &m.thresholds["rx_power"];
    assert_eq!((rx.high_alarm, rx.low_alarm), (Some(2.1878), Some(0.0446)));
    assert_eq!(m.thresholds["temperature"].low_alarm, Some(-5.0));
    assert_eq!(m.thresholds["tx_power"].high_alarm, Some(0.0));
    // Dark lanes 2-4 read 0 mW, below the rx low alarm, and the module's flags say nothing is
    // wrong: the flags decide.
    assert!(alarms(m).is_empty());
    // Without its flags, the readings are judged against the thresholds, dark lanes left out.
    let mut judged = m.clone();
    judged.flags_read = 0;
    judged.lanes[0].rx_power_mw = Some(0.02);
    assert_eq!(
        alarms(&judged),
        ["receive power (lane 1) 0.02 mW below the low alarm threshold 0.0446 mW"]
    );
}

mod no_panic {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any text, read as any tool: an answer or a NotRecognised error, never a panic.
        #[test]
        fn any_text_as_any_tool(s in "\\PC*") {
            for t in Tool::ALL {
                let _ = t.read(&s);
            }
        }

        /// The lines of the real pastes shuffled, cut and repeated, read as every tool.
        #[test]
        fn real_lines_recombined(picks in proptest::collection::vec((0usize..10_000, 0usize..200), 0..60)) {
            let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/commands");
            let mut pool: Vec<String> = Vec::new();
            for dir in std::fs::read_dir(&root).unwrap() {
                let dir = dir.unwrap().path();
                if dir.is_dir() {
                    for f in std::fs::read_dir(&dir).unwrap() {
                        let s = std::fs::read_to_string(f.unwrap().path()).unwrap();
                        pool.extend(s.lines().map(str::to_string));
                    }
                }
            }
            let text: String = picks
                .iter()
                .map(|(i, cut)| {
                    let l = &pool[i % pool.len()];
                    let end = l.char_indices().map(|(j, _)| j).nth(*cut).unwrap_or(l.len());
                    format!("{}\n", &l[..end])
                })
                .collect();
            for t in Tool::ALL {
                let _ = t.read(&text);
            }
        }

        /// A module's readings and flags, printed the way ethtool prints them (`%-41s : `),
        /// indented, quoted or prompted the way pastes come, read back as printed.
        #[test]
        fn ethtool_module_readings_survive_decoration(
            temp in -40.0f64..120.0,
            lanes in proptest::collection::vec((0.0f64..20.0, 0.0f64..5.0, 0.0f64..5.0, proptest::bool::ANY), 1..9),
            prefix in prop_oneof![Just(""), Just("\t"), Just("        "), Just("> "), Just("# ")],
            prompt in proptest::bool::ANY,
        ) {
            let mut text = String::new();
            if prompt {
                text.push_str("root@node:~# ethtool -m ens1f0np0\n");
            }
            let line = |k: String, v: String| format!("{prefix}{k:<41} : {v}\n");
            text.push_str(&line("Identifier".into(), "0x18 (QSFP-DD Double Density 8X Pluggable Transceiver)".into()));
            text.push_str(&line("Module temperature".into(), format!("{temp:.2} degrees C / {:.2} degrees F", temp * 1.8 + 32.0)));
            for (i, (bias, tx, rx, alarm)) in lanes.iter().enumerate() {
                let n = i + 1;
                text.push_str(&line(format!("Laser tx bias current (Channel {n})"), format!("{bias:.3} mA")));
                text.push_str(&line(format!("Transmit avg optical power (Channel {n})"), format!("{tx:.4} mW / {:.2} dBm", 10.0 * tx.log10())));
                text.push_str(&line(format!("Rcvr signal avg optical power(Channel {n})"), format!("{rx:.4} mW / {:.2} dBm", 10.0 * rx.log10())));
                text.push_str(&line(format!("Laser rx power low alarm    (Chan {n})"), if *alarm { "On" } else { "Off" }.into()));
            }
            let f = EthtoolModule::parse(&text).unwrap();
            prop_assert_eq!(f.modules.len(), 1);
            let m = &f.modules[0];
            prop_assert_eq!(m.interface.as_str(), if prompt { "ens1f0np0" } else { "" });
            prop_assert!((m.temperature_c.unwrap() - temp).abs() < 0.006);
            prop_assert_eq!(m.lanes.len(), lanes.len());
            for (l, (bias, tx, rx, _)) in m.lanes.iter().zip(&lanes) {
                prop_assert!((l.bias_ma.unwrap() - bias).abs() < 0.0006);
                prop_assert!((l.tx_power_mw.unwrap() - tx).abs() < 0.00006);
                prop_assert!((l.rx_power_mw.unwrap() - rx).abs() < 0.00006);
            }
            let want: Vec<u32> = lanes.iter().enumerate().filter(|(_, l)| l.3).map(|(i, _)| i as u32 + 1).collect();
            let got: Vec<u32> = m.flags_set.iter().filter_map(|f| f.lane).collect();
            prop_assert_eq!(got, want);
            prop_assert_eq!(m.flags_read as usize, lanes.len());
        }
    }
}
