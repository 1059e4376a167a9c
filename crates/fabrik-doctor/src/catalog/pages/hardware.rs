//! Pages of the rules on pasted tool outputs about the hardware: PCIe functions (`lspci -vvv`),
//! links, cables and transceivers, firmware, and the kernel log.

use fabrik_model::{Rule, Scope, Severity};

use crate::catalog::sources::*;

pub(super) const PCIE_001: Rule = Rule {
    id: "FAB-PCIE-001",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "Relaxed ordering disabled on an RDMA NIC's PCIe function",
    checks: "The PCIe Device Control register of an RDMA NIC's function has Enable Relaxed Ordering clear (`RlxdOrd-` on the `DevCtl:` lines of `lspci -vvv`).",
    why: "A memory region registered with IBV_ACCESS_RELAXED_ORDERING (NCCL does it by default where the device supports it, NCCL_IB_PCI_RELAXED_ORDERING) only gets relaxed writes if the function may issue them. Without relaxed ordering, writes into GPU memory over some root complexes and in VMs run far below line rate: one ConnectX-7 VF measured 84 Gb/s from cudaMalloc memory against ~400 Gb/s with relaxed ordering. The kernel itself clears the bit below root ports with relaxed-ordering errata, so the finding asks to check why before changing it.",
    evidence: "`lspci -vvv -s <addr>`: `DevCtl:` ... `RlxdOrd-`.",
    fix: "Check `dmesg` for the kernel's relaxed-ordering quirk on the root port; otherwise set bit 4 of Device Control (`setpci -s <addr> CAP_EXP+08.w=0010:0010`, not persistent) or the BIOS/hypervisor setting that clears it.",
    sources: &[PCIUTILS_LS_CAPS, LINUX_PCI_QUIRKS, NCCL_ENV, NCCL_1731],
};

pub(super) const PCIE_002: Rule = Rule {
    id: "FAB-PCIE-002",
    severity: Severity::Error,
    scope: Scope::Node,
    title: "PCIe uncorrectable errors logged (AER)",
    checks: "A GPU's or NIC's Advanced Error Reporting shows uncorrectable errors: status bits set in `UESta` (`lspci -vvv`), or the kernel's `aer_dev_fatal`/`aer_dev_nonfatal` counts above zero. Error when the severity register (`UESvrt`) makes one fatal or a fatal count is above zero; warning for non-fatal ones; a lone Unsupported Request, which configuration probing sets, is noted as info.",
    why: "An uncorrectable error means a transaction was lost or corrupted on the link: the driver may reset the device, NCCL over it hangs or fails (NCCL's own troubleshooting lists PCIe errors among the causes of hangs).",
    evidence: "`lspci -vvv -s <addr>`: `UESta:`/`UESvrt:`; /sys/bus/pci/devices/<addr>/aer_dev_fatal and aer_dev_nonfatal.",
    fix: "Find the events in the kernel log (`dmesg | grep -i aer`), reseat the card or riser, check the slot, update firmware and BIOS; clear the status once fixed.",
    sources: &[PCIUTILS_LS_ECAPS, LINUX_AER_HOWTO, NCCL_TROUBLESHOOTING],
};

pub(super) const PCIE_003: Rule = Rule {
    id: "FAB-PCIE-003",
    severity: Severity::Info,
    scope: Scope::Node,
    title: "PCIe correctable errors logged (AER)",
    checks: "A GPU's, NIC's or path bridge's `CESta` shows correctable errors (`RxErr`, `BadTLP`, `BadDLLP`, `Rollover`, `Timeout`...; `AdvNonFatalErr`, an advisory for an uncorrectable error, is left out), or the kernel's `aer_dev_correctable` counts one of them above zero (`NonFatalErr`, the same advisory, left out).",
    why: "Correctable errors are recovered by replay, at a cost in bandwidth; a link that keeps producing them is marginal (signal integrity, a riser or slot) and tends to get worse. A status bit says it happened since the last clear, not how often.",
    evidence: "`lspci -vvv -s <addr>`: `CESta:`; /sys/bus/pci/devices/<addr>/aer_dev_correctable.",
    fix: "Watch /sys/bus/pci/devices/<addr>/aer_dev_correctable over time; errors that keep rising point at the slot, riser or card.",
    sources: &[PCIUTILS_LS_ECAPS, LINUX_AER_HOWTO],
};

