//! Pages of the node rules: RDMA devices and ports, the data path, PCI placement, RoCE, MTU,
//! QoS, GPUDirect RDMA, counters, sockets, cloud fabrics, and facts the check could not read.

use fabrik_model::{Rule, Scope, Severity};

use crate::catalog::sources::*;

pub(super) const RDMA_001: Rule = Rule {
    id: "FAB-RDMA-001",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "No RDMA device present",
    checks: "Whether /sys/class/infiniband holds any device. A node with two or more GPUs and none is a warning (an info on GCP A3-like VMs, where TCPX replaces RDMA); a node with fewer GPUs gets an info. The finding also says which interface NCCL's socket transport would use instead.",
    why: "Without an RDMA device NCCL carries inter-node traffic over TCP sockets, typically several times slower than InfiniBand or RoCE and with high CPU cost.",
    evidence: "/sys/class/infiniband (empty or absent), GPUs found on the PCI bus, /sys/class/net/* (for the socket interface).",
    fix: "Attach IB/RoCE NICs and load their drivers (mlx5_core, mlx5_ib, ib_uverbs), or use the cloud's fabric (EFA + aws-ofi-nccl, GPUDirect-TCPX). Otherwise set NCCL_SOCKET_IFNAME to the fastest interface.",
    sources: &[NCCL_ENV, IB_DISABLE_1591],
};

pub(super) const RDMA_002: Rule = Rule {
    id: "FAB-RDMA-002",
    severity: Severity::Error,
    scope: Scope::Node,
    title: "RDMA devices without /dev/infiniband/uverbs*",
    checks: "RDMA devices exist in sysfs but /dev/infiniband has no uverbs* character device.",
    why: "User-space verbs (NCCL's IB transport, perftest) open /dev/infiniband/uverbsN; without it NCCL reports `NET/IB : No device found` and falls back to sockets. Typical of a container started without the RDMA devices.",
    evidence: "/dev/infiniband listing, /sys/class/infiniband.",
    fix: "`modprobe ib_uverbs` on the host; `docker run --device=/dev/infiniband --cap-add=IPC_LOCK`; in Kubernetes request the RDMA device plugin's resource.",
    sources: &[KERNEL_IB_ABI, NCCL_TROUBLESHOOTING],
};

pub(super) const RDMA_003: Rule = Rule {
    id: "FAB-RDMA-003",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "Locked-memory limit not unlimited with RDMA present",
    checks: "`Max locked memory` in /proc/self/limits is not `unlimited` while RDMA devices exist. A number of 1 PiB or more (hosts show 18446744073708503040, 2^64 − 1 MiB) counts as unlimited.",
    why: "RDMA memory registration pins pages; with a limited memlock ibv_reg_mr fails (`Cannot allocate memory`) once NCCL's buffers exceed it. The limit read is the probing process's, which may differ from the job's.",
    evidence: "/proc/self/limits (Max locked memory).",
    fix: "`* soft memlock unlimited` / `* hard memlock unlimited` in /etc/security/limits.conf, `LimitMEMLOCK=infinity` for systemd units, `--ulimit memlock=-1:-1` for Docker; check `ulimit -l` inside the launcher (mpirun/srun).",
    sources: &[MEMLOCK_ISSUE, NCCL_TROUBLESHOOTING],
};

pub(super) const RDMA_004: Rule = Rule {
    id: "FAB-RDMA-004",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "SR-IOV virtual function: relaxed ordering matters",
    checks: "An RDMA device's PCI function has a `physfn` link (it is an SR-IOV VF, i.e. the node is a VM or a container with a VF). Warning on GPU nodes, info otherwise.",
    why: "In VMs, GPUDirect RDMA writes from a VF into GPU memory can run far below line rate unless the memory region is registered with relaxed ordering; a ConnectX-7 VF measured 84 Gb/s from cudaMalloc memory vs ~400 Gb/s with IBV_ACCESS_RELAXED_ORDERING.",
    evidence: "/sys/bus/pci/devices/<vf>/physfn.",
    fix: "Keep NCCL_IB_PCI_RELAXED_ORDERING at its default (2, auto) or set 1; custom net plugins and verbs code must pass IBV_ACCESS_RELAXED_ORDERING to ibv_reg_mr; have ATS enabled on the NIC and ACS configured for it by the hypervisor owner.",
    sources: &[NCCL_1731, NCCL_ENV, NV_VM_ATS],
};

