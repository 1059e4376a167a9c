//! Pages of the expectation rules: a node against the expectations file.

use fabrik_model::{Rule, Scope, Severity};

use crate::catalog::sources::*;

pub(super) const EXP_001: Rule = Rule {
    id: "FAB-EXP-001",
    severity: Severity::Error,
    scope: Scope::Node,
    title: "GPU count or model differs from the expectations",
    checks: "`[gpus] count` (exact) and `model` (a text every GPU's model name holds) of the cluster file given with `--expect`/`--expect-gpus`.",
    why: "A GPU that fell off the bus (Xid 79) leaves a node that looks healthy to every rule judging what is present; jobs sized for 8 GPUs then fail or run unbalanced.",
    evidence: "GPUs on the PCI bus (vendor 0x10de) and their model names.",
    fix: "Check `nvidia-smi` and `dmesg` for Xid errors; reseat or replace the GPU; drain the node until it is whole.",
    sources: &[AZNHC, LBNL_NHC],
};

pub(super) const EXP_002: Rule = Rule {
    id: "FAB-EXP-002",
    severity: Severity::Error,
    scope: Scope::Node,
    title: "Fewer RDMA devices or ACTIVE ports than expected",
    checks: "`[rdma] devices` (at least this many hardware RDMA devices) and `active_ports` (at least this many ACTIVE ports, of `link_layer` when given).",
    why: "A lost rail (HCA without driver, dead port) halves or worse the node's share of every collective; NCCL silently uses what is left.",
    evidence: "/sys/class/infiniband, ports/*/state.",
    fix: "Load the driver, check `ibstat`, the cable and the switch port; keep multi-node jobs off the node until repaired.",
    sources: &[AZNHC, KERNEL_IB_ABI],
};

pub(super) const EXP_003: Rule = Rule {
    id: "FAB-EXP-003",
    severity: Severity::Error,
    scope: Scope::Node,
    title: "Port rate or link layer differs from the expectations",
    checks: "Every ACTIVE port of the expected `link_layer` runs at `rate_gbps` (error below, warning above); with no port of that layer, each active port of another layer is named.",
    why: "A port trained at a lower rate has failed lanes or a wrong cable; a wrong link layer means the NIC is configured for another fabric.",
    evidence: "/sys/class/infiniband/<dev>/ports/<n>/rate and link_layer.",
    fix: "`mlxlink` for lanes and errors, reseat/replace the cable; `mlxconfig LINK_TYPE_P1` for the link type.",
    sources: &[KERNEL_IB_ABI],
};

pub(super) const EXP_004: Rule = Rule {
    id: "FAB-EXP-004",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "MTU differs from the expectations",
    checks: "`[rdma] ib_mtu` (IB active MTU from ibv_devinfo) and `netdev_mtu` (RoCE netdev MTU).",
    why: "The path MTU is the smaller side's: one node with a small MTU slows or breaks traffic with every peer.",
    evidence: "active_mtu from `ibv_devinfo -v`, /sys/class/net/<netdev>/mtu.",
    fix: "Set the MTU the cluster uses on the node (and its switch ports).",
    sources: &[ROCE_MTU_BLOG],
};

pub(super) const EXP_005: Rule = Rule {
    id: "FAB-EXP-005",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "RoCE GID index, PFC, trust or ECN differs from the expectations",
    checks: "`[roce] gid_index` (index of the RoCE v2 IPv4 GID), `pfc_priorities` (exact set), `trust` (dscp/pcp) and `ecn` on every ACTIVE RoCE port.",
    why: "NCCL_IB_GID_INDEX, NCCL_IB_TC and the switch configuration assume every node alike; one node with another PFC priority or trust state drops or pauses the wrong traffic.",
    evidence: "gid_attrs/types/*, `mlnx_qos` captures, /sys/class/net/<netdev>/ecn/roce_{np,rp}/enable/*.",
    fix: "`mlnx_qos -i <netdev> --pfc ... --trust ...`, the ECN enable files, the same IP setup on every node.",
    sources: &[NCCL_ENV, ROCE_MODE],
};

pub(super) const EXP_006: Rule = Rule {
    id: "FAB-EXP-006",
    severity: Severity::Error,
    scope: Scope::Node,
    title: "Peer-memory module or memlock differs from the expectations",
    checks: "`[host] peer_memory` (the module must be loaded: error) and `memlock` (`unlimited` or a least number of bytes: warning).",
    why: "Without the peer-memory module NCCL cannot use GPUDirect RDMA; a small memlock makes memory registration fail.",
    evidence: "/proc/modules, /proc/self/limits.",
    fix: "`modprobe nvidia_peermem` at boot; memlock unlimited in limits.conf and the launcher.",
    sources: &[GDR_MANUAL, MEMLOCK_ISSUE],
};

pub(super) const EXP_007: Rule = Rule {
    id: "FAB-EXP-007",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "Driver, OFED, rdma-core, NCCL or firmware version differs from the expectations",
    checks: "`[versions]` and `[rdma] firmware`, each a version prefix matched at a component boundary (`535` matches `535.161.08`, `535.16` does not).",
    why: "A node left on another release behaves differently from its peers; cross-node comparison only sees it when the peers are checked together.",
    evidence: "/proc/driver/nvidia/version, `ofed_info -s`, /sys/class/infiniband/<dev>/fw_ver.",
    fix: "Install the cluster's release, or update the expectations when the whole cluster moved.",
    sources: &[KERNEL_IB_ABI, NCCL_TROUBLESHOOTING],
};

