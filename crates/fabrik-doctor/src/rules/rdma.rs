//! RDMA presence and the host settings verbs need: device nodes, memlock, SR-IOV.

use fabrik_model::{Finding, Node, Severity};

use crate::rules::cloud::looks_like_gcp_a3;
use crate::socket;
use crate::util::*;

/// Rule id of "No RDMA device present".
pub const NO_RDMA: &str = "FAB-RDMA-001";
/// Rule id of "RDMA devices without /dev/infiniband/uverbs*".
pub const NO_UVERBS: &str = "FAB-RDMA-002";
/// Rule id of "Locked-memory limit not unlimited with RDMA present".
pub const MEMLOCK: &str = "FAB-RDMA-003";
/// Rule id of "SR-IOV virtual function: relaxed ordering matters".
pub const SRIOV_VF: &str = "FAB-RDMA-004";
/// Rule id of "RDMA hardware on the PCI bus without a working RDMA stack".
pub const NO_STACK: &str = "FAB-RDMA-005";

/// Whether a PCI function is a NIC made for RDMA: every NVIDIA/Mellanox ConnectX or BlueField
/// network function (vendor `0x15b3`), and AWS EFA (`0x1d0f`, device `0xefa*`). Other vendors'
/// NICs (Intel E810, Broadcom) serve as plain Ethernet on GPU nodes often enough that a missing
/// RDMA driver there is no fault.
fn made_for_rdma(pci: &fabrik_model::PciFunction) -> Option<(&'static str, &'static str)> {
    let vendor = pci.vendor.as_deref()?.to_ascii_lowercase();
    let device = pci
        .device
        .as_deref()
        .unwrap_or_default()
        .to_ascii_lowercase();
    match vendor.as_str() {
        "0x15b3" => Some(("mlx5_core", "mlx5_ib")),
        "0x1d0f" if device.starts_with("0xefa") => Some(("efa", "efa")),
        _ => None,
    }
}

/// Rule [`NO_STACK`]: "RDMA hardware on the PCI bus without a working RDMA stack". A ConnectX
/// (or EFA) function with no RDMA device behind it: its driver did not bind, or the RDMA half
/// of the driver (`mlx5_ib`) is not loaded. Functions bound to `vfio-pci` (passed to a VM),
/// unbound SR-IOV virtual functions (made for VMs), and the second function of a bonded card
/// (one `mlx5_bond_N` device serves both) are left alone. An error on a GPU node, whose NICs
/// are there to carry NCCL's traffic; a warning elsewhere.
pub fn no_stack(node: &Node) -> Vec<Finding> {
    let with_rdma: Vec<&str> = node
        .rdma_devices
        .iter()
        .filter_map(|d| d.pci.as_ref().map(|p| p.address.as_str()))
        .collect();
    let slot = |a: &str| {
        a.rsplit_once('.')
            .map_or(a.to_string(), |(s, _)| s.to_string())
    };
    let bonded: Vec<String> = node
        .rdma_devices
        .iter()
        .filter(|d| d.name.contains("bond"))
        .filter_map(|d| d.pci.as_ref().map(|p| slot(&p.address)))
        .collect();
    let mut out = vec![];
    let mut functions: Vec<_> = node.network_functions.iter().collect();
    functions.sort_by(|a, b| a.address.cmp(&b.address));
    for f in functions {
        let Some((core, ib)) = made_for_rdma(f) else {
            continue;
        };
        if with_rdma.contains(&f.address.as_str())
            || bonded.contains(&slot(&f.address))
            || f.driver.as_deref() == Some("vfio-pci")
            || (f.physfn.is_some() && f.driver.is_none())
        {
            continue;
        }
        let netdevs: Vec<&str> = node
            .net_interfaces
            .iter()
            .filter(|n| n.pci.as_ref().is_some_and(|p| p.address == f.address))
            .map(|n| n.name.as_str())
            .collect();
        let (what, fix) = match f.driver.as_deref() {
            None => (
                format!("no driver is bound to it, so it has neither a netdev nor an RDMA device (`{core}` not loaded, or it failed to probe the card)"),
                format!("`modprobe {core}` and `modprobe {ib}`; if it is loaded, `dmesg | grep {core}` tells why it refused the card (firmware, PCIe errors)."),
            ),
            Some(d) => (
                format!("its driver `{d}` gave it {} but no RDMA device: the RDMA driver (`{ib}`) is not loaded or failed", if netdevs.is_empty() { "no netdev".to_string() } else { format!("netdev {}", netdevs.join(", ")) }),
                format!("`modprobe {ib}` (and `ib_uverbs`), then check /sys/class/infiniband; load them at boot (`/etc/modules-load.d/`)."),
            ),
        };
        let modules: Vec<&str> = node.modules.iter().map(|m| m.name.as_str()).collect();
        let severity = if node.gpus.is_empty() {
            Severity::Warning
        } else {
            Severity::Error
        };
        out.push(finding(
            NO_STACK,
            severity,
            format!("pci {}", f.address),
            format!(
                "RDMA NIC {} ({} {}) is on the PCI bus but {what}: NCCL cannot use it and falls back to the other NICs or to TCP sockets",
                f.address,
                f.vendor.as_deref().unwrap_or("?"),
                f.device.as_deref().unwrap_or("?"),
            ),
            vec![
                ev(pci_path(&f.address, "driver"), f.driver.clone().unwrap_or_else(|| "no driver bound".into())),
                ev("/sys/class/infiniband", format!("no device on {}", f.address)),
                ev("/proc/modules", if modules.is_empty() { "not read".to_string() } else { modules.join(" ") }),
            ],
            fix,
        ));
    }
    out
}