pub(super) const PORT_001: Rule = Rule {
    id: "FAB-PORT-001",
    severity: Severity::Error,
    scope: Scope::Node,
    title: "RDMA port not ACTIVE",
    checks: "ports/N/state is DOWN, INIT, ARMED (or another non-ACTIVE state). INIT on InfiniBand is explained as a missing subnet manager. INIT and ARMED are errors. DOWN is an error when no other hardware port of the node is ACTIVE, or when the port is a rail of a multi-rail GPU node (no port of its card is ACTIVE while a card of the same driver elsewhere is), unless the expectations' rdma.active_ports is met without it; otherwise a warning (the uncabled second port of a dual-port card is common).",
    why: "Only ACTIVE ports carry traffic; NCCL skips the others, losing a rail, or falls back to sockets when none is left.",
    evidence: "/sys/class/infiniband/<dev>/ports/<n>/state (`4: ACTIVE` as the kernel writes it).",
    fix: "DOWN: cable and switch port. INIT: start a subnet manager (opensm or the switch SM). ARMED: check the SM log.",
    sources: &[KERNEL_IB_ABI, SM_OMNIA],
};

pub(super) const PORT_002: Rule = Rule {
    id: "FAB-PORT-002",
    severity: Severity::Error,
    scope: Scope::Node,
    title: "Physical link not LinkUp",
    checks: "ports/N/phys_state is Polling, Disabled, LinkErrorRecovery, Sleep... rather than `5: LinkUp`. LinkErrorRecovery is an error; the others are errors when no other hardware port is ACTIVE or the port is a rail of a multi-rail GPU node (as FAB-PORT-001), warnings otherwise.",
    why: "Polling means no partner is seen (bad or unplugged cable, peer down); Disabled means the port was turned off; LinkErrorRecovery means the link keeps retraining.",
    evidence: "/sys/class/infiniband/<dev>/ports/<n>/phys_state.",
    fix: "Check the cable/transceiver (`mlxlink`), enable the port (`ibportstate ... enable`, `ip link set <netdev> up`), check the switch port.",
    sources: &[KERNEL_IB_ABI],
};

pub(super) const PORT_003: Rule = Rule {
    id: "FAB-PORT-003",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "InfiniBand port below its capable width or speed",
    checks: "An ACTIVE IB port whose width (1X/2X/4X) or lane speed (EDR/HDR/NDR...) is below that of another port of the same HCA model and board (hca_type, board_id) on the node, or that runs 1X at all. Evidence of capability is what the same hardware reached on this node; sysfs does not expose a port's supported widths.",
    why: "A port that trains at `25 Gb/sec (1X EDR)` instead of `100 Gb/sec (4X EDR)` has failed lanes (cable, transceiver, connector) and gives a quarter of the bandwidth; NCCL rings then run at its pace.",
    evidence: "/sys/class/infiniband/<dev>/ports/<n>/rate, /sys/class/infiniband/<dev>/hca_type and board_id.",
    fix: "Reseat or replace the cable/transceiver, check the switch port; `mlxlink -d <dev> -p <n>` shows lane state and errors.",
    sources: &[KERNEL_IB_ABI],
};

pub(super) const PORT_004: Rule = Rule {
    id: "FAB-PORT-004",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "Active ports of one node at different rates",
    checks: "ACTIVE hardware ports of the same link layer, driver family and chip (`mlx5` + `hca_type`) report different rates in Gb/s. iWARP devices, and ports of other families or chips (a 10 GbE i40iw, an Omni-Path hfi1, a 25 GbE ConnectX-4 Lx beside ConnectX-7 rails) are other networks, not slow rails.",
    why: "NCCL spreads channels over rails; collectives finish at the pace of the slowest rail.",
    evidence: "/sys/class/infiniband/*/ports/*/rate.",
    fix: "Bring the slow ports to the rate of the others, or exclude them with NCCL_IB_HCA until repaired.",
    sources: &[KERNEL_IB_ABI, NCCL_ENV],
};

