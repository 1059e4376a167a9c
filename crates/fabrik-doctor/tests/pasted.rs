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

/// The rules of a paste given as text (tool outputs written as the tools print them, from their
/// sources, for the findings no public paste of the corpus shows).
fn text_findings(tool: Tool, text: &str) -> Vec<Finding> {
    let pasted = tool.read(text).unwrap();
    let f = check_paste(&pasted.node, pasted.tool);
    for x in &f {
        assert!(
            fabrik_doctor::catalog::rule(&x.rule).is_some(),
            "{}",
            x.rule
        );
    }
    f
}

fn ids(f: &[Finding]) -> Vec<(&str, Severity)> {
    f.iter().map(|f| (f.rule.as_str(), f.severity)).collect()
}

/// Every paste of the corpus for the tools issue 29 added, with the findings its README row
/// gives (none for most: they are healthy).
#[test]
fn corpus_pastes_of_the_new_tools() {
    type Case<'a> = (Tool, &'a str, &'a [(&'a str, Severity)]);
    let cases: &[Case] = &[
        (
            Tool::Ibstatus,
            "ibstatus/01-a800-roce-4space-indent-hash-prompt-zero-gids.txt",
            &[],
        ),
        (
            Tool::Ibstatus,
            "ibstatus/02-roce-100g-one-down-disabled-tabs-fenced.txt",
            &[
                ("FAB-PORT-001", Severity::Warning),
                ("FAB-PORT-002", Severity::Warning),
            ],
        ),
        (
            Tool::Ibstatus,
            "ibstatus/03-ucx-dask-guide-four-ib-edr-tabs.txt",
            &[],
        ),
        (
            Tool::Ibstatus,
            "ibstatus/04-cx6-ibstat-then-ibstatus-conda-prompt-both-down.txt",
            &[
                ("FAB-PORT-001", Severity::Error),
                ("FAB-PORT-001", Severity::Error),
                ("FAB-PORT-002", Severity::Error),
                ("FAB-PORT-002", Severity::Error),
            ],
        ),
        (
            Tool::Ibstatus,
            "ibstatus/05-one-port-25g-1x-edr-ethernet-root-prompt-prose-after.txt",
            &[],
        ),
        (
            Tool::EthtoolStats,
            "ethtool_stats/01-cx-xdp-benchmark-mlx5-full-stats-email-banners.txt",
            &[("FAB-LINK-007", Severity::Warning)],
        ),
        (
            Tool::Dmesg,
            "dmesg/01-desktop-xid-32-twice-forum-fence.txt",
            &[("FAB-KLOG-001", Severity::Warning)],
        ),
        (
            Tool::Dmesg,
            "dmesg/03-nvme-aer-corrected-receiver-errors-fenced.txt",
            &[("FAB-KLOG-004", Severity::Info)],
        ),
        (
            Tool::Dmesg,
            "dmesg/04-laptop-aer-syslog-format-older-id-form.txt",
            &[("FAB-KLOG-004", Severity::Info)],
        ),
        (
            Tool::Dmesg,
            "dmesg/05-r8169-link-up-repeating-lowercase-forum.txt",
            &[],
        ),
        (
            Tool::Lspci,
            "lspci/01-amd-gpp-bridge-acs-redirect-elided-dots-fenced.txt",
            &[("FAB-PCI-002", Severity::Warning)],
        ),
        (
            Tool::Lspci,
            "lspci/02-skylake-root-port-quoted-printable-email-rxerr-acs-x1-of-x16.txt",
            &[
                ("FAB-PCI-002", Severity::Warning),
                ("FAB-PCIE-003", Severity::Info),
            ],
        ),
        (
            Tool::Nvlink,
            "nvlink/01-v100-sxm2-two-inactive-links-cut-head-fenced.txt",
            &[("FAB-LINK-008", Severity::Error)],
        ),
        (
            Tool::Ibdiagnet,
            "ibdiagnet/04-v2-summary-blank-line-between-rows-fifteen-speed-width-errors.txt",
            &[("FAB-LINK-009", Severity::Warning)],
        ),
        (
            Tool::Iblinkinfo,
            "iblinkinfo/05-ibsim-switches-only-l-could-be-12x-and-down-indented-prompt.txt",
            &[("FAB-LINK-010", Severity::Warning)],
        ),
    ];
    for (tool, file, want) in cases {
        assert_eq!(ids(&findings(*tool, file)), *want, "{file}");
    }
    let mlx5 = findings(
        Tool::Dmesg,
        "dmesg/02-mlx5-vdpa-firmware-health-compromised-six-functions-email.txt",
    );
    assert_eq!(ids(&mlx5), [("FAB-KLOG-002", Severity::Error); 6]);

    // Healthy pastes, and the tools whose facts no rule judges alone (mst status, rocm-smi).
    for dir in ["mst_status", "mstconfig", "mstlink", "ethtool", "rocm_topo"] {
        let tool = Tool::ALL
            .iter()
            .copied()
            .find(|t| t.name().replace('-', "_") == dir || t.command().replace('-', "_") == dir)
            .unwrap();
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/commands");
        for f in std::fs::read_dir(root.join(dir)).unwrap() {
            let p = f.unwrap().path();
            let name = format!("{dir}/{}", p.file_name().unwrap().to_str().unwrap());
            assert!(findings(tool, &name).is_empty(), "{name}");
        }
    }
    for f in [
        "ethtool_stats/02-cx6dx-pam4-corrected-bits-grep-two-interfaces-dell-kb.txt",
        "ethtool_stats/03-four-fabric-nics-zero-drop-counters-text-fence-no-header.txt",
    ] {
        assert!(findings(Tool::EthtoolStats, f).is_empty(), "{f}");
    }
    // Six links of an H100 PCIe pair are inactive on both GPUs alike: its bridges wire 12.
    assert!(findings(
        Tool::Nvlink,
        "nvlink/02-h100-pcie-bridged-pair-six-unwired-links-indented-root-prompt.txt"
    )
    .is_empty());
}