/// Rule [`NO_RDMA`]: "No RDMA device present".
pub fn no_rdma(node: &Node) -> Vec<Finding> {
    if !node.rdma_devices.is_empty() {
        return vec![];
    }
    let gpus = node.gpus.len();
    let socket_note = match socket::default_choice(node) {
        Some(c) => format!(
            "; NCCL would carry inter-node traffic over its socket transport on {}",
            c.interfaces
                .iter()
                .map(|i| i.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None => "; NCCL would fall back to its socket transport, and no usable interface was found for it".to_string(),
    };
    let (severity, message) = if looks_like_gcp_a3(node) {
        (
            Severity::Info,
            format!("no RDMA device present, as expected on a GCP A3-like VM (GPUDirect-TCPX replaces RDMA there, see FAB-CLOUD-001){socket_note}"),
        )
    } else if gpus >= 2 {
        (
            Severity::Warning,
            format!("{} but no RDMA device present (nothing under /sys/class/infiniband){socket_note}: multi-node training will be limited by TCP", plural(gpus, "GPU", "GPUs")),
        )
    } else {
        (
            Severity::Info,
            format!("no RDMA device present (nothing under /sys/class/infiniband){socket_note}"),
        )
    };
    vec![finding(
        NO_RDMA,
        severity,
        "node",
        message,
        vec![
            ev("/sys/class/infiniband", "no devices"),
            ev("/sys/bus/pci/devices (class 0x03, vendor 0x10de)", plural(gpus, "GPU", "GPUs")),
        ],
        "For multi-node GPU training attach InfiniBand or RoCE NICs (and load mlx5_ib/ib_uverbs), or on clouds use the platform's fabric (EFA with aws-ofi-nccl, GPUDirect-TCPX/TCPXO on GCP). Without them, set NCCL_SOCKET_IFNAME to the fastest interface and expect TCP bandwidth.",
    )]
}

/// Rule [`NO_UVERBS`]: "RDMA devices without /dev/infiniband/uverbs*".
pub fn no_uverbs(node: &Node) -> Vec<Finding> {
    if node.rdma_devices.is_empty() {
        return vec![];
    }
    let names = node.dev_infiniband.clone().unwrap_or_default();
    if names.iter().any(|n| n.starts_with("uverbs")) {
        return vec![];
    }
    if node.dev_infiniband.is_none() && unread(node, "/dev") {
        return vec![finding(
            NO_UVERBS,
            Severity::Info,
            "node",
            "this root holds no /dev (a tree copied from sysfs alone), so fabrik cannot tell whether the /dev/infiniband/uverbs* device nodes exist",
            vec![ev("/dev", "missing")],
            "Check with `ls /dev/infiniband` on the node or in the container, or take the snapshot with `fabrik snapshot`, which keeps /dev/infiniband.",
        )];
    }
    let seen = match &node.dev_infiniband {
        None => "absent".to_string(),
        Some(v) if v.is_empty() => "empty".to_string(),
        Some(v) => v.join(" "),
    };
    vec![finding(
        NO_UVERBS,
        Severity::Error,
        "node",
        format!(
            "{} in sysfs but no /dev/infiniband/uverbs* device node: user-space verbs (NCCL, perftest) cannot open them. This is what a container started without the RDMA devices looks like, or ib_uverbs is not loaded",
            plural(node.rdma_devices.len(), "RDMA device", "RDMA devices")
        ),
        vec![
            ev("/dev/infiniband", seen),
            ev("/sys/class/infiniband", devices(node).iter().map(|d| d.name.as_str()).collect::<Vec<_>>().join(" ")),
        ],
        "On the host: `modprobe ib_uverbs`. In Docker: `--device=/dev/infiniband` (plus `--cap-add=IPC_LOCK`); in Kubernetes: the RDMA shared device plugin or SR-IOV network operator resource (e.g. `rdma/rdma_shared_device_a: 1`).",
    )]
}

/// 1 PiB: more than any node's memory.
const EFFECTIVELY_UNLIMITED: u64 = 1 << 50;

/// Rule [`MEMLOCK`]: "Locked-memory limit not unlimited with RDMA present".
pub fn memlock(node: &Node) -> Vec<Finding> {
    if node.rdma_devices.is_empty() {
        return vec![];
    }
    let Some(limit) = &node.memlock else {
        return vec![];
    };
    // A limit past any machine's memory never fails a registration: real hosts show
    // 18446744073708503040 (2^64 - 1 MiB; prometheus/procfs's fixtures) where a tool wrote a
    // huge number instead of `infinity`.
    if limit.is_unlimited() || limit.soft_bytes.is_some_and(|b| b >= EFFECTIVELY_UNLIMITED) {
        return vec![];
    }
    let show = |b: Option<u64>| {
        b.map(|v| v.to_string())
            .unwrap_or_else(|| "unlimited".into())
    };
    vec![finding(
        MEMLOCK,
        Severity::Warning,
        "node",
        format!(
            "max locked memory is limited ({} bytes soft) while RDMA devices are present: memory registration (ibv_reg_mr) fails once NCCL's buffers exceed it (`NCCL WARN Call to ibv_reg_mr failed ... Cannot allocate memory`). The limit read is fabrik's own process's; check the job's too",
            show(limit.soft_bytes)
        ),
        vec![ev(
            "/proc/self/limits",
            format!("Max locked memory {} {} bytes", show(limit.soft_bytes), show(limit.hard_bytes)),
        )],
        "Set `* soft memlock unlimited` and `* hard memlock unlimited` in /etc/security/limits.conf (log in again); for systemd services `LimitMEMLOCK=infinity`; for Slurm `PropagateResourceLimits`; for Docker `--ulimit memlock=-1:-1`.",
    )]
}

/// Rule [`SRIOV_VF`]: "SR-IOV virtual function: relaxed ordering matters".
pub fn sriov_vf(node: &Node) -> Vec<Finding> {
    let mut out = vec![];
    for dev in devices(node) {
        let Some(pci) = &dev.pci else { continue };
        let Some(pf) = &pci.physfn else { continue };
        let severity = if node.gpus.is_empty() {
            Severity::Info
        } else {
            Severity::Warning
        };
        out.push(finding(
            SRIOV_VF,
            severity,
            dev.name.clone(),
            format!(
                "{} is an SR-IOV virtual function (physical function {pf}): in a VM, GPUDirect RDMA writes into GPU memory can run far below line rate unless memory is registered with relaxed ordering (one report: 84 Gb/s from cudaMalloc memory vs ~400 Gb/s with IBV_ACCESS_RELAXED_ORDERING on a ConnectX-7 VF)",
                dev.name
            ),
            vec![ev(pci_path(&pci.address, "physfn"), pf.clone())],
            "NCCL's own IB transport registers with relaxed ordering when the device supports it (NCCL_IB_PCI_RELAXED_ORDERING, default 2 = auto; set 1 to require it). Custom net plugins and verbs code must pass IBV_ACCESS_RELAXED_ORDERING to ibv_reg_mr. Ask the hypervisor owner to enable ATS on the NIC and an ACS setup that allows it.",
        ));
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::testkit::*;
    use fabrik_model::MemlockLimit;

    #[test]
    fn bare_node_explains_no_rdma_and_the_socket_interface() {
        let f = no_rdma(&bare_node());
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Info);
        assert!(f[0].message.contains("no RDMA device present"));
        assert!(f[0].message.contains("socket transport on eth0"));
    }

    #[test]
    fn multi_gpu_without_rdma_warns() {
        let mut n = healthy_ib_node("a");
        n.rdma_devices.clear();
        let f = no_rdma(&n);
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0].message.starts_with("8 GPUs"));
        assert!(no_rdma(&healthy_ib_node("a")).is_empty());
    }

    #[test]
    fn missing_uverbs_fires_only_with_rdma() {
        let mut n = healthy_ib_node("a");
        assert!(no_uverbs(&n).is_empty());
        n.dev_infiniband = Some(vec!["rdma_cm".into()]);
        let f = no_uverbs(&n);
        assert_eq!(f[0].severity, Severity::Error);
        assert_eq!(f[0].evidence[0].value, "rdma_cm");
        n.dev_infiniband = None;
        assert_eq!(no_uverbs(&n)[0].evidence[0].value, "absent");
        n.warnings.push(fabrik_model::ProbeWarning {
            path: "/dev".into(),
            message: "missing".into(),
        });
        assert_eq!(
            no_uverbs(&n)[0].severity,
            Severity::Info,
            "unknown, not absent"
        );
        assert!(no_uverbs(&bare_node()).is_empty());
    }

    #[test]
    fn a_limit_past_any_memory_is_unlimited() {
        let mut n = healthy_ib_node("a");
        n.memlock = Some(MemlockLimit {
            soft_bytes: Some(18446744073708503040),
            hard_bytes: Some(18446744073708503040),
        });
        assert!(memlock(&n).is_empty());
        n.memlock = Some(MemlockLimit {
            soft_bytes: Some(65536),
            hard_bytes: Some(65536),
        });
        assert_eq!(memlock(&n).len(), 1);
    }

    #[test]
    fn limited_memlock_fires_only_with_rdma() {
        let mut n = healthy_ib_node("a");
        assert!(memlock(&n).is_empty());
        n.memlock = Some(MemlockLimit {
            soft_bytes: Some(8388608),
            hard_bytes: Some(8388608),
        });
        let f = memlock(&n);
        assert_eq!(f.len(), 1);
        assert!(f[0].evidence[0].value.contains("8388608"));
        assert!(memlock(&bare_node()).is_empty());
    }

    #[test]
    fn a_connectx_without_its_rdma_device_fails_a_gpu_node() {
        let mut n = healthy_ib_node("a");
        n.network_functions = n
            .rdma_devices
            .iter()
            .map(|d| d.pci.clone().unwrap())
            .collect();
        assert!(no_stack(&n).is_empty(), "every function has its device");
        // mlx5_ib did not load for one card: the device is gone, the netdev stays.
        let lost = n.rdma_devices.remove(3);
        let addr = lost.pci.as_ref().unwrap().address.clone();
        let f = no_stack(&n);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].rule, NO_STACK);
        assert_eq!(f[0].severity, Severity::Error);
        assert_eq!(f[0].subject, format!("pci {addr}"));
        assert!(f[0].fix.contains("mlx5_ib"), "{}", f[0].fix);
        // No driver at all: the fix names mlx5_core.
        let func = n
            .network_functions
            .iter_mut()
            .find(|p| p.address == addr)
            .unwrap();
        func.driver = None;
        assert!(no_stack(&n)[0].fix.contains("modprobe mlx5_core"));
        // Without GPUs a warning; passed to a VM, or an unbound VF on a host: nothing.
        let mut storage = n.clone();
        storage.gpus.clear();
        assert_eq!(no_stack(&storage)[0].severity, Severity::Warning);
        let mut vm = n.clone();
        let f = vm
            .network_functions
            .iter_mut()
            .find(|p| p.address == addr)
            .unwrap();
        f.driver = Some("vfio-pci".into());
        assert!(no_stack(&vm).is_empty());
        let mut vf = n.clone();
        let f = vf
            .network_functions
            .iter_mut()
            .find(|p| p.address == addr)
            .unwrap();
        f.physfn = Some("0000:17:00.0".into());
        assert!(no_stack(&vf).is_empty());
        // An Intel E810 without irdma is a plain Ethernet NIC: nothing.
        let mut intel = n.clone();
        for f in &mut intel.network_functions {
            f.vendor = Some("0x8086".into());
        }
        assert!(no_stack(&intel).is_empty());
    }

    #[test]
    fn a_vf_recommends_relaxed_ordering() {
        let mut n = healthy_ib_node("a");
        assert!(sriov_vf(&n).is_empty());
        n.rdma_devices[0].pci.as_mut().unwrap().physfn = Some("0000:17:00.0".into());
        let f = sriov_vf(&n);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0].fix.contains("IBV_ACCESS_RELAXED_ORDERING"));
    }
}