pub(super) const PORT_005: Rule = Rule {
    id: "FAB-PORT-005",
    severity: Severity::Warning,
    scope: Scope::Cluster,
    title: "RDMA port below the rate or width of its model on the other nodes",
    checks: "Every ACTIVE hardware port (not software, not iWARP, not EFA, whose driver reports one fixed rate) against the ports of the same model (chip and board, as FAB-PORT-003 groups them) on all the job's nodes: a port whose rate in Gb/s is below the model's most common rate (the highest on a tie, so that of two nodes the slower is named) is named with its node, and with the lanes (`1X` of `4X`) or lane speed (`EDR` instead of `NDR`) that fell short. Needs the model on two nodes or more.",
    why: "A port that trained below its peers (failed lanes, a wrong cable or transceiver, a switch port forced to a lower speed) runs every collective of the job at its pace; a node whose only port degraded has no second port to compare with (FAB-PORT-003, FAB-PORT-004), but its peers are the reference. Warning: the job runs, slower. FAB-X-005 says the node's rates differ; this names the port and what fell short.",
    evidence: "/sys/class/infiniband/<dev>/ports/<n>/rate on each node, with hca_type and board_id for the model.",
    fix: "Reseat or replace the cable or transceiver of the named port and check its switch port (`mlxlink -d <dev> -p <port>` shows lanes, speed and errors); the port should train at its peers' rate.",
    sources: &[KERNEL_IB_ABI],
};

pub(super) const PORT_006: Rule = Rule {
    id: "FAB-PORT-006",
    severity: Severity::Info,
    scope: Scope::Node,
    title: "Software RDMA device: its rate and width cannot be judged",
    checks: "An ACTIVE port of a software RDMA device (Soft-RoCE `rxe*`, Soft-iWARP `siw*`). Info, once per port, so that rate rules and rate expectations, which skip software devices, are not read as passed.",
    why: "Soft-RoCE takes its port's speed and width from the netdev beneath it (`ib_get_eth_speed`, the ethtool speed that a veth or virtio NIC invents: a veth always says 10 Gb/s); Soft-iWARP reports a constant. Neither is a trained link, so a rate below expectations or below the peers' says nothing, and a rate at expectations proves nothing.",
    evidence: "/sys/class/infiniband/<dev>/ports/<n>/rate of the software device, and its netdev.",
    fix: "Judge the port by what it carries: `fabrik bench p2p --transport rdma` or `fabrik cluster matrix --transport rdma` against a peer, and the netdev's own link (`ethtool <netdev>`).",
    sources: &[RXE_QUERY_PORT_SRC, IB_GET_ETH_SPEED_SRC],
};

pub(super) const DATA_001: Rule = Rule {
    id: "FAB-DATA-001",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "A value fabrik cannot judge",
    checks: "Port states, physical states, rate texts, link layers or GID types that this version of fabrik does not know (a new kernel text, a number without a name).",
    why: "Guessing would risk calling a broken port healthy or the reverse; the value is reported as read so a person can judge it.",
    evidence: "The sysfs file holding the value.",
    fix: "Check the device with `ibstat`/`ibv_devinfo`; report the value so fabrik learns it.",
    sources: &[KERNEL_IB_ABI],
};

pub(super) const DATA_002: Rule = Rule {
    id: "FAB-DATA-002",
    severity: Severity::Info,
    scope: Scope::Node,
    title: "Files fabrik could not read",
    checks: "Every file probing reported missing, unreadable or malformed (the node's warnings), listed with the reason.",
    why: "A fact that could not be read is unknown, not absent: rules that need it stay silent or say they cannot tell (for example no /proc/modules means peer-memory modules are unverified), so the reader must know what was not seen.",
    evidence: "The paths and reasons probing recorded.",
    fix: "Run as root, or snapshot on the node itself; report malformed values to fabrik.",
    sources: &[KERNEL_IB_ABI],
};