/// `ethtool -m`: the SFP whose rx power low alarm is On fires FAB-LINK-011 naming the alarm and
/// the -33.98 dBm it receives; the other four pastes (identity only, healthy readings, a QSFP+
/// whose dark lanes the module does not flag) are quiet.
#[test]
fn ethtool_module_alarm_and_quiet_modules() {
    let f = findings(
        Tool::EthtoolModule,
        "ethtool_module/01-sfp-10g-sr-finisar-rx-power-low-alarm-blog-cut.txt",
    );
    assert_eq!(rules(&f), [("FAB-LINK-011", "ens22f0", Severity::Warning)]);
    assert!(
        f[0].message.contains("FINISAR CORP. FTLX8571D3BCL-HD")
            && f[0].message.contains("Laser rx power low alarm"),
        "{}",
        f[0].message
    );
    assert!(
        f[0].evidence
            .iter()
            .any(|e| e.path == "ethtool -m ens22f0" && e.value.contains("(-33.98 dBm)")),
        "{:?}",
        f[0].evidence
    );
    for quiet in [
        "ethtool_module/02-sfp-10g-lr-fiber-unplugged-fenced-issue-comment-cut.txt",
        "ethtool_module/03-qsfp28-100g-sr4-root-prompt-tab-indented-issue-cut.txt",
        "ethtool_module/04-sfp-ddm-dollar-sudo-prompt-ellipses-feature-request.txt",
        "ethtool_module/05-qsfp-plus-40g-sr4-four-channels-thresholds-netdev-email-then-patch.txt",
    ] {
        let f = findings(Tool::EthtoolModule, quiet);
        assert!(f.is_empty(), "{quiet}: {f:?}");
    }
}

