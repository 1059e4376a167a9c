//! Where every value comes from. Each URL was read when the value was taken; docs/profiles/
//! quotes the relevant lines.

/// NVIDIA NCCL user guide, environment variables.
pub const NCCL_ENV: &str = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html";
/// NCCL's own defaults for the IB transport parameters (`NCCL_IB_TC` -1, `NCCL_IB_SL` -1...).
pub const NCCL_IB_PARAMS: &str =
    "https://github.com/NVIDIA/nccl/blob/v2.31.2-1/src/transport/net_ib/connect.cc";

/// GKE: maximize GPU network bandwidth with GPUDirect-TCPX and multi-networking.
pub const GKE_TCPX: &str =
    "https://cloud.google.com/kubernetes-engine/docs/how-to/gpu-bandwidth-gpudirect-tcpx";
/// Compute Engine: GPUDirect-TCPX on A3 VMs (linked from google/tcpgpudmarxd).
pub const GCE_GPUDIRECT: &str = "https://cloud.google.com/compute/docs/gpus/gpudirect";
/// Google's TCPX NCCL settings as shipped in the GKE sample (run-nccl.sh).
pub const GKE_TCPX_NCCL_CONFIG: &str = "https://github.com/GoogleCloudPlatform/container-engine-accelerators/blob/master/gpudirect-tcpx/nccl-config-default.yaml";
/// Google's TCPX pod spec: RxDM sidecar, volumes, IPC_LOCK.
pub const GKE_TCPX_POD: &str = "https://github.com/GoogleCloudPlatform/container-engine-accelerators/blob/master/gpudirect-tcpx/nccl-test-latest.yaml";
/// Google's TCPXO pod spec for A3 Mega.
pub const GKE_TCPXO_POD: &str = "https://github.com/GoogleCloudPlatform/container-engine-accelerators/blob/master/gpudirect-tcpxo/nccl-test-latest.yaml";
/// Cluster Toolkit: enable GPUDirect-TCPXO on A3 Mega.
pub const GCP_TCPXO_TOOLKIT: &str =
    "https://cloud.google.com/cluster-toolkit/docs/machine-learning/a3-mega-enable-gpudirect-tcpxo";
/// NVIDIA DGX Cloud on GCP: the TCPXO variables injected into 8-GPU H100 pods.
pub const DGXC_GCP_TCPXO: &str = "https://docs.nvidia.com/dgx-cloud/run-ai/1.2/appendix-gcp.html";

/// aws-ofi-nccl EFA cheatsheet: which FI_*/NCCL_* variables are still needed per version.
pub const AWS_OFI_NCCL_EFA: &str =
    "https://github.com/aws/aws-ofi-nccl/blob/master/doc/efa-env-var.md";

/// Azure ND H100 v5 series.
pub const AZURE_ND_H100_V5: &str =
    "https://learn.microsoft.com/en-us/azure/virtual-machines/nd-h100-v5-series";

/// Alibaba Cloud ACS: run applications on the high-performance RDMA network.
pub const ALIBABA_ACS_RDMA: &str =
    "https://www.alibabacloud.com/help/tc/cs/user-guide/pod-hpn-type-rdma";

/// OCI's own NCCL test manifests for BM.GPU.H100.8 on OKE (host network).
pub const OCI_OKE_H100: &str = "https://github.com/oracle-quickstart/oci-hpc-oke/blob/main/manifests/nccl-tests/host-network/mpi-operator/BM.GPU.H100.8.yaml";
