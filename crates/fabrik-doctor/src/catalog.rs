//! The rule catalog: every rule's stable id, severity, and its page (what it checks, why it
//! matters, the evidence it reads, the fix, and where the knowledge comes from).
//!
//! The counter rules' pages (FAB-CNT-1xx) are in [`counters`], beside the rules ([`crate::counter_rules`]);
//! the log rules (FAB-NCCL-*, FAB-BENCH-*) live with NCCL's message catalog
//! (`fabrik_parse::catalog::rules`); both join this table in [`rules`] and [`rule`].
//! `docs/rules/` is generated from both (tests/rule_pages.rs); the same test keeps them in sync.

use fabrik_model::Severity;
pub use fabrik_model::{Rule, Scope, Source};

pub mod counters;

const NCCL_ENV: Source = Source {
    title: "NCCL documentation: Environment Variables",
    url: "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html",
};
const NCCL_TROUBLESHOOTING: Source = Source {
    title: "NCCL documentation: Troubleshooting (GPU Direct, ACS, InfiniBand limits)",
    url: "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html",
};
const KERNEL_IB_ABI: Source = Source {
    title: "Linux kernel ABI: /sys/class/infiniband (ports, GIDs, gid_attrs)",
    url: "https://kernel.org/doc/Documentation/ABI/testing/sysfs-class-infiniband",
};
const NCCL_SOCKET_SRC: Source = Source {
    title: "NCCL source: ncclFindInterfaces (src/misc/socket.cc)",
    url: "https://github.com/NVIDIA/nccl/blob/master/src/misc/socket.cc",
};
const NCCL_OS_LINUX_SRC: Source = Source {
    title: "NCCL source: ncclOsFindInterfaces, IFF_RUNNING and address filters (src/os/linux.cc)",
    url: "https://github.com/NVIDIA/nccl/blob/master/src/os/linux.cc",
};
const NCCL_PATHS_SRC: Source = Source {
    title: "NCCL source: ncclTopoCheckGdr, default netGdrLevel = PATH_PXB (src/graph/paths.cc)",
    url: "https://github.com/NVIDIA/nccl/blob/master/src/graph/paths.cc",
};
const NCCL_IB_CONNECT_SRC: Source = Source {
    title: "NCCL source: NCCL_IB_GID_INDEX default -1 (src/transport/net_ib/connect.cc, v2.31.2-1)",
    url: "https://raw.githubusercontent.com/NVIDIA/nccl/v2.31.2-1/src/transport/net_ib/connect.cc",
};
const NCCL_IB_LINK_LAYER_SRC: Source = Source {
    title: "NCCL source: the connect side refuses a remote device of another link layer (\"Remote %s device is incompatible with the local ...\", src/transport/net_ib/connect.cc, v2.30.7-1)",
    url: "https://github.com/NVIDIA/nccl/blob/v2.30.7-1/src/transport/net_ib/connect.cc",
};
const TORCHRUN_DOC: Source = Source {
    title: "PyTorch documentation: torchrun (--nproc-per-node, one worker group per node)",
    url: "https://docs.pytorch.org/docs/stable/elastic/run.html",
};
const JUNIPER_GID: Source = Source {
    title: "Juniper JVD: NCCL 2.21+ selects the GID index automatically (NCCL_IB_GID_INDEX=-1)",
    url: "https://www.juniper.net/documentation/us/en/software/jvd/jvd-ai-dc-evpn-multitenancy/appendix_d_how_to_run_nccl_tests_using_autoconfigured_ipv6_address.html",
};
const RXE_QUERY_PORT_SRC: Source = Source {
    title: "Linux source: rxe_query_port takes the port's speed and width from ib_get_eth_speed, i.e. the netdev's ethtool speed (drivers/infiniband/sw/rxe/rxe_verbs.c)",
    url: "https://github.com/torvalds/linux/blob/master/drivers/infiniband/sw/rxe/rxe_verbs.c",
};
const IB_GET_ETH_SPEED_SRC: Source = Source {
    title: "Linux source: ib_get_eth_speed maps an Ethernet netdev's link speed to an IB speed and width (drivers/infiniband/core/verbs.c)",
    url: "https://github.com/torvalds/linux/blob/master/drivers/infiniband/core/verbs.c",
};
const PMTUD_BLACK_HOLES: Source = Source {
    title: "RFC 2923: TCP Problems with Path MTU Discovery (black holes: routers that drop large packets without the ICMP that would say so)",
    url: "https://datatracker.ietf.org/doc/html/rfc2923",
};
const MEMLOCK_ISSUE: Source = Source {
    title: "NVIDIA/nccl-tests#206: ibv_reg_mr_iova2 failed, Cannot allocate memory (ulimit -l was 8192)",
    url: "https://github.com/NVIDIA/nccl-tests/issues/206",
};
const ACS_ISSUE: Source = Source {
    title: "NVIDIA/nccl#199: multi-GPU hang, fixed by disabling ACS",
    url: "https://github.com/NVIDIA/nccl/issues/199",
};
const PCIUTILS_LS_CAPS: Source = Source {
    title: "pciutils: ls-caps.c, the DevCtl (RlxdOrd, MaxReadReq), LnkCap and LnkSta lines of lspci -vvv",
    url: "https://github.com/pciutils/pciutils/blob/master/ls-caps.c",
};
const PCIUTILS_LS_ECAPS: Source = Source {
    title: "pciutils: ls-ecaps.c, the AER (UESta, UESvrt, CESta) and ACS lines of lspci -vvv",
    url: "https://github.com/pciutils/pciutils/blob/master/ls-ecaps.c",
};
const LINUX_PCI_QUIRKS: Source = Source {
    title: "Linux: drivers/pci/quirks.c, relaxed ordering disabled below root ports with errata (PCI_DEV_FLAGS_NO_RELAXED_ORDERING)",
    url: "https://github.com/torvalds/linux/blob/master/drivers/pci/quirks.c",
};
const ORACLE_OCI_DR_HPC: Source = Source {
    title: "oracle/oci-dr-hpc-v2, link_check: mlxlink effective physical BER below 1E-12 and raw physical BER below 1E-5 pass; effective physical errors above the shape's limit (0) fail, raw physical errors per lane above it (10,000) warn",
    url: "https://github.com/oracle/oci-dr-hpc-v2",
};
const ORACLE_OCI_HPC_HC: Source = Source {
    title: "oracle-quickstart/oci-hpc health checks (check_gpu_setup.py): mlxlink State must be Active and the Recommendation 'No issue was observed'; 'Bad signal integrity' is tolerated below a raw physical BER of 1e-7",
    url: "https://github.com/oracle-quickstart/oci-hpc/blob/master/playbooks/roles/healthchecks/files/check_gpu_setup.py",
};
const ORACLE_OCI_HPC_FLAP: Source = Source {
    title: "oracle-quickstart/oci-hpc health checks (rdma_link_flapping.py): 'mlx5_core ... Link down' kernel lines after a 30-minute boot grace are link flaps",
    url: "https://github.com/oracle-quickstart/oci-hpc/blob/master/playbooks/roles/healthchecks/files/rdma_link_flapping.py",
};
const MSTFLINT_MLXLINK: Source = Source {
    title: "mstflint: mlxlink_commander.cpp, the Operational Info, Troubleshooting Info and Physical Counters and BER Info of mstlink",
    url: "https://github.com/Mellanox/mstflint/blob/master/mlxlink/modules/mlxlink_commander.cpp",
};
const MSTFLINT_MLXCONFIG_DB: Source = Source {
    title: "mstflint: mlxconfig's parameter database (mlxconfig_host.db): PCI_WR_ORDERING per_mkey/force_relax, ATS_ENABLED, MAX_ACC_OUT_READ...",
    url: "https://github.com/Mellanox/mstflint/tree/master/mlxconfig/mlxconfig_dbs",
};
const DELL_PAM4_BER: Source = Source {
    title: "Dell KB 000286734: ConnectX-6 Dx PAM4 links report high corrected bits by design; IEEE requires a pre-FEC BER of 2.4E-04 or better and RS544 FEC gives 1E-12 or better",
    url: "https://www.dell.com/support/kbdoc/en-us/000286734/100-gb-nic",
};
const META_GCM: Source = Source {
    title: "Meta GCM (GPU Cluster Monitoring) health checks",
    url: "https://facebookresearch.github.io/gcm/docs/GCM_Health_Checks/health_checks/",
};
const META_GCM_NVLINK: Source = Source {
    title: "Meta GCM health checks: check-dcgmi nvlink (links down or disabled are CRITICAL)",
    url: "https://facebookresearch.github.io/gcm/docs/GCM_Health_Checks/health_checks/check-dcgmi/nvlink",
};
const ETHTOOL_SRC: Source = Source {
    title: "ethtool source: the Speed, link-mode and Link detected lines of `ethtool IF`",
    url: "https://git.kernel.org/pub/scm/network/ethtool/ethtool.git/tree/ethtool.c",
};
const LINUX_MLX5_COUNTERS: Source = Source {
    title: "Linux kernel documentation: mlx5 ethtool counters (rx_crc_errors_phy, rx_symbol_err_phy, rx_discards_phy, rx_out_of_buffer)",
    url: "https://docs.kernel.org/networking/device_drivers/ethernet/mellanox/mlx5/counters.html",
};
const IBDIAGNET_DOC: Source = Source {
    title: "NVIDIA: ibdiagnet InfiniBand Fabric Diagnostic Tool User Manual v2.13.0 (error detection per stage)",
    url: "https://docs.nvidia.com/networking/display/ibdiagnetUserManualv213",
};
const IBLINKINFO_SRC: Source = Source {
    title: "rdma-core: infiniband-diags/iblinkinfo.c, port lines and the 'Could be' note of links that could run wider or faster",
    url: "https://github.com/linux-rdma/rdma-core/blob/master/infiniband-diags/iblinkinfo.c",
};
const SFF_8472: Source = Source {
    title: "SNIA SFF-8472: Management Interface for SFP+ (diagnostic monitoring, alarm and warning flags and thresholds set by the module)",
    url: "https://members.snia.org/document/dl/25916",
};
const SFF_8636: Source = Source {
    title: "SNIA SFF-8636: Management Interface for 4-lane Modules and Cables (per-channel monitors, interrupt flags and thresholds)",
    url: "https://members.snia.org/document/dl/26418",
};
const CMIS: Source = Source {
    title:
        "OIF CMIS: Common Management Interface Specification (module and lane flags, thresholds)",
    url: "https://www.oiforum.com/wp-content/uploads/OIF-CMIS-05.2.pdf",
};
const ETHTOOL_MODULE_SRC: Source = Source {
    title: "ethtool source: sfpdiag.c, qsfp.c, cmis.c and sff-common.c, the diagnostics, flags and thresholds `ethtool -m` prints",
    url: "https://git.kernel.org/pub/scm/network/ethtool/ethtool.git/tree/sff-common.c",
};
const NVIDIA_XID: Source = Source {
    title: "NVIDIA: Xid catalog (each Xid's description and recommended action)",
    url: "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html",
};
const LINUX_MLX5_HEALTH: Source = Source {
    title: "Linux: drivers/net/ethernet/mellanox/mlx5/core/health.c (health compromised, fatal errors, syndromes, recovery)",
    url: "https://github.com/torvalds/linux/blob/master/drivers/net/ethernet/mellanox/mlx5/core/health.c",
};
const LINUX_AER_HOWTO: Source = Source {
    title: "Linux kernel documentation: The PCI Express Advanced Error Reporting Driver Guide (aer_dev_correctable, aer_dev_fatal, aer_dev_nonfatal)",
    url: "https://docs.kernel.org/PCI/pcieaer-howto.html",
};
const NCCL_1731: Source = Source {
    title: "NVIDIA/nccl#1731: dual-port ConnectX-7, 84 Gb/s from cudaMalloc memory until IBV_ACCESS_RELAXED_ORDERING",
    url: "https://github.com/NVIDIA/nccl/issues/1731",
};
const NV_VM_ATS: Source = Source {
    title: "NVIDIA AI Enterprise: ATS and ACS configuration for GPUDirect RDMA in VMs",
    url: "https://docs.nvidia.com/ai-enterprise/planning-resource/optimizing-vm-configuration-ai-inference/latest/appendix.html",
};
const GPU_OPERATOR_RDMA: Source = Source {
    title: "NVIDIA GPU Operator: GPUDirect RDMA with DMA-BUF or nvidia-peermem",
    url:
        "https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/gpu-operator-rdma.html",
};
const GDR_MANUAL: Source = Source {
    title: "NVIDIA GPUDirect RDMA User Manual: nv_peer_mem must be loaded",
    url: "https://docs.nvidia.com/networking/display/GPUDirectRDMAv18/System+Requirements+and+Recommendations",
};
const SOCKET_286: Source = Source {
    title: "NVIDIA/nccl#286: default NCCL_SOCKET_IFNAME behaviour (^lo,docker)",
    url: "https://github.com/NVIDIA/nccl/issues/286",
};
const SOCKET_913: Source = Source {
    title: "NVIDIA/nccl#913: ncclCommInitRank hangs because of a docker bridge veth interface",
    url: "https://github.com/NVIDIA/nccl/issues/913",
};
const HOROVOD_700: Source = Source {
    title: "horovod#700: NCCL picks ib*, then non-docker/lo, then docker0, then lo (maintainer's explanation)",
    url: "https://github.com/horovod/horovod/pull/700",
};
const TCPX_YAML: Source = Source {
    title: "GoogleCloudPlatform/container-engine-accelerators: GPUDirect-TCPX rxdm daemon and NCCL plugin",
    url: "https://raw.githubusercontent.com/GoogleCloudPlatform/container-engine-accelerators/master/gpudirect-tcpx/nccl-test.yaml",
};
const DSTACK_A3: Source = Source {
    title:
        "dstackai/dstack#2447: GCP A3 with 4 data NICs, 50 GB/s algbw with TCPX vs 20 GB/s without",
    url: "https://github.com/dstackai/dstack/issues/2447",
};
const EFA_NCCL: Source = Source {
    title: "AWS: Get started with EFA and NCCL",
    url: "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-start-nccl-base.html",
};
const OFI_49: Source = Source {
    title: "aws/aws-ofi-nccl#49: the plugin is how NCCL uses EFA",
    url: "https://github.com/aws/aws-ofi-nccl/issues/49",
};
const MLX5_COUNTERS: Source = Source {
    title: "Linux mlx5 hw_counters names (drivers/infiniband/hw/mlx5/counters.c)",
    url: "https://git.zx2c4.com/wireguard-linux/plain/drivers/infiniband/hw/mlx5/counters.c",
};
const MLX5_CNP: Source = Source {
    title: "IB/mlx5: congestion counters np_cnp_sent, rp_cnp_handled, np_ecn_marked_roce_packets",
    url: "https://github.com/xanmod/linux/commit/e1f24a79f424ddb03828de7c0152668c9a30146e",
};
const ROCE_MTU_BLOG: Source = Source {
    title: "RoCE active MTU is the largest IB MTU below the Ethernet MTU minus RoCE headers",
    url: "https://blog.workinghardinit.work/2019/09/05/fixing-slow-roce-rdma-performance-with-winof-2-to-winof/",
};
const KERNEL_NEIGH_SYSCTL: Source = Source {
    title: "Linux kernel: IP sysctl, neigh/default/gc_thresh1-3 (Documentation/networking/ip-sysctl.rst)",
    url: "https://docs.kernel.org/networking/ip-sysctl.html",
};
const KERNEL_IP_SYSCTL_TCP: Source = Source {
    title: "Linux kernel: IP sysctl, tcp_rmem and tcp_wmem (min, default, max; autotuning stays below max) (Documentation/networking/ip-sysctl.rst)",
    url: "https://docs.kernel.org/networking/ip-sysctl.html",
};
const ROCE_MODE: Source = Source {
    title: "NVIDIA MLNX_OFED: default RoCE mode (IB/RoCE v1 vs RoCE v2)",
    url: "https://docs.nvidia.com/networking/display/RHEL94/default-roce-mode-setting.pdf",
};
const SM_OMNIA: Source = Source {
    title:
        "dell/omnia#399: the subnet manager configures IB endpoints (ports stay INIT without one)",
    url: "https://github.com/dell/omnia/issues/399",
};
const IB_DISABLE_1591: Source = Source {
    title: "NVIDIA/nccl#1591: NCCL_IB_DISABLE=1 works but the throughput is terrible",
    url: "https://github.com/NVIDIA/nccl/issues/1591",
};
const ACS_ALIBABA: Source = Source {
    title: "Alibaba Cloud ACS: RDMA pods, NCCL_IB_DISABLE=1 required on P16EN",
    url: "https://www.alibabacloud.com/help/en/cs/user-guide/pod-hpn-type-rdma",
};
const ONEFLOW_VETH: Source = Source {
    title: "Oneflow-Inc/oneflow#9115: NET/Socket using veth interfaces when IB is absent",
    url: "https://github.com/Oneflow-Inc/oneflow/pull/9115",
};
const NCCL_634: Source = Source {
    title: "NVIDIA/nccl#634: GPU/NIC NODE and SYS distances in nvidia-smi topo -m",
    url: "https://github.com/NVIDIA/nccl/issues/634",
};