pub(super) const LINK_001: Rule = Rule {
    id: "FAB-LINK-001",
    severity: Severity::Error,
    scope: Scope::Node,
    title: "Errors left after FEC on a link",
    checks: "A port's `Effective Physical Errors` (mstlink/mlxlink) is above 0, or its `Effective Physical BER` is at or above 1E-12: the limits of Oracle's OCI GPU health checks.",
    why: "Effective errors are the ones forward error correction could not repair: the packet is lost and RDMA retransmits it (go-back-N on RoCE), which stalls the collective that waits for it. A healthy link shows none.",
    evidence: "`mstlink -d DEV -c`: `Effective Physical Errors`, `Effective Physical BER`.",
    fix: "Clean or replace the optic or cable and check the switch side; clear the counters (`mlxlink -d DEV -pc`) and watch whether they return.",
    sources: &[ORACLE_OCI_DR_HPC, MSTFLINT_MLXLINK],
};

pub(super) const LINK_002: Rule = Rule {
    id: "FAB-LINK-002",
    severity: Severity::Error,
    scope: Scope::Node,
    title: "High raw (pre-FEC) error rate on a link",
    checks: "A port's `Raw Physical BER` is at or above 1E-5 (error), or, where no raw BER is printed, one lane counts more than 10,000 `Raw Physical Errors Per Lane` (warning): Oracle's OCI GPU health-check limits. Lane counts are cumulative since the last clear, so where the BER is known it decides: a PAM4 link at a raw BER of 1E-8 counts millions of corrected errors over weeks and is healthy (IEEE asks PAM4 links for a pre-FEC BER of 2.4E-4 or better).",
    why: "FEC hides raw errors until it cannot: a link this noisy is marginal (a dirty or failing optic, a bent cable), loses packets under load and gets worse; Meta measured that one degraded port costs 5-30 % of NCCL bandwidth.",
    evidence: "`mstlink -d DEV -c`: `Raw Physical BER`, `Raw Physical Errors Per Lane`, `Time Since Last Clear [Min]`.",
    fix: "Clean the connectors and reseat or replace the module; compare with the node's other ports.",
    sources: &[ORACLE_OCI_DR_HPC, MSTFLINT_MLXLINK, META_GCM, DELL_PAM4_BER],
};

pub(super) const LINK_003: Rule = Rule {
    id: "FAB-LINK-003",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "mlxlink recommends action on a link",
    checks: "mlxlink's `Troubleshooting Info` gives a `Recommendation` other than `No issue was observed.`; `Bad signal integrity` with a raw BER below 1E-7 is info, as Oracle's health check tolerates it.",
    why: "mlxlink reads the port's own diagnosis (PDDR): the recommendation names what the firmware saw (signal integrity, a cable it does not support, the far end).",
    evidence: "`mstlink -d DEV`: `Recommendation`.",
    fix: "Follow the recommendation; usually the cable and module first, then the far end.",
    sources: &[ORACLE_OCI_HPC_HC, MSTFLINT_MLXLINK],
};

pub(super) const LINK_004: Rule = Rule {
    id: "FAB-LINK-004",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "NIC physical link not up (mlxlink)",
    checks: "mlxlink's `State` of a port is not `Active` (`Polling`, `Disable`...).",
    why: "A port whose physical layer is not up carries no traffic; Oracle's health check fails a node on it.",
    evidence: "`mstlink -d DEV`: `State`, `Physical state`.",
    fix: "Check the cable, the module and the switch port.",
    sources: &[ORACLE_OCI_HPC_HC, MSTFLINT_MLXLINK],
};