#[test]
fn mstconfig_ats_pending_and_rails_that_differ() {
    let text = "Device #1:\n----------\n\nDevice type:    ConnectX6\nName:           MCX653106A-HDA_Ax\nDevice:         /dev/mst/mt4123_pciconf0\n\nConfigurations:                                      Default         Current         Next Boot\n*        ATS_ENABLED                                 False(0)        False(0)        True(1)\n         PCI_WR_ORDERING                             per_mkey(0)     per_mkey(0)     per_mkey(0)\n\nDevice #1:\n----------\n\nDevice type:    ConnectX6\nName:           MCX653106A-HDA_Ax\nDevice:         /dev/mst/mt4123_pciconf1\n\nConfigurations:                                      Default         Current         Next Boot\n         ATS_ENABLED                                 False(0)        False(0)        False(0)\n         PCI_WR_ORDERING                             per_mkey(0)     force_relax(1)  force_relax(1)\n";
    let f = text_findings(Tool::Mstconfig, text);
    let mut got: Vec<(&str, &str)> = f
        .iter()
        .map(|f| (f.rule.as_str(), f.subject.as_str()))
        .collect();
    got.sort();
    assert_eq!(
        got,
        [
            ("FAB-FW-001", "/dev/mst/mt4123_pciconf0"),
            ("FAB-FW-001", "/dev/mst/mt4123_pciconf1"),
            ("FAB-FW-002", "node"),
            ("FAB-FW-003", "/dev/mst/mt4123_pciconf0"),
        ]
    );
    // A single `grep` row: no rail to compare, nothing pending to tell.
    assert!(text_findings(
        Tool::Mstconfig,
        "$ mlxconfig -d /dev/mst/mt4123_pciconf0 q | grep PCI_WR\n         PCI_WR_ORDERING                     per_mkey(0)\n"
    )
    .is_empty());
    // Rows alone, with nothing that says which tool printed them, are not read as mstconfig.
    assert!(Tool::Mstconfig
        .read("         PCI_WR_ORDERING                     per_mkey(0)\n")
        .is_err());
}

#[test]
fn mstlink_errors_ber_recommendation_temperature_and_down_link() {
    let text = "$ sudo mlxlink -d mlx5_0 -m -c\n\nOperational Info\n----------------\nState                           : Active\nPhysical state                  : LinkUp\nSpeed                           : IB-HDR\nWidth                           : 4x\nFEC                             : Standard LL RS-FEC - RS(271,257)\n\nTroubleshooting Info\n--------------------\nStatus Opcode                   : 15\nRecommendation                  : Bad signal integrity\n\nModule Info\n-----------\nTemperature [C]                 : 78 [-5..70]\nCable Type                      : Optical Module\n\nPhysical Counters and BER Info\n------------------------------\nTime Since Last Clear [Min]     : 120.5\nEffective Physical Errors       : 12\nEffective Physical BER          : 2E-11\nRaw Physical Errors Per Lane    : 2000,30000,100,100\nRaw Physical BER                : 3E-5\n\n$ sudo mlxlink -d mlx5_1\n\nOperational Info\n----------------\nState                           : Polling\nPhysical state                  : ETH_AN_FSM_ENABLE\n\nTroubleshooting Info\n--------------------\nRecommendation                  : Cable is unplugged\n";
    let f = text_findings(Tool::Mstlink, text);
    assert_eq!(
        rules(&f),
        [
            ("FAB-LINK-001", "mlx5_0", Severity::Error),
            ("FAB-LINK-002", "mlx5_0", Severity::Error),
            ("FAB-LINK-003", "mlx5_0", Severity::Warning),
            ("FAB-LINK-003", "mlx5_1", Severity::Warning),
            ("FAB-LINK-004", "mlx5_1", Severity::Warning),
            ("FAB-LINK-005", "mlx5_0", Severity::Warning),
        ]
    );
}

#[test]
fn ethtool_speed_below_both_ends_and_no_link() {
    let text = "Settings for eth2:\n\tSupported ports: [ FIBRE ]\n\tSupported link modes:   10000baseKR/Full\n\t                        25000baseCR/Full\n\tLink partner advertised link modes:  10000baseKR/Full\n\t                                     25000baseCR/Full\n\tSpeed: 10000Mb/s\n\tDuplex: Full\n\tAuto-negotiation: on\n\tLink detected: yes\nSettings for eth3:\n\tSupported link modes:   25000baseCR/Full\n\tSpeed: Unknown!\n\tDuplex: Unknown! (255)\n\tLink detected: no\n";
    let f = text_findings(Tool::Ethtool, text);
    assert_eq!(
        rules(&f),
        [
            ("FAB-LINK-006", "eth2", Severity::Warning),
            ("FAB-LINK-006", "eth3", Severity::Warning)
        ]
    );
    let f = text_findings(
        Tool::EthtoolStats,
        "NIC statistics:\n     rx_crc_errors_phy: 1523\n     rx_symbol_err_phy: 88\n     rx_discards_phy: 0\n",
    );
    assert_eq!(ids(&f), [("FAB-LINK-007", Severity::Warning)]);
}