const AZNHC: Source = Source {
    title:
        "Azure/azurehpc-health-checks (AzNHC): per-SKU expected GPU count, IB devices, bandwidths",
    url: "https://github.com/Azure/azurehpc-health-checks",
};
const LBNL_NHC: Source = Source {
    title: "LBNL NHC: checks against what each node should have (check_hw_ib, check_hw_physmem...)",
    url: "https://github.com/mej/nhc",
};

const KERNEL_MLX5_KCONFIG: Source = Source {
    title: "Linux kernel documentation: mlx5 driver, CONFIG_MLX5_CORE and CONFIG_MLX5_INFINIBAND (mlx5_ib: the RDMA half of the driver)",
    url: "https://docs.kernel.org/networking/device_drivers/ethernet/mellanox/mlx5/kconfig.html",
};
const NHC_HW_IB: Source = Source {
    title: "LBNL NHC: check_hw_ib and check_hw_eth, a node fails when its fabric device is missing",
    url: "https://github.com/mej/nhc/blob/master/scripts/lbnl_hw.nhc",
};

const PCI_SYSFS_CONFIG: Source = Source {
    title: "Linux kernel: pci_read_config in drivers/pci/pci-sysfs.c (the config file gives 64 bytes without CAP_SYS_ADMIN)",
    url: "https://github.com/torvalds/linux/blob/master/drivers/pci/pci-sysfs.c",
};
const NCCL_PARAM_SRC: Source = Source {
    title: "NCCL source: NCCL_PARAM reads \"NCCL_\" env (src/include/param.h, v2.30.7-1)",
    url: "https://github.com/NVIDIA/nccl/blob/v2.30.7-1/src/include/param.h",
};
const OFI_PARAM_SRC: Source = Source {
    title: "aws-ofi-nccl source: OFI_NCCL_PARAM reads \"OFI_NCCL_\" env (src/nccl_ofi_param.cpp, v1.21.1)",
    url: "https://github.com/aws/aws-ofi-nccl/blob/v1.21.1/src/nccl_ofi_param.cpp",
};
const NIST_OUTLIERS: Source = Source {
    title: "NIST/SEMATECH e-Handbook of Statistical Methods, 1.3.5.17 Detection of Outliers: the modified Z-score 0.6745 (x - median) / MAD, an outlier above 3.5 (Iglewicz and Hoaglin)",
    url: "https://www.itl.nist.gov/div898/handbook/eda/section3/eda35h.htm",
};
const KERNEL_DCBNL: Source = Source {
    title: "Linux kernel: DCB netlink (RTM_GETDCB, DCB_CMD_IEEE_GET; EOPNOTSUPP for a driver without dcbnl_ops), net/dcb/dcbnl.c",
    url: "https://github.com/torvalds/linux/blob/master/net/dcb/dcbnl.c",
};

