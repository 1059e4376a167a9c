//! The public sources the rule pages cite, each once.

use fabrik_model::Source;

pub(super) const NCCL_ENV: Source = Source {
    title: "NCCL documentation: Environment Variables",
    url: "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html",
};
pub(super) const NCCL_TROUBLESHOOTING: Source = Source {
    title: "NCCL documentation: Troubleshooting (GPU Direct, ACS, InfiniBand limits)",
    url: "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html",
};
pub(super) const KERNEL_IB_ABI: Source = Source {
    title: "Linux kernel ABI: /sys/class/infiniband (ports, GIDs, gid_attrs)",
    url: "https://kernel.org/doc/Documentation/ABI/testing/sysfs-class-infiniband",
};
pub(super) const NCCL_SOCKET_SRC: Source = Source {
    title: "NCCL source: ncclFindInterfaces (src/misc/socket.cc)",
    url: "https://github.com/NVIDIA/nccl/blob/master/src/misc/socket.cc",
};
pub(super) const NCCL_OS_LINUX_SRC: Source = Source {
    title: "NCCL source: ncclOsFindInterfaces, IFF_RUNNING and address filters (src/os/linux.cc)",
    url: "https://github.com/NVIDIA/nccl/blob/master/src/os/linux.cc",
};
pub(super) const NCCL_PATHS_SRC: Source = Source {
    title: "NCCL source: ncclTopoCheckGdr, default netGdrLevel = PATH_PXB (src/graph/paths.cc)",
    url: "https://github.com/NVIDIA/nccl/blob/master/src/graph/paths.cc",
};
pub(super) const NCCL_IB_CONNECT_SRC: Source = Source {
    title: "NCCL source: NCCL_IB_GID_INDEX default -1 (src/transport/net_ib/connect.cc, v2.31.2-1)",
    url: "https://raw.githubusercontent.com/NVIDIA/nccl/v2.31.2-1/src/transport/net_ib/connect.cc",
};
pub(super) const NCCL_IB_LINK_LAYER_SRC: Source = Source {
    title: "NCCL source: the connect side refuses a remote device of another link layer (\"Remote %s device is incompatible with the local ...\", src/transport/net_ib/connect.cc, v2.30.7-1)",
    url: "https://github.com/NVIDIA/nccl/blob/v2.30.7-1/src/transport/net_ib/connect.cc",
};
pub(super) const TORCHRUN_DOC: Source = Source {
    title: "PyTorch documentation: torchrun (--nproc-per-node, one worker group per node)",
    url: "https://docs.pytorch.org/docs/stable/elastic/run.html",
};
pub(super) const JUNIPER_GID: Source = Source {
    title: "Juniper JVD: NCCL 2.21+ selects the GID index automatically (NCCL_IB_GID_INDEX=-1)",
    url: "https://www.juniper.net/documentation/us/en/software/jvd/jvd-ai-dc-evpn-multitenancy/appendix_d_how_to_run_nccl_tests_using_autoconfigured_ipv6_address.html",
};
pub(super) const RXE_QUERY_PORT_SRC: Source = Source {
    title: "Linux source: rxe_query_port takes the port's speed and width from ib_get_eth_speed, i.e. the netdev's ethtool speed (drivers/infiniband/sw/rxe/rxe_verbs.c)",
    url: "https://github.com/torvalds/linux/blob/master/drivers/infiniband/sw/rxe/rxe_verbs.c",
};
pub(super) const IB_GET_ETH_SPEED_SRC: Source = Source {
    title: "Linux source: ib_get_eth_speed maps an Ethernet netdev's link speed to an IB speed and width (drivers/infiniband/core/verbs.c)",
    url: "https://github.com/torvalds/linux/blob/master/drivers/infiniband/core/verbs.c",
};
pub(super) const PMTUD_BLACK_HOLES: Source = Source {
    title: "RFC 2923: TCP Problems with Path MTU Discovery (black holes: routers that drop large packets without the ICMP that would say so)",
    url: "https://datatracker.ietf.org/doc/html/rfc2923",
};
pub(super) const MEMLOCK_ISSUE: Source = Source {
    title: "NVIDIA/nccl-tests#206: ibv_reg_mr_iova2 failed, Cannot allocate memory (ulimit -l was 8192)",
    url: "https://github.com/NVIDIA/nccl-tests/issues/206",
};
pub(super) const ACS_ISSUE: Source = Source {
    title: "NVIDIA/nccl#199: multi-GPU hang, fixed by disabling ACS",
    url: "https://github.com/NVIDIA/nccl/issues/199",
};
pub(super) const PCIUTILS_LS_CAPS: Source = Source {
    title: "pciutils: ls-caps.c, the DevCtl (RlxdOrd, MaxReadReq), LnkCap and LnkSta lines of lspci -vvv",
    url: "https://github.com/pciutils/pciutils/blob/master/ls-caps.c",
};
pub(super) const PCIUTILS_LS_ECAPS: Source = Source {
    title: "pciutils: ls-ecaps.c, the AER (UESta, UESvrt, CESta) and ACS lines of lspci -vvv",
    url: "https://github.com/pciutils/pciutils/blob/master/ls-ecaps.c",
};
pub(super) const LINUX_PCI_QUIRKS: Source = Source {
    title: "Linux: drivers/pci/quirks.c, relaxed ordering disabled below root ports with errata (PCI_DEV_FLAGS_NO_RELAXED_ORDERING)",
    url: "https://github.com/torvalds/linux/blob/master/drivers/pci/quirks.c",
};
pub(super) const ORACLE_OCI_DR_HPC: Source = Source {
    title: "oracle/oci-dr-hpc-v2, link_check: mlxlink effective physical BER below 1E-12 and raw physical BER below 1E-5 pass; effective physical errors above the shape's limit (0) fail, raw physical errors per lane above it (10,000) warn",
    url: "https://github.com/oracle/oci-dr-hpc-v2",
};
pub(super) const ORACLE_OCI_HPC_HC: Source = Source {
    title: "oracle-quickstart/oci-hpc health checks (check_gpu_setup.py): mlxlink State must be Active and the Recommendation 'No issue was observed'; 'Bad signal integrity' is tolerated below a raw physical BER of 1e-7",
    url: "https://github.com/oracle-quickstart/oci-hpc/blob/master/playbooks/roles/healthchecks/files/check_gpu_setup.py",
};
pub(super) const ORACLE_OCI_HPC_FLAP: Source = Source {
    title: "oracle-quickstart/oci-hpc health checks (rdma_link_flapping.py): 'mlx5_core ... Link down' kernel lines after a 30-minute boot grace are link flaps",
    url: "https://github.com/oracle-quickstart/oci-hpc/blob/master/playbooks/roles/healthchecks/files/rdma_link_flapping.py",
};
pub(super) const MSTFLINT_MLXLINK: Source = Source {
    title: "mstflint: mlxlink_commander.cpp, the Operational Info, Troubleshooting Info and Physical Counters and BER Info of mstlink",
    url: "https://github.com/Mellanox/mstflint/blob/master/mlxlink/modules/mlxlink_commander.cpp",
};
pub(super) const MSTFLINT_MLXCONFIG_DB: Source = Source {
    title: "mstflint: mlxconfig's parameter database (mlxconfig_host.db): PCI_WR_ORDERING per_mkey/force_relax, ATS_ENABLED, MAX_ACC_OUT_READ...",
    url: "https://github.com/Mellanox/mstflint/tree/master/mlxconfig/mlxconfig_dbs",
};
pub(super) const DELL_PAM4_BER: Source = Source {
    title: "Dell KB 000286734: ConnectX-6 Dx PAM4 links report high corrected bits by design; IEEE requires a pre-FEC BER of 2.4E-04 or better and RS544 FEC gives 1E-12 or better",
    url: "https://www.dell.com/support/kbdoc/en-us/000286734/100-gb-nic",
};
pub(super) const META_GCM: Source = Source {
    title: "Meta GCM (GPU Cluster Monitoring) health checks",
    url: "https://facebookresearch.github.io/gcm/docs/GCM_Health_Checks/health_checks/",
};
pub(super) const META_GCM_NVLINK: Source = Source {
    title: "Meta GCM health checks: check-dcgmi nvlink (links down or disabled are CRITICAL)",
    url: "https://facebookresearch.github.io/gcm/docs/GCM_Health_Checks/health_checks/check-dcgmi/nvlink",
};
pub(super) const ETHTOOL_SRC: Source = Source {
    title: "ethtool source: the Speed, link-mode and Link detected lines of `ethtool IF`",
    url: "https://git.kernel.org/pub/scm/network/ethtool/ethtool.git/tree/ethtool.c",
};
pub(super) const LINUX_MLX5_COUNTERS: Source = Source {
    title: "Linux kernel documentation: mlx5 ethtool counters (rx_crc_errors_phy, rx_symbol_err_phy, rx_discards_phy, rx_out_of_buffer)",
    url: "https://docs.kernel.org/networking/device_drivers/ethernet/mellanox/mlx5/counters.html",
};
pub(super) const IBDIAGNET_DOC: Source = Source {
    title: "NVIDIA: ibdiagnet InfiniBand Fabric Diagnostic Tool User Manual v2.13.0 (error detection per stage)",
    url: "https://docs.nvidia.com/networking/display/ibdiagnetUserManualv213",
};
pub(super) const IBLINKINFO_SRC: Source = Source {
    title: "rdma-core: infiniband-diags/iblinkinfo.c, port lines and the 'Could be' note of links that could run wider or faster",
    url: "https://github.com/linux-rdma/rdma-core/blob/master/infiniband-diags/iblinkinfo.c",
};
pub(super) const SFF_8472: Source = Source {
    title: "SNIA SFF-8472: Management Interface for SFP+ (diagnostic monitoring, alarm and warning flags and thresholds set by the module)",
    url: "https://members.snia.org/document/dl/25916",
};
pub(super) const SFF_8636: Source = Source {
    title: "SNIA SFF-8636: Management Interface for 4-lane Modules and Cables (per-channel monitors, interrupt flags and thresholds)",
    url: "https://members.snia.org/document/dl/26418",
};
pub(super) const CMIS: Source = Source {
    title:
        "OIF CMIS: Common Management Interface Specification (module and lane flags, thresholds)",
    url: "https://www.oiforum.com/wp-content/uploads/OIF-CMIS-05.2.pdf",
};
pub(super) const ETHTOOL_MODULE_SRC: Source = Source {
    title: "ethtool source: sfpdiag.c, qsfp.c, cmis.c and sff-common.c, the diagnostics, flags and thresholds `ethtool -m` prints",
    url: "https://git.kernel.org/pub/scm/network/ethtool/ethtool.git/tree/sff-common.c",
};
pub(super) const NVIDIA_XID: Source = Source {
    title: "NVIDIA: Xid catalog (each Xid's description and recommended action)",
    url: "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html",
};
pub(super) const LINUX_MLX5_HEALTH: Source = Source {
    title: "Linux: drivers/net/ethernet/mellanox/mlx5/core/health.c (health compromised, fatal errors, syndromes, recovery)",
    url: "https://github.com/torvalds/linux/blob/master/drivers/net/ethernet/mellanox/mlx5/core/health.c",
};
pub(super) const LINUX_AER_HOWTO: Source = Source {
    title: "Linux kernel documentation: The PCI Express Advanced Error Reporting Driver Guide (aer_dev_correctable, aer_dev_fatal, aer_dev_nonfatal)",
    url: "https://docs.kernel.org/PCI/pcieaer-howto.html",
};
pub(super) const NCCL_1731: Source = Source {
    title: "NVIDIA/nccl#1731: dual-port ConnectX-7, 84 Gb/s from cudaMalloc memory until IBV_ACCESS_RELAXED_ORDERING",
    url: "https://github.com/NVIDIA/nccl/issues/1731",
};
pub(super) const NV_VM_ATS: Source = Source {
    title: "NVIDIA AI Enterprise: ATS and ACS configuration for GPUDirect RDMA in VMs",
    url: "https://docs.nvidia.com/ai-enterprise/planning-resource/optimizing-vm-configuration-ai-inference/latest/appendix.html",
};
pub(super) const GPU_OPERATOR_RDMA: Source = Source {
    title: "NVIDIA GPU Operator: GPUDirect RDMA with DMA-BUF or nvidia-peermem",
    url:
        "https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/gpu-operator-rdma.html",
};
pub(super) const GDR_MANUAL: Source = Source {
    title: "NVIDIA GPUDirect RDMA User Manual: nv_peer_mem must be loaded",
    url: "https://docs.nvidia.com/networking/display/GPUDirectRDMAv18/System+Requirements+and+Recommendations",
};
pub(super) const SOCKET_286: Source = Source {
    title: "NVIDIA/nccl#286: default NCCL_SOCKET_IFNAME behaviour (^lo,docker)",
    url: "https://github.com/NVIDIA/nccl/issues/286",
};
pub(super) const SOCKET_913: Source = Source {
    title: "NVIDIA/nccl#913: ncclCommInitRank hangs because of a docker bridge veth interface",
    url: "https://github.com/NVIDIA/nccl/issues/913",
};
pub(super) const HOROVOD_700: Source = Source {
    title: "horovod#700: NCCL picks ib*, then non-docker/lo, then docker0, then lo (maintainer's explanation)",
    url: "https://github.com/horovod/horovod/pull/700",
};
pub(super) const TCPX_YAML: Source = Source {
    title: "GoogleCloudPlatform/container-engine-accelerators: GPUDirect-TCPX rxdm daemon and NCCL plugin",
    url: "https://raw.githubusercontent.com/GoogleCloudPlatform/container-engine-accelerators/master/gpudirect-tcpx/nccl-test.yaml",
};
pub(super) const DSTACK_A3: Source = Source {
    title:
        "dstackai/dstack#2447: GCP A3 with 4 data NICs, 50 GB/s algbw with TCPX vs 20 GB/s without",
    url: "https://github.com/dstackai/dstack/issues/2447",
};
pub(super) const EFA_NCCL: Source = Source {
    title: "AWS: Get started with EFA and NCCL",
    url: "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-start-nccl-base.html",
};
pub(super) const OFI_49: Source = Source {
    title: "aws/aws-ofi-nccl#49: the plugin is how NCCL uses EFA",
    url: "https://github.com/aws/aws-ofi-nccl/issues/49",
};
pub(super) const MLX5_COUNTERS: Source = Source {
    title: "Linux mlx5 hw_counters names (drivers/infiniband/hw/mlx5/counters.c)",
    url: "https://git.zx2c4.com/wireguard-linux/plain/drivers/infiniband/hw/mlx5/counters.c",
};
pub(super) const MLX5_CNP: Source = Source {
    title: "IB/mlx5: congestion counters np_cnp_sent, rp_cnp_handled, np_ecn_marked_roce_packets",
    url: "https://github.com/xanmod/linux/commit/e1f24a79f424ddb03828de7c0152668c9a30146e",
};
pub(super) const ROCE_MTU_BLOG: Source = Source {
    title: "RoCE active MTU is the largest IB MTU below the Ethernet MTU minus RoCE headers",
    url: "https://blog.workinghardinit.work/2019/09/05/fixing-slow-roce-rdma-performance-with-winof-2-to-winof/",
};
pub(super) const KERNEL_NEIGH_SYSCTL: Source = Source {
    title: "Linux kernel: IP sysctl, neigh/default/gc_thresh1-3 (Documentation/networking/ip-sysctl.rst)",
    url: "https://docs.kernel.org/networking/ip-sysctl.html",
};
pub(super) const KERNEL_IP_SYSCTL_TCP: Source = Source {
    title: "Linux kernel: IP sysctl, tcp_rmem and tcp_wmem (min, default, max; autotuning stays below max) (Documentation/networking/ip-sysctl.rst)",
    url: "https://docs.kernel.org/networking/ip-sysctl.html",
};
pub(super) const ROCE_MODE: Source = Source {
    title: "NVIDIA MLNX_OFED: default RoCE mode (IB/RoCE v1 vs RoCE v2)",
    url: "https://docs.nvidia.com/networking/display/RHEL94/default-roce-mode-setting.pdf",
};
pub(super) const SM_OMNIA: Source = Source {
    title:
        "dell/omnia#399: the subnet manager configures IB endpoints (ports stay INIT without one)",
    url: "https://github.com/dell/omnia/issues/399",
};
pub(super) const IB_DISABLE_1591: Source = Source {
    title: "NVIDIA/nccl#1591: NCCL_IB_DISABLE=1 works but the throughput is terrible",
    url: "https://github.com/NVIDIA/nccl/issues/1591",
};
pub(super) const ACS_ALIBABA: Source = Source {
    title: "Alibaba Cloud ACS: RDMA pods, NCCL_IB_DISABLE=1 required on P16EN",
    url: "https://www.alibabacloud.com/help/en/cs/user-guide/pod-hpn-type-rdma",
};
pub(super) const ONEFLOW_VETH: Source = Source {
    title: "Oneflow-Inc/oneflow#9115: NET/Socket using veth interfaces when IB is absent",
    url: "https://github.com/Oneflow-Inc/oneflow/pull/9115",
};
pub(super) const NCCL_634: Source = Source {
    title: "NVIDIA/nccl#634: GPU/NIC NODE and SYS distances in nvidia-smi topo -m",
    url: "https://github.com/NVIDIA/nccl/issues/634",
};

