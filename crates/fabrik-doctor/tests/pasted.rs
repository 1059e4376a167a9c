//! The doctor's rules on nodes assembled from real pasted tool outputs (fixtures/commands,
//! ground truth in its README): the rules whose facts a paste gives fire as on a probed node,
//! and the rules whose facts it cannot give stay silent.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use fabrik_doctor::check_paste;
use fabrik_model::{Finding, Severity};
use fabrik_parse::formats::paste::Tool;

fn findings(tool: Tool, file: &str) -> Vec<Finding> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/commands")
        .join(file);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let pasted = tool.read(&text).unwrap();
    let f = check_paste(&pasted.node, pasted.tool);
    for x in &f {
        assert!(
            fabrik_doctor::catalog::rule(&x.rule).is_some(),
            "{} not in the catalog",
            x.rule
        );
    }
    f
}

fn rules(f: &[Finding]) -> Vec<(&str, &str, Severity)> {
    f.iter()
        .map(|f| (f.rule.as_str(), f.subject.as_str(), f.severity))
        .collect()
}

#[test]
fn ibstat_down_polling_port_is_an_error_with_the_tool_as_evidence() {
    let f = findings(
        Tool::Ibstat,
        "ibstat/03-cx7-down-polling-rate10-redacted-guids.txt",
    );
    assert_eq!(
        rules(&f),
        [
            ("FAB-PORT-001", "mlx5_10:1", Severity::Error),
            ("FAB-PORT-002", "mlx5_10:1", Severity::Error)
        ]
    );
    assert_eq!(f[0].evidence[0].path, "ibstat: mlx5_10/ports/1/state");
    assert_eq!(f[0].evidence[0].value, "1: DOWN");
    // Healthy ports: nothing. No rule that needs the whole node (no RDMA, memlock, modules,
    // sockets) speaks about a paste.
    assert!(findings(
        Tool::Ibstat,
        "ibstat/05-mlx4-qdr-inline-shell-comments-dollar-prompt.txt"
    )
    .is_empty());
    assert!(findings(
        Tool::Ibstat,
        "ibstat/01-cx6-ib-rate100-rst-indented-prompt.txt"
    )
    .is_empty());
}

#[test]
fn ibv_devinfo_down_port() {
    let f = findings(
        Tool::IbvDevinfo,
        "ibv_devinfo/05-h100-cx7-ib-port-down-lid-65535-cut.txt",
    );
    assert_eq!(rules(&f), [("FAB-PORT-001", "mlx5_0:1", Severity::Error)]);
    // Plain ibv_devinfo of a healthy HDR port: nothing.
    assert!(findings(
        Tool::IbvDevinfo,
        "ibv_devinfo/02-cx6-ib-hdr100-tabs-rst-indented-prompt.txt"
    )
    .is_empty());
}

#[test]
fn ibv_devinfo_without_gid_types_does_not_judge_gids() {
    // MLNX_OFED 4 `-v` prints the GID table without types: which GID is RoCE v2 is unknown, so
    // FAB-ROCE-001 must not fire on this RoCE port.
    let f = findings(
        Tool::IbvDevinfo,
        "ibv_devinfo/01-cx4lx-roce-mofed-exp-verbose-one-device.txt",
    );
    assert!(!f.iter().any(|f| f.rule.starts_with("FAB-ROCE")), "{f:#?}");
}

#[test]
fn show_gids_ports_without_an_ipv4_roce_v2_gid() {
    let f = findings(
        Tool::ShowGids,
        "show_gids/05-space-aligned-8-devices-ib-port-without-netdev-prompts.txt",
    );
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
    // Index 3 everywhere: no FAB-ROCE-002.
    assert!(findings(
        Tool::ShowGids,
        "show_gids/01-roce-8-nics-v1-v2-trailing-spaces.txt"
    )
    .is_empty());
}

#[test]
fn ibdev2netdev_down_netdevs_and_down_vfs() {
    let f = findings(
        Tool::Ibdev2netdev,
        "ibdev2netdev/03-dgx2-nfs-client-prompt-two-down.txt",
    );
    assert_eq!(
        rules(&f),
        [
            ("FAB-PORT-001", "mlx5_4:1", Severity::Warning),
            ("FAB-PORT-001", "mlx5_5:1", Severity::Warning)
        ]
    );
    // `-v` gives the port state: four DOWN VFs beside two ACTIVE ports are warnings (the
    // doctor's rule: a down port next to active ones is skipped by NCCL, a rail is missing).
    let f = findings(
        Tool::Ibdev2netdev,
        "ibdev2netdev/11-sriov-plain-then-v-padded-down-vfs.txt",
    );
    let down: Vec<_> = f
        .iter()
        .filter(|f| f.rule == "FAB-PORT-001")
        .map(|f| (f.subject.as_str(), f.severity))
        .collect();
    assert_eq!(
        down,
        [
            ("mlx5_2:1", Severity::Warning),
            ("mlx5_3:1", Severity::Warning),
            ("mlx5_4:1", Severity::Warning),
            ("mlx5_5:1", Severity::Warning)
        ]
    );
}

#[test]
fn mlnx_qos_pfc_off() {
    let f = findings(
        Tool::MlnxQos,
        "mlnx_qos/05-pcp-no-pfc-then-trust-dscp-two-runs-prompts.txt",
    );
    assert_eq!(f.len(), 1);
    assert_eq!(
        (f[0].rule.as_str(), f[0].severity),
        ("FAB-QOS-001", Severity::Warning)
    );
    // PFC on priority 5: nothing.
    assert!(findings(
        Tool::MlnxQos,
        "mlnx_qos/01-cx-dscp-trust-pfc-prio5-buffers-prompt.txt"
    )
    .is_empty());
    // Cut before the PFC table: PFC unknown, not off.
    assert!(findings(
        Tool::MlnxQos,
        "mlnx_qos/02-dscp-trust-dscp2prio-cut-with-comment.txt"
    )
    .is_empty());
}

#[test]
fn topo_gpus_without_a_near_nic() {
    let f = findings(
        Tool::Topo,
        "topo/05-a100-topo-mp-shell-comment-prefix-two-gpus-without-nic.txt",
    );
    assert_eq!(
        rules(&f),
        [
            ("FAB-GDR-002", "GPU 0", Severity::Warning),
            ("FAB-GDR-002", "GPU 3", Severity::Warning)
        ]
    );
    assert!(findings(Tool::Topo, "topo/02-h100-collect-env-prefix-8nic-pix.txt").is_empty());
}