pub(super) const EXP_008: Rule = Rule {
    id: "FAB-EXP-008",
    severity: Severity::Warning,
    scope: Scope::Env,
    title: "An NCCL setting differs from the expectations",
    checks: "Each `[nccl]` KEY = VALUE against the planned environment (`--env-file`, `--env`).",
    why: "Platform settings (NCCL_IB_HCA, NCCL_IB_GID_INDEX, NCCL_NET_PLUGIN, FI_PROVIDER...) forgotten in one job script make that job slow or fall back to sockets.",
    evidence: "env:KEY of the planned environment.",
    fix: "Set the value in the job's environment or /etc/nccl.conf.",
    sources: &[NCCL_ENV],
};

pub(super) const EXP_009: Rule = Rule {
    id: "FAB-EXP-009",
    severity: Severity::Info,
    scope: Scope::Node,
    title: "An expectation the node's data cannot confirm",
    checks: "An expected fact fabrik could not read on this root (no `ibv_devinfo` capture for the IB MTU, no /proc/modules, no environment for `[nccl]`...).",
    why: "Unknown is not a difference: the node is not judged on it, and the reader learns what was not verified.",
    evidence: "The path the fact would come from.",
    fix: "Snapshot the node as root with `fabrik snapshot`, pass the environment, or drop the expectation.",
    sources: &[KERNEL_IB_ABI],
};

pub(super) const EXP_010: Rule = Rule {
    id: "FAB-EXP-010",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "A waiver expired",
    checks: "A `[[waive]]` table whose `expires` date is past (UTC).",
    why: "A waiver is a promise to fix something by a date; once past, its findings count again and the report says why they came back.",
    evidence: "The waiver's expiry date and reason.",
    fix: "Fix what the waiver covered, or renew it with a new date and reason.",
    sources: &[LBNL_NHC],
};

pub(super) const EXP_011: Rule = Rule {
    id: "FAB-EXP-011",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "A NIC firmware setting differs from the expectations",
    checks: "Each `[nic.firmware]` NAME = VALUE against every NIC's `mstconfig q` (the value in force: `Current` where shown, else `Next Boot`); the value matches as printed (`force_relax(1)`) or by its word or number alone.",
    why: "Firmware settings (relaxed ordering, ATS, link type, SR-IOV, congestion control) persist across reinstalls and are set by hand one node at a time; the node that missed one runs slower or differently from the rest.",
    evidence: "`mstconfig -d DEV q`: the setting's line.",
    fix: "`mstconfig -d DEV set NAME=VALUE` and reboot or `mstfwreset`.",
    sources: &[MSTFLINT_MLXCONFIG_DB],
};

pub(super) const EXP_012: Rule = Rule {
    id: "FAB-EXP-012",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "A PCIe link on a NIC's or GPU's path is slower or narrower than expected",
    checks: "Each NIC's and GPU's current PCIe link speed and width against `[pcie]` (`nic_speed_gts`, `nic_width`, `gpu_speed_gts`, `gpu_width`: at least), and each bridge above it whose link trained below the expected value while its maximum reaches it.",
    why: "A device that trained at x8 or at a lower generation, or a switch link above it that did, caps every transfer through it; the link state of the port above does not show it.",
    evidence: "/sys/bus/pci/devices/<addr>/current_link_speed, current_link_width, max_link_width.",
    fix: "Reseat the device, riser or switch board, and check the slot's BIOS PCIe settings.",
    sources: &[PCIUTILS_LS_CAPS, NCCL_TROUBLESHOOTING],
};

pub(super) const EXP_013: Rule = Rule {
    id: "FAB-EXP-013",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "A port's FEC or bit error ratio differs from the expectations",
    checks: "Each port's `mstlink` FEC against `[nic] fec` (a text the mode holds), its `Effective Physical BER` against `max_effective_ber` (error when above) and its `Raw Physical BER` against `max_raw_ber` (warning when above). `fabrik expect --from-root` writes Oracle's OCI health-check limits (1E-12 effective, 1E-5 raw).",
    why: "A port that negotiated another FEC corrects fewer errors than its peers; a BER above the cluster's bound loses packets, which RDMA retransmits while the collective waits.",
    evidence: "`mstlink -d DEV -c`: `FEC`, `Effective Physical BER`, `Raw Physical BER`.",
    fix: "Set the FEC alike on both ends; clean or replace the optic or cable, clear the counters and read them again.",
    sources: &[ORACLE_OCI_DR_HPC, MSTFLINT_MLXLINK],
};

pub(super) const EXP_014: Rule = Rule {
    id: "FAB-EXP-014",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "Kernel log events the expectations say must be absent",
    checks: "The kernel log's events of each class `[kernel_log] absent` names: `xid`, `mlx5_health`, `link_down` (after the 30-minute boot grace), `aer_correctable`, `aer_uncorrectable`, `pin_failure`.",
    why: "A known-good node logs none of them; one that does is not like it, whether or not the single-node rules judge the events serious on their own.",
    evidence: "The kernel log lines.",
    fix: "Follow the FAB-KLOG finding of the same events.",
    sources: &[NVIDIA_XID, LINUX_MLX5_HEALTH, LINUX_AER_HOWTO],
};
