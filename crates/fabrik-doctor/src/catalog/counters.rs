//! The counter rules' pages (FAB-CNT-1xx): id, severity, what each checks, why it matters,
//! the evidence and the fix. [`crate::counter_rules`] emits findings of these ids and carries
//! each page's severity and fix, so the catalog, `fabrik explain` and the findings agree.

use fabrik_model::{Rule, Scope, Severity};

use super::sources::MLX5_CNP;

type PageSource = fabrik_model::Source;

const KERNEL_IB_ABI: PageSource = PageSource {
    title: "Linux kernel ABI: /sys/class/infiniband (ports/N/counters, hw_counters)",
    url: "https://kernel.org/doc/Documentation/ABI/testing/sysfs-class-infiniband",
};
const KERNEL_IB_SYSFS: PageSource = PageSource {
    title: "Linux source: PMA counters and their widths (drivers/infiniband/core/sysfs.c)",
    url: "https://github.com/torvalds/linux/blob/master/drivers/infiniband/core/sysfs.c",
};
const MLX5_HW_COUNTERS: PageSource = PageSource {
    title: "Linux source: mlx5 hw_counters names (drivers/infiniband/hw/mlx5/counters.c)",
    url: "https://github.com/torvalds/linux/blob/master/drivers/infiniband/hw/mlx5/counters.c",
};
const RXE_HW_COUNTERS: PageSource = PageSource {
    title: "Linux source: rxe hw_counters names (drivers/infiniband/sw/rxe/rxe_hw_counters.c)",
    url:
        "https://github.com/torvalds/linux/blob/master/drivers/infiniband/sw/rxe/rxe_hw_counters.c",
};
const MLX5_ETHTOOL: PageSource = PageSource {
    title: "Linux documentation: mlx5 ethtool counters (rx_prioN_pause, rx_discards_phy)",
    url: "https://docs.kernel.org/networking/device_drivers/ethernet/mellanox/mlx5/counters.html",
};
const NETDEV_STATS: PageSource = PageSource {
    title: "Linux documentation: interface statistics (/sys/class/net/IF/statistics)",
    url: "https://docs.kernel.org/networking/statistics.html",
};
const NCCL_ENV: PageSource = PageSource {
    title: "NCCL documentation: Environment Variables (NCCL_IB_TIMEOUT, NCCL_IB_RETRY_CNT)",
    url: "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html",
};

const PMA_EVIDENCE: &str = "The port's file under /sys/class/infiniband/DEV/ports/N/counters/ in both samples: before, after, the interval between them, the increase and its rate.";
const HW_EVIDENCE: &str = "The port's files under /sys/class/infiniband/DEV/ports/N/hw_counters/ in both samples: before, after, the interval, the increase and its rate.";

