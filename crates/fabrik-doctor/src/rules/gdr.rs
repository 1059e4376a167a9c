//! GPUDirect RDMA: a peer-memory path must exist, and NCCL uses it only for near NICs.

use fabrik_model::{Finding, GpuNicPath, Node, PathType, Severity};

use crate::util::*;

/// Rule id of "GPUs and RDMA NICs without a peer-memory path".
pub const NO_PEER_MEMORY: &str = "FAB-GDR-001";
/// Rule id of "A GPU's nearest RDMA NIC is beyond PXB".
pub const FAR_NIC: &str = "FAB-GDR-002";

/// NCCL's default NCCL_NET_GDR_LEVEL: GPUDirect RDMA is used when the GPU↔NIC path is PXB or
/// closer (`ncclTopoCheckGdr` in src/graph/paths.cc: `netGdrLevel = PATH_PXB`, enabled when
/// `distance <= netGdrLevel`).
pub const NCCL_DEFAULT_GDR_LEVEL: PathType = PathType::PXB;

/// The nearest RDMA NIC of a GPU, by `nvidia-smi topo -m` distance. `None` when the node has
/// no classified path for that GPU.
pub fn nearest_nic<'a>(node: &'a Node, gpu: &str) -> Option<&'a GpuNicPath> {
    node.gpu_nic_paths
        .iter()
        .filter(|p| p.gpu == gpu && p.path_type.is_some())
        .filter(|p| node.rdma_device(&p.nic).is_some_and(|d| !d.is_software()))
        .min_by(|a, b| {
            a.path_type
                .cmp(&b.path_type)
                .then_with(|| a.nic.cmp(&b.nic))
        })
}

/// What the node tells about a dma-buf path. NVIDIA's requirements for GPUDirect RDMA over
/// dma-buf (GPU Operator "GPUDirect RDMA and GPUDirect Storage", and the CUDA GPUDirect RDMA
/// guide): Linux kernel ≥ 5.12 and the open GPU kernel module (R515 or later, the first open
/// release), with CUDA ≥ 11.7 and NCCL ≥ 2.13 in user space. The module kind comes from
/// `/proc/driver/nvidia/version` ("Open Kernel Module" vs "Kernel Module").
enum DmaBuf {
    Capable,
    NotCapable(String),
    Unknown(String),
}

/// The first open GPU kernel module release.
const FIRST_OPEN_MODULE_BRANCH: u32 = 515;

fn dma_buf(node: &Node) -> DmaBuf {
    let kernel = node.os.kernel.as_deref();
    let kernel_ok = kernel.and_then(kernel_major_minor).map(|v| v >= (5, 12));
    let branch = node
        .versions
        .nvidia_driver
        .as_deref()
        .and_then(|d| d.split('.').next())
        .and_then(|m| m.trim().parse::<u32>().ok());
    match (kernel_ok, node.versions.nvidia_open_kernel_module) {
        (Some(false), _) => DmaBuf::NotCapable(format!(
            "kernel {} is older than 5.12, which dma-buf peer memory needs",
            kernel.unwrap_or("?")
        )),
        (_, Some(false)) => DmaBuf::NotCapable(
            "the NVIDIA driver is the proprietary kernel module; dma-buf export needs the open kernel module".into(),
        ),
        (Some(true), Some(true)) if branch.is_none_or(|b| b >= FIRST_OPEN_MODULE_BRANCH) => {
            DmaBuf::Capable
        }
        (Some(true), Some(true)) => DmaBuf::NotCapable(format!(
            "NVIDIA driver {} predates the R{FIRST_OPEN_MODULE_BRANCH} open module that dma-buf needs",
            node.versions.nvidia_driver.as_deref().unwrap_or("?")
        )),
        (None, Some(true)) => DmaBuf::Unknown(
            "the kernel version is unknown, so fabrik cannot tell whether dma-buf (Linux ≥ 5.12 with the open NVIDIA module) is available".into(),
        ),
        (_, None) => DmaBuf::Unknown(
            "fabrik cannot tell whether the open NVIDIA kernel module (needed for dma-buf) is loaded".into(),
        ),
    }
}

