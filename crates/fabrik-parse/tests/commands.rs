//! Pasted command outputs (fixtures/commands, real public pastes) against the ground truth in
//! fixtures/commands/README.md.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::PathBuf;

use fabrik_model::Severity;
use fabrik_parse::commands::{
    findings, ibdev2netdev, ibstat, ibv_devinfo, mlnx_qos, show_gids, topo,
};

fn text(tool: &str, name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/commands")
        .join(tool)
        .join(name);
    std::fs::read_to_string(p).expect("fixture readable")
}

fn nearest(name: &str) -> Vec<(usize, String, String)> {
    let cells = topo::parse_nvidia_smi_topo(&text("topo", name));
    topo::nearest_nics(&cells)
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
    let cells = topo::parse_nvidia_smi_topo(&text(
        "topo",
        "03-h200-dash-rule-legend-out-of-order-bond.txt",
    ));
    let nics: BTreeSet<String> = cells.keys().map(|(_, n)| n.clone()).collect();
    let near = topo::nearest_nics(&cells);
    let (f, advice) = findings::topo(&near, &nics);
    assert_eq!(advice.nccl_ib_hca, want);
    assert!(f
        .iter()
        .any(|f| f.subject == "node" && f.message.contains("mlx5_bond_0")));
    assert!(f
        .iter()
        .any(|f| f.subject == "node" && f.message.contains("GPU1 -> mlx5_3")));
    // In file 02 GPU n's NIC is mlx5_n: nothing to say about the order.
    let cells =
        topo::parse_nvidia_smi_topo(&text("topo", "02-h100-collect-env-prefix-8nic-pix.txt"));
    let nics: BTreeSet<String> = cells.keys().map(|(_, n)| n.clone()).collect();
    let (f, _) = findings::topo(&topo::nearest_nics(&cells), &nics);
    assert!(!f.iter().any(|f| f.message.contains("does not carry")));
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
    let st = ibstat::parse_ibstat(&text(
        "ibstat",
        "03-cx7-down-polling-rate10-redacted-guids.txt",
    ));
    let p = &st.ports[0];
    assert_eq!((p.device.as_str(), p.port), ("mlx5_10", 1));
    assert_eq!(
        (p.state.as_deref(), p.phys_state.as_deref()),
        (Some("Down"), Some("Polling"))
    );
    assert_eq!(p.fw_ver.as_deref(), Some("28.39.1002"));
    let f = findings::ibstat(&st);
    let rules: Vec<_> = f.iter().map(|f| f.rule.as_str()).collect();
    assert_eq!(rules, ["FAB-PORT-001", "FAB-PORT-002"]);
    assert!(f.iter().all(|f| f.severity == Severity::Error));
    // Shell comments after the values do not become the values.
    let st = ibstat::parse_ibstat(&text(
        "ibstat",
        "05-mlx4-qdr-inline-shell-comments-dollar-prompt.txt",
    ));
    assert_eq!(st.ports[0].state.as_deref(), Some("Active"));
    assert_eq!(st.ports[0].phys_state.as_deref(), Some("LinkUp"));
    assert_eq!(st.ports[0].rate_gbps, Some(40.0));
    assert!(findings::ibstat(&st).is_empty());
    let st = ibstat::parse_ibstat(&text(
        "ibstat",
        "06-cut-head-hdr200-then-ibpanic-missing-device.txt",
    ));
    assert_eq!(st.ports.len(), 1);
    assert_eq!(st.ports[0].rate_gbps, Some(200.0));
    assert_eq!(st.errors.len(), 1);
    assert!(st.errors[0].contains("mlx5_8"));
    let st = ibstat::parse_ibstat(&text("ibstat", "04-cx6dx-down-disabled-cut.txt"));
    assert_eq!(st.ports[0].phys_state.as_deref(), Some("Disabled"));
    assert_eq!(st.ports[0].rate_gbps, None);
}

#[test]
fn ibv_devinfo_ports() {
    let p = ibv_devinfo::parse_ibv_devinfo(&text(
        "ibv_devinfo",
        "01-cx4lx-roce-mofed-exp-verbose-one-device.txt",
    ));
    assert_eq!(p.len(), 1);
    assert_eq!((p[0].active_mtu, p[0].max_mtu), (Some(1024), Some(4096)));
    assert_eq!(p[0].link_layer.as_deref(), Some("Ethernet"));
    let p = ibv_devinfo::parse_ibv_devinfo(&text(
        "ibv_devinfo",
        "04-softroce-rxe0-no-link-layer-line.txt",
    ));
    assert_eq!(p[0].device, "rxe0");
    assert_eq!(p[0].link_layer, None);
    let p = ibv_devinfo::parse_ibv_devinfo(&text(
        "ibv_devinfo",
        "05-h100-cx7-ib-port-down-lid-65535-cut.txt",
    ));
    assert_eq!(p[0].state.as_deref(), Some("PORT_DOWN"));
    assert_eq!(findings::ibv_devinfo(&p)[0].rule, "FAB-PORT-001");
}

