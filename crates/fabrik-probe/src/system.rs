//! Host facts: OS, kernel modules, `/dev/infiniband`, memlock, the neighbour table, IOMMU,
//! versions.

use fabrik_model::{
    IommuInfo, KernelModule, MemlockLimit, NeighbourLimits, OsInfo, TcpBuffers, Versions,
};

use crate::captures::Captures;
use crate::fs::{join, RootFs};
use fabrik_parse::formats::{
    Format, IommuCmdline, NvidiaVersion, OfedInfo, OsRelease, ProcLimits, ProcModules, ProcVersion,
    SysctlTriple,
};

/// Modules that decide whether GPU networking works (RDMA core and drivers, GPUDirect).
pub const MODULES_THAT_MATTER: &[&str] = &[
    "nvidia",
    "nvidia_peermem",
    "nv_peer_mem",
    "nvidia_uvm",
    "gdrdrv",
    "ib_core",
    "ib_uverbs",
    "ib_umad",
    "ib_ipoib",
    "rdma_cm",
    "rdma_ucm",
    "mlx5_core",
    "mlx5_ib",
    "mlx4_core",
    "mlx4_ib",
    "rdma_rxe",
    "siw",
    "efa",
    "irdma",
    "bnxt_re",
    "qedr",
    "gve",
    "ena",
];

/// `/proc/sys/kernel/hostname`, else `/etc/hostname`; `None` when neither has a name.
pub fn hostname(fs: &mut RootFs) -> Option<String> {
    fs.attr_opt("/proc/sys/kernel/hostname")
        .or_else(|| fs.attr_opt("/etc/hostname"))
        .filter(|s| !s.is_empty())
}

/// This machine's host name: [`hostname`] of the live root (its UTS namespace's where one is
/// set), else `$HOSTNAME`, else `localhost`.
pub fn this_host() -> String {
    RootFs::new(std::path::Path::new("/"))
        .ok()
        .and_then(|mut fs| hostname(&mut fs))
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into())
}

/// Kernel release, command line, distribution and whether the node looks virtualised.
pub fn os_info(fs: &mut RootFs) -> OsInfo {
    let distro = fs
        .text_opt("/etc/os-release")
        .or_else(|| fs.text_opt("/usr/lib/os-release"))
        .and_then(|t| OsRelease::parse(&t))
        .and_then(|m| m.get("PRETTY_NAME").cloned());
    OsInfo {
        kernel: kernel_release(fs),
        kernel_cmdline: fs.attr("/proc/cmdline"),
        distro,
        virtualized: virtualized(fs),
    }
}

/// The kernel release from every source the root has: `/proc/sys/kernel/osrelease`, then the
/// banner in `/proc/version` (a snapshot or a container's `/proc` may hold only one of them).
/// Both are read when both exist, so a snapshot keeps both; when they disagree the release file
/// wins, with a warning.
fn kernel_release(fs: &mut RootFs) -> Option<String> {
    let osrelease = fs.attr_opt("/proc/sys/kernel/osrelease");
    let banner = fs.text_opt("/proc/version");
    let from_banner = banner.as_deref().and_then(ProcVersion::parse);
    if banner.is_some() && from_banner.is_none() {
        fs.warn("/proc/version", "no `Linux version RELEASE` banner");
    }
    match (osrelease, from_banner) {
        (Some(r), Some(b)) if r != b => {
            fs.warn(
                "/proc/version",
                format!("names kernel {b} where /proc/sys/kernel/osrelease says {r}"),
            );
            Some(r)
        }
        (Some(r), _) => Some(r),
        (None, Some(b)) => Some(b),
        // Neither: said as it always was, about the release file.
        (None, None) => fs.attr("/proc/sys/kernel/osrelease"),
    }
}

/// A hypervisor CPU flag, or a DMI vendor/product that names one. `None` when neither source
/// can tell (no x86 flags line and no DMI).
fn virtualized(fs: &mut RootFs) -> Option<bool> {
    let flags = fs.text_opt("/proc/cpuinfo").and_then(|t| {
        t.lines()
            .find(|l| l.starts_with("flags"))
            .map(|l| l.split_whitespace().any(|w| w == "hypervisor"))
    });
    if flags == Some(true) {
        return Some(true);
    }
    let dmi: Vec<String> = ["sys_vendor", "product_name"]
        .iter()
        .filter_map(|f| fs.attr_opt(&format!("/sys/class/dmi/id/{f}")))
        .collect();
    const VM_NAMES: &[&str] = &[
        "QEMU",
        "KVM",
        "VMware",
        "VirtualBox",
        "Xen",
        "Google Compute Engine",
        "Amazon EC2",
        "Virtual Machine",
        "OpenStack",
        "Firecracker",
    ];
    if dmi.iter().any(|d| VM_NAMES.iter().any(|v| d.contains(v))) {
        return Some(true);
    }
    flags
}

/// Loaded modules that matter to GPU networking, from `/proc/modules`.
pub fn modules(fs: &mut RootFs) -> Vec<KernelModule> {
    let Some(text) = fs.attr("/proc/modules") else {
        return Vec::new();
    };
    ProcModules::parse(&text)
        .unwrap_or_default()
        .into_iter()
        .filter(|(name, _)| MODULES_THAT_MATTER.contains(&name.as_str()))
        .map(|(name, refcount)| KernelModule {
            version: fs.attr_opt(&format!("/sys/module/{name}/version")),
            name,
            refcount,
        })
        .collect()
}