#[test]
fn kernel_log_xid_action_link_flaps_pin_failure_and_fatal_aer() {
    let text = "[ 5120.000001] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.\n[ 6000.1] mlx5_core 0000:17:00.0 ens1f0np0: Link down\n[ 6010.2] mlx5_core 0000:17:00.0 ens1f0np0: Link up\n[ 6100.3] mlx5_core 0000:17:00.0 ens1f0np0: Link down\n[   12.5] mlx5_core 0000:18:00.0 ens2f0np0: Link down\n[ 7000.4] NVRM: nvidia_p2p_get_pages failed, error -22\n[ 7100.5] pcieport 0000:00:01.0: AER: Uncorrectable (Fatal) error received: 0000:3b:00.0\n[ 7100.6] nvidia 0000:3b:00.0: PCIe Bus Error: severity=Uncorrectable (Fatal), type=Transaction Layer, (Receiver ID)\n";
    let f = text_findings(Tool::Dmesg, text);
    let got = ids(&f);
    assert!(got.contains(&("FAB-KLOG-001", Severity::Error)), "{got:?}");
    assert!(
        got.contains(&("FAB-KLOG-003", Severity::Warning)),
        "{got:?}"
    );
    assert!(got.contains(&("FAB-KLOG-005", Severity::Error)), "{got:?}");
    assert!(got.contains(&("FAB-KLOG-004", Severity::Error)), "{got:?}");
    // The link down 12 s after boot is the driver bringing the port up, not a flap.
    assert!(!f
        .iter()
        .any(|x| x.rule == "FAB-KLOG-003" && x.subject.contains("ens2f0np0")));
}

#[test]
fn nvlink_slow_link_and_a_bridged_card_missing_a_link_the_other_has() {
    let slow =
        "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-x)\n\t Link 0: 25 GB/s\n\t Link 1: 12.5 GB/s\n";
    assert_eq!(
        ids(&text_findings(Tool::Nvlink, slow)),
        [("FAB-LINK-008", Severity::Warning)]
    );
    let bridged = "GPU 0: NVIDIA H100 PCIe (UUID: GPU-a)\n\t Link 0: 26.562 GB/s\n\t Link 1: <inactive>\n\t Link 2: <inactive>\nGPU 1: NVIDIA H100 PCIe (UUID: GPU-b)\n\t Link 0: 26.562 GB/s\n\t Link 1: 26.562 GB/s\n\t Link 2: <inactive>\n";
    let f = text_findings(Tool::Nvlink, bridged);
    assert_eq!(rules(&f), [("FAB-LINK-008", "GPU 0", Severity::Error)]);
    assert!(f[0].message.contains("link 1"), "{}", f[0].message);
}

/// Whatever text is pasted as whatever tool, reading it and running the doctor's rules on what
/// it gave never panics.
mod no_panic {
    use super::*;
    use proptest::prelude::*;