pub(super) const LINK_005: Rule = Rule {
    id: "FAB-LINK-005",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "Transceiver temperature above its alarm threshold",
    checks: "The module's `Temperature [C]` (mstlink -m) is above the high end of the alarm range the module itself reports in brackets.",
    why: "An optic past its temperature limit loses signal (raw errors rise) and fails early.",
    evidence: "`mstlink -d DEV -m`: `Temperature [C] : T [LOW..HIGH]`.",
    fix: "Check the airflow at the NIC and the switch; replace a module that keeps running hot.",
    sources: &[MSTFLINT_MLXLINK],
};

pub(super) const LINK_006: Rule = Rule {
    id: "FAB-LINK-006",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "Ethernet link down or below what both ends support",
    checks: "`ethtool IF` shows `Link detected: no`, or a `Speed` below the fastest mode both the interface (`Supported link modes`) and its partner (`Link partner advertised link modes`) support.",
    why: "A RoCE port trained below its speed, or not at all, caps the rail and NCCL runs at the pace of the slowest one.",
    evidence: "`ethtool IF`: `Speed`, `Supported link modes`, `Link partner advertised link modes`, `Link detected`.",
    fix: "Check the cable or module (a lower-rated one caps the speed) and whether the speed or autonegotiation was forced (`ethtool -s`).",
    sources: &[ETHTOOL_SRC],
};

pub(super) const LINK_007: Rule = Rule {
    id: "FAB-LINK-007",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "Physical-layer errors or discards in NIC statistics",
    checks: "`ethtool -S IF` counts damaged frames (`rx_crc_errors_phy`, `rx_symbol_err_phy`, `rx_pcs_symbol_err_phy`, length and fragment errors) or frames dropped for lack of buffers (`rx_discards_phy`, `rx_out_of_buffer`, `tx_discards_phy`) above 0.",
    why: "Damaged frames are a physical link fault; discards on a lossless RoCE fabric mean PFC did not hold the traffic back. Either way RoCE retransmits and collectives stall. The counters are cumulative: a second reading tells whether it is still happening.",
    evidence: "`ethtool -S IF`: the counters named.",
    fix: "Errors: check cable and module (`mlxlink`). Discards: check PFC on host and switch (`mlnx_qos`), NCCL's traffic class, the NIC's PCIe link.",
    sources: &[LINUX_MLX5_COUNTERS],
};

pub(super) const LINK_008: Rule = Rule {
    id: "FAB-LINK-008",
    severity: Severity::Error,
    scope: Scope::Node,
    title: "NVLink inactive or slower than the GPU's other links",
    checks: "`nvidia-smi nvlink -s` shows a link `<inactive>` (error) or slower than the GPU's fastest link (warning). A PCIe card (H100 PCIe, GeForce, RTX, Quadro) lists links its NVLink bridges do not wire: there only a link inactive on one GPU and up on another counts.",
    why: "NCCL's intra-node traffic runs over NVLink; a GPU missing links has less bandwidth, or falls back to PCIe when none is up. Meta's GCM health checks fail a node with a down or disabled NVLink.",
    evidence: "`nvidia-smi nvlink -s`: `Link N: <inactive>`, `Link N: S GB/s`.",
    fix: "On NVSwitch systems check nvidia-fabricmanager; reset the GPU or reboot; check `nvidia-smi nvlink -e`; a link that stays down is a hardware fault.",
    sources: &[META_GCM_NVLINK],
};

pub(super) const LINK_009: Rule = Rule {
    id: "FAB-LINK-009",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "ibdiagnet reported errors",
    checks: "A stage of ibdiagnet's summary (`Stages Status Report`) counts errors above 0.",
    why: "ibdiagnet checks the whole fabric (links, LIDs, the subnet manager, counters, speed and width): its errors name faults that slow or break jobs across nodes.",
    evidence: "ibdiagnet's summary table and its `-E-` lines.",
    fix: "Read ibdiagnet2.log for the links and nodes it names, fix them, clear counters (`ibdiagnet -pc`) and run it again.",
    sources: &[IBDIAGNET_DOC],
};