/// Rule [`NO_PEER_MEMORY`]: "GPUs and RDMA NICs without a peer-memory path".
pub fn no_peer_memory(node: &Node) -> Vec<Finding> {
    let hw: Vec<_> = node
        .rdma_devices
        .iter()
        .filter(|d| !d.is_software())
        .collect();
    if node.gpus.is_empty() || hw.is_empty() {
        return vec![];
    }
    if node.has_module("nvidia_peermem") || node.has_module("nv_peer_mem") {
        return vec![];
    }
    if unread(node, "/proc/modules") {
        return vec![finding(
            NO_PEER_MEMORY,
            Severity::Info,
            "node",
            "/proc/modules could not be read, so fabrik cannot tell whether nvidia_peermem or nv_peer_mem is loaded; GPUDirect RDMA is unverified",
            vec![ev("/proc/modules", "unreadable")],
            "Check with `lsmod | grep -e nvidia_peermem -e nv_peer_mem`, or NCCL_DEBUG=INFO (`GPU Direct RDMA Enabled`).",
        )];
    }
    let reason = match dma_buf(node) {
        DmaBuf::Capable => return vec![],
        DmaBuf::NotCapable(r) => r,
        DmaBuf::Unknown(r) => r,
    };
    vec![finding(
        NO_PEER_MEMORY,
        Severity::Warning,
        "node",
        format!(
            "{} and {} but no peer-memory path: neither nvidia_peermem nor nv_peer_mem is loaded, and {reason}. Without GPUDirect RDMA NCCL stages every transfer through host memory",
            plural(node.gpus.len(), "GPU", "GPUs"),
            plural(hw.len(), "RDMA NIC", "RDMA NICs"),
        ),
        vec![
            ev("/proc/modules", "no nvidia_peermem, no nv_peer_mem"),
            ev("/proc/sys/kernel/osrelease", node.os.kernel.clone().unwrap_or_else(|| "unknown".into())),
            ev("/proc/driver/nvidia/version", node.versions.nvidia_driver.clone().unwrap_or_else(|| "unknown".into())),
        ],
        "Load the peer-memory module shipped with the NVIDIA driver (R470+): `modprobe nvidia_peermem` (persist it in /etc/modules-load.d/), or use dma-buf: Linux ≥ 5.12, the open GPU kernel module, CUDA ≥ 11.7 and NCCL ≥ 2.13 (NCCL_DMABUF_ENABLE=1, the default). Check with NCCL_DEBUG=INFO: `GPU Direct RDMA Enabled`.",
    )]
}

/// Rule [`FAR_NIC`]: "A GPU's nearest RDMA NIC is beyond PXB".
pub fn far_nic(node: &Node) -> Vec<Finding> {
    if node
        .rdma_devices
        .iter()
        .all(fabrik_model::RdmaDevice::is_software)
    {
        return vec![];
    }
    let mut out = vec![];
    for gpu in &node.gpus {
        let Some(p) = nearest_nic(node, &gpu.pci.address) else {
            continue;
        };
        let Some(t) = p.path_type else { continue };
        if t <= NCCL_DEFAULT_GDR_LEVEL {
            continue;
        }
        out.push(finding(
            FAR_NIC,
            Severity::Warning,
            format!("GPU {}", gpu.pci.address),
            format!(
                "the nearest RDMA NIC of GPU {} is {} at distance {}: beyond PXB, so NCCL disables GPUDirect RDMA for it by default and traffic crosses the CPU{}",
                gpu.pci.address,
                p.nic,
                t.as_str(),
                if t == PathType::SYS { " and the inter-socket link" } else { "" }
            ),
            vec![ev(
                format!("nvidia-smi topo -m: GPU {} ↔ {}", gpu.pci.address, p.nic),
                t.as_str(),
            )],
            "Put a NIC on the same PCIe switch as each GPU (PIX/PXB), as HGX-class servers do. If the layout is fixed, pin each rank to the NUMA node of its NIC; raising NCCL_NET_GDR_LEVEL (e.g. PHB or SYS) forces GPUDirect RDMA over the longer path, which only helps on some platforms: measure.",
        ));
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::testkit::*;

    #[test]
    fn peermem_loaded_or_open_module_with_new_kernel_is_fine() {
        let mut n = healthy_ib_node("a");
        assert!(no_peer_memory(&n).is_empty());
        n.modules.retain(|m| m.name != "nvidia_peermem");
        // The probe stores the version number alone and the module kind apart.
        n.versions.nvidia_driver = Some("535.161.08".into());
        n.versions.nvidia_open_kernel_module = None;
        let f = no_peer_memory(&n);
        assert_eq!(f.len(), 1);
        assert!(f[0].message.contains("cannot tell"));
        n.versions.nvidia_open_kernel_module = Some(true);
        n.os.kernel = Some("6.5.0-1018-nvidia".into());
        assert!(no_peer_memory(&n).is_empty(), "open module on 6.5: dma-buf");
        n.os.kernel = Some("5.4.0-150-generic".into());
        assert!(no_peer_memory(&n)[0].message.contains("older than 5.12"));
        n.os.kernel = None;
        assert!(no_peer_memory(&n)[0]
            .message
            .contains("kernel version is unknown"));
        n.os.kernel = Some("5.15.0-1".into());
        n.versions.nvidia_open_kernel_module = Some(false);
        assert!(no_peer_memory(&n)[0].message.contains("proprietary"));
        n.versions.nvidia_open_kernel_module = Some(true);
        n.versions.nvidia_driver = Some("470.82.01".into());
        assert!(no_peer_memory(&n)[0].message.contains("predates"));
    }

    #[test]
    fn unreadable_modules_are_unknown_not_missing() {
        let mut n = healthy_ib_node("a");
        n.modules.clear();
        n.warnings.push(fabrik_model::ProbeWarning {
            path: "/proc/modules".into(),
            message: "missing".into(),
        });
        let f = no_peer_memory(&n);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Info);
        assert!(f[0].message.contains("cannot tell"));
    }

    #[test]
    fn far_nics_fire_per_gpu() {
        let mut n = healthy_ib_node("a");
        assert!(far_nic(&n).is_empty());
        for p in n
            .gpu_nic_paths
            .iter_mut()
            .filter(|p| p.gpu == n.gpus[2].pci.address && p.path_type == Some(PathType::PIX))
        {
            p.path_type = Some(PathType::PHB);
        }
        let f = far_nic(&n);
        assert_eq!(f.len(), 1);
        assert!(f[0].message.contains("mlx5_2 at distance PHB"));
    }
}