#[test]
fn show_gids_roce_v2_ipv4_index() {
    let rows = show_gids::parse_show_gids(&text(
        "show_gids",
        "01-roce-8-nics-v1-v2-trailing-spaces.txt",
    ));
    let idx = show_gids::roce_v2_indices(&rows);
    assert_eq!(idx.len(), 9);
    assert!(idx.iter().all(|e| e.index == Some(3)));
    assert_eq!(
        idx[0].ipv4.map(|a| a.to_string()).as_deref(),
        Some("10.0.60.3")
    );
    let rows =
        show_gids::parse_show_gids(&text("show_gids", "03-bond-and-huawei-hrn3-two-hosts.txt"));
    let idx = show_gids::roce_v2_indices(&rows);
    let hrn = idx.iter().find(|e| e.device == "hrn3_bond_0").unwrap();
    assert_eq!(hrn.index, Some(1));
    let rows =
        show_gids::parse_show_gids(&text("show_gids", "04-c-comment-star-prefix-3-nics.txt"));
    assert_eq!(show_gids::roce_v2_indices(&rows).len(), 3);
    let rows = show_gids::parse_show_gids(&text(
        "show_gids",
        "05-space-aligned-8-devices-ib-port-without-netdev-prompts.txt",
    ));
    let idx = show_gids::roce_v2_indices(&rows);
    let with: Vec<_> = idx
        .iter()
        .filter(|e| e.index == Some(3))
        .map(|e| e.device.as_str())
        .collect();
    assert_eq!(with, ["mlx5_2", "mlx5_3"]);
    let f = findings::show_gids(&rows, &idx);
    let flagged: Vec<_> = f
        .iter()
        .filter(|f| f.rule == "FAB-ROCE-001")
        .map(|f| f.subject.as_str())
        .collect();
    // mlx5_5 is an InfiniBand port (no netdev): not a RoCE finding.
    assert_eq!(
        flagged,
        ["mlx5_0:1", "mlx5_1:1", "mlx5_4:1", "mlx5_6:1", "mlx5_7:1"]
    );
}

#[test]
fn ibdev2netdev_maps_and_states() {
    let m = ibdev2netdev::parse_ibdev2netdev(&text(
        "ibdev2netdev",
        "01-column-t-inline-comments-cx7-ib-cx6-eth.txt",
    ));
    assert_eq!(m.len(), 12);
    let up: Vec<_> = m
        .iter()
        .filter(|x| x.netdev_up == Some(true))
        .map(|x| x.device.as_str())
        .collect();
    assert_eq!(up, ["mlx5_1", "mlx5_7"]);
    assert_eq!(m[0].netdev, "ibp26s0");
    let m = ibdev2netdev::parse_ibdev2netdev(&text(
        "ibdev2netdev",
        "03-dgx2-nfs-client-prompt-two-down.txt",
    ));
    let down: Vec<_> = findings::ibdev2netdev(&m)
        .into_iter()
        .map(|f| f.subject)
        .collect();
    assert_eq!(down, ["mlx5_4:1", "mlx5_5:1"]);
}

#[test]
fn mlnx_qos_pfc_and_trust() {
    let q = |name: &str| mlnx_qos::parse_mlnx_qos_full(&text("mlnx_qos", name)).unwrap();
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
    assert!(mlnx_qos::parse_mlnx_qos(
        &text("mlnx_qos", "02-dscp-trust-dscp2prio-cut-with-comment.txt"),
        "x"
    )
    .is_none());
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
    assert_eq!(findings::mlnx_qos(&two)[0].rule, "FAB-QOS-001");
}

#[test]
fn ibdev2netdev_verbose_form_with_padded_port_state() {
    let m = ibdev2netdev::parse_ibdev2netdev(&text(
        "ibdev2netdev",
        "11-sriov-plain-then-v-padded-down-vfs.txt",
    ));
    assert_eq!(m.len(), 8);
    let v = &m[2..];
    assert_eq!(v[0].device, "mlx5_0");
    assert_eq!(v[0].port_state.as_deref(), Some("ACTIVE"));
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
    let f = findings::ibdev2netdev(&m);
    assert_eq!(
        f.iter()
            .filter(|f| f.rule == "FAB-PORT-001" && f.severity == Severity::Error)
            .count(),
        4
    );
}

/// Every fixture cut at many points (pastes are cut at either end) and with every parser: no
/// panic, and each parser's facts of a cut text never exceed those of the whole.
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
            let whole = ibstat::parse_ibstat(&text).ports.len();
            let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).step_by(23).collect();
            for &i in &bounds {
                for part in [&text[..i], &text[i..]] {
                    let _ = topo::nearest_nics(&topo::parse_nvidia_smi_topo(part));
                    let st = ibstat::parse_ibstat(part);
                    assert!(st.ports.len() <= whole || &text[..i] != part);
                    let _ = findings::ibstat(&st);
                    let _ = findings::ibv_devinfo(&ibv_devinfo::parse_ibv_devinfo(part));
                    let rows = show_gids::parse_show_gids(part);
                    let _ = findings::show_gids(&rows, &show_gids::roce_v2_indices(&rows));
                    let _ = findings::ibdev2netdev(&ibdev2netdev::parse_ibdev2netdev(part));
                    if let Some(q) = mlnx_qos::parse_mlnx_qos_full(part) {
                        let _ = findings::mlnx_qos(&q);
                    }
                }
            }
        }
    }
    assert!(files >= 30, "{files}");
}