/// The pages of the doctor's own rules; [`rules`] lists them together with the counter and log
/// rules.
pub static RULES: &[Rule] = &[
    Rule {
        id: "FAB-RDMA-001",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "No RDMA device present",
        checks: "Whether /sys/class/infiniband holds any device. A node with two or more GPUs and none is a warning (an info on GCP A3-like VMs, where TCPX replaces RDMA); a node with fewer GPUs gets an info. The finding also says which interface NCCL's socket transport would use instead.",
        why: "Without an RDMA device NCCL carries inter-node traffic over TCP sockets, typically several times slower than InfiniBand or RoCE and with high CPU cost.",
        evidence: "/sys/class/infiniband (empty or absent), GPUs found on the PCI bus, /sys/class/net/* (for the socket interface).",
        fix: "Attach IB/RoCE NICs and load their drivers (mlx5_core, mlx5_ib, ib_uverbs), or use the cloud's fabric (EFA + aws-ofi-nccl, GPUDirect-TCPX). Otherwise set NCCL_SOCKET_IFNAME to the fastest interface.",
        sources: &[NCCL_ENV, IB_DISABLE_1591],
    },
    Rule {
        id: "FAB-RDMA-002",
        severity: Severity::Error,
        scope: Scope::Node,
        title: "RDMA devices without /dev/infiniband/uverbs*",
        checks: "RDMA devices exist in sysfs but /dev/infiniband has no uverbs* character device.",
        why: "User-space verbs (NCCL's IB transport, perftest) open /dev/infiniband/uverbsN; without it NCCL reports `NET/IB : No device found` and falls back to sockets. Typical of a container started without the RDMA devices.",
        evidence: "/dev/infiniband listing, /sys/class/infiniband.",
        fix: "`modprobe ib_uverbs` on the host; `docker run --device=/dev/infiniband --cap-add=IPC_LOCK`; in Kubernetes request the RDMA device plugin's resource.",
        sources: &[KERNEL_IB_ABI, NCCL_TROUBLESHOOTING],
    },
    Rule {
        id: "FAB-RDMA-003",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "Locked-memory limit not unlimited with RDMA present",
        checks: "`Max locked memory` in /proc/self/limits is not `unlimited` while RDMA devices exist. A number of 1 PiB or more (hosts show 18446744073708503040, 2^64 − 1 MiB) counts as unlimited.",
        why: "RDMA memory registration pins pages; with a limited memlock ibv_reg_mr fails (`Cannot allocate memory`) once NCCL's buffers exceed it. The limit read is the probing process's, which may differ from the job's.",
        evidence: "/proc/self/limits (Max locked memory).",
        fix: "`* soft memlock unlimited` / `* hard memlock unlimited` in /etc/security/limits.conf, `LimitMEMLOCK=infinity` for systemd units, `--ulimit memlock=-1:-1` for Docker; check `ulimit -l` inside the launcher (mpirun/srun).",
        sources: &[MEMLOCK_ISSUE, NCCL_TROUBLESHOOTING],
    },
    Rule {
        id: "FAB-RDMA-004",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "SR-IOV virtual function: relaxed ordering matters",
        checks: "An RDMA device's PCI function has a `physfn` link (it is an SR-IOV VF, i.e. the node is a VM or a container with a VF). Warning on GPU nodes, info otherwise.",
        why: "In VMs, GPUDirect RDMA writes from a VF into GPU memory can run far below line rate unless the memory region is registered with relaxed ordering; a ConnectX-7 VF measured 84 Gb/s from cudaMalloc memory vs ~400 Gb/s with IBV_ACCESS_RELAXED_ORDERING.",
        evidence: "/sys/bus/pci/devices/<vf>/physfn.",
        fix: "Keep NCCL_IB_PCI_RELAXED_ORDERING at its default (2, auto) or set 1; custom net plugins and verbs code must pass IBV_ACCESS_RELAXED_ORDERING to ibv_reg_mr; have ATS enabled on the NIC and ACS configured for it by the hypervisor owner.",
        sources: &[NCCL_1731, NCCL_ENV, NV_VM_ATS],
    },
    Rule {
        id: "FAB-PORT-001",
        severity: Severity::Error,
        scope: Scope::Node,
        title: "RDMA port not ACTIVE",
        checks: "ports/N/state is DOWN, INIT, ARMED (or another non-ACTIVE state). INIT on InfiniBand is explained as a missing subnet manager. INIT and ARMED are errors. DOWN is an error when no other hardware port of the node is ACTIVE, or when the port is a rail of a multi-rail GPU node (no port of its card is ACTIVE while a card of the same driver elsewhere is), unless the expectations' rdma.active_ports is met without it; otherwise a warning (the uncabled second port of a dual-port card is common).",
        why: "Only ACTIVE ports carry traffic; NCCL skips the others, losing a rail, or falls back to sockets when none is left.",
        evidence: "/sys/class/infiniband/<dev>/ports/<n>/state (`4: ACTIVE` as the kernel writes it).",
        fix: "DOWN: cable and switch port. INIT: start a subnet manager (opensm or the switch SM). ARMED: check the SM log.",
        sources: &[KERNEL_IB_ABI, SM_OMNIA],
    },
    Rule {
        id: "FAB-PORT-002",
        severity: Severity::Error,
        scope: Scope::Node,
        title: "Physical link not LinkUp",
        checks: "ports/N/phys_state is Polling, Disabled, LinkErrorRecovery, Sleep... rather than `5: LinkUp`. LinkErrorRecovery is an error; the others are errors when no other hardware port is ACTIVE or the port is a rail of a multi-rail GPU node (as FAB-PORT-001), warnings otherwise.",
        why: "Polling means no partner is seen (bad or unplugged cable, peer down); Disabled means the port was turned off; LinkErrorRecovery means the link keeps retraining.",
        evidence: "/sys/class/infiniband/<dev>/ports/<n>/phys_state.",
        fix: "Check the cable/transceiver (`mlxlink`), enable the port (`ibportstate ... enable`, `ip link set <netdev> up`), check the switch port.",
        sources: &[KERNEL_IB_ABI],
    },
    Rule {
        id: "FAB-PORT-003",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "InfiniBand port below its capable width or speed",
        checks: "An ACTIVE IB port whose width (1X/2X/4X) or lane speed (EDR/HDR/NDR...) is below that of another port of the same HCA model and board (hca_type, board_id) on the node, or that runs 1X at all. Evidence of capability is what the same hardware reached on this node; sysfs does not expose a port's supported widths.",
        why: "A port that trains at `25 Gb/sec (1X EDR)` instead of `100 Gb/sec (4X EDR)` has failed lanes (cable, transceiver, connector) and gives a quarter of the bandwidth; NCCL rings then run at its pace.",
        evidence: "/sys/class/infiniband/<dev>/ports/<n>/rate, /sys/class/infiniband/<dev>/hca_type and board_id.",
        fix: "Reseat or replace the cable/transceiver, check the switch port; `mlxlink -d <dev> -p <n>` shows lane state and errors.",
        sources: &[KERNEL_IB_ABI],
    },
    Rule {
        id: "FAB-PORT-004",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "Active ports of one node at different rates",
        checks: "ACTIVE hardware ports of the same link layer, driver family and chip (`mlx5` + `hca_type`) report different rates in Gb/s. iWARP devices, and ports of other families or chips (a 10 GbE i40iw, an Omni-Path hfi1, a 25 GbE ConnectX-4 Lx beside ConnectX-7 rails) are other networks, not slow rails.",
        why: "NCCL spreads channels over rails; collectives finish at the pace of the slowest rail.",
        evidence: "/sys/class/infiniband/*/ports/*/rate.",
        fix: "Bring the slow ports to the rate of the others, or exclude them with NCCL_IB_HCA until repaired.",
        sources: &[KERNEL_IB_ABI, NCCL_ENV],
    },
    Rule {
        id: "FAB-PORT-005",
        severity: Severity::Warning,
        scope: Scope::Cluster,
        title: "RDMA port below the rate or width of its model on the other nodes",
        checks: "Every ACTIVE hardware port (not software, not iWARP, not EFA, whose driver reports one fixed rate) against the ports of the same model (chip and board, as FAB-PORT-003 groups them) on all the job's nodes: a port whose rate in Gb/s is below the model's most common rate (the highest on a tie, so that of two nodes the slower is named) is named with its node, and with the lanes (`1X` of `4X`) or lane speed (`EDR` instead of `NDR`) that fell short. Needs the model on two nodes or more.",
        why: "A port that trained below its peers (failed lanes, a wrong cable or transceiver, a switch port forced to a lower speed) runs every collective of the job at its pace; a node whose only port degraded has no second port to compare with (FAB-PORT-003, FAB-PORT-004), but its peers are the reference. Warning: the job runs, slower. FAB-X-005 says the node's rates differ; this names the port and what fell short.",
        evidence: "/sys/class/infiniband/<dev>/ports/<n>/rate on each node, with hca_type and board_id for the model.",
        fix: "Reseat or replace the cable or transceiver of the named port and check its switch port (`mlxlink -d <dev> -p <port>` shows lanes, speed and errors); the port should train at its peers' rate.",
        sources: &[KERNEL_IB_ABI],
    },
    Rule {
        id: "FAB-PORT-006",
        severity: Severity::Info,
        scope: Scope::Node,
        title: "Software RDMA device: its rate and width cannot be judged",
        checks: "An ACTIVE port of a software RDMA device (Soft-RoCE `rxe*`, Soft-iWARP `siw*`). Info, once per port, so that rate rules and rate expectations, which skip software devices, are not read as passed.",
        why: "Soft-RoCE takes its port's speed and width from the netdev beneath it (`ib_get_eth_speed`, the ethtool speed that a veth or virtio NIC invents: a veth always says 10 Gb/s); Soft-iWARP reports a constant. Neither is a trained link, so a rate below expectations or below the peers' says nothing, and a rate at expectations proves nothing.",
        evidence: "/sys/class/infiniband/<dev>/ports/<n>/rate of the software device, and its netdev.",
        fix: "Judge the port by what it carries: `fabrik bench p2p --transport rdma` or `fabrik cluster matrix --transport rdma` against a peer, and the netdev's own link (`ethtool <netdev>`).",
        sources: &[RXE_QUERY_PORT_SRC, IB_GET_ETH_SPEED_SRC],
    },
    Rule {
        id: "FAB-DATA-001",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "A value fabrik cannot judge",
        checks: "Port states, physical states, rate texts, link layers or GID types that this version of fabrik does not know (a new kernel text, a number without a name).",
        why: "Guessing would risk calling a broken port healthy or the reverse; the value is reported as read so a person can judge it.",
        evidence: "The sysfs file holding the value.",
        fix: "Check the device with `ibstat`/`ibv_devinfo`; report the value so fabrik learns it.",
        sources: &[KERNEL_IB_ABI],
    },
    Rule {
        id: "FAB-DATA-002",
        severity: Severity::Info,
        scope: Scope::Node,
        title: "Files fabrik could not read",
        checks: "Every file probing reported missing, unreadable or malformed (the node's warnings), listed with the reason.",
        why: "A fact that could not be read is unknown, not absent: rules that need it stay silent or say they cannot tell (for example no /proc/modules means peer-memory modules are unverified), so the reader must know what was not seen.",
        evidence: "The paths and reasons probing recorded.",
        fix: "Run as root, or snapshot on the node itself; report malformed values to fabrik.",
        sources: &[KERNEL_IB_ABI],
    },
    Rule {
        id: "FAB-PCI-001",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "PCIe link below its maximum speed or width",
        checks: "current_link_width < max_link_width (warning) or current_link_speed < max_link_speed for NICs (warning) and GPUs (info: GPUs lower their PCIe speed when idle). A NIC whose reduced link still carries its line rate (the sum of its active ports' rates, or the netdev's speed; PCIe bandwidth = GT/s × lanes × 8b/10b up to Gen2, 128b/130b from Gen3) is info only: a 1 GbE management NIC wired x1 is no fault. The links between the bridges on a GPU's or NIC's path (root port to switch) are judged too: two neighbouring bridges that report the same current speed and width are the two ends of one link, which warns when it runs below what both ends can do.",
        why: "A NIC at x8 or Gen3 instead of x16 Gen4/5 cannot feed its network port; a GPU at reduced width halves GPUDirect bandwidth.",
        evidence: "/sys/bus/pci/devices/<addr>/{current,max}_link_{speed,width} of the device, and of both bridges for a path link.",
        fix: "Reseat the card, check the slot's electrical width and BIOS PCIe settings; compare LnkSta with LnkCap in `lspci -vv`.",
        sources: &[NCCL_TROUBLESHOOTING],
    },
    Rule {
        id: "FAB-PCI-002",
        severity: Severity::Error,
        scope: Scope::Node,
        title: "ACS redirect enabled on PCIe bridges between GPUs and NICs",
        checks: "ACSCtl of a bridge on a GPU's or NIC's PCIe path has ReqRedir, CmpltRedir or UpstreamFwd enabled (from `lspci -vvv` captured by `fabrik snapshot`). Error on bare metal, warning when virtualization is unknown, skipped in VMs.",
        why: "ACS redirect sends peer-to-peer PCIe traffic up to the root complex: GPUDirect RDMA and GPU-to-GPU PCIe traffic slow down sharply or hang.",
        evidence: "lspci -vvv ACSCtl line of each bridge, virtualization detection.",
        fix: "Disable ACS in the BIOS or with `setpci -s <bridge> ECAP_ACS+0x6.w=0000` at boot on bare-metal GPU nodes.",
        sources: &[NCCL_TROUBLESHOOTING, ACS_ISSUE],
    },
    Rule {
        id: "FAB-PCI-003",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "IOMMU on and not in passthrough (bare metal)",
        checks: "The IOMMU is enabled (kernel command line or populated /sys/kernel/iommu_groups) and not in passthrough mode, on a node that is not a VM and has GPUs or RDMA devices.",
        why: "IOMMU translation of every NIC/GPU DMA costs bandwidth and, together with ACS, breaks or slows GPUDirect peer-to-peer.",
        evidence: "/proc/cmdline (intel_iommu=, amd_iommu=, iommu=pt, iommu.passthrough=), /sys/kernel/iommu_groups.",
        fix: "Boot with `iommu=pt` (or disable the IOMMU where no VM passthrough is needed).",
        sources: &[NCCL_TROUBLESHOOTING],
    },
    Rule {
        id: "FAB-ROCE-001",
        severity: Severity::Error,
        scope: Scope::Node,
        title: "RoCE port without a RoCE v2 GID carrying an IP address",
        checks: "An ACTIVE Ethernet-link-layer port has no GID of type `RoCE v2` whose value is an IP address (IPv4-mapped or global IPv6). iWARP devices (node_type `4: RNIC`) are left out: RDMA over TCP needs no RoCE GID, PFC or ECN.",
        why: "RoCE v2 GIDs are created from the netdev's IP addresses; without one NCCL cannot build routable RoCE v2 connections (only link-local or RoCE v1 entries remain).",
        evidence: "/sys/class/infiniband/<dev>/ports/<n>/gids/*, gid_attrs/types/*, gid_attrs/ndevs/*.",
        fix: "Assign an IP address to the RoCE netdev; the kernel then adds RoCE v2 GIDs. Check with `show_gids`.",
        sources: &[KERNEL_IB_ABI, ROCE_MODE],
    },
    Rule {
        id: "FAB-ROCE-002",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "RoCE v2 GID index differs between ports of one node",
        checks: "The RoCE v2 IPv4 GID that NCCL selects (the first RoCE v2 IPv4-mapped entry, `ncclIbGetGidIndex`; the same policy as `fabrik env`) is at different indexes on different RoCE ports. iWARP devices (node_type `4: RNIC`) are left out: RDMA over TCP needs no RoCE GID, PFC or ECN.",
        why: "NCCL_IB_GID_INDEX is one value for all devices; before NCCL 2.21 (which selects a GID per device when the variable is unset, default -1) a fixed index cannot fit every port.",
        evidence: "/sys/class/infiniband/*/ports/*/gid_attrs/types/*.",
        fix: "Leave NCCL_IB_GID_INDEX unset with NCCL ≥ 2.21; otherwise make the GID tables alike (same IP setup on every RoCE netdev).",
        sources: &[NCCL_IB_CONNECT_SRC, JUNIPER_GID, NCCL_ENV],
    },
    Rule {
        id: "FAB-MTU-001",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "RDMA MTU too small",
        checks: "A RoCE port's netdev MTU below 4200, or an IB port's active MTU (from an ibv_devinfo capture) below 4096.",
        why: "The RoCE path MTU is the largest IB MTU (256..4096) that fits in the Ethernet MTU minus RoCE headers: at MTU 1500 it is 1024, quadrupling packets and per-packet work.",
        evidence: "/sys/class/net/<netdev>/mtu, active_mtu from `ibv_devinfo -v`.",
        fix: "MTU 9000 on RoCE netdevs and switch ports; IB MTU 4096 in the SM partition configuration.",
        sources: &[ROCE_MTU_BLOG],
    },
    Rule {
        id: "FAB-MTU-002",
        severity: Severity::Warning,
        scope: Scope::Cluster,
        title: "MTU of NCCL's socket interfaces differs across nodes",
        checks: "Per node, the MTUs of the interfaces NCCL's socket code picks without NCCL_SOCKET_IFNAME (`ncclFindInterfaces`: `ib*` first, then any but docker*, lo* and virbr*, running and addressed; the bootstrap uses the first, the socket transport all of them). Interface names differ between nodes, so the MTUs alone are compared; nodes outside the majority are named, every node on a tie.",
        why: "NCCL's bootstrap and its socket transport (and RoCE over the same netdevs) carry the job between these interfaces. A host whose MTU is above its peers' and the switch's sends frames that are dropped on the way: TCP negotiates its segment size around it, but UDP, RoCE and anything with don't-fragment set vanish without the ICMP that would tell the sender (RFC 2923's black hole); a host below its peers fragments or shrinks every transfer. Warning: TCP-based traffic still runs; `fabrik cluster matrix` probes the path MTU of every pair to show which paths drop what.",
        evidence: "/sys/class/net/<interface>/mtu of each node's socket interfaces.",
        fix: "Give the interfaces that carry the job's traffic one MTU on every node and on the switch ports between them (`ip link set <if> mtu <mtu>`, and the netplan, NetworkManager or ifupdown file that sets it at boot).",
        sources: &[NCCL_SOCKET_SRC, NCCL_OS_LINUX_SRC, PMTUD_BLACK_HOLES],
    },
    Rule {
        id: "FAB-QOS-001",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "PFC off on a RoCE interface",
        checks: "`mlnx_qos -i <netdev>` (captured by `fabrik snapshot`) shows PFC enabled on no priority. iWARP devices (node_type `4: RNIC`) are left out: RDMA over TCP needs no RoCE GID, PFC or ECN.",
        why: "RoCE's go-back-N recovery handles loss poorly; without PFC (or a fabric designed lossy with strong congestion control) drops turn into retransmissions and stalls.",
        evidence: "fabrik/cmd/mlnx_qos-<netdev>.txt.",
        fix: "`mlnx_qos -i <netdev> --pfc 0,0,0,1,0,0,0,0 --trust dscp` (priority 3 as an example) on hosts and matching switch config; NCCL_IB_TC to match.",
        sources: &[NCCL_ENV],
    },
    Rule {
        id: "FAB-QOS-002",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "RoCE ECN (DCQCN) off",
        checks: "/sys/class/net/<netdev>/ecn/roce_np/enable/<p> or roce_rp/enable/<p> is 0 on the PFC priorities (or on every priority when PFC data is absent). iWARP devices (node_type `4: RNIC`) are left out: RDMA over TCP needs no RoCE GID, PFC or ECN.",
        why: "Without ECN/DCQCN, congestion is only handled by PFC pauses or drops, which spread and stall whole fabrics.",
        evidence: "/sys/class/net/<netdev>/ecn/roce_np/enable/*, ecn/roce_rp/enable/*.",
        fix: "`echo 1` into both files for the RoCE priority and enable ECN marking on the switches.",
        sources: &[MLX5_CNP],
    },
    Rule {
        id: "FAB-GDR-001",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "GPUs and RDMA NICs without a peer-memory path",
        checks: "GPUs and hardware RDMA devices are present, neither nvidia_peermem nor nv_peer_mem is loaded, and dma-buf is not evidenced: NVIDIA's dma-buf requirements are Linux ≥ 5.12 and the open GPU kernel module (R515 or later; /proc/driver/nvidia/version says `Open Kernel Module`, `versions.nvidia_open_kernel_module` in the inventory), with CUDA ≥ 11.7 and NCCL ≥ 2.13 in user space. With both seen, the rule is silent.",
        why: "Without GPUDirect RDMA every transfer is staged through host memory: lower bandwidth, higher latency, CPU load.",
        evidence: "/proc/modules, /proc/sys/kernel/osrelease, /proc/driver/nvidia/version.",
        fix: "`modprobe nvidia_peermem` (driver R470+), or dma-buf: kernel ≥ 5.12, open GPU kernel module, NCCL ≥ 2.13.",
        sources: &[GPU_OPERATOR_RDMA, GDR_MANUAL],
    },
    Rule {
        id: "FAB-GDR-002",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "A GPU's nearest RDMA NIC is beyond PXB",
        checks: "For each GPU, the nearest hardware RDMA NIC by `nvidia-smi topo -m` distance is PHB, NODE or SYS.",
        why: "NCCL enables GPUDirect RDMA only up to NCCL_NET_GDR_LEVEL, PXB by default (ncclTopoCheckGdr: netGdrLevel = PATH_PXB); beyond it data is staged through host memory and crosses the CPU (and the inter-socket link at SYS).",
        evidence: "GPU↔NIC path classification from the PCI device paths (as nvidia-smi topo -m).",
        fix: "Place a NIC under the same PCIe switch as each GPU; pin ranks to their NIC's NUMA node; raising NCCL_NET_GDR_LEVEL forces GDR over the long path (measure first).",
        sources: &[NCCL_PATHS_SRC, NCCL_ENV, NCCL_634],
    },
    Rule {
        id: "FAB-CTR-001",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "Link error counters above zero",
        checks: "ports/N/counters: symbol_error, link_error_recovery, link_downed, port_rcv_errors, port_rcv_remote_physical_errors, port_rcv_switch_relay_errors, local_link_integrity_errors, excessive_buffer_overrun_errors. Not port_xmit_discards (drops while the link was down or congested) nor the constraint errors (partition filtering): those are no cable fault.",
        why: "They count physical-layer and link faults (bad cable, transceiver, port). Cumulative since driver load or reset: a non-zero total says it happened; growth says it is happening, which `fabrik diff` between two snapshots and `fabrik top` report as FAB-CNT-* findings.",
        evidence: "/sys/class/infiniband/<dev>/ports/<n>/counters/*.",
        fix: "Watch growth between two snapshots, check `mlxlink -c`, replace the cable/transceiver, reset counters after the fix.",
        sources: &[KERNEL_IB_ABI],
    },
    Rule {
        id: "FAB-CTR-002",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "RoCE loss and retransmission counters above zero",
        checks: "On RoCE (Ethernet link layer) ports, ports/N/hw_counters (mlx5 names): out_of_sequence, packet_seq_err, local_ack_timeout_err, implied_nak_seq_err, rnr_nak_retry_err, req_transport_retries_exceeded, duplicate_request.",
        why: "They count dropped packets recovered by go-back-N or timeouts; each costs a stall of NCCL's connection.",
        evidence: "/sys/class/infiniband/<dev>/ports/<n>/hw_counters/*.",
        fix: "Make the RoCE priority lossless (PFC) with ECN on, check switch buffer drops and the traffic class NCCL uses (NCCL_IB_TC).",
        sources: &[MLX5_COUNTERS],
    },
    Rule {
        id: "FAB-CTR-003",
        severity: Severity::Info,
        scope: Scope::Node,
        title: "Congestion notifications exchanged",
        checks: "hw_counters np_cnp_sent, np_ecn_marked_roce_packets, rp_cnp_handled, rp_cnp_ignored above zero.",
        why: "DCQCN worked and the fabric saw congestion; many CNPs during a job point at incast or an oversubscribed path.",
        evidence: "/sys/class/infiniband/<dev>/ports/<n>/hw_counters/*cnp*.",
        fix: "None if bandwidth is as expected; otherwise compare CNP rates across nodes to find the congested rail.",
        sources: &[MLX5_CNP],
    },
    Rule {
        id: "FAB-SOCK-001",
        severity: Severity::Info,
        scope: Scope::Node,
        title: "The interface NCCL's sockets would use",
        checks: "When no healthy IB/RoCE port is present and NCCL_SOCKET_IFNAME is unset: the interfaces NCCL's default selection would pick. NCCL tries `ib*` first, then any interface not starting with docker, lo or virbr (older releases: docker, lo), then docker*, lo, virbr*; only running interfaces with an IPv4 or non-loopback IPv6 address count, and the bootstrap uses the first.",
        why: "Sockets then carry all inter-node traffic, so the interface decides both reachability and bandwidth.",
        evidence: "/sys/class/net/*/operstate, interface addresses and kinds.",
        fix: "Set NCCL_SOCKET_IFNAME==<interface> to the interface on the network that reaches the other nodes.",
        sources: &[NCCL_ENV, NCCL_SOCKET_SRC, NCCL_OS_LINUX_SRC, SOCKET_286],
    },
    Rule {
        id: "FAB-SOCK-002",
        severity: Severity::Error,
        scope: Scope::Node,
        title: "NCCL's default socket interface would be wrong",
        checks: "With NCCL_SOCKET_IFNAME unset, NCCL's default selection includes a bridge without the default route, a veth/CNI/overlay or loopback interface (warning; bonds, VLANs and a pod's own eth0 are fine), or only docker*/lo/virbr* remain (error), or no running interface has an address (error).",
        why: "The bootstrap and socket transport then connect to addresses other nodes cannot reach: hangs at ncclCommInitRank or `Bootstrap : no socket interface found`.",
        evidence: "/sys/class/net/*/operstate, interface kinds and addresses.",
        fix: "Set NCCL_SOCKET_IFNAME==<physical interface> (or exclude virtual ones: ^docker,lo,virbr,veth,br).",
        sources: &[NCCL_SOCKET_SRC, SOCKET_913, HOROVOD_700, ONEFLOW_VETH],
    },
    Rule {
        id: "FAB-CLOUD-001",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "GCP A3-like node without GPUDirect-TCPX",
        checks: "8 GPUs, several gVNIC (gve) interfaces and no RDMA: warns when fewer than 4 data gVNICs exist, or when the planned environment has no NCCL_GPUDIRECTTCPX_* settings (info without an environment: the plugin and receive-datapath-manager are invisible to sysfs).",
        why: "On A3 VMs, NCCL's bandwidth between nodes comes from the GPUDirect-TCPX plugin and the receive-datapath-manager over 4 data NICs; without them two nodes reach about 20 GB/s all_reduce algbw instead of about 50 GB/s.",
        evidence: "/sys/class/net/*/device/driver (gve), GPU count, /sys/class/infiniband, env:NCCL_GPUDIRECTTCPX_*.",
        fix: "Run the tcpgpudmarxd (receive-datapath-manager) container, put the nccl-plugin-gpudirecttcpx library on LD_LIBRARY_PATH, set the NCCL_GPUDIRECTTCPX_* variables, give the VM 4 data NICs.",
        sources: &[TCPX_YAML, DSTACK_A3],
    },
    Rule {
        id: "FAB-CLOUD-002",
        severity: Severity::Error,
        scope: Scope::Env,
        title: "EFA present without the libfabric/aws-ofi-nccl settings",
        checks: "EFA devices (efa_*, driver efa) are present: info without an environment; with one, error when FI_PROVIDER names another provider, warning when no FI_PROVIDER/FI_EFA_*/NCCL_NET_PLUGIN setting points at the plugin.",
        why: "NCCL's built-in IB transport cannot drive EFA; without aws-ofi-nccl and libfabric's efa provider NCCL falls back to TCP sockets.",
        evidence: "/sys/class/infiniband (efa devices), env:FI_PROVIDER, env:FI_EFA_*, env:NCCL_NET_PLUGIN.",
        fix: "Install the EFA software and aws-ofi-nccl, FI_PROVIDER=efa (FI_EFA_USE_DEVICE_RDMA=1 on p4d/p5 with older libfabric).",
        sources: &[EFA_NCCL, OFI_49],
    },
    Rule {
        id: "FAB-ENV-001",
        severity: Severity::Error,
        scope: Scope::Env,
        title: "NCCL_IB_HCA names devices or ports that do not exist or are down",
        checks: "Each NCCL_IB_HCA entry (prefix, `=` exact, `:port`, `^` exclusion) against the node's devices and port states.",
        why: "NCCL silently ignores entries that match nothing and uses only what is left, or falls back to sockets when nothing is.",
        evidence: "env:NCCL_IB_HCA, /sys/class/infiniband/*/ports/*/state.",
        fix: "Name devices as /sys/class/infiniband does; select ACTIVE ports only.",
        sources: &[NCCL_ENV],
    },
    Rule {
        id: "FAB-ENV-002",
        severity: Severity::Error,
        scope: Scope::Env,
        title: "NCCL_SOCKET_IFNAME matches no usable interface",
        checks: "NCCL_SOCKET_IFNAME (prefix, `=` exact, `^` exclusion) against running, addressed interfaces; a match that includes a bridge or virtual device is a warning.",
        why: "With no match NCCL fails at init (`Bootstrap : no socket interface found`); names differ between nodes more often than expected.",
        evidence: "env:NCCL_SOCKET_IFNAME, /sys/class/net/*.",
        fix: "Name the physical interface exactly (`==eth0`), list several names for heterogeneous nodes, or set it per node in /etc/nccl.conf.",
        sources: &[NCCL_ENV, SOCKET_286],
    },
    Rule {
        id: "FAB-ENV-003",
        severity: Severity::Warning,
        scope: Scope::Env,
        title: "IB/RoCE disabled while healthy RDMA ports exist",
        checks: "NCCL_IB_DISABLE=1 or NCCL_NET=Socket while an ACTIVE/LinkUp IB or RoCE hardware port is present.",
        why: "NCCL then uses TCP sockets; jobs run but at a fraction of the bandwidth. Some platforms require it (Alibaba ACS P16EN documents NCCL_IB_DISABLE=1).",
        evidence: "env:NCCL_IB_DISABLE, env:NCCL_NET, port states.",
        fix: "Remove the setting unless the platform documents it.",
        sources: &[NCCL_ENV, IB_DISABLE_1591, ACS_ALIBABA],
    },
    Rule {
        id: "FAB-ENV-004",
        severity: Severity::Error,
        scope: Scope::Env,
        title: "NCCL_IB_GID_INDEX points at an empty slot or a RoCE v1 GID",
        checks: "For each ACTIVE RoCE port: the GID at NCCL_IB_GID_INDEX is missing (error), RoCE v1 (error) or a link-local RoCE v2 GID (warning).",
        why: "An empty slot fails connection setup; RoCE v1 is not routable and mismatches RoCE v2 peers; link-local GIDs only reach one L2 segment.",
        evidence: "env:NCCL_IB_GID_INDEX, /sys/class/infiniband/<dev>/ports/<n>/gid_attrs/types/<index>.",
        fix: "Use the index of the RoCE v2 GID with the port's IPv4 address (fabrik prints it), or leave it unset with NCCL ≥ 2.21.",
        sources: &[NCCL_ENV, NCCL_IB_CONNECT_SRC, JUNIPER_GID, KERNEL_IB_ABI],
    },
    Rule {
        id: "FAB-ENV-005",
        severity: Severity::Warning,
        scope: Scope::Env,
        title: "NCCL_NET_GDR_LEVEL below the GPU↔NIC distance",
        checks: "For each GPU, the distance to its nearest NIC is greater than NCCL_NET_GDR_LEVEL (LOC, PIX, PXB, PHB, SYS or legacy integers 0-4).",
        why: "NCCL then disables GPUDirect RDMA for that GPU and stages through host memory.",
        evidence: "env:NCCL_NET_GDR_LEVEL, GPU↔NIC path classification.",
        fix: "Unset it (default PXB) or raise it to the actual distance.",
        sources: &[NCCL_ENV, NCCL_PATHS_SRC],
    },
    Rule {
        id: "FAB-ENV-006",
        severity: Severity::Warning,
        scope: Scope::Env,
        title: "NCCL_P2P_DISABLE or NCCL_SHM_DISABLE set",
        checks: "NCCL_P2P_DISABLE or NCCL_SHM_DISABLE set to a non-zero integer.",
        why: "They turn off NVLink/PCIe peer-to-peer or shared-memory transports; NVIDIA lists them as debugging variables, not for production.",
        evidence: "env:NCCL_P2P_DISABLE, env:NCCL_SHM_DISABLE.",
        fix: "Remove them after fixing the cause they worked around (ACS, IOMMU, container /dev/shm size).",
        sources: &[NCCL_ENV, ACS_ISSUE],
    },
    Rule {
        id: "FAB-EXP-001",
        severity: Severity::Error,
        scope: Scope::Node,
        title: "GPU count or model differs from the expectations",
        checks: "`[gpus] count` (exact) and `model` (a text every GPU's model name holds) of the cluster file given with `--expect`/`--expect-gpus`.",
        why: "A GPU that fell off the bus (Xid 79) leaves a node that looks healthy to every rule judging what is present; jobs sized for 8 GPUs then fail or run unbalanced.",
        evidence: "GPUs on the PCI bus (vendor 0x10de) and their model names.",
        fix: "Check `nvidia-smi` and `dmesg` for Xid errors; reseat or replace the GPU; drain the node until it is whole.",
        sources: &[AZNHC, LBNL_NHC],
    },
    Rule {
        id: "FAB-EXP-002",
        severity: Severity::Error,
        scope: Scope::Node,
        title: "Fewer RDMA devices or ACTIVE ports than expected",
        checks: "`[rdma] devices` (at least this many hardware RDMA devices) and `active_ports` (at least this many ACTIVE ports, of `link_layer` when given).",
        why: "A lost rail (HCA without driver, dead port) halves or worse the node's share of every collective; NCCL silently uses what is left.",
        evidence: "/sys/class/infiniband, ports/*/state.",
        fix: "Load the driver, check `ibstat`, the cable and the switch port; keep multi-node jobs off the node until repaired.",
        sources: &[AZNHC, KERNEL_IB_ABI],
    },
    Rule {
        id: "FAB-EXP-003",
        severity: Severity::Error,
        scope: Scope::Node,
        title: "Port rate or link layer differs from the expectations",
        checks: "Every ACTIVE port of the expected `link_layer` runs at `rate_gbps` (error below, warning above); with no port of that layer, each active port of another layer is named.",
        why: "A port trained at a lower rate has failed lanes or a wrong cable; a wrong link layer means the NIC is configured for another fabric.",
        evidence: "/sys/class/infiniband/<dev>/ports/<n>/rate and link_layer.",
        fix: "`mlxlink` for lanes and errors, reseat/replace the cable; `mlxconfig LINK_TYPE_P1` for the link type.",
        sources: &[KERNEL_IB_ABI],
    },
    Rule {
        id: "FAB-EXP-004",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "MTU differs from the expectations",
        checks: "`[rdma] ib_mtu` (IB active MTU from ibv_devinfo) and `netdev_mtu` (RoCE netdev MTU).",
        why: "The path MTU is the smaller side's: one node with a small MTU slows or breaks traffic with every peer.",
        evidence: "active_mtu from `ibv_devinfo -v`, /sys/class/net/<netdev>/mtu.",
        fix: "Set the MTU the cluster uses on the node (and its switch ports).",
        sources: &[ROCE_MTU_BLOG],
    },
    Rule {
        id: "FAB-EXP-005",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "RoCE GID index, PFC, trust or ECN differs from the expectations",
        checks: "`[roce] gid_index` (index of the RoCE v2 IPv4 GID), `pfc_priorities` (exact set), `trust` (dscp/pcp) and `ecn` on every ACTIVE RoCE port.",
        why: "NCCL_IB_GID_INDEX, NCCL_IB_TC and the switch configuration assume every node alike; one node with another PFC priority or trust state drops or pauses the wrong traffic.",
        evidence: "gid_attrs/types/*, `mlnx_qos` captures, /sys/class/net/<netdev>/ecn/roce_{np,rp}/enable/*.",
        fix: "`mlnx_qos -i <netdev> --pfc ... --trust ...`, the ECN enable files, the same IP setup on every node.",
        sources: &[NCCL_ENV, ROCE_MODE],
    },
    Rule {
        id: "FAB-EXP-006",
        severity: Severity::Error,
        scope: Scope::Node,
        title: "Peer-memory module or memlock differs from the expectations",
        checks: "`[host] peer_memory` (the module must be loaded: error) and `memlock` (`unlimited` or a least number of bytes: warning).",
        why: "Without the peer-memory module NCCL cannot use GPUDirect RDMA; a small memlock makes memory registration fail.",
        evidence: "/proc/modules, /proc/self/limits.",
        fix: "`modprobe nvidia_peermem` at boot; memlock unlimited in limits.conf and the launcher.",
        sources: &[GDR_MANUAL, MEMLOCK_ISSUE],
    },
    Rule {
        id: "FAB-EXP-007",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "Driver, OFED, rdma-core, NCCL or firmware version differs from the expectations",
        checks: "`[versions]` and `[rdma] firmware`, each a version prefix matched at a component boundary (`535` matches `535.161.08`, `535.16` does not).",
        why: "A node left on another release behaves differently from its peers; cross-node comparison only sees it when the peers are checked together.",
        evidence: "/proc/driver/nvidia/version, `ofed_info -s`, /sys/class/infiniband/<dev>/fw_ver.",
        fix: "Install the cluster's release, or update the expectations when the whole cluster moved.",
        sources: &[KERNEL_IB_ABI, NCCL_TROUBLESHOOTING],
    },
    Rule {
        id: "FAB-EXP-008",
        severity: Severity::Warning,
        scope: Scope::Env,
        title: "An NCCL setting differs from the expectations",
        checks: "Each `[nccl]` KEY = VALUE against the planned environment (`--env-file`, `--env`).",
        why: "Platform settings (NCCL_IB_HCA, NCCL_IB_GID_INDEX, NCCL_NET_PLUGIN, FI_PROVIDER...) forgotten in one job script make that job slow or fall back to sockets.",
        evidence: "env:KEY of the planned environment.",
        fix: "Set the value in the job's environment or /etc/nccl.conf.",
        sources: &[NCCL_ENV],
    },
    Rule {
        id: "FAB-EXP-009",
        severity: Severity::Info,
        scope: Scope::Node,
        title: "An expectation the node's data cannot confirm",
        checks: "An expected fact fabrik could not read on this root (no `ibv_devinfo` capture for the IB MTU, no /proc/modules, no environment for `[nccl]`...).",
        why: "Unknown is not a difference: the node is not judged on it, and the reader learns what was not verified.",
        evidence: "The path the fact would come from.",
        fix: "Snapshot the node as root with `fabrik snapshot`, pass the environment, or drop the expectation.",
        sources: &[KERNEL_IB_ABI],
    },
    Rule {
        id: "FAB-EXP-010",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "A waiver expired",
        checks: "A `[[waive]]` table whose `expires` date is past (UTC).",
        why: "A waiver is a promise to fix something by a date; once past, its findings count again and the report says why they came back.",
        evidence: "The waiver's expiry date and reason.",
        fix: "Fix what the waiver covered, or renew it with a new date and reason.",
        sources: &[LBNL_NHC],
    },
    Rule {
        id: "FAB-EXP-011",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "A NIC firmware setting differs from the expectations",
        checks: "Each `[nic.firmware]` NAME = VALUE against every NIC's `mstconfig q` (the value in force: `Current` where shown, else `Next Boot`); the value matches as printed (`force_relax(1)`) or by its word or number alone.",
        why: "Firmware settings (relaxed ordering, ATS, link type, SR-IOV, congestion control) persist across reinstalls and are set by hand one node at a time; the node that missed one runs slower or differently from the rest.",
        evidence: "`mstconfig -d DEV q`: the setting's line.",
        fix: "`mstconfig -d DEV set NAME=VALUE` and reboot or `mstfwreset`.",
        sources: &[MSTFLINT_MLXCONFIG_DB],
    },
    Rule {
        id: "FAB-EXP-012",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "A PCIe link on a NIC's or GPU's path is slower or narrower than expected",
        checks: "Each NIC's and GPU's current PCIe link speed and width against `[pcie]` (`nic_speed_gts`, `nic_width`, `gpu_speed_gts`, `gpu_width`: at least), and each bridge above it whose link trained below the expected value while its maximum reaches it.",
        why: "A device that trained at x8 or at a lower generation, or a switch link above it that did, caps every transfer through it; the link state of the port above does not show it.",
        evidence: "/sys/bus/pci/devices/<addr>/current_link_speed, current_link_width, max_link_width.",
        fix: "Reseat the device, riser or switch board, and check the slot's BIOS PCIe settings.",
        sources: &[PCIUTILS_LS_CAPS, NCCL_TROUBLESHOOTING],
    },
    Rule {
        id: "FAB-EXP-013",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "A port's FEC or bit error ratio differs from the expectations",
        checks: "Each port's `mstlink` FEC against `[nic] fec` (a text the mode holds), its `Effective Physical BER` against `max_effective_ber` (error when above) and its `Raw Physical BER` against `max_raw_ber` (warning when above). `fabrik expect --from-root` writes Oracle's OCI health-check limits (1E-12 effective, 1E-5 raw).",
        why: "A port that negotiated another FEC corrects fewer errors than its peers; a BER above the cluster's bound loses packets, which RDMA retransmits while the collective waits.",
        evidence: "`mstlink -d DEV -c`: `FEC`, `Effective Physical BER`, `Raw Physical BER`.",
        fix: "Set the FEC alike on both ends; clean or replace the optic or cable, clear the counters and read them again.",
        sources: &[ORACLE_OCI_DR_HPC, MSTFLINT_MLXLINK],
    },
    Rule {
        id: "FAB-EXP-014",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "Kernel log events the expectations say must be absent",
        checks: "The kernel log's events of each class `[kernel_log] absent` names: `xid`, `mlx5_health`, `link_down` (after the 30-minute boot grace), `aer_correctable`, `aer_uncorrectable`, `pin_failure`.",
        why: "A known-good node logs none of them; one that does is not like it, whether or not the single-node rules judge the events serious on their own.",
        evidence: "The kernel log lines.",
        fix: "Follow the FAB-KLOG finding of the same events.",
        sources: &[NVIDIA_XID, LINUX_MLX5_HEALTH, LINUX_AER_HOWTO],
    },
    Rule {
        id: "FAB-X-001",
        severity: Severity::Warning,
        scope: Scope::Cluster,
        title: "Kernel versions differ across nodes",
        checks: "The kernel release per node, from /proc/sys/kernel/osrelease or, where a snapshot or container holds only that, the banner of /proc/version; nodes outside the majority are named.",
        why: "RDMA, peer-memory and GPU drivers are built per kernel; a drifted node behaves differently and is a common cause of one-node-slow jobs. Warning: the job runs; what differs is speed or a bug that may or may not bite.",
        evidence: "Each node's kernel release.",
        fix: "Reimage or update the odd node to the cluster's kernel.",
        sources: &[NCCL_TROUBLESHOOTING],
    },
    Rule {
        id: "FAB-X-002",
        severity: Severity::Warning,
        scope: Scope::Cluster,
        title: "NVIDIA driver versions differ across nodes",
        checks: "NVIDIA driver version per node.",
        why: "Different drivers change CUDA, NCCL and peer-memory behaviour between ranks of one job. Warning: each rank runs against its own driver and the job starts; an image whose CUDA needs a newer driver fails on its own node, which the node's own checks report.",
        evidence: "/proc/driver/nvidia/version per node.",
        fix: "Install the same driver everywhere.",
        sources: &[GPU_OPERATOR_RDMA],
    },
    Rule {
        id: "FAB-X-003",
        severity: Severity::Warning,
        scope: Scope::Cluster,
        title: "OFED / rdma-core versions differ across nodes",
        checks: "`ofed_info -s` and the rdma-core version per node.",
        why: "Mixed RDMA stacks differ in verbs features and bugs; field reports list OFED drift among the first causes of multi-node slowdowns. Warning: the verbs wire protocol is the same, so ranks connect and the job runs.",
        evidence: "fabrik/cmd/ofed_info.txt, rdma-core version per node.",
        fix: "Install one OFED/DOCA-OFED or rdma-core release on every node.",
        sources: &[NCCL_TROUBLESHOOTING],
    },
    Rule {
        id: "FAB-X-004",
        severity: Severity::Warning,
        scope: Scope::Cluster,
        title: "HCA firmware differs across nodes",
        checks: "fw_ver of HCAs of the same model (hca_type) per node.",
        why: "Firmware changes link training, congestion control and performance; mixed firmware is a classic source of one slow node. Warning: the job runs, possibly slower.",
        evidence: "/sys/class/infiniband/*/fw_ver, hca_type.",
        fix: "Flash the same firmware on every HCA of a model (mlxfwmanager).",
        sources: &[KERNEL_IB_ABI],
    },
    Rule {
        id: "FAB-X-005",
        severity: Severity::Warning,
        scope: Scope::Cluster,
        title: "Link rates differ across nodes",
        checks: "The multiset of ACTIVE port rates per node (e.g. 8x `400 Gb/sec (4X NDR)`).",
        why: "A fabric that mixes generations (FDR and HDR) or a node with a degraded port runs collectives at the slowest node's pace. Warning: the job runs, at the slowest link's speed.",
        evidence: "/sys/class/infiniband/*/ports/*/rate per node.",
        fix: "Repair or replace the odd node's links; keep generations separate.",
        sources: &[KERNEL_IB_ABI],
    },
    Rule {
        id: "FAB-X-006",
        severity: Severity::Error,
        scope: Scope::Cluster,
        title: "A node has fewer GPUs or active RDMA ports than its peers",
        checks: "Per node: GPU count and ACTIVE hardware RDMA port count, against the job's count (the most common one; the largest on a tie). Only nodes below it are named; a node with a spare GPU or port is not.",
        why: "Error: launchers start one count of processes on every node (torchrun --nproc-per-node 8, srun --ntasks-per-node 8, a Job's GPU request), so a node with 7 GPUs fails the job at start (invalid device ordinal) or never schedules. A missing rail leaves the peers' connections to that rail to cross to another rail, which on rail-isolated fabrics is unroutable and NCCL hangs at connect; at best the node carries its share on fewer links and the job runs at its pace.",
        evidence: "GPU list and /sys/class/infiniband/*/ports/*/state per node, with every node's counts.",
        fix: "Drain the node and repair what it is missing (a GPU fallen off the bus: `nvidia-smi -q`, dmesg Xid 79; an HCA without driver or a port down: `ibstat`, the cable and the switch port) before scheduling multi-node jobs on it.",
        sources: &[TORCHRUN_DOC, NCCL_TROUBLESHOOTING],
    },
    Rule {
        id: "FAB-X-007",
        severity: Severity::Warning,
        scope: Scope::Cluster,
        title: "RDMA MTU differs across nodes",
        checks: "RoCE netdev MTUs and IB active MTUs per node.",
        why: "The path MTU is negotiated down to the smaller side; mismatched MTUs also cause drops of oversized frames on switches. Warning: NCCL's queue pairs use the smaller MTU of the two ends and the job runs, slower.",
        evidence: "/sys/class/net/<roce netdev>/mtu, active_mtu per node.",
        fix: "Use one MTU on every node and switch.",
        sources: &[ROCE_MTU_BLOG],
    },
    Rule {
        id: "FAB-X-008",
        severity: Severity::Warning,
        scope: Scope::Cluster,
        title: "RoCE v2 GID indexes differ across nodes",
        checks: "The RoCE v2 IPv4 GID indexes per node.",
        why: "One NCCL_IB_GID_INDEX is set for the whole job; if the index differs between nodes some connect with the wrong GID type or fail (before NCCL 2.21's automatic selection). Warning: unset, NCCL 2.21+ selects per node and each end sends its own GID, so the job runs; a fixed index is judged per node by FAB-ENV-004.",
        evidence: "/sys/class/infiniband/*/ports/*/gid_attrs/types/* per node.",
        fix: "Make addressing alike on all nodes or leave NCCL_IB_GID_INDEX unset with NCCL ≥ 2.21.",
        sources: &[JUNIPER_GID, NCCL_ENV],
    },
    Rule {
        id: "FAB-X-009",
        severity: Severity::Error,
        scope: Scope::Cluster,
        title: "RoCE interfaces in different IP subnets",
        checks: "The set of IPv4 subnets of each node's RoCE netdevs. Error when the odd node's rails cannot reach a peer on the evidence: a network on one side has no on-link counterpart (equal, containing or contained) on the other, no default route leaves through the RoCE netdevs, and the addressing is not point-to-point (/31, /32). Otherwise warning.",
        why: "Rails are usually one subnet each. Error: with no route between the subnets, NCCL's RoCE v2 connection to that rail never completes and the job hangs at its first inter-node collective. Warning: with a route (a default route through the rail, or /31 point-to-point addressing, an L3 fabric where every node's subnets differ by design) the job runs; only /proc/net/route's main table is read, so routes in policy-routing tables are not seen.",
        evidence: "Addresses of the RoCE netdevs per node; /proc/net/route of the odd node.",
        fix: "Put each rail's interfaces in one subnet on every node, or route between the subnets and check with `ip route get <peer address>` from each rail.",
        sources: &[ROCE_MODE],
    },
    Rule {
        id: "FAB-X-010",
        severity: Severity::Error,
        scope: Scope::Cluster,
        title: "InfiniBand and RoCE (or EFA) nodes in one job",
        checks: "The link layers of each node's ACTIVE hardware RDMA ports (InfiniBand, RoCE, EFA); nodes outside the majority are named.",
        why: "Error: NCCL's IB transport refuses a peer whose link layer differs from its own (\"Remote RoCE device is incompatible with the local ... InfiniBand\") and the connection fails; an InfiniBand HCA and a RoCE NIC cannot reach each other over RDMA at all, so the job fails at its first inter-node connection.",
        evidence: "/sys/class/infiniband/*/ports/*/link_layer per node.",
        fix: "Run a job on nodes of one fabric (split the allocation by partition or node label).",
        sources: &[NCCL_IB_LINK_LAYER_SRC, KERNEL_IB_ABI],
    },
    Rule {
        id: "FAB-X-011",
        severity: Severity::Warning,
        scope: Scope::Cluster,
        title: "Neighbour (ARP) table smaller than the job's on-link peers",
        checks: "For each node, the number of the other nodes' IPv4 addresses on subnets the node is on (one ARP entry each), against the node's /proc/sys/net/ipv4/neigh/default/gc_thresh3. Peers reached through a gateway (another subnet, /31 and /32 fabrics) take no entry and are not counted.",
        why: "gc_thresh3 is the neighbour table's hard limit (kernel default 1024): past it the kernel creates no new entry, logs `neighbour: arp_cache: neighbor table overflow!`, and packets to a peer it has not resolved are dropped, so connections to some peers time out while others work. Jobs whose traffic reaches every peer hit it first: the pair matrix, alltoall (mixture-of-experts), a bootstrap all-gather on a flat subnet of hundreds of nodes with several addresses each. Warning: a job that talks to few peers (rings, trees) runs.",
        evidence: "gc_thresh3 of the node; the count of peer addresses on its subnets.",
        fix: "Raise gc_thresh1/2/3 on every node above the on-link peer count (the table holds other neighbours too), e.g. with a file in /etc/sysctl.d/.",
        sources: &[KERNEL_NEIGH_SYSCTL],
    },
    Rule {
        id: "FAB-X-012",
        severity: Severity::Warning,
        scope: Scope::Cluster,
        title: "NIC firmware settings differ across nodes",
        checks: "For each NIC model (`Device type:` of `mstconfig q`/`mlxconfig q`, else the board part) on two nodes or more, each firmware setting's value in force (`Current` where shown, else `Next Boot`) per node, against the value most nodes hold: one finding per node naming every setting outside the majority, with the majority's value. With no strict majority (a 1-1 split) every node is named. A node whose capture lacks a setting (a query cut by `grep`) is not compared on it.",
        why: "The firmware decides how the NIC behaves on PCIe and the wire: PCI_WR_ORDERING (relaxed ordering of its writes, the difference between ~84 and ~400 Gb/s into GPU memory on some platforms and in VMs), ATS_ENABLED, ADVANCED_PCI_SETTINGS and MAX_ACC_OUT_READ (outstanding PCIe reads), RoCE congestion control, SR-IOV and LINK_TYPE. A node whose NICs are set apart from its peers' runs its share of every collective at another speed, or not at all (LINK_TYPE), and the job runs at its pace.",
        evidence: "`mstconfig -d <pci> q` (captured by `fabrik snapshot` as fabrik/cmd/mstconfig-<pci>.txt) on each node.",
        fix: "Apply one configuration to every NIC of the model (`mstconfig -d <pci> set NAME=VALUE`, or `mlxconfig`), then reset the firmware (`mstfwreset`) or reboot.",
        sources: &[MSTFLINT_MLXCONFIG_DB, NCCL_1731],
    },
    Rule {
        id: "FAB-X-013",
        severity: Severity::Warning,
        scope: Scope::Cluster,
        title: "A NIC port's raw BER is an outlier among its peers",
        checks: "The `Raw Physical BER` (pre-FEC) of every port `mstlink -c`/`mlxlink -c` reported, on log10, among the ports of the same speed (`IB-NDR`, `100G`: PAM4 and NRZ links differ by decades by design) on all nodes, with four ports or more from two nodes or more: a port whose modified z-score 0.6745 (x - median) / MAD is above 3.5 (MAD at least 0.05 decades, so that identical peers do not make any difference an outlier) and whose BER is at least ten times the median is named with its node. BERs at or below 1E-15, the floor of what a counter window measures, are never named.",
        why: "FEC corrects a rising raw BER until it no longer can: a port far worse than its peers, though still inside the single-node limits (FAB-LINK-002), is a dirty or failing optic, cable or connector, and Meta's GCM finds that one degraded port costs 5-30 % of NCCL bandwidth. A robust median and MAD keep one bad port from hiding itself by moving the mean.",
        evidence: "`mstlink -d <pci> -c` (fabrik/cmd/mstlink-<pci>.txt) `Raw Physical BER` of each port, and the median of its peers.",
        fix: "Clean or reseat the optic and cable (or swap them with a healthy port's to see whether the errors follow), clear the counters (`mlxlink -d <dev> --pc`) and read them again.",
        sources: &[NIST_OUTLIERS, META_GCM, MSTFLINT_MLXLINK, DELL_PAM4_BER],
    },
    Rule {
        id: "FAB-X-014",
        severity: Severity::Warning,
        scope: Scope::Cluster,
        title: "TCP buffer limits differ across nodes",
        checks: "The largest receive and send buffer a TCP socket may grow to (the third value of /proc/sys/net/ipv4/tcp_rmem and tcp_wmem, read in the network namespace the check runs in) on each node, against the value most nodes have: the node that differs is named.",
        why: "The kernel autotunes every TCP connection's buffers up to these limits; a node whose limits were lowered (a tuning script, a container's namespace, a copied sysctl.d file) caps the window of every connection NCCL's bootstrap and socket transport open to it. Over a long or busy path that caps the bandwidth of all its peers' connections to it at window / round-trip time, and the job runs at the pace of that node, with no error anywhere.",
        evidence: "/proc/sys/net/ipv4/tcp_rmem and tcp_wmem of every node.",
        fix: "Give every node the same TCP buffer limits, at least the kernel's defaults (tcp_rmem max 6 MiB, tcp_wmem max 4 MiB), kept in /etc/sysctl.d/; a container or pod sets them in its own network namespace.",
        sources: &[KERNEL_IP_SYSCTL_TCP, NCCL_SOCKET_SRC],
    },
    Rule {
        id: "FAB-RDMA-005",
        severity: Severity::Error,
        scope: Scope::Node,
        title: "RDMA hardware on the PCI bus without a working RDMA stack",
        checks: "A network-class PCI function made for RDMA (vendor 0x15b3, every ConnectX and BlueField; AWS EFA 0x1d0f:0xefa*) that no device under /sys/class/infiniband points at: no driver bound to it, or a driver (mlx5_core) that gave it a netdev but no RDMA device (mlx5_ib not loaded). Functions bound to vfio-pci (passed to a VM), unbound SR-IOV virtual functions, and the second function of a bonded card (one mlx5_bond_N device serves both) are left out. Error on a node with GPUs, warning otherwise. Intel and Broadcom NICs are not judged: they are plain Ethernet on GPU nodes often enough.",
        why: "Without the RDMA device NCCL does not see the NIC: it stripes over the rails left or falls back to TCP sockets, and every other rule that judges ports, GIDs and PFC sees nothing to judge, so the node looked healthy.",
        evidence: "/sys/bus/pci/devices/<addr>/{vendor,device,class,driver}, /sys/class/infiniband/*/device, /proc/modules.",
        fix: "`modprobe mlx5_core mlx5_ib ib_uverbs` (or `efa`) and load them at boot; when the driver is loaded, `dmesg` says why it refused the card (firmware, PCIe errors).",
        sources: &[KERNEL_MLX5_KCONFIG, NHC_HW_IB, NCCL_TROUBLESHOOTING],
    },
    Rule {
        id: "FAB-CHK-001",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "A fact the check could not read",
        checks: "Facts a rule needs that the root did not give, with the reason probing recorded: ACS of the PCIe bridges on GPU and NIC paths (read from config space, which beyond its 64-byte header only root reads, else an lspci -vvv capture), PFC and trust of hardware RoCE netdevs (DCB over netlink, else an mlnx_qos capture; a driver without DCB says so), the InfiniBand active MTU (ibv_devinfo -v). One finding per fact, naming every subject. Warning for ACS on a GPU node that is not a VM and for PFC; info for ACS elsewhere and the IB MTU; nothing for ACS in a VM, where FAB-PCI-002 does not judge.",
        why: "A rule that cannot see its fact stays silent, and a silent health check reads as a healthy node: on a live node without root, or with a tool missing or past the budget, ACS redirect or PFC off would pass unseen.",
        evidence: "Each subject (bridge, netdev, port) with the reason: the bytes of config space read, the netlink answer (EOPNOTSUPP, a timeout), the tool's outcome.",
        fix: "Run the check as root on the node, with rdma-core's tools installed and a --budget they fit in; in a container, mount the host's root and run on the host network. Waive the finding with a reason where the fact cannot be had.",
        sources: &[PCI_SYSFS_CONFIG, KERNEL_DCBNL, NCCL_TROUBLESHOOTING],
    },
    Rule {
        id: "FAB-ENV-008",
        severity: Severity::Warning,
        scope: Scope::Env,
        title: "NCCL_IB_HCA leaves out rails the node has",
        checks: "The ACTIVE ports of the hardware RDMA devices of the driver family NCCL_IB_HCA selects (EFA, iWARP and software devices left out), against those its entries select (prefixes, `=` exact names, `:N` ports, `^` exclusion, as NCCL reads them): a warning naming each rail left out.",
        why: "NCCL stripes inter-node traffic over the NICs NCCL_IB_HCA allows; a value that names 2 of 8 rails gives the job a quarter of the node's bandwidth, and nothing fails to tell.",
        evidence: "NCCL_IB_HCA, /sys/class/infiniband/*/ports/*/state.",
        fix: "Name every rail (`NCCL_IB_HCA=mlx5` selects them all) or leave it unset; exclude only NICs that are not rails (`^mlx5_8`).",
        sources: &[NCCL_ENV],
    },
    Rule {
        id: "FAB-PCIE-001",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "Relaxed ordering disabled on an RDMA NIC's PCIe function",
        checks: "The PCIe Device Control register of an RDMA NIC's function has Enable Relaxed Ordering clear (`RlxdOrd-` on the `DevCtl:` lines of `lspci -vvv`).",
        why: "A memory region registered with IBV_ACCESS_RELAXED_ORDERING (NCCL does it by default where the device supports it, NCCL_IB_PCI_RELAXED_ORDERING) only gets relaxed writes if the function may issue them. Without relaxed ordering, writes into GPU memory over some root complexes and in VMs run far below line rate: one ConnectX-7 VF measured 84 Gb/s from cudaMalloc memory against ~400 Gb/s with relaxed ordering. The kernel itself clears the bit below root ports with relaxed-ordering errata, so the finding asks to check why before changing it.",
        evidence: "`lspci -vvv -s <addr>`: `DevCtl:` ... `RlxdOrd-`.",
        fix: "Check `dmesg` for the kernel's relaxed-ordering quirk on the root port; otherwise set bit 4 of Device Control (`setpci -s <addr> CAP_EXP+08.w=0010:0010`, not persistent) or the BIOS/hypervisor setting that clears it.",
        sources: &[PCIUTILS_LS_CAPS, LINUX_PCI_QUIRKS, NCCL_ENV, NCCL_1731],
    },
    Rule {
        id: "FAB-PCIE-002",
        severity: Severity::Error,
        scope: Scope::Node,
        title: "PCIe uncorrectable errors logged (AER)",
        checks: "A GPU's or NIC's Advanced Error Reporting shows uncorrectable errors: status bits set in `UESta` (`lspci -vvv`), or the kernel's `aer_dev_fatal`/`aer_dev_nonfatal` counts above zero. Error when the severity register (`UESvrt`) makes one fatal or a fatal count is above zero; warning for non-fatal ones; a lone Unsupported Request, which configuration probing sets, is noted as info.",
        why: "An uncorrectable error means a transaction was lost or corrupted on the link: the driver may reset the device, NCCL over it hangs or fails (NCCL's own troubleshooting lists PCIe errors among the causes of hangs).",
        evidence: "`lspci -vvv -s <addr>`: `UESta:`/`UESvrt:`; /sys/bus/pci/devices/<addr>/aer_dev_fatal and aer_dev_nonfatal.",
        fix: "Find the events in the kernel log (`dmesg | grep -i aer`), reseat the card or riser, check the slot, update firmware and BIOS; clear the status once fixed.",
        sources: &[PCIUTILS_LS_ECAPS, LINUX_AER_HOWTO, NCCL_TROUBLESHOOTING],
    },
    Rule {
        id: "FAB-PCIE-003",
        severity: Severity::Info,
        scope: Scope::Node,
        title: "PCIe correctable errors logged (AER)",
        checks: "A GPU's, NIC's or path bridge's `CESta` shows correctable errors (`RxErr`, `BadTLP`, `BadDLLP`, `Rollover`, `Timeout`...; `AdvNonFatalErr`, an advisory for an uncorrectable error, is left out), or the kernel's `aer_dev_correctable` counts one of them above zero (`NonFatalErr`, the same advisory, left out).",
        why: "Correctable errors are recovered by replay, at a cost in bandwidth; a link that keeps producing them is marginal (signal integrity, a riser or slot) and tends to get worse. A status bit says it happened since the last clear, not how often.",
        evidence: "`lspci -vvv -s <addr>`: `CESta:`; /sys/bus/pci/devices/<addr>/aer_dev_correctable.",
        fix: "Watch /sys/bus/pci/devices/<addr>/aer_dev_correctable over time; errors that keep rising point at the slot, riser or card.",
        sources: &[PCIUTILS_LS_ECAPS, LINUX_AER_HOWTO],
    },
    Rule {
        id: "FAB-LINK-001",
        severity: Severity::Error,
        scope: Scope::Node,
        title: "Errors left after FEC on a link",
        checks: "A port's `Effective Physical Errors` (mstlink/mlxlink) is above 0, or its `Effective Physical BER` is at or above 1E-12: the limits of Oracle's OCI GPU health checks.",
        why: "Effective errors are the ones forward error correction could not repair: the packet is lost and RDMA retransmits it (go-back-N on RoCE), which stalls the collective that waits for it. A healthy link shows none.",
        evidence: "`mstlink -d DEV -c`: `Effective Physical Errors`, `Effective Physical BER`.",
        fix: "Clean or replace the optic or cable and check the switch side; clear the counters (`mlxlink -d DEV -pc`) and watch whether they return.",
        sources: &[ORACLE_OCI_DR_HPC, MSTFLINT_MLXLINK],
    },
    Rule {
        id: "FAB-LINK-002",
        severity: Severity::Error,
        scope: Scope::Node,
        title: "High raw (pre-FEC) error rate on a link",
        checks: "A port's `Raw Physical BER` is at or above 1E-5 (error), or, where no raw BER is printed, one lane counts more than 10,000 `Raw Physical Errors Per Lane` (warning): Oracle's OCI GPU health-check limits. Lane counts are cumulative since the last clear, so where the BER is known it decides: a PAM4 link at a raw BER of 1E-8 counts millions of corrected errors over weeks and is healthy (IEEE asks PAM4 links for a pre-FEC BER of 2.4E-4 or better).",
        why: "FEC hides raw errors until it cannot: a link this noisy is marginal (a dirty or failing optic, a bent cable), loses packets under load and gets worse; Meta measured that one degraded port costs 5-30 % of NCCL bandwidth.",
        evidence: "`mstlink -d DEV -c`: `Raw Physical BER`, `Raw Physical Errors Per Lane`, `Time Since Last Clear [Min]`.",
        fix: "Clean the connectors and reseat or replace the module; compare with the node's other ports.",
        sources: &[ORACLE_OCI_DR_HPC, MSTFLINT_MLXLINK, META_GCM, DELL_PAM4_BER],
    },
    Rule {
        id: "FAB-LINK-003",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "mlxlink recommends action on a link",
        checks: "mlxlink's `Troubleshooting Info` gives a `Recommendation` other than `No issue was observed.`; `Bad signal integrity` with a raw BER below 1E-7 is info, as Oracle's health check tolerates it.",
        why: "mlxlink reads the port's own diagnosis (PDDR): the recommendation names what the firmware saw (signal integrity, a cable it does not support, the far end).",
        evidence: "`mstlink -d DEV`: `Recommendation`.",
        fix: "Follow the recommendation; usually the cable and module first, then the far end.",
        sources: &[ORACLE_OCI_HPC_HC, MSTFLINT_MLXLINK],
    },
    Rule {
        id: "FAB-LINK-004",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "NIC physical link not up (mlxlink)",
        checks: "mlxlink's `State` of a port is not `Active` (`Polling`, `Disable`...).",
        why: "A port whose physical layer is not up carries no traffic; Oracle's health check fails a node on it.",
        evidence: "`mstlink -d DEV`: `State`, `Physical state`.",
        fix: "Check the cable, the module and the switch port.",
        sources: &[ORACLE_OCI_HPC_HC, MSTFLINT_MLXLINK],
    },
    Rule {
        id: "FAB-LINK-005",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "Transceiver temperature above its alarm threshold",
        checks: "The module's `Temperature [C]` (mstlink -m) is above the high end of the alarm range the module itself reports in brackets.",
        why: "An optic past its temperature limit loses signal (raw errors rise) and fails early.",
        evidence: "`mstlink -d DEV -m`: `Temperature [C] : T [LOW..HIGH]`.",
        fix: "Check the airflow at the NIC and the switch; replace a module that keeps running hot.",
        sources: &[MSTFLINT_MLXLINK],
    },
    Rule {
        id: "FAB-LINK-006",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "Ethernet link down or below what both ends support",
        checks: "`ethtool IF` shows `Link detected: no`, or a `Speed` below the fastest mode both the interface (`Supported link modes`) and its partner (`Link partner advertised link modes`) support.",
        why: "A RoCE port trained below its speed, or not at all, caps the rail and NCCL runs at the pace of the slowest one.",
        evidence: "`ethtool IF`: `Speed`, `Supported link modes`, `Link partner advertised link modes`, `Link detected`.",
        fix: "Check the cable or module (a lower-rated one caps the speed) and whether the speed or autonegotiation was forced (`ethtool -s`).",
        sources: &[ETHTOOL_SRC],
    },
    Rule {
        id: "FAB-LINK-007",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "Physical-layer errors or discards in NIC statistics",
        checks: "`ethtool -S IF` counts damaged frames (`rx_crc_errors_phy`, `rx_symbol_err_phy`, `rx_pcs_symbol_err_phy`, length and fragment errors) or frames dropped for lack of buffers (`rx_discards_phy`, `rx_out_of_buffer`, `tx_discards_phy`) above 0.",
        why: "Damaged frames are a physical link fault; discards on a lossless RoCE fabric mean PFC did not hold the traffic back. Either way RoCE retransmits and collectives stall. The counters are cumulative: a second reading tells whether it is still happening.",
        evidence: "`ethtool -S IF`: the counters named.",
        fix: "Errors: check cable and module (`mlxlink`). Discards: check PFC on host and switch (`mlnx_qos`), NCCL's traffic class, the NIC's PCIe link.",
        sources: &[LINUX_MLX5_COUNTERS],
    },
    Rule {
        id: "FAB-LINK-008",
        severity: Severity::Error,
        scope: Scope::Node,
        title: "NVLink inactive or slower than the GPU's other links",
        checks: "`nvidia-smi nvlink -s` shows a link `<inactive>` (error) or slower than the GPU's fastest link (warning). A PCIe card (H100 PCIe, GeForce, RTX, Quadro) lists links its NVLink bridges do not wire: there only a link inactive on one GPU and up on another counts.",
        why: "NCCL's intra-node traffic runs over NVLink; a GPU missing links has less bandwidth, or falls back to PCIe when none is up. Meta's GCM health checks fail a node with a down or disabled NVLink.",
        evidence: "`nvidia-smi nvlink -s`: `Link N: <inactive>`, `Link N: S GB/s`.",
        fix: "On NVSwitch systems check nvidia-fabricmanager; reset the GPU or reboot; check `nvidia-smi nvlink -e`; a link that stays down is a hardware fault.",
        sources: &[META_GCM_NVLINK],
    },
    Rule {
        id: "FAB-LINK-009",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "ibdiagnet reported errors",
        checks: "A stage of ibdiagnet's summary (`Stages Status Report`) counts errors above 0.",
        why: "ibdiagnet checks the whole fabric (links, LIDs, the subnet manager, counters, speed and width): its errors name faults that slow or break jobs across nodes.",
        evidence: "ibdiagnet's summary table and its `-E-` lines.",
        fix: "Read ibdiagnet2.log for the links and nodes it names, fix them, clear counters (`ibdiagnet -pc`) and run it again.",
        sources: &[IBDIAGNET_DOC],
    },
    Rule {
        id: "FAB-LINK-010",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "Fabric link slower than both its ends support",
        checks: "`iblinkinfo` marks a link `Could be ...`: both ends support a wider or faster link than the one that trained.",
        why: "A link that trained at 1X or at a lower speed gives a fraction of its bandwidth; traffic over that switch port runs at its pace.",
        evidence: "`iblinkinfo`: the `( Could be 4X)` or `( Could be 25.78125 Gbps)` note of a port line.",
        fix: "Reseat or replace the cable of that link.",
        sources: &[IBLINKINFO_SRC],
    },
    Rule {
        id: "FAB-LINK-011",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "Transceiver module reports an alarm",
        checks: "`ethtool -m IF` of each RDMA netdev: an alarm flag the module raises (`... high alarm`/`... low alarm` On, per lane on QSFP and CMIS modules), a loss of signal or a transmitter fault it reports; where the module prints no flags, a reading (temperature, voltage, per-lane bias, transmit or receive power) beyond the alarm thresholds the module itself declares. Warning flags are shown but not judged; a lane with its laser off that receives nothing (an unused breakout lane) is not judged on its readings.",
        why: "The module compares its own monitors with the limits its maker set (SFF-8472 for SFP, SFF-8636 for QSFP, CMIS for QSFP-DD/OSFP): an alarm means the optics are outside the range they are specified to work in, so the link loses symbols now or soon. A low receive power is a dirty or broken fiber or a far end that stopped transmitting; a bias or temperature alarm is a failing laser.",
        evidence: "`ethtool -m IF`: the flags set, the reading and threshold, and each lane's receive power.",
        fix: "Clean and reseat both ends of the fiber, check the far end's transmit power, replace the module or cable.",
        sources: &[SFF_8472, SFF_8636, CMIS, ETHTOOL_MODULE_SRC],
    },
    Rule {
        id: "FAB-FW-001",
        severity: Severity::Info,
        scope: Scope::Node,
        title: "ATS disabled in the NIC firmware",
        checks: "`mstconfig q` shows `ATS_ENABLED` False.",
        why: "Address Translation Services let a NIC cache IOMMU translations; without it GPUDirect RDMA from a VM that owns the NIC or its VF goes through the host IOMMU on every access, far below line rate. On bare metal without an IOMMU in translation mode it does not matter.",
        evidence: "`mstconfig -d DEV q`: `ATS_ENABLED`.",
        fix: "Where VMs use GPUDirect RDMA: `mstconfig -d DEV set ATS_ENABLED=true`, reboot, and set ACS for ATS on the host.",
        sources: &[MSTFLINT_MLXCONFIG_DB, NV_VM_ATS],
    },
    Rule {
        id: "FAB-FW-002",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "Firmware settings differ between NICs of one node",
        checks: "Among NICs of one device type, a setting that shapes traffic (PCI_WR_ORDERING, ATS_ENABLED, ADVANCED_PCI_SETTINGS, MAX_ACC_OUT_READ, SRIOV_EN, NUM_OF_VFS, LINK_TYPE, ROCE_CONTROL, ROCE_CC_*, CNP_*, PCI_ATOMIC_MODE, CQE_COMPRESSION) has different values.",
        why: "Rails are meant to be identical; one configured differently (relaxed ordering, link type, congestion control) behaves differently, and the odd one is usually the one nobody meant to change.",
        evidence: "`mstconfig -d DEV q` of each NIC.",
        fix: "Set the setting alike on every rail and reboot or `mstfwreset`.",
        sources: &[MSTFLINT_MLXCONFIG_DB],
    },
    Rule {
        id: "FAB-FW-003",
        severity: Severity::Info,
        scope: Scope::Node,
        title: "Firmware setting changed, waiting for a reboot",
        checks: "`mstconfig -e q` shows a setting whose `Next Boot` value differs from its `Current` one.",
        why: "Firmware settings take effect at the next boot or firmware reset: until then the NIC runs with the old value, whatever `q` shows for next boot.",
        evidence: "`mstconfig -d DEV -e q`: `Current` and `Next Boot`.",
        fix: "Reboot or `mstfwreset -d DEV reset` when the node is idle.",
        sources: &[MSTFLINT_MLXCONFIG_DB],
    },
    Rule {
        id: "FAB-KLOG-001",
        severity: Severity::Error,
        scope: Scope::Node,
        title: "NVIDIA Xid errors in the kernel log",
        checks: "`NVRM: Xid (PCI:...): N, ...` lines, one finding per Xid and GPU, with the Xid's meaning and recommended action from NVIDIA's Xid catalog: error when the catalog says to reset the GPU, restart the machine or contact support, warning when it says to restart the application, info when it says to ignore.",
        why: "Xids are the driver's record of GPU faults: a GPU that fell off the bus (79), uncontained memory errors (95), GSP timeouts (119) leave the GPU unusable until it is reset.",
        evidence: "Kernel log lines.",
        fix: "Follow NVIDIA's Xid catalog for the Xid; keep the node out of jobs until the GPU is reset or the machine rebooted.",
        sources: &[NVIDIA_XID],
    },
    Rule {
        id: "FAB-KLOG-002",
        severity: Severity::Error,
        scope: Scope::Node,
        title: "mlx5 firmware health events in the kernel log",
        checks: "mlx5_core reports `device's health compromised`, `Fatal error`, a health syndrome (`synd 0x..`), `Health issue observed` (error), or command timeouts and recoveries (warning).",
        why: "The NIC's firmware stopped responding or reported a fault: RDMA traffic on it stops, the driver resets the device, queue pairs are lost.",
        evidence: "Kernel log lines of mlx5_core (`drivers/net/ethernet/mellanox/mlx5/core/health.c`).",
        fix: "Collect the firmware dump (`devlink health`), update the NIC firmware, replace the NIC if it repeats.",
        sources: &[LINUX_MLX5_HEALTH],
    },
    Rule {
        id: "FAB-KLOG-003",
        severity: Severity::Warning,
        scope: Scope::Node,
        title: "Links going down in the kernel log",
        checks: "`Link down` (mlx5e) or `NIC Link is Down` lines more than 30 minutes after boot (the grace Oracle's link-flapping check gives the driver to bring ports up), per interface.",
        why: "A link that goes down drops its NCCL connections; a flapping link stalls collectives each time it retrains and is the first sign of a failing cable or optic.",
        evidence: "Kernel log lines.",
        fix: "Check the cable, module and switch port (`mlxlink -c -m`); replace a cable or optic that keeps flapping.",
        sources: &[ORACLE_OCI_HPC_FLAP],
    },
    Rule {
        id: "FAB-KLOG-004",
        severity: Severity::Error,
        scope: Scope::Node,
        title: "PCIe AER errors in the kernel log",
        checks: "`PCIe Bus Error: severity=...` lines, per device and severity: fatal ones are errors, non-fatal uncorrectable ones warnings, correctable ones info.",
        why: "AER logs PCIe transactions that were lost (uncorrectable) or had to be replayed (correctable) on the path between CPU, switches, GPUs and NICs.",
        evidence: "Kernel log lines (`drivers/pci/pcie/aer.c`).",
        fix: "Reseat the card or riser, check the slot, update firmware and BIOS; correctable errors that keep coming mean a marginal link.",
        sources: &[LINUX_AER_HOWTO],
    },
    Rule {
        id: "FAB-KLOG-005",
        severity: Severity::Error,
        scope: Scope::Node,
        title: "Memory pinning for GPUDirect RDMA failed",
        checks: "nvidia-peermem or nv_peer_mem log an error from `nvidia_p2p_get_pages()` or `nvidia_p2p_dma_map_pages()`.",
        why: "Registering GPU memory with the NIC failed: NCCL cannot use GPUDirect RDMA for that buffer and the job aborts or stages through host memory.",
        evidence: "Kernel log lines.",
        fix: "Reload nvidia-peermem after driver updates, check BAR1 usage, or use dma-buf.",
        sources: &[GDR_MANUAL, GPU_OPERATOR_RDMA],
    },
    Rule {
        id: "FAB-ENV-009",
        severity: Severity::Warning,
        scope: Scope::Env,
        title: "An NCCL variable that nothing reads",
        checks: "Every NCCL_* and OFI_NCCL_* name of the planned environment against the variables NCCL (2.4 to today), its network plugins (aws-ofi-nccl, nccl-rdma-sharp-plugins, GPUDirect-TCPX/TCPXO) and nccl-tests read, extracted release by release from their sources (crates/fabrik-nccl/data/nccl-env.tsv, scripts/catalog/nccl_env.py; NCCL_PARAM(name, \"IB_HCA\", ...) reads NCCL_IB_HCA). Warning when a read name is at most 2 edits away, or one `_` word added or left out: a misspelling, named with the variable meant. Info when no read name is near (another program's setting, such as PyTorch's, or a release newer than the list) and when only older releases read it.",
        why: "NCCL ignores a variable it does not read, silently: NCCL_SOCKET_IFNAMES=eth0 leaves the interface choice automatic, NCCL_IB_GID_IDX=3 leaves the GID index automatic, and the job runs with settings nobody chose.",
        evidence: "env:NAME with its value; the nearest name read and the releases that read it.",
        fix: "Rename the variable to the one meant; remove settings no release you run reads.",
        sources: &[NCCL_ENV, NCCL_PARAM_SRC, OFI_PARAM_SRC],
    },
];