pub(super) const LINK_010: Rule = Rule {
    id: "FAB-LINK-010",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "Fabric link slower than both its ends support",
    checks: "`iblinkinfo` marks a link `Could be ...`: both ends support a wider or faster link than the one that trained.",
    why: "A link that trained at 1X or at a lower speed gives a fraction of its bandwidth; traffic over that switch port runs at its pace.",
    evidence: "`iblinkinfo`: the `( Could be 4X)` or `( Could be 25.78125 Gbps)` note of a port line.",
    fix: "Reseat or replace the cable of that link.",
    sources: &[IBLINKINFO_SRC],
};

pub(super) const LINK_011: Rule = Rule {
    id: "FAB-LINK-011",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "Transceiver module reports an alarm",
    checks: "`ethtool -m IF` of each RDMA netdev: an alarm flag the module raises (`... high alarm`/`... low alarm` On, per lane on QSFP and CMIS modules), a loss of signal or a transmitter fault it reports; where the module prints no flags, a reading (temperature, voltage, per-lane bias, transmit or receive power) beyond the alarm thresholds the module itself declares. Warning flags are shown but not judged; a lane with its laser off that receives nothing (an unused breakout lane) is not judged on its readings.",
    why: "The module compares its own monitors with the limits its maker set (SFF-8472 for SFP, SFF-8636 for QSFP, CMIS for QSFP-DD/OSFP): an alarm means the optics are outside the range they are specified to work in, so the link loses symbols now or soon. A low receive power is a dirty or broken fiber or a far end that stopped transmitting; a bias or temperature alarm is a failing laser.",
    evidence: "`ethtool -m IF`: the flags set, the reading and threshold, and each lane's receive power.",
    fix: "Clean and reseat both ends of the fiber, check the far end's transmit power, replace the module or cable.",
    sources: &[SFF_8472, SFF_8636, CMIS, ETHTOOL_MODULE_SRC],
};

pub(super) const FW_001: Rule = Rule {
    id: "FAB-FW-001",
    severity: Severity::Info,
    scope: Scope::Node,
    title: "ATS disabled in the NIC firmware",
    checks: "`mstconfig q` shows `ATS_ENABLED` False.",
    why: "Address Translation Services let a NIC cache IOMMU translations; without it GPUDirect RDMA from a VM that owns the NIC or its VF goes through the host IOMMU on every access, far below line rate. On bare metal without an IOMMU in translation mode it does not matter.",
    evidence: "`mstconfig -d DEV q`: `ATS_ENABLED`.",
    fix: "Where VMs use GPUDirect RDMA: `mstconfig -d DEV set ATS_ENABLED=true`, reboot, and set ACS for ATS on the host.",
    sources: &[MSTFLINT_MLXCONFIG_DB, NV_VM_ATS],
};

pub(super) const FW_002: Rule = Rule {
    id: "FAB-FW-002",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "Firmware settings differ between NICs of one node",
    checks: "Among NICs of one device type, a setting that shapes traffic (PCI_WR_ORDERING, ATS_ENABLED, ADVANCED_PCI_SETTINGS, MAX_ACC_OUT_READ, SRIOV_EN, NUM_OF_VFS, LINK_TYPE, ROCE_CONTROL, ROCE_CC_*, CNP_*, PCI_ATOMIC_MODE, CQE_COMPRESSION) has different values.",
    why: "Rails are meant to be identical; one configured differently (relaxed ordering, link type, congestion control) behaves differently, and the odd one is usually the one nobody meant to change.",
    evidence: "`mstconfig -d DEV q` of each NIC.",
    fix: "Set the setting alike on every rail and reboot or `mstfwreset`.",
    sources: &[MSTFLINT_MLXCONFIG_DB],
};

pub(super) const FW_003: Rule = Rule {
    id: "FAB-FW-003",
    severity: Severity::Info,
    scope: Scope::Node,
    title: "Firmware setting changed, waiting for a reboot",
    checks: "`mstconfig -e q` shows a setting whose `Next Boot` value differs from its `Current` one.",
    why: "Firmware settings take effect at the next boot or firmware reset: until then the NIC runs with the old value, whatever `q` shows for next boot.",
    evidence: "`mstconfig -d DEV -e q`: `Current` and `Next Boot`.",
    fix: "Reboot or `mstfwreset -d DEV reset` when the node is idle.",
    sources: &[MSTFLINT_MLXCONFIG_DB],
};