    fn line() -> impl Strategy<Value = String> {
        prop_oneof![
            "\\PC{0,40}",
            "[ \t>#*]{0,4}[A-Za-z ]{1,24}: *[-+0-9A-Za-z ./()x]{0,20}",
            "GPU [0-9]{1,2}: [A-Z0-9 ]{0,12}(\\(UUID: GPU-[a-f0-9-]{0,8}\\))?",
            "\t Link [0-9]{1,2}: ([0-9.]{1,6} GB/s|<inactive>)",
            "\\[ *[0-9]{1,6}\\.[0-9]{1,6}\\] (NVRM: Xid \\(PCI:0000:[0-9a-f]{2}:00\\): [0-9]{1,3}, .{0,10}|mlx5_core 0000:[0-9a-f]{2}:00.0 [a-z0-9]{0,8}: Link (up|down)|pcieport 0000:00:01.0: AER: .{0,20})",
            " *[0-9]{1,4} +[0-9]{1,3}\\[  \\] ==\\( ?(4X|1X)? *[0-9.]{0,9} (Gbps )?(Active|Down)/ *(LinkUp|Polling)\\)==> +[0-9]{0,4} +[0-9]{0,3}\\[  \\] \"[a-z0-9 -]{0,10}\" \\(.{0,20}\\)",
            "-I- [A-Za-z /]{1,24} +[0-9]{1,4} +[0-9]{1,4}",
            "(GPU[0-9] +){1,4}",
            "GPU[0-9] +([0-9]{1,3}|XGMI|PCIE|0) +([0-9]{1,3}|XGMI|PCIE)",
            "(\\*| ) +[A-Z_]{3,20}[0-9P_]{0,3} +[A-Za-z_()0-9]{1,14}( +[A-Za-z_()0-9]{1,14}){0,2}",
            "[A-Za-z ]{3,30} +: [-0-9A-Za-z,.()\\[\\] ]{0,30}",
            "[0-9a-f]{2}:[0-9a-f]{2}\\.[0-7] [A-Za-z ]{0,20}: .{0,20}",
            "\t\t(LnkSta|LnkCap|DevCtl|ACSCtl|UESta|CESta):\t.{0,40}",
            "     [a-z_0-9]{1,24}: [0-9]{1,12}",
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn any_paste_as_any_tool(lines in proptest::collection::vec(line(), 0..40)) {
            let text = lines.join("\n");
            for t in Tool::ALL {
                if let Ok(p) = t.read(&text) {
                    let _ = check_paste(&p.node, p.tool);
                }
            }
        }
    }
}

#[test]
fn lspci_relaxed_ordering_off_on_a_nic_and_uncorrectable_errors() {
    let text = "17:00.0 Infiniband controller [0207]: Mellanox Technologies MT2910 Family [ConnectX-7] [15b3:1021]\n\tSubsystem: Mellanox Technologies Device 0023\n\tNUMA node: 0\n\tCapabilities: [60] Express (v2) Endpoint, MSI 00\n\t\tDevCtl:\tCorrErr+ NonFatalErr+ FatalErr+ UnsupReq+\n\t\t\tRlxdOrd- ExtTag+ PhantFunc- AuxPwr- NoSnoop+ FLReset-\n\t\t\tMaxPayload 256 bytes, MaxReadReq 4096 bytes\n\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM not supported\n\t\tLnkSta:\tSpeed 32GT/s, Width x16\n\t\t\tTrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-\n\tCapabilities: [100 v1] Advanced Error Reporting\n\t\tUESta:\tDLP- SDES- TLP- FCP- CmpltTO+ CmpltAbrt- UnxCmplt- RxOF- MalfTLP- ECRC- UnsupReq- ACSViol-\n\t\tUEMsk:\tDLP- SDES- TLP- FCP- CmpltTO- CmpltAbrt- UnxCmplt- RxOF- MalfTLP- ECRC- UnsupReq- ACSViol-\n\t\tUESvrt:\tDLP+ SDES- TLP- FCP+ CmpltTO- CmpltAbrt- UnxCmplt- RxOF+ MalfTLP+ ECRC- UnsupReq- ACSViol-\n\t\tCESta:\tRxErr- BadTLP- BadDLLP- Rollover- Timeout- AdvNonFatalErr-\n\tKernel driver in use: mlx5_core\n";
    let f = text_findings(Tool::Lspci, text);
    let got = ids(&f);
    assert!(
        got.contains(&("FAB-PCIE-001", Severity::Warning)),
        "{got:?}"
    );
    // A completion timeout, non-fatal by UESvrt.
    assert!(
        got.contains(&("FAB-PCIE-002", Severity::Warning)),
        "{got:?}"
    );
    assert!(!got.iter().any(|(r, _)| *r == "FAB-PCIE-003"), "{got:?}");
}
