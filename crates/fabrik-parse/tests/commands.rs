//! Pasted command outputs (fixtures/commands, real public pastes) against the ground truth in
//! fixtures/commands/README.md.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use fabrik_parse::formats::paste::Tool;
use fabrik_parse::formats::{
    Format, Ibdev2netdev, Ibstat, IbvDevinfo, MlnxQos, NvidiaSmiTopo, ShowGids,
};

fn text(tool: &str, name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/commands")
        .join(tool)
        .join(name);
    std::fs::read_to_string(p).expect("fixture readable")
}

fn nearest(name: &str) -> Vec<(usize, String, String)> {
    NvidiaSmiTopo::parse(&text("topo", name))
        .unwrap()
        .nearest
        .into_iter()
        .map(|g| (g.gpu, g.nics.join(","), g.path))
        .collect()
}

#[test]
fn topo_nearest_nic_through_the_legend() {
    let n = nearest("01-a100-nv12-tabs-pxb-pairs-10nics.txt");
    assert_eq!(n.len(), 8);
    assert_eq!(n[0], (0, "mlx5_0,mlx5_1".into(), "PXB".into()));
    assert_eq!(n[7], (7, "mlx5_6,mlx5_7".into(), "PXB".into()));
    let n = nearest("02-h100-collect-env-prefix-8nic-pix.txt");
    assert_eq!(n.len(), 8);
    for (gpu, nic, path) in &n {
        assert_eq!(
            (nic.as_str(), path.as_str()),
            (format!("mlx5_{gpu}").as_str(), "PIX")
        );
    }
    // The legend is out of order: GPU1's PIX NIC is NIC1 = mlx5_3.
    let n = nearest("03-h200-dash-rule-legend-out-of-order-bond.txt");
    let want = [
        "mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9",
    ];
    for (gpu, nic, path) in &n {
        assert_eq!(
            (nic.as_str(), path.as_str()),
            (want[*gpu], "PIX"),
            "GPU{gpu}"
        );
    }
    let t = text("topo", "03-h200-dash-rule-legend-out-of-order-bond.txt");
    let facts = NvidiaSmiTopo::parse(&t).unwrap();
    assert_eq!(facts.nccl_ib_hca, want);
    let table = Tool::Topo.read(&t).unwrap().table;
    assert!(table.notes.iter().any(|n| n.contains("mlx5_bond_0")));
    assert!(table.notes.iter().any(|n| n.contains("GPU1 -> mlx5_3")));
    // The whole matrix: NIC rows and GPU pairs too (17 × 17 cells).
    assert_eq!(facts.matrix.len(), 17 * 17);
    assert!(facts
        .matrix
        .iter()
        .any(|c| c.from == "mlx5_bond_0" && c.to == "mlx5_0" && c.path == "NODE"));
    assert!(facts
        .matrix
        .iter()
        .any(|c| c.from == "GPU3" && c.to == "GPU7" && c.path == "NV18"));
    assert_eq!(facts.affinity[4].numa, Some(1));
    assert_eq!(facts.affinity[4].cpus.as_deref(), Some("48-95,144-191"));
    // In file 02 GPU n's NIC is mlx5_n: nothing to say about the order.
    let t = text("topo", "02-h100-collect-env-prefix-8nic-pix.txt");
    let table = Tool::Topo.read(&t).unwrap().table;
    assert!(!table.notes.iter().any(|n| n.contains("does not carry")));
    // Older drivers name NIC columns by device; GPU0 reaches mlx5_0 only at NODE.
    let n = nearest("04-v100-old-driver-nic-names-as-columns-ragged-tabs.txt");
    assert_eq!(n[0], (0, "mlx5_0".into(), "NODE".into()));
    assert_eq!(n[2], (2, "mlx5_0".into(), "PIX".into()));
    assert_eq!(n[6], (6, "mlx5_1".into(), "PIX".into()));
    // `# `-commented -mp output: GPU0 and GPU3 have no near NIC, a warning each.
    let n = nearest("05-a100-topo-mp-shell-comment-prefix-two-gpus-without-nic.txt");
    assert_eq!(n.len(), 4);
    assert_eq!(n[1], (1, "mlx5_0".into(), "PIX".into()));
    assert_eq!(n[3].2, "SYS");
}