pub(super) const KLOG_001: Rule = Rule {
    id: "FAB-KLOG-001",
    severity: Severity::Error,
    scope: Scope::Node,
    title: "NVIDIA Xid errors in the kernel log",
    checks: "`NVRM: Xid (PCI:...): N, ...` lines, one finding per Xid and GPU, with the Xid's meaning and recommended action from NVIDIA's Xid catalog: error when the catalog says to reset the GPU, restart the machine or contact support, warning when it says to restart the application, info when it says to ignore.",
    why: "Xids are the driver's record of GPU faults: a GPU that fell off the bus (79), uncontained memory errors (95), GSP timeouts (119) leave the GPU unusable until it is reset.",
    evidence: "Kernel log lines.",
    fix: "Follow NVIDIA's Xid catalog for the Xid; keep the node out of jobs until the GPU is reset or the machine rebooted.",
    sources: &[NVIDIA_XID],
};

pub(super) const KLOG_002: Rule = Rule {
    id: "FAB-KLOG-002",
    severity: Severity::Error,
    scope: Scope::Node,
    title: "mlx5 firmware health events in the kernel log",
    checks: "mlx5_core reports `device's health compromised`, `Fatal error`, a health syndrome (`synd 0x..`), `Health issue observed` (error), or command timeouts and recoveries (warning).",
    why: "The NIC's firmware stopped responding or reported a fault: RDMA traffic on it stops, the driver resets the device, queue pairs are lost.",
    evidence: "Kernel log lines of mlx5_core (`drivers/net/ethernet/mellanox/mlx5/core/health.c`).",
    fix: "Collect the firmware dump (`devlink health`), update the NIC firmware, replace the NIC if it repeats.",
    sources: &[LINUX_MLX5_HEALTH],
};

pub(super) const KLOG_003: Rule = Rule {
    id: "FAB-KLOG-003",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "Links going down in the kernel log",
    checks: "`Link down` (mlx5e) or `NIC Link is Down` lines more than 30 minutes after boot (the grace Oracle's link-flapping check gives the driver to bring ports up), per interface.",
    why: "A link that goes down drops its NCCL connections; a flapping link stalls collectives each time it retrains and is the first sign of a failing cable or optic.",
    evidence: "Kernel log lines.",
    fix: "Check the cable, module and switch port (`mlxlink -c -m`); replace a cable or optic that keeps flapping.",
    sources: &[ORACLE_OCI_HPC_FLAP],
};

pub(super) const KLOG_004: Rule = Rule {
    id: "FAB-KLOG-004",
    severity: Severity::Error,
    scope: Scope::Node,
    title: "PCIe AER errors in the kernel log",
    checks: "`PCIe Bus Error: severity=...` lines, per device and severity: fatal ones are errors, non-fatal uncorrectable ones warnings, correctable ones info.",
    why: "AER logs PCIe transactions that were lost (uncorrectable) or had to be replayed (correctable) on the path between CPU, switches, GPUs and NICs.",
    evidence: "Kernel log lines (`drivers/pci/pcie/aer.c`).",
    fix: "Reseat the card or riser, check the slot, update firmware and BIOS; correctable errors that keep coming mean a marginal link.",
    sources: &[LINUX_AER_HOWTO],
};

pub(super) const KLOG_005: Rule = Rule {
    id: "FAB-KLOG-005",
    severity: Severity::Error,
    scope: Scope::Node,
    title: "Memory pinning for GPUDirect RDMA failed",
    checks: "nvidia-peermem or nv_peer_mem log an error from `nvidia_p2p_get_pages()` or `nvidia_p2p_dma_map_pages()`.",
    why: "Registering GPU memory with the NIC failed: NCCL cannot use GPUDirect RDMA for that buffer and the job aborts or stages through host memory.",
    evidence: "Kernel log lines.",
    fix: "Reload nvidia-peermem after driver updates, check BAR1 usage, or use dma-buf.",
    sources: &[GDR_MANUAL, GPU_OPERATOR_RDMA],
};