pub(super) const PCI_001: Rule = Rule {
    id: "FAB-PCI-001",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "PCIe link below its maximum speed or width",
    checks: "current_link_width < max_link_width (warning) or current_link_speed < max_link_speed for NICs (warning) and GPUs (info: GPUs lower their PCIe speed when idle). A NIC whose reduced link still carries its line rate (the sum of its active ports' rates, or the netdev's speed; PCIe bandwidth = GT/s × lanes × 8b/10b up to Gen2, 128b/130b from Gen3) is info only: a 1 GbE management NIC wired x1 is no fault. The links between the bridges on a GPU's or NIC's path (root port to switch) are judged too: two neighbouring bridges that report the same current speed and width are the two ends of one link, which warns when it runs below what both ends can do.",
    why: "A NIC at x8 or Gen3 instead of x16 Gen4/5 cannot feed its network port; a GPU at reduced width halves GPUDirect bandwidth.",
    evidence: "/sys/bus/pci/devices/<addr>/{current,max}_link_{speed,width} of the device, and of both bridges for a path link.",
    fix: "Reseat the card, check the slot's electrical width and BIOS PCIe settings; compare LnkSta with LnkCap in `lspci -vv`.",
    sources: &[NCCL_TROUBLESHOOTING],
};

pub(super) const PCI_002: Rule = Rule {
    id: "FAB-PCI-002",
    severity: Severity::Error,
    scope: Scope::Node,
    title: "ACS redirect enabled on PCIe bridges between GPUs and NICs",
    checks: "ACSCtl of a bridge on a GPU's or NIC's PCIe path has ReqRedir, CmpltRedir or UpstreamFwd enabled (from `lspci -vvv` captured by `fabrik snapshot`). Error on bare metal, warning when virtualization is unknown, skipped in VMs.",
    why: "ACS redirect sends peer-to-peer PCIe traffic up to the root complex: GPUDirect RDMA and GPU-to-GPU PCIe traffic slow down sharply or hang.",
    evidence: "lspci -vvv ACSCtl line of each bridge, virtualization detection.",
    fix: "Disable ACS in the BIOS or with `setpci -s <bridge> ECAP_ACS+0x6.w=0000` at boot on bare-metal GPU nodes.",
    sources: &[NCCL_TROUBLESHOOTING, ACS_ISSUE],
};

pub(super) const PCI_003: Rule = Rule {
    id: "FAB-PCI-003",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "IOMMU on and not in passthrough (bare metal)",
    checks: "The IOMMU is enabled (kernel command line or populated /sys/kernel/iommu_groups) and not in passthrough mode, on a node that is not a VM and has GPUs or RDMA devices.",
    why: "IOMMU translation of every NIC/GPU DMA costs bandwidth and, together with ACS, breaks or slows GPUDirect peer-to-peer.",
    evidence: "/proc/cmdline (intel_iommu=, amd_iommu=, iommu=pt, iommu.passthrough=), /sys/kernel/iommu_groups.",
    fix: "Boot with `iommu=pt` (or disable the IOMMU where no VM passthrough is needed).",
    sources: &[NCCL_TROUBLESHOOTING],
};

pub(super) const ROCE_001: Rule = Rule {
    id: "FAB-ROCE-001",
    severity: Severity::Error,
    scope: Scope::Node,
    title: "RoCE port without a RoCE v2 GID carrying an IP address",
    checks: "An ACTIVE Ethernet-link-layer port has no GID of type `RoCE v2` whose value is an IP address (IPv4-mapped or global IPv6). iWARP devices (node_type `4: RNIC`) are left out: RDMA over TCP needs no RoCE GID, PFC or ECN.",
    why: "RoCE v2 GIDs are created from the netdev's IP addresses; without one NCCL cannot build routable RoCE v2 connections (only link-local or RoCE v1 entries remain).",
    evidence: "/sys/class/infiniband/<dev>/ports/<n>/gids/*, gid_attrs/types/*, gid_attrs/ndevs/*.",
    fix: "Assign an IP address to the RoCE netdev; the kernel then adds RoCE v2 GIDs. Check with `show_gids`.",
    sources: &[KERNEL_IB_ABI, ROCE_MODE],
};

