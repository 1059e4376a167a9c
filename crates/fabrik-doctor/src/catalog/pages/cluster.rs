//! Pages of the cross-node rules: nodes compared with their peers.

use fabrik_model::{Rule, Scope, Severity};

use crate::catalog::sources::*;

pub(super) const X_001: Rule = Rule {
    id: "FAB-X-001",
    severity: Severity::Warning,
    scope: Scope::Cluster,
    title: "Kernel versions differ across nodes",
    checks: "The kernel release per node, from /proc/sys/kernel/osrelease or, where a snapshot or container holds only that, the banner of /proc/version; nodes outside the majority are named.",
    why: "RDMA, peer-memory and GPU drivers are built per kernel; a drifted node behaves differently and is a common cause of one-node-slow jobs. Warning: the job runs; what differs is speed or a bug that may or may not bite.",
    evidence: "Each node's kernel release.",
    fix: "Reimage or update the odd node to the cluster's kernel.",
    sources: &[NCCL_TROUBLESHOOTING],
};

pub(super) const X_002: Rule = Rule {
    id: "FAB-X-002",
    severity: Severity::Warning,
    scope: Scope::Cluster,
    title: "NVIDIA driver versions differ across nodes",
    checks: "NVIDIA driver version per node.",
    why: "Different drivers change CUDA, NCCL and peer-memory behaviour between ranks of one job. Warning: each rank runs against its own driver and the job starts; an image whose CUDA needs a newer driver fails on its own node, which the node's own checks report.",
    evidence: "/proc/driver/nvidia/version per node.",
    fix: "Install the same driver everywhere.",
    sources: &[GPU_OPERATOR_RDMA],
};

pub(super) const X_003: Rule = Rule {
    id: "FAB-X-003",
    severity: Severity::Warning,
    scope: Scope::Cluster,
    title: "OFED / rdma-core versions differ across nodes",
    checks: "`ofed_info -s` and the rdma-core version per node.",
    why: "Mixed RDMA stacks differ in verbs features and bugs; field reports list OFED drift among the first causes of multi-node slowdowns. Warning: the verbs wire protocol is the same, so ranks connect and the job runs.",
    evidence: "fabrik/cmd/ofed_info.txt, rdma-core version per node.",
    fix: "Install one OFED/DOCA-OFED or rdma-core release on every node.",
    sources: &[NCCL_TROUBLESHOOTING],
};

pub(super) const X_004: Rule = Rule {
    id: "FAB-X-004",
    severity: Severity::Warning,
    scope: Scope::Cluster,
    title: "HCA firmware differs across nodes",
    checks: "fw_ver of HCAs of the same model (hca_type) per node.",
    why: "Firmware changes link training, congestion control and performance; mixed firmware is a classic source of one slow node. Warning: the job runs, possibly slower.",
    evidence: "/sys/class/infiniband/*/fw_ver, hca_type.",
    fix: "Flash the same firmware on every HCA of a model (mlxfwmanager).",
    sources: &[KERNEL_IB_ABI],
};

pub(super) const X_005: Rule = Rule {
    id: "FAB-X-005",
    severity: Severity::Warning,
    scope: Scope::Cluster,
    title: "Link rates differ across nodes",
    checks: "The multiset of ACTIVE port rates per node (e.g. 8x `400 Gb/sec (4X NDR)`).",
    why: "A fabric that mixes generations (FDR and HDR) or a node with a degraded port runs collectives at the slowest node's pace. Warning: the job runs, at the slowest link's speed.",
    evidence: "/sys/class/infiniband/*/ports/*/rate per node.",
    fix: "Repair or replace the odd node's links; keep generations separate.",
    sources: &[KERNEL_IB_ABI],
};

pub(super) const X_006: Rule = Rule {
    id: "FAB-X-006",
    severity: Severity::Error,
    scope: Scope::Cluster,
    title: "A node has fewer GPUs or active RDMA ports than its peers",
    checks: "Per node: GPU count and ACTIVE hardware RDMA port count, against the job's count (the most common one; the largest on a tie). Only nodes below it are named; a node with a spare GPU or port is not.",
    why: "Error: launchers start one count of processes on every node (torchrun --nproc-per-node 8, srun --ntasks-per-node 8, a Job's GPU request), so a node with 7 GPUs fails the job at start (invalid device ordinal) or never schedules. A missing rail leaves the peers' connections to that rail to cross to another rail, which on rail-isolated fabrics is unroutable and NCCL hangs at connect; at best the node carries its share on fewer links and the job runs at its pace.",
    evidence: "GPU list and /sys/class/infiniband/*/ports/*/state per node, with every node's counts.",
    fix: "Drain the node and repair what it is missing (a GPU fallen off the bus: `nvidia-smi -q`, dmesg Xid 79; an HCA without driver or a port down: `ibstat`, the cable and the switch port) before scheduling multi-node jobs on it.",
    sources: &[TORCHRUN_DOC, NCCL_TROUBLESHOOTING],
};