/// Every rule: the doctor's node, environment, cluster and counter rules,
/// then the log and benchmark rules (FAB-NCCL-*, FAB-BENCH-*), whose pages live with NCCL's
/// message catalog in `fabrik_parse::catalog` (data/nccl-classes.txt).
pub fn rules() -> Vec<&'static Rule> {
    RULES
        .iter()
        .chain(counters::RULES)
        .chain(fabrik_parse::catalog::rules())
        .chain(fabrik_parse::perftest_failures::rules())
        .collect()
}

/// The page of rule `id` (`FAB-PORT-001`, any case) among every rule [`rules`] lists.
pub fn rule(id: &str) -> Option<&'static Rule> {
    RULES
        .iter()
        .chain(counters::RULES)
        .chain(fabrik_parse::catalog::rules())
        .chain(fabrik_parse::perftest_failures::rules())
        .find(|r| r.id.eq_ignore_ascii_case(id))
}

/// The rule's page in Markdown: what `fabrik explain ID` prints and what docs/rules/ holds.
pub fn page(rule: &Rule) -> String {
    let mut s = String::new();
    s.push_str(&format!("# {}: {}\n\n", rule.id, rule.title));
    s.push_str(&format!(
        "Severity: **{}** (at most) · Scope: {}\n\n",
        rule.severity,
        match rule.scope {
            Scope::Node => "one node",
            Scope::Env => "one node and the planned NCCL environment",
            Scope::Cluster => "across nodes",
            Scope::Counters =>
                "two samples of one node's counters (`doctor --watch`, `diff`, `top`)",
            Scope::Log => "an NCCL log or a benchmark's output (`fabrik logs`, `fabrik parse`)",
        }
    ));
    s.push_str(&format!("## What it checks\n\n{}\n\n", rule.checks));
    s.push_str(&format!("## Why it matters\n\n{}\n\n", rule.why));
    s.push_str(&format!("## Evidence read\n\n{}\n\n", rule.evidence));
    s.push_str(&format!("## Fix\n\n{}\n\n", rule.fix));
    s.push_str("## Sources\n\n");
    for src in rule.sources {
        s.push_str(&format!("- [{}]({})\n", src.title, src.url));
    }
    s
}

/// `docs/rules/README.md`: the index of all pages.
pub fn index_page() -> String {
    let mut s = String::from("# fabrik doctor rules\n\nGenerated from `crates/fabrik-doctor/src/catalog.rs` for the counter rules FAB-CNT-1xx, `crates/fabrik-doctor/src/catalog/counters.rs`, and for the log and benchmark rules FAB-NCCL-*/FAB-BENCH-*, `crates/fabrik-parse/data/nccl-classes.txt`; `FABRIK_BLESS=1 cargo test -p fabrik-doctor --test rule_pages` rewrites them and the same test fails when they drift. `fabrik explain ID` prints the same page.\n\n| id | severity | scope | title |\n| --- | --- | --- | --- |\n");
    for r in rules() {
        s.push_str(&format!(
            "| [{}]({}.md) | {} | {:?} | {} |\n",
            r.id, r.id, r.severity, r.scope, r.title
        ));
    }
    s
}