pub(super) const ROCE_002: Rule = Rule {
    id: "FAB-ROCE-002",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "RoCE v2 GID index differs between ports of one node",
    checks: "The RoCE v2 IPv4 GID that NCCL selects (the first RoCE v2 IPv4-mapped entry, `ncclIbGetGidIndex`; the same policy as `fabrik env`) is at different indexes on different RoCE ports. iWARP devices (node_type `4: RNIC`) are left out: RDMA over TCP needs no RoCE GID, PFC or ECN.",
    why: "NCCL_IB_GID_INDEX is one value for all devices; before NCCL 2.21 (which selects a GID per device when the variable is unset, default -1) a fixed index cannot fit every port.",
    evidence: "/sys/class/infiniband/*/ports/*/gid_attrs/types/*.",
    fix: "Leave NCCL_IB_GID_INDEX unset with NCCL ≥ 2.21; otherwise make the GID tables alike (same IP setup on every RoCE netdev).",
    sources: &[NCCL_IB_CONNECT_SRC, JUNIPER_GID, NCCL_ENV],
};

pub(super) const MTU_001: Rule = Rule {
    id: "FAB-MTU-001",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "RDMA MTU too small",
    checks: "A RoCE port's netdev MTU below 4200, or an IB port's active MTU (from an ibv_devinfo capture) below 4096.",
    why: "The RoCE path MTU is the largest IB MTU (256..4096) that fits in the Ethernet MTU minus RoCE headers: at MTU 1500 it is 1024, quadrupling packets and per-packet work.",
    evidence: "/sys/class/net/<netdev>/mtu, active_mtu from `ibv_devinfo -v`.",
    fix: "MTU 9000 on RoCE netdevs and switch ports; IB MTU 4096 in the SM partition configuration.",
    sources: &[ROCE_MTU_BLOG],
};

pub(super) const MTU_002: Rule = Rule {
    id: "FAB-MTU-002",
    severity: Severity::Warning,
    scope: Scope::Cluster,
    title: "MTU of NCCL's socket interfaces differs across nodes",
    checks: "Per node, the MTUs of the interfaces NCCL's socket code picks without NCCL_SOCKET_IFNAME (`ncclFindInterfaces`: `ib*` first, then any but docker*, lo* and virbr*, running and addressed; the bootstrap uses the first, the socket transport all of them). Interface names differ between nodes, so the MTUs alone are compared; nodes outside the majority are named, every node on a tie.",
    why: "NCCL's bootstrap and its socket transport (and RoCE over the same netdevs) carry the job between these interfaces. A host whose MTU is above its peers' and the switch's sends frames that are dropped on the way: TCP negotiates its segment size around it, but UDP, RoCE and anything with don't-fragment set vanish without the ICMP that would tell the sender (RFC 2923's black hole); a host below its peers fragments or shrinks every transfer. Warning: TCP-based traffic still runs; `fabrik cluster matrix` probes the path MTU of every pair to show which paths drop what.",
    evidence: "/sys/class/net/<interface>/mtu of each node's socket interfaces.",
    fix: "Give the interfaces that carry the job's traffic one MTU on every node and on the switch ports between them (`ip link set <if> mtu <mtu>`, and the netplan, NetworkManager or ifupdown file that sets it at boot).",
    sources: &[NCCL_SOCKET_SRC, NCCL_OS_LINUX_SRC, PMTUD_BLACK_HOLES],
};

pub(super) const QOS_001: Rule = Rule {
    id: "FAB-QOS-001",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "PFC off on a RoCE interface",
    checks: "`mlnx_qos -i <netdev>` (captured by `fabrik snapshot`) shows PFC enabled on no priority. iWARP devices (node_type `4: RNIC`) are left out: RDMA over TCP needs no RoCE GID, PFC or ECN.",
    why: "RoCE's go-back-N recovery handles loss poorly; without PFC (or a fabric designed lossy with strong congestion control) drops turn into retransmissions and stalls.",
    evidence: "fabrik/cmd/mlnx_qos-<netdev>.txt.",
    fix: "`mlnx_qos -i <netdev> --pfc 0,0,0,1,0,0,0,0 --trust dscp` (priority 3 as an example) on hosts and matching switch config; NCCL_IB_TC to match.",
    sources: &[NCCL_ENV],
};