pub(super) const AZNHC: Source = Source {
    title:
        "Azure/azurehpc-health-checks (AzNHC): per-SKU expected GPU count, IB devices, bandwidths",
    url: "https://github.com/Azure/azurehpc-health-checks",
};
pub(super) const LBNL_NHC: Source = Source {
    title: "LBNL NHC: checks against what each node should have (check_hw_ib, check_hw_physmem...)",
    url: "https://github.com/mej/nhc",
};

pub(super) const KERNEL_MLX5_KCONFIG: Source = Source {
    title: "Linux kernel documentation: mlx5 driver, CONFIG_MLX5_CORE and CONFIG_MLX5_INFINIBAND (mlx5_ib: the RDMA half of the driver)",
    url: "https://docs.kernel.org/networking/device_drivers/ethernet/mellanox/mlx5/kconfig.html",
};
pub(super) const NHC_HW_IB: Source = Source {
    title: "LBNL NHC: check_hw_ib and check_hw_eth, a node fails when its fabric device is missing",
    url: "https://github.com/mej/nhc/blob/master/scripts/lbnl_hw.nhc",
};

pub(super) const PCI_SYSFS_CONFIG: Source = Source {
    title: "Linux kernel: pci_read_config in drivers/pci/pci-sysfs.c (the config file gives 64 bytes without CAP_SYS_ADMIN)",
    url: "https://github.com/torvalds/linux/blob/master/drivers/pci/pci-sysfs.c",
};
pub(super) const NCCL_PARAM_SRC: Source = Source {
    title: "NCCL source: NCCL_PARAM reads \"NCCL_\" env (src/include/param.h, v2.30.7-1)",
    url: "https://github.com/NVIDIA/nccl/blob/v2.30.7-1/src/include/param.h",
};
pub(super) const OFI_PARAM_SRC: Source = Source {
    title: "aws-ofi-nccl source: OFI_NCCL_PARAM reads \"OFI_NCCL_\" env (src/nccl_ofi_param.cpp, v1.21.1)",
    url: "https://github.com/aws/aws-ofi-nccl/blob/v1.21.1/src/nccl_ofi_param.cpp",
};
pub(super) const NIST_OUTLIERS: Source = Source {
    title: "NIST/SEMATECH e-Handbook of Statistical Methods, 1.3.5.17 Detection of Outliers: the modified Z-score 0.6745 (x - median) / MAD, an outlier above 3.5 (Iglewicz and Hoaglin)",
    url: "https://www.itl.nist.gov/div898/handbook/eda/section3/eda35h.htm",
};
pub(super) const KERNEL_DCBNL: Source = Source {
    title: "Linux kernel: DCB netlink (RTM_GETDCB, DCB_CMD_IEEE_GET; EOPNOTSUPP for a driver without dcbnl_ops), net/dcb/dcbnl.c",
    url: "https://github.com/torvalds/linux/blob/master/net/dcb/dcbnl.c",
};