#[test]
fn ibstat_states_rates_and_errors() {
    let st = Ibstat::parse(&text(
        "ibstat",
        "03-cx7-down-polling-rate10-redacted-guids.txt",
    ))
    .unwrap();
    let p = &st.ports[0];
    assert_eq!((p.device.as_str(), p.port), ("mlx5_10", 1));
    assert_eq!(
        (p.state.as_deref(), p.phys_state.as_deref()),
        (Some("Down"), Some("Polling"))
    );
    assert_eq!(p.fw_ver.as_deref(), Some("28.39.1002"));
    // The GUIDs are redacted to `...`: not taken for GUIDs.
    assert_eq!((p.node_guid.as_ref(), p.port_guid.as_ref()), (None, None));
    // Shell comments after the values do not become the values.
    let st = Ibstat::parse(&text(
        "ibstat",
        "05-mlx4-qdr-inline-shell-comments-dollar-prompt.txt",
    ))
    .unwrap();
    assert_eq!(st.ports[0].state.as_deref(), Some("Active"));
    assert_eq!(st.ports[0].phys_state.as_deref(), Some("LinkUp"));
    assert_eq!(st.ports[0].rate_gbps, Some(40.0));
    let st = Ibstat::parse(&text(
        "ibstat",
        "06-cut-head-hdr200-then-ibpanic-missing-device.txt",
    ))
    .unwrap();
    assert_eq!(st.ports.len(), 1);
    assert_eq!(st.ports[0].rate_gbps, Some(200.0));
    assert_eq!(st.errors.len(), 1);
    assert!(st.errors[0].contains("mlx5_8"));
    let st = Ibstat::parse(&text("ibstat", "04-cx6dx-down-disabled-cut.txt")).unwrap();
    assert_eq!(st.ports[0].phys_state.as_deref(), Some("Disabled"));
    assert_eq!(st.ports[0].rate_gbps, None);
}

#[test]
fn ibv_devinfo_ports() {
    let p = IbvDevinfo::parse(&text(
        "ibv_devinfo",
        "01-cx4lx-roce-mofed-exp-verbose-one-device.txt",
    ))
    .unwrap()
    .ports;
    assert_eq!(p.len(), 1);
    assert_eq!((p[0].active_mtu, p[0].max_mtu), (Some(1024), Some(4096)));
    assert_eq!(p[0].link_layer.as_deref(), Some("Ethernet"));
    let p = IbvDevinfo::parse(&text(
        "ibv_devinfo",
        "04-softroce-rxe0-no-link-layer-line.txt",
    ))
    .unwrap()
    .ports;
    assert_eq!(p[0].device, "rxe0");
    assert_eq!(p[0].link_layer, None);
    let p = IbvDevinfo::parse(&text(
        "ibv_devinfo",
        "05-h100-cx7-ib-port-down-lid-65535-cut.txt",
    ))
    .unwrap()
    .ports;
    assert_eq!(p[0].state.as_deref(), Some("PORT_DOWN (1)"));
    assert_eq!(p[0].lid, Some(65535));
}

#[test]
fn show_gids_roce_v2_ipv4_index() {
    let idx = ShowGids::parse(&text(
        "show_gids",
        "01-roce-8-nics-v1-v2-trailing-spaces.txt",
    ))
    .unwrap()
    .roce_v2_ipv4;
    assert_eq!(idx.len(), 9);
    assert!(idx.iter().all(|e| e.index == Some(3)));
    assert_eq!(
        idx[0].ipv4.map(|a| a.to_string()).as_deref(),
        Some("10.0.60.3")
    );
    let idx = ShowGids::parse(&text("show_gids", "03-bond-and-huawei-hrn3-two-hosts.txt"))
        .unwrap()
        .roce_v2_ipv4;
    let hrn = idx.iter().find(|e| e.device == "hrn3_bond_0").unwrap();
    assert_eq!(hrn.index, Some(1));
    let f = ShowGids::parse(&text("show_gids", "04-c-comment-star-prefix-3-nics.txt")).unwrap();
    assert_eq!(f.roce_v2_ipv4.len(), 3);
    let idx = ShowGids::parse(&text(
        "show_gids",
        "05-space-aligned-8-devices-ib-port-without-netdev-prompts.txt",
    ))
    .unwrap()
    .roce_v2_ipv4;
    let with: Vec<_> = idx
        .iter()
        .filter(|e| e.index == Some(3))
        .map(|e| e.device.as_str())
        .collect();
    assert_eq!(with, ["mlx5_2", "mlx5_3"]);
}

#[test]
fn ibdev2netdev_maps_and_states() {
    let m = Ibdev2netdev::parse(&text(
        "ibdev2netdev",
        "01-column-t-inline-comments-cx7-ib-cx6-eth.txt",
    ))
    .unwrap()
    .maps;
    assert_eq!(m.len(), 12);
    let up: Vec<_> = m
        .iter()
        .filter(|x| x.netdev_up == Some(true))
        .map(|x| x.device.as_str())
        .collect();
    assert_eq!(up, ["mlx5_1", "mlx5_7"]);
    assert_eq!(m[0].netdev, "ibp26s0");
    let m = Ibdev2netdev::parse(&text(
        "ibdev2netdev",
        "03-dgx2-nfs-client-prompt-two-down.txt",
    ))
    .unwrap()
    .maps;
    let down: Vec<_> = m
        .iter()
        .filter(|x| x.netdev_up == Some(false))
        .map(|x| x.device.as_str())
        .collect();
    assert_eq!(down, ["mlx5_4", "mlx5_5"]);
}