pub(super) const QOS_002: Rule = Rule {
    id: "FAB-QOS-002",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "RoCE ECN (DCQCN) off",
    checks: "/sys/class/net/<netdev>/ecn/roce_np/enable/<p> or roce_rp/enable/<p> is 0 on the PFC priorities (or on every priority when PFC data is absent). iWARP devices (node_type `4: RNIC`) are left out: RDMA over TCP needs no RoCE GID, PFC or ECN.",
    why: "Without ECN/DCQCN, congestion is only handled by PFC pauses or drops, which spread and stall whole fabrics.",
    evidence: "/sys/class/net/<netdev>/ecn/roce_np/enable/*, ecn/roce_rp/enable/*.",
    fix: "`echo 1` into both files for the RoCE priority and enable ECN marking on the switches.",
    sources: &[MLX5_CNP],
};

pub(super) const GDR_001: Rule = Rule {
    id: "FAB-GDR-001",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "GPUs and RDMA NICs without a peer-memory path",
    checks: "GPUs and hardware RDMA devices are present, neither nvidia_peermem nor nv_peer_mem is loaded, and dma-buf is not evidenced: NVIDIA's dma-buf requirements are Linux ≥ 5.12 and the open GPU kernel module (R515 or later; /proc/driver/nvidia/version says `Open Kernel Module`, `versions.nvidia_open_kernel_module` in the inventory), with CUDA ≥ 11.7 and NCCL ≥ 2.13 in user space. With both seen, the rule is silent.",
    why: "Without GPUDirect RDMA every transfer is staged through host memory: lower bandwidth, higher latency, CPU load.",
    evidence: "/proc/modules, /proc/sys/kernel/osrelease, /proc/driver/nvidia/version.",
    fix: "`modprobe nvidia_peermem` (driver R470+), or dma-buf: kernel ≥ 5.12, open GPU kernel module, NCCL ≥ 2.13.",
    sources: &[GPU_OPERATOR_RDMA, GDR_MANUAL],
};

pub(super) const GDR_002: Rule = Rule {
    id: "FAB-GDR-002",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "A GPU's nearest RDMA NIC is beyond PXB",
    checks: "For each GPU, the nearest hardware RDMA NIC by `nvidia-smi topo -m` distance is PHB, NODE or SYS.",
    why: "NCCL enables GPUDirect RDMA only up to NCCL_NET_GDR_LEVEL, PXB by default (ncclTopoCheckGdr: netGdrLevel = PATH_PXB); beyond it data is staged through host memory and crosses the CPU (and the inter-socket link at SYS).",
    evidence: "GPU↔NIC path classification from the PCI device paths (as nvidia-smi topo -m).",
    fix: "Place a NIC under the same PCIe switch as each GPU; pin ranks to their NIC's NUMA node; raising NCCL_NET_GDR_LEVEL forces GDR over the long path (measure first).",
    sources: &[NCCL_PATHS_SRC, NCCL_ENV, NCCL_634],
};

pub(super) const CTR_001: Rule = Rule {
    id: "FAB-CTR-001",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "Link error counters above zero",
    checks: "ports/N/counters: symbol_error, link_error_recovery, link_downed, port_rcv_errors, port_rcv_remote_physical_errors, port_rcv_switch_relay_errors, local_link_integrity_errors, excessive_buffer_overrun_errors. Not port_xmit_discards (drops while the link was down or congested) nor the constraint errors (partition filtering): those are no cable fault.",
    why: "They count physical-layer and link faults (bad cable, transceiver, port). Cumulative since driver load or reset: a non-zero total says it happened; growth says it is happening, which `fabrik diff` between two snapshots and `fabrik top` report as FAB-CNT-* findings.",
    evidence: "/sys/class/infiniband/<dev>/ports/<n>/counters/*.",
    fix: "Watch growth between two snapshots, check `mlxlink -c`, replace the cable/transceiver, reset counters after the fix.",
    sources: &[KERNEL_IB_ABI],
};

pub(super) const CTR_002: Rule = Rule {
    id: "FAB-CTR-002",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "RoCE loss and retransmission counters above zero",
    checks: "On RoCE (Ethernet link layer) ports, ports/N/hw_counters (mlx5 names): out_of_sequence, packet_seq_err, local_ack_timeout_err, implied_nak_seq_err, rnr_nak_retry_err, req_transport_retries_exceeded, duplicate_request.",
    why: "They count dropped packets recovered by go-back-N or timeouts; each costs a stall of NCCL's connection.",
    evidence: "/sys/class/infiniband/<dev>/ports/<n>/hw_counters/*.",
    fix: "Make the RoCE priority lossless (PFC) with ECN on, check switch buffer drops and the traffic class NCCL uses (NCCL_IB_TC).",
    sources: &[MLX5_COUNTERS],
};

