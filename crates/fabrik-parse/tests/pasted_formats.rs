//! The tools added for issue 29: every real paste in fixtures/commands/<tool>/ read against the
//! ground truth its README row gives. Findings on these pastes are in
//! crates/fabrik-doctor/tests/pasted.rs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use fabrik_model::KernelEventKind;
use fabrik_parse::formats::paste::Tool;
use fabrik_parse::formats::{
    Dmesg, Ethtool, EthtoolStats, Format, Ibdiagnet, Iblinkinfo, Ibstatus, IbvDevinfo, Lspci,
    MstStatus, Mstconfig, Mstlink, NvlinkStatus, RocmTopo, ShowGids,
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
    }
}