pub(super) const X_007: Rule = Rule {
    id: "FAB-X-007",
    severity: Severity::Warning,
    scope: Scope::Cluster,
    title: "RDMA MTU differs across nodes",
    checks: "RoCE netdev MTUs and IB active MTUs per node.",
    why: "The path MTU is negotiated down to the smaller side; mismatched MTUs also cause drops of oversized frames on switches. Warning: NCCL's queue pairs use the smaller MTU of the two ends and the job runs, slower.",
    evidence: "/sys/class/net/<roce netdev>/mtu, active_mtu per node.",
    fix: "Use one MTU on every node and switch.",
    sources: &[ROCE_MTU_BLOG],
};

pub(super) const X_008: Rule = Rule {
    id: "FAB-X-008",
    severity: Severity::Warning,
    scope: Scope::Cluster,
    title: "RoCE v2 GID indexes differ across nodes",
    checks: "The RoCE v2 IPv4 GID indexes per node.",
    why: "One NCCL_IB_GID_INDEX is set for the whole job; if the index differs between nodes some connect with the wrong GID type or fail (before NCCL 2.21's automatic selection). Warning: unset, NCCL 2.21+ selects per node and each end sends its own GID, so the job runs; a fixed index is judged per node by FAB-ENV-004.",
    evidence: "/sys/class/infiniband/*/ports/*/gid_attrs/types/* per node.",
    fix: "Make addressing alike on all nodes or leave NCCL_IB_GID_INDEX unset with NCCL ≥ 2.21.",
    sources: &[JUNIPER_GID, NCCL_ENV],
};

pub(super) const X_009: Rule = Rule {
    id: "FAB-X-009",
    severity: Severity::Error,
    scope: Scope::Cluster,
    title: "RoCE interfaces in different IP subnets",
    checks: "The set of IPv4 subnets of each node's RoCE netdevs. Error when the odd node's rails cannot reach a peer on the evidence: a network on one side has no on-link counterpart (equal, containing or contained) on the other, no default route leaves through the RoCE netdevs, and the addressing is not point-to-point (/31, /32). Otherwise warning.",
    why: "Rails are usually one subnet each. Error: with no route between the subnets, NCCL's RoCE v2 connection to that rail never completes and the job hangs at its first inter-node collective. Warning: with a route (a default route through the rail, or /31 point-to-point addressing, an L3 fabric where every node's subnets differ by design) the job runs; only /proc/net/route's main table is read, so routes in policy-routing tables are not seen.",
    evidence: "Addresses of the RoCE netdevs per node; /proc/net/route of the odd node.",
    fix: "Put each rail's interfaces in one subnet on every node, or route between the subnets and check with `ip route get <peer address>` from each rail.",
    sources: &[ROCE_MODE],
};

pub(super) const X_010: Rule = Rule {
    id: "FAB-X-010",
    severity: Severity::Error,
    scope: Scope::Cluster,
    title: "InfiniBand and RoCE (or EFA) nodes in one job",
    checks: "The link layers of each node's ACTIVE hardware RDMA ports (InfiniBand, RoCE, EFA); nodes outside the majority are named.",
    why: "Error: NCCL's IB transport refuses a peer whose link layer differs from its own (\"Remote RoCE device is incompatible with the local ... InfiniBand\") and the connection fails; an InfiniBand HCA and a RoCE NIC cannot reach each other over RDMA at all, so the job fails at its first inter-node connection.",
    evidence: "/sys/class/infiniband/*/ports/*/link_layer per node.",
    fix: "Run a job on nodes of one fabric (split the allocation by partition or node label).",
    sources: &[NCCL_IB_LINK_LAYER_SRC, KERNEL_IB_ABI],
};

pub(super) const X_011: Rule = Rule {
    id: "FAB-X-011",
    severity: Severity::Warning,
    scope: Scope::Cluster,
    title: "Neighbour (ARP) table smaller than the job's on-link peers",
    checks: "For each node, the number of the other nodes' IPv4 addresses on subnets the node is on (one ARP entry each), against the node's /proc/sys/net/ipv4/neigh/default/gc_thresh3. Peers reached through a gateway (another subnet, /31 and /32 fabrics) take no entry and are not counted.",
    why: "gc_thresh3 is the neighbour table's hard limit (kernel default 1024): past it the kernel creates no new entry, logs `neighbour: arp_cache: neighbor table overflow!`, and packets to a peer it has not resolved are dropped, so connections to some peers time out while others work. Jobs whose traffic reaches every peer hit it first: the pair matrix, alltoall (mixture-of-experts), a bootstrap all-gather on a flat subnet of hundreds of nodes with several addresses each. Warning: a job that talks to few peers (rings, trees) runs.",
    evidence: "gc_thresh3 of the node; the count of peer addresses on its subnets.",
    fix: "Raise gc_thresh1/2/3 on every node above the on-link peer count (the table holds other neighbours too), e.g. with a file in /etc/sysctl.d/.",
    sources: &[KERNEL_NEIGH_SYSCTL],
};