#[test]
fn mlnx_qos_pfc_and_trust() {
    let q = |name: &str| MlnxQos::parse(&text("mlnx_qos", name)).unwrap();
    let one = q("01-cx-dscp-trust-pfc-prio5-buffers-prompt.txt");
    assert_eq!(
        (one.trust.as_deref(), one.pfc_enabled.as_deref()),
        (Some("dscp"), Some(&[5u8][..]))
    );
    // Priority 5 holds DSCP 40-47 in this map: the DSCPs that are lossless.
    assert_eq!(one.lossless_dscp(), (40..=47).collect::<Vec<u8>>());
    // Cut before the PFC table: trust known, PFC unknown (not "off").
    let cut = q("02-dscp-trust-dscp2prio-cut-with-comment.txt");
    assert_eq!(
        (cut.trust.as_deref(), cut.pfc_enabled.as_ref()),
        (Some("dscp"), None)
    );
    assert!(cut.pfc("x").is_none());
    // DSCP 30 remapped to priority 6 (on two lines): it is not lossless under PFC 3.
    let remap = q("03-dscp-remapped-dscp30-prio6-twice-pfc3-set-command.txt");
    assert_eq!(remap.pfc_enabled.as_deref(), Some(&[3u8][..]));
    assert_eq!(remap.dscp2prio.get(&30), Some(&6));
    assert_eq!(remap.dscp2prio.get(&48), Some(&6));
    assert!(!remap.lossless_dscp().contains(&30));
    assert!(remap.lossless_dscp().contains(&26));
    let pcp = q("04-pcp-trust-pfc3-after-trust-command.txt");
    assert_eq!(
        (pcp.trust.as_deref(), pcp.pfc_enabled.as_deref()),
        (Some("pcp"), Some(&[3u8][..]))
    );
    // Two runs: the state the last one left (trust dscp), PFC still off.
    let two = q("05-pcp-no-pfc-then-trust-dscp-two-runs-prompts.txt");
    assert_eq!(two.runs, 2);
    assert_eq!(two.trust.as_deref(), Some("dscp"));
    assert_eq!(two.pfc_enabled.as_deref(), Some(&[][..]));
}

#[test]
fn ibdev2netdev_verbose_form_with_padded_port_state() {
    let m = Ibdev2netdev::parse(&text(
        "ibdev2netdev",
        "11-sriov-plain-then-v-padded-down-vfs.txt",
    ))
    .unwrap()
    .maps;
    assert_eq!(m.len(), 8);
    let v = &m[2..];
    assert_eq!(v[0].device, "mlx5_0");
    assert_eq!(v[0].port_state.as_deref(), Some("ACTIVE"));
    assert_eq!(v[0].pci.as_deref(), Some("0000:02:00.0"));
    assert_eq!(v[0].hca_type.as_deref(), Some("MT4115"));
    assert_eq!(v[2].fw_ver.as_deref(), Some("12.23.1020"));
    let down: Vec<_> = v
        .iter()
        .filter(|x| x.port_state.as_deref() == Some("DOWN"))
        .map(|x| (x.device.as_str(), x.netdev.as_str(), x.netdev_up))
        .collect();
    assert_eq!(
        down,
        [
            ("mlx5_2", "enp2s0f2", Some(false)),
            ("mlx5_3", "enp2s0f3", Some(false)),
            ("mlx5_4", "enp2s0f4", Some(false)),
            ("mlx5_5", "enp2s0f5", Some(false)),
        ]
    );
}

/// Every fixture cut at many points (pastes are cut at either end) and read as every tool: no
/// panic, and a tool's facts of a cut text never exceed those of the whole.
#[test]
fn cut_pastes_never_panic_in_any_parser() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/commands");
    let mut files = 0;
    for tool in std::fs::read_dir(&root).unwrap() {
        let tool = tool.unwrap().path();
        if !tool.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&tool).unwrap() {
            let text = std::fs::read_to_string(f.unwrap().path()).unwrap();
            files += 1;
            let whole = Ibstat::parse(&text).map_or(0, |s| s.ports.len());
            let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).step_by(23).collect();
            for &i in &bounds {
                for part in [&text[..i], &text[i..]] {
                    for t in Tool::ALL {
                        let _ = t.read(part);
                    }
                    let n = Ibstat::parse(part).map_or(0, |s| s.ports.len());
                    assert!(n <= whole || &text[..i] != part);
                }
            }
        }
    }
    assert!(files >= 30, "{files}");
}