pub(super) const CTR_003: Rule = Rule {
    id: "FAB-CTR-003",
    severity: Severity::Info,
    scope: Scope::Node,
    title: "Congestion notifications exchanged",
    checks: "hw_counters np_cnp_sent, np_ecn_marked_roce_packets, rp_cnp_handled, rp_cnp_ignored above zero.",
    why: "DCQCN worked and the fabric saw congestion; many CNPs during a job point at incast or an oversubscribed path.",
    evidence: "/sys/class/infiniband/<dev>/ports/<n>/hw_counters/*cnp*.",
    fix: "None if bandwidth is as expected; otherwise compare CNP rates across nodes to find the congested rail.",
    sources: &[MLX5_CNP],
};

pub(super) const SOCK_001: Rule = Rule {
    id: "FAB-SOCK-001",
    severity: Severity::Info,
    scope: Scope::Node,
    title: "The interface NCCL's sockets would use",
    checks: "When no healthy IB/RoCE port is present and NCCL_SOCKET_IFNAME is unset: the interfaces NCCL's default selection would pick. NCCL tries `ib*` first, then any interface not starting with docker, lo or virbr (older releases: docker, lo), then docker*, lo, virbr*; only running interfaces with an IPv4 or non-loopback IPv6 address count, and the bootstrap uses the first.",
    why: "Sockets then carry all inter-node traffic, so the interface decides both reachability and bandwidth.",
    evidence: "/sys/class/net/*/operstate, interface addresses and kinds.",
    fix: "Set NCCL_SOCKET_IFNAME==<interface> to the interface on the network that reaches the other nodes.",
    sources: &[NCCL_ENV, NCCL_SOCKET_SRC, NCCL_OS_LINUX_SRC, SOCKET_286],
};

pub(super) const SOCK_002: Rule = Rule {
    id: "FAB-SOCK-002",
    severity: Severity::Error,
    scope: Scope::Node,
    title: "NCCL's default socket interface would be wrong",
    checks: "With NCCL_SOCKET_IFNAME unset, NCCL's default selection includes a bridge without the default route, a veth/CNI/overlay or loopback interface (warning; bonds, VLANs and a pod's own eth0 are fine), or only docker*/lo/virbr* remain (error), or no running interface has an address (error).",
    why: "The bootstrap and socket transport then connect to addresses other nodes cannot reach: hangs at ncclCommInitRank or `Bootstrap : no socket interface found`.",
    evidence: "/sys/class/net/*/operstate, interface kinds and addresses.",
    fix: "Set NCCL_SOCKET_IFNAME==<physical interface> (or exclude virtual ones: ^docker,lo,virbr,veth,br).",
    sources: &[NCCL_SOCKET_SRC, SOCKET_913, HOROVOD_700, ONEFLOW_VETH],
};

pub(super) const CLOUD_001: Rule = Rule {
    id: "FAB-CLOUD-001",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "GCP A3-like node without GPUDirect-TCPX",
    checks: "8 GPUs, several gVNIC (gve) interfaces and no RDMA: warns when fewer than 4 data gVNICs exist, or when the planned environment has no NCCL_GPUDIRECTTCPX_* settings (info without an environment: the plugin and receive-datapath-manager are invisible to sysfs).",
    why: "On A3 VMs, NCCL's bandwidth between nodes comes from the GPUDirect-TCPX plugin and the receive-datapath-manager over 4 data NICs; without them two nodes reach about 20 GB/s all_reduce algbw instead of about 50 GB/s.",
    evidence: "/sys/class/net/*/device/driver (gve), GPU count, /sys/class/infiniband, env:NCCL_GPUDIRECTTCPX_*.",
    fix: "Run the tcpgpudmarxd (receive-datapath-manager) container, put the nccl-plugin-gpudirecttcpx library on LD_LIBRARY_PATH, set the NCCL_GPUDIRECTTCPX_* variables, give the VM 4 data NICs.",
    sources: &[TCPX_YAML, DSTACK_A3],
};