pub(super) const X_012: Rule = Rule {
    id: "FAB-X-012",
    severity: Severity::Warning,
    scope: Scope::Cluster,
    title: "NIC firmware settings differ across nodes",
    checks: "For each NIC model (`Device type:` of `mstconfig q`/`mlxconfig q`, else the board part) on two nodes or more, each firmware setting's value in force (`Current` where shown, else `Next Boot`) per node, against the value most nodes hold: one finding per node naming every setting outside the majority, with the majority's value. With no strict majority (a 1-1 split) every node is named. A node whose capture lacks a setting (a query cut by `grep`) is not compared on it.",
    why: "The firmware decides how the NIC behaves on PCIe and the wire: PCI_WR_ORDERING (relaxed ordering of its writes, the difference between ~84 and ~400 Gb/s into GPU memory on some platforms and in VMs), ATS_ENABLED, ADVANCED_PCI_SETTINGS and MAX_ACC_OUT_READ (outstanding PCIe reads), RoCE congestion control, SR-IOV and LINK_TYPE. A node whose NICs are set apart from its peers' runs its share of every collective at another speed, or not at all (LINK_TYPE), and the job runs at its pace.",
    evidence: "`mstconfig -d <pci> q` (captured by `fabrik snapshot` as fabrik/cmd/mstconfig-<pci>.txt) on each node.",
    fix: "Apply one configuration to every NIC of the model (`mstconfig -d <pci> set NAME=VALUE`, or `mlxconfig`), then reset the firmware (`mstfwreset`) or reboot.",
    sources: &[MSTFLINT_MLXCONFIG_DB, NCCL_1731],
};

pub(super) const X_013: Rule = Rule {
    id: "FAB-X-013",
    severity: Severity::Warning,
    scope: Scope::Cluster,
    title: "A NIC port's raw BER is an outlier among its peers",
    checks: "The `Raw Physical BER` (pre-FEC) of every port `mstlink -c`/`mlxlink -c` reported, on log10, among the ports of the same speed (`IB-NDR`, `100G`: PAM4 and NRZ links differ by decades by design) on all nodes, with four ports or more from two nodes or more: a port whose modified z-score 0.6745 (x - median) / MAD is above 3.5 (MAD at least 0.05 decades, so that identical peers do not make any difference an outlier) and whose BER is at least ten times the median is named with its node. BERs at or below 1E-15, the floor of what a counter window measures, are never named.",
    why: "FEC corrects a rising raw BER until it no longer can: a port far worse than its peers, though still inside the single-node limits (FAB-LINK-002), is a dirty or failing optic, cable or connector, and Meta's GCM finds that one degraded port costs 5-30 % of NCCL bandwidth. A robust median and MAD keep one bad port from hiding itself by moving the mean.",
    evidence: "`mstlink -d <pci> -c` (fabrik/cmd/mstlink-<pci>.txt) `Raw Physical BER` of each port, and the median of its peers.",
    fix: "Clean or reseat the optic and cable (or swap them with a healthy port's to see whether the errors follow), clear the counters (`mlxlink -d <dev> --pc`) and read them again.",
    sources: &[NIST_OUTLIERS, META_GCM, MSTFLINT_MLXLINK, DELL_PAM4_BER],
};

pub(super) const X_014: Rule = Rule {
    id: "FAB-X-014",
    severity: Severity::Warning,
    scope: Scope::Cluster,
    title: "TCP buffer limits differ across nodes",
    checks: "The largest receive and send buffer a TCP socket may grow to (the third value of /proc/sys/net/ipv4/tcp_rmem and tcp_wmem, read in the network namespace the check runs in) on each node, against the value most nodes have: the node that differs is named.",
    why: "The kernel autotunes every TCP connection's buffers up to these limits; a node whose limits were lowered (a tuning script, a container's namespace, a copied sysctl.d file) caps the window of every connection NCCL's bootstrap and socket transport open to it. Over a long or busy path that caps the bandwidth of all its peers' connections to it at window / round-trip time, and the job runs at the pace of that node, with no error anywhere.",
    evidence: "/proc/sys/net/ipv4/tcp_rmem and tcp_wmem of every node.",
    fix: "Give every node the same TCP buffer limits, at least the kernel's defaults (tcp_rmem max 6 MiB, tcp_wmem max 4 MiB), kept in /etc/sysctl.d/; a container or pod sets them in its own network namespace.",
    sources: &[KERNEL_IP_SYSCTL_TCP, NCCL_SOCKET_SRC],
};