/// Names under `/dev/infiniband`; `None` when it does not exist. A root with no `/dev` at all
/// (a tree copied from sysfs alone) cannot tell, which is warned about when RDMA devices exist so
/// that "absent" is not read as "the container lacks the device nodes". Checking `/dev` also
/// records it, so a snapshot of a host without `/dev/infiniband` keeps an empty `/dev`.
pub fn dev_infiniband(fs: &mut RootFs, have_rdma: bool) -> Option<Vec<String>> {
    match fs.list("/dev/infiniband") {
        Ok(v) => Some(v),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if !fs.exists("/dev") && have_rdma {
                fs.warn("/dev", "missing: the root holds no device nodes");
            }
            None
        }
        Err(e) => {
            fs.warn("/dev/infiniband", format!("unreadable: {e}"));
            None
        }
    }
}

/// The `Max locked memory` line of `/proc/self/limits`; a missing or malformed line is `None` with a warning.
pub fn memlock(fs: &mut RootFs) -> Option<MemlockLimit> {
    let path = "/proc/self/limits";
    let text = fs.attr(path)?;
    let m = ProcLimits::parse(&text);
    if m.is_none() {
        fs.warn(path, "no readable `Max locked memory` line");
    }
    m
}

/// The IPv4 neighbour table's thresholds; `None` when none of the three files is readable
/// (absent is normal in a root without `/proc/sys`, so no warning).
pub fn neighbour_limits(fs: &mut RootFs) -> Option<NeighbourLimits> {
    let mut read = |n: u8| {
        fs.attr_opt(&format!("/proc/sys/net/ipv4/neigh/default/gc_thresh{n}"))
            .and_then(|t| t.trim().parse::<u64>().ok())
    };
    let l = NeighbourLimits {
        gc_thresh1: read(1),
        gc_thresh2: read(2),
        gc_thresh3: read(3),
    };
    (l != NeighbourLimits::default()).then_some(l)
}

/// The TCP buffer limits (`net.ipv4.tcp_rmem`, `tcp_wmem`); `None` when neither is readable
/// (a root without `/proc/sys`). Read in the namespace the probe runs in, as NCCL's sockets get
/// them.
pub fn tcp_buffers(fs: &mut RootFs) -> Option<TcpBuffers> {
    let mut read = |name: &str| {
        let path = format!("/proc/sys/net/ipv4/{name}");
        let text = fs.attr_opt(&path)?;
        let v = SysctlTriple::parse(&text);
        if v.is_none() {
            fs.warn(&path, "not three numbers (min default max)");
        }
        v
    };
    let b = TcpBuffers {
        rmem: read("tcp_rmem"),
        wmem: read("tcp_wmem"),
    };
    (b != TcpBuffers::default()).then_some(b)
}

/// IOMMU state from `cmdline` (the kernel command line) and `/sys/kernel/iommu_groups`.
pub fn iommu(fs: &mut RootFs, cmdline: Option<&str>) -> IommuInfo {
    let cmdline_flags = cmdline.and_then(IommuCmdline::parse).unwrap_or_default();
    let groups_dir = "/sys/kernel/iommu_groups";
    let groups = fs.exists(groups_dir).then(|| fs.list_opt(groups_dir));
    let groups_present = groups.as_ref().map(|g| !g.is_empty());
    // A group's `type` says what the kernel really does: `identity` is passthrough.
    let group_type = groups
        .as_ref()
        .and_then(|g| {
            let mut nums: Vec<u64> = g.iter().filter_map(|n| n.parse().ok()).collect();
            nums.sort_unstable();
            nums.first().copied()
        })
        .and_then(|n| fs.attr_opt(&join(groups_dir, &format!("{n}/type"))));
    let has = |f: &str| cmdline_flags.iter().any(|x| x == f);
    let off = has("intel_iommu=off") || has("amd_iommu=off") || has("iommu=off");
    let enabled = if groups_present == Some(true) {
        Some(true)
    } else if off {
        Some(false)
    } else if has("intel_iommu=on") || has("amd_iommu=on") {
        Some(true)
    } else {
        groups_present
    };
    let passthrough = match group_type.as_deref() {
        Some("identity") => Some(true),
        Some(t) if t.starts_with("DMA") => Some(false),
        _ if has("iommu=pt") || has("iommu.passthrough=1") => Some(true),
        _ if has("iommu=nopt") || has("iommu.passthrough=0") => Some(false),
        _ => None,
    };
    IommuInfo {
        cmdline_flags,
        groups_present,
        enabled,
        passthrough,
    }
}

/// Driver and library versions from `/proc`, `/sys/module` and the captures.
pub fn versions(fs: &mut RootFs, caps: &Captures) -> Versions {
    let version_file = fs.text_opt("/proc/driver/nvidia/version");
    let version = version_file.as_deref().and_then(NvidiaVersion::parse);
    let nvidia_open_kernel_module = version.as_ref().and_then(|v| v.open_module);
    let nvidia_driver = version
        .and_then(|v| v.version)
        .or_else(|| fs.attr_opt("/sys/module/nvidia/version"));
    let ofed = caps.get("ofed_info-s").and_then(OfedInfo::parse);
    let nic_driver = fs
        .attr_opt("/sys/module/mlx5_core/version")
        .map(|v| format!("mlx5_core {v}"));
    Versions {
        nvidia_driver,
        ofed,
        rdma_core: None,
        nic_driver,
        nccl: None,
        nvidia_open_kernel_module,
    }
}

/// Whether the machine has exactly one NUMA node online (`/sys/devices/system/node/online` reads
/// `0`). Unknown counts as no.
pub fn single_numa_node(fs: &mut RootFs) -> bool {
    fs.attr_opt("/sys/devices/system/node/online")
        .is_some_and(|s| s.trim() == "0")
}