pub(super) const CLOUD_002: Rule = Rule {
    id: "FAB-CLOUD-002",
    severity: Severity::Error,
    scope: Scope::Env,
    title: "EFA present without the libfabric/aws-ofi-nccl settings",
    checks: "EFA devices (efa_*, driver efa) are present: info without an environment; with one, error when FI_PROVIDER names another provider, warning when no FI_PROVIDER/FI_EFA_*/NCCL_NET_PLUGIN setting points at the plugin.",
    why: "NCCL's built-in IB transport cannot drive EFA; without aws-ofi-nccl and libfabric's efa provider NCCL falls back to TCP sockets.",
    evidence: "/sys/class/infiniband (efa devices), env:FI_PROVIDER, env:FI_EFA_*, env:NCCL_NET_PLUGIN.",
    fix: "Install the EFA software and aws-ofi-nccl, FI_PROVIDER=efa (FI_EFA_USE_DEVICE_RDMA=1 on p4d/p5 with older libfabric).",
    sources: &[EFA_NCCL, OFI_49],
};

pub(super) const RDMA_005: Rule = Rule {
    id: "FAB-RDMA-005",
    severity: Severity::Error,
    scope: Scope::Node,
    title: "RDMA hardware on the PCI bus without a working RDMA stack",
    checks: "A network-class PCI function made for RDMA (vendor 0x15b3, every ConnectX and BlueField; AWS EFA 0x1d0f:0xefa*) that no device under /sys/class/infiniband points at: no driver bound to it, or a driver (mlx5_core) that gave it a netdev but no RDMA device (mlx5_ib not loaded). Functions bound to vfio-pci (passed to a VM), unbound SR-IOV virtual functions, and the second function of a bonded card (one mlx5_bond_N device serves both) are left out. Error on a node with GPUs, warning otherwise. Intel and Broadcom NICs are not judged: they are plain Ethernet on GPU nodes often enough.",
    why: "Without the RDMA device NCCL does not see the NIC: it stripes over the rails left or falls back to TCP sockets, and every other rule that judges ports, GIDs and PFC sees nothing to judge, so the node looked healthy.",
    evidence: "/sys/bus/pci/devices/<addr>/{vendor,device,class,driver}, /sys/class/infiniband/*/device, /proc/modules.",
    fix: "`modprobe mlx5_core mlx5_ib ib_uverbs` (or `efa`) and load them at boot; when the driver is loaded, `dmesg` says why it refused the card (firmware, PCIe errors).",
    sources: &[KERNEL_MLX5_KCONFIG, NHC_HW_IB, NCCL_TROUBLESHOOTING],
};

pub(super) const CHK_001: Rule = Rule {
    id: "FAB-CHK-001",
    severity: Severity::Warning,
    scope: Scope::Node,
    title: "A fact the check could not read",
    checks: "Facts a rule needs that the root did not give, with the reason probing recorded: ACS of the PCIe bridges on GPU and NIC paths (read from config space, which beyond its 64-byte header only root reads, else an lspci -vvv capture), PFC and trust of hardware RoCE netdevs (DCB over netlink, else an mlnx_qos capture; a driver without DCB says so), the InfiniBand active MTU (ibv_devinfo -v). One finding per fact, naming every subject. Warning for ACS on a GPU node that is not a VM and for PFC; info for ACS elsewhere and the IB MTU; nothing for ACS in a VM, where FAB-PCI-002 does not judge.",
    why: "A rule that cannot see its fact stays silent, and a silent health check reads as a healthy node: on a live node without root, or with a tool missing or past the budget, ACS redirect or PFC off would pass unseen.",
    evidence: "Each subject (bridge, netdev, port) with the reason: the bytes of config space read, the netlink answer (EOPNOTSUPP, a timeout), the tool's outcome.",
    fix: "Run the check as root on the node, with rdma-core's tools installed and a --budget they fit in; in a container, mount the host's root and run on the host network. Waive the finding with a reason where the fact cannot be had.",
    sources: &[PCI_SYSFS_CONFIG, KERNEL_DCBNL, NCCL_TROUBLESHOOTING],
};