/// The counter rules' pages, for `fabrik rules`, `fabrik explain` and docs/rules/; the fixes
/// here are the ones the counter findings carry.
pub static RULES: &[Rule] = &[
    Rule {
        id: "FAB-CNT-101",
        severity: Severity::Warning,
        scope: Scope::Counters,
        title: "symbol errors grow",
        checks: "Whether a port's `counters/symbol_error` increased between two samples.",
        why: "Symbol errors are bits the physical layer could not decode: a dirty or damaged cable, a failing transceiver or switch port. Each one can corrupt a packet that is then dropped and retransmitted; a growing count is a link getting worse, while a static count may be old history (FAB-CTR-001).",
        evidence: PMA_EVIDENCE,
        fix: "Reseat or replace the cable and transceivers of this port and of its switch port; check BER and FEC with `mlxlink -d DEV -p PORT -m` (or `ethtool -m IF`); clear the counters with `perfquery -x -R` and watch again",
        sources: &[KERNEL_IB_ABI, KERNEL_IB_SYSFS],
    },
    Rule {
        id: "FAB-CNT-102",
        severity: Severity::Error,
        scope: Scope::Counters,
        title: "the link went down during the interval",
        checks: "Whether `counters/link_downed` (or rxe's `hw_counters/link_downed`) increased between two samples.",
        why: "Every increase is the link leaving the LinkUp state: queue pairs on it time out and NCCL jobs abort or hang. A link that flaps while idle will flap under load.",
        evidence: "The port's `link_downed` file in both samples: before, after, the interval and the increase.",
        fix: "Check the cable, transceivers and the switch port's log for flaps; check `dmesg` for the driver's link events; replace the cable if it flaps again",
        sources: &[KERNEL_IB_ABI, RXE_HW_COUNTERS],
    },
    Rule {
        id: "FAB-CNT-103",
        severity: Severity::Warning,
        scope: Scope::Counters,
        title: "link error recovery grows",
        checks: "Whether `counters/link_error_recovery` increased between two samples.",
        why: "The link retrained after errors: traffic stalls during each recovery, and a link that recovers often is marginal and may go down next.",
        evidence: PMA_EVIDENCE,
        fix: "A marginal link: check cable and transceivers (`mlxlink -m` for BER), and the switch port; replace the cable if it keeps recovering",
        sources: &[KERNEL_IB_ABI, KERNEL_IB_SYSFS],
    },
    Rule {
        id: "FAB-CNT-104",
        severity: Severity::Warning,
        scope: Scope::Counters,
        title: "receive errors grow",
        checks: "Whether `counters/port_rcv_errors` or `port_rcv_remote_physical_errors` increased between two samples.",
        why: "Malformed or corrupt packets arrive and are dropped; reliable connections retransmit them, which costs bandwidth and latency.",
        evidence: PMA_EVIDENCE,
        fix: "Check the link's physical health (symbol errors, BER with `mlxlink -m`) and the sending side; replace the cable if errors keep growing",
        sources: &[KERNEL_IB_ABI, KERNEL_IB_SYSFS],
    },
    Rule {
        id: "FAB-CNT-105",
        severity: Severity::Warning,
        scope: Scope::Counters,
        title: "transmit discards grow",
        checks: "Whether `counters/port_xmit_discards` increased between two samples.",
        why: "The port dropped packets it could not send: congestion that outlasted the switch's timeout, a link that was down, or a partition key the port is not a member of.",
        evidence: PMA_EVIDENCE,
        fix: "Look for congestion (port_xmit_wait, PFC pauses) and link flaps on this port; check the subnet manager's partition config (P_Key) for this node",
        sources: &[KERNEL_IB_ABI, KERNEL_IB_SYSFS],
    },
    Rule {
        id: "FAB-CNT-106",
        severity: Severity::Warning,
        scope: Scope::Counters,
        title: "receive buffer overruns grow",
        checks: "Whether `counters/excessive_buffer_overrun_errors` increased between two samples.",
        why: "The receive buffer overflowed, which a credit-based (InfiniBand) or PFC-protected (RoCE) link should never let happen: flow control between this port and its peer is broken and packets are lost.",
        evidence: PMA_EVIDENCE,
        fix: "Check the link's credit/flow-control settings and the peer switch port; on RoCE check that PFC is enabled on the same priority at both ends",
        sources: &[KERNEL_IB_ABI, KERNEL_IB_SYSFS],
    },
    Rule {
        id: "FAB-CNT-107",
        severity: Severity::Warning,
        scope: Scope::Counters,
        title: "local link integrity errors grow",
        checks: "Whether `counters/local_link_integrity_errors` increased between two samples.",
        why: "The physical link exceeded its error threshold: a physical fault that precedes link recovery or loss.",
        evidence: PMA_EVIDENCE,
        fix: "Check cable and transceivers (`mlxlink -m`), reseat or replace them",
        sources: &[KERNEL_IB_ABI, KERNEL_IB_SYSFS],
    },
    Rule {
        id: "FAB-CNT-108",
        severity: Severity::Warning,
        scope: Scope::Counters,
        title: "PFC pause frames above the threshold",
        checks: "The rate of ethtool's per-priority pause counters (`rx_prioN_pause`, `tx_prioN_pause`) of RDMA-backed interfaces, against a threshold (default 1000/s per priority and direction). Needs the interval.",
        why: "PFC keeps RoCE lossless by pausing a priority; a high pause rate means the fabric is congested and every flow on that priority stalls, and a pause storm can spread through the switches (head-of-line blocking).",
        evidence: "`ethtool -S IF` (live) or the snapshot's fabrik/cmd/ethtool-S-IF.txt in both samples: before, after, the interval and the rate.",
        fix: "Enable ECN/DCQCN so congestion is handled before PFC triggers; find the congested hop; for tx pauses check the host (PCIe bandwidth, NUMA, `rx_discards_phy`); enable the switch's PFC watchdog against storms",
        sources: &[MLX5_ETHTOOL],
    },
    Rule {
        id: "FAB-CNT-109",
        severity: Severity::Warning,
        scope: Scope::Counters,
        title: "congestion notifications above the threshold",
        checks: "The rate of `hw_counters/np_cnp_sent` and `rp_cnp_handled` against a threshold (default 1000/s). Needs the interval.",
        why: "CNPs are how DCQCN slows RoCE senders when switches mark packets with ECN; some are normal, a high rate means the traffic of this port is congested and its rate keeps being cut.",
        evidence: HW_EVIDENCE,
        fix: "Find the congested hop (incast, oversubscribed uplinks, a slow link); check switch ECN thresholds and that PFC and ECN use the same priority; spread traffic over more paths (NCCL_IB_QPS_PER_CONNECTION, adaptive routing)",
        sources: &[MLX5_CNP, MLX5_HW_COUNTERS],
    },
    Rule {
        id: "FAB-CNT-110",
        severity: Severity::Warning,
        scope: Scope::Counters,
        title: "RDMA retransmissions or sequence errors grow",
        checks: "Whether mlx5's `out_of_sequence`, `packet_seq_err`, `implied_nak_seq_err`, `local_ack_timeout_err`, `rnr_nak_retry_err`, `duplicate_request`, `roce_adp_retrans`, `roce_adp_retrans_to` or rxe's `out_of_seq_request`, `duplicate_request`, `rcvd_seq_err`, `rcvd_rnr_err`, `send_rnr_err`, `completer_retry_err` increased between two samples.",
        why: "Packets are lost or arrive out of order and reliable-connected queue pairs retransmit: each costs a timeout or a go-back-N, which collapses RDMA throughput long before anything fails. On RoCE it is the sign of a lossy fabric.",
        evidence: HW_EVIDENCE,
        fix: "On RoCE, make the fabric lossless for RDMA traffic: PFC on the RoCE priority at the NIC (`mlnx_qos -i IF --pfc 0,0,0,1,0,0,0,0`) and every switch hop, ECN/DCQCN enabled; check for link errors on the path; RNR counters mean the receiver posts receives too slowly",
        sources: &[MLX5_HW_COUNTERS, RXE_HW_COUNTERS],
    },
    Rule {
        id: "FAB-CNT-111",
        severity: Severity::Error,
        scope: Scope::Counters,
        title: "retries exhausted: queue pairs went to error",
        checks: "Whether rxe's `retry_exceeded_err`, `retry_rnr_exceeded_err` or mlx5's `req_transport_retries_exceeded`, `req_rnr_retries_exceeded` increased between two samples.",
        why: "A queue pair ran out of retries and moved to the error state: the connection using it failed, which NCCL reports as a fatal IB error (transport retry counter exceeded) and the job stops.",
        evidence: HW_EVIDENCE,
        fix: "Find why packets are lost (link errors, congestion without PFC, a peer that stopped); raise the QP retry count/timeout only after that (NCCL_IB_TIMEOUT, NCCL_IB_RETRY_CNT)",
        sources: &[MLX5_HW_COUNTERS, RXE_HW_COUNTERS, NCCL_ENV],
    },
    Rule {
        id: "FAB-CNT-112",
        severity: Severity::Warning,
        scope: Scope::Counters,
        title: "receive WQEs ran out, packets dropped",
        checks: "Whether `hw_counters/out_of_buffer` increased between two samples.",
        why: "Packets arrived for a queue with no posted receive buffer and were dropped; the sender retransmits or the application stalls.",
        evidence: HW_EVIDENCE,
        fix: "The receiving application posts receive WQEs too slowly or too few; enlarge its receive queue, or check that the host is not starved of CPU",
        sources: &[MLX5_HW_COUNTERS],
    },
    Rule {
        id: "FAB-CNT-113",
        severity: Severity::Warning,
        scope: Scope::Counters,
        title: "the NIC's physical port discarded packets",
        checks: "Whether ethtool's `rx_discards_phy` or `tx_discards_phy` increased between two samples.",
        why: "The NIC dropped packets because its buffers were full: a lossy RoCE fabric (no PFC on the RoCE priority) or a host that cannot drain the NIC (PCIe, NUMA). Every dropped RoCE packet costs a retransmission.",
        evidence: "`ethtool -S IF` (live) or the snapshot's fabrik/cmd/ethtool-S-IF.txt in both samples: before, after, the interval, the increase and its rate.",
        fix: "Enable PFC on the RoCE priority (`mlnx_qos -i IF --pfc ...`) end to end, or ECN; check PCIe bandwidth and the NIC's NUMA placement",
        sources: &[MLX5_ETHTOOL],
    },
    Rule {
        id: "FAB-CNT-114",
        severity: Severity::Warning,
        scope: Scope::Counters,
        title: "interface error counters grow",
        checks: "Whether an interface's `statistics/rx_errors`, `tx_errors`, `rx_crc_errors`, `rx_frame_errors`, `rx_fifo_errors`, `rx_missed_errors`, `rx_over_errors`, `rx_length_errors`, `tx_carrier_errors`, `tx_fifo_errors` or `tx_aborted_errors` increased between two samples.",
        why: "Frames were corrupted or dropped on the interface NCCL's sockets or RoCE use; TCP and RDMA retransmit them at a cost in throughput and latency.",
        evidence: "/sys/class/net/IF/statistics/* in both samples: before, after, the interval, the increase and its rate.",
        fix: "CRC/frame errors point at the cable or transceiver; fifo/missed/over errors at a host that drains the NIC too slowly (ring size `ethtool -G`, IRQ affinity); carrier errors at a flapping link",
        sources: &[NETDEV_STATS],
    },
    Rule {
        id: "FAB-CNT-120",
        severity: Severity::Info,
        scope: Scope::Counters,
        title: "counters were reset between the samples",
        checks: "Counters whose value went down between two samples.",
        why: "A counter that goes down was reset (driver reload, `perfquery -R`, device re-created); fabrik computes no rate for it rather than a negative or wrapped one, so growth during that interval is unknown.",
        evidence: "Each such counter's file: before, after and the interval.",
        fix: "Nothing to fix if the reset was intended; otherwise look for driver reloads or a device reset in `dmesg`, and sample again",
        sources: &[KERNEL_IB_ABI],
    },
    Rule {
        id: "FAB-CNT-121",
        severity: Severity::Warning,
        scope: Scope::Counters,
        title: "counters are saturated",
        checks: "PMA counters stuck at their maximum (all ones at the width the kernel prints them: 8, 16 or 32 bits; the four traffic counters only when at 4294967295 in both samples, since extended-width devices show 64-bit values under the same names).",
        why: "InfiniBand PMA counters stop at their maximum instead of wrapping, so a saturated error counter hides every later error.",
        evidence: PMA_EVIDENCE,
        fix: "Clear the port's counters (`perfquery -x -R LID PORT` on InfiniBand), then watch them again; a saturated error counter usually hides a long-standing link problem",
        sources: &[KERNEL_IB_SYSFS],
    },
    Rule {
        id: "FAB-CNT-122",
        severity: Severity::Warning,
        scope: Scope::Counters,
        title: "a port or interface vanished or appeared",
        checks: "RDMA ports and watched interfaces present in only one of the two samples: vanished is a warning, appeared is information.",
        why: "A device that disappears while a job runs takes its queue pairs with it: a driver reload, a PCI error or a firmware reset.",
        evidence: "The port (DEV:N) or interface, present before and absent after, or the reverse.",
        fix: "Look in `dmesg` for a driver reload, PCI error or firmware reset of this device",
        sources: &[KERNEL_IB_ABI, NETDEV_STATS],
    },
    Rule {
        id: "FAB-CNT-123",
        severity: Severity::Info,
        scope: Scope::Counters,
        title: "counter files could not be read as numbers",
        checks: "Counter files that could not be read or do not hold a number (`N/A (no PMA)` on old kernels, a read error).",
        why: "The rules that need these counters cannot tell whether they moved; fabrik says so instead of calling them zero.",
        evidence: "Each file and why it could not be read.",
        fix: "Check the driver version and `dmesg`; a counter that the device does not support reads as an error on some kernels",
        sources: &[KERNEL_IB_ABI],
    },
];
