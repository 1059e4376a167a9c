//! A node's fabric as probing found it.
//!
//! Every fact that may be missing is an `Option`: `None` means "not found or not readable", and
//! the reason is in [`Node::warnings`]. Raw kernel texts are kept beside parsed values so that a
//! value fabrik does not know is reported as such rather than guessed.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

mod pci;

pub use pci::{Gpu, GpuNicPath, PathType, PciAer, PciBridge, PciFunction, PciLink};

/// Everything fabrik knows about one node's GPU networking.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Node {
    /// [`crate::SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// The root directory this was read from (`/` for the live machine).
    pub root: String,
    /// `/proc/sys/kernel/hostname`, else `/etc/hostname`, under the root.
    pub hostname: Option<String>,
    /// Kernel and distribution.
    pub os: OsInfo,
    /// Devices under `/sys/class/infiniband`.
    pub rdma_devices: Vec<RdmaDevice>,
    /// Interfaces under `/sys/class/net`.
    pub net_interfaces: Vec<NetInterface>,
    /// NVIDIA GPUs found on the PCI bus.
    pub gpus: Vec<Gpu>,
    /// GPU↔NIC distance for every pair of a GPU and an RDMA device (or, on nodes without RDMA, a
    /// PCI network interface).
    pub gpu_nic_paths: Vec<GpuNicPath>,
    /// Every network-class PCI function on the bus (class `0x02....`), whether or not a driver
    /// bound it: a NIC whose driver did not load appears only here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub network_functions: Vec<PciFunction>,
    /// PCIe bridges and switch ports between GPUs and NICs, with ACS state where `lspci -vvv` was
    /// captured.
    pub pci_bridges: Vec<PciBridge>,
    /// Kernel modules that matter to GPU networking, as listed in `/proc/modules`.
    pub modules: Vec<KernelModule>,
    /// Names under `/dev/infiniband` (`uverbs0`, `rdma_cm`, `umad0`...).
    pub dev_infiniband: Option<Vec<String>>,
    /// The locked-memory limit; `None` when not readable.
    pub memlock: Option<MemlockLimit>,
    /// The limits of the kernel's IPv4 neighbour (ARP) table; `None` when not readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub neighbour_limits: Option<NeighbourLimits>,
    /// The TCP buffer limits of the node's network namespace; `None` when not readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_buffers: Option<TcpBuffers>,
    /// IOMMU state from the kernel command line and `/sys/kernel/iommu_groups`.
    pub iommu: IommuInfo,
    /// Driver and library versions found.
    pub versions: Versions,
    /// Names of the command captures found under `ROOT/fabrik/cmd/` (`ibstat`, `mlnx_qos-eth2`...).
    pub command_captures: Vec<String>,
    /// Why a fact is unknown: unreadable or malformed files, never fatal.
    pub warnings: Vec<ProbeWarning>,
    /// Facts a health rule needs that this root could not give, and why: the check says so
    /// rather than passing in silence.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_read: Vec<NotRead>,
    /// NIC firmware settings (`mstconfig q`), where captured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nic_firmware: Vec<crate::NicFirmware>,
    /// Physical link quality of NIC ports (`mstlink`), where captured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub link_quality: Vec<crate::LinkQuality>,
    /// Pluggable modules of the network interfaces (`ethtool -m`), where captured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transceivers: Vec<crate::Transceiver>,
    /// Kernel log events that matter to GPU networking, where the log was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_log: Option<crate::KernelLog>,
    /// The InfiniBand fabric's links and checks (`iblinkinfo`, `ibdiagnet`), where captured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fabric: Option<crate::Fabric>,
    /// For a node assembled from pasted tool outputs, the kinds of fact it holds; `None` for a
    /// probed node, which holds them all (or a warning for each it could not read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub known: Option<std::collections::BTreeSet<crate::Fact>>,
}

/// A fact the probe could not read for one subject (a bridge's ACS, a netdev's PFC, a port's
/// IB MTU), with the reason (a tool missing or past its deadline, a file only root reads).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NotRead {
    /// `acs`, `pfc`, `ib_mtu`, `relaxed_ordering`.
    pub fact: String,
    /// The bridge, netdev or port it is about (`0000:16:02.0`, `eth2`, `mlx5_0:1`).
    pub subject: String,
    /// Why it is unknown.
    pub reason: String,
}

impl Node {
    /// The RDMA device named `name` (`mlx5_0`).
    pub fn rdma_device(&self, name: &str) -> Option<&RdmaDevice> {
        self.rdma_devices.iter().find(|d| d.name == name)
    }

    /// The network interface named `name` (`eth0`).
    pub fn net_interface(&self, name: &str) -> Option<&NetInterface> {
        self.net_interfaces.iter().find(|i| i.name == name)
    }

    /// Whether the node holds facts of this kind: always for a probed node, and for a node
    /// assembled from pastes when they gave it.
    pub fn knows(&self, fact: crate::Fact) -> bool {
        self.known.as_ref().is_none_or(|k| k.contains(&fact))
    }

    /// Whether kernel module `name` is loaded (listed in `/proc/modules`).
    pub fn has_module(&self, name: &str) -> bool {
        self.modules.iter().any(|m| m.name == name)
    }
}

/// Kernel and distribution of a node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OsInfo {
    /// The kernel release, e.g. `6.1.0-26-amd64`: `/proc/sys/kernel/osrelease`, else the release
    /// in `/proc/version`'s banner.
    pub kernel: Option<String>,
    /// `/proc/cmdline` as written.
    pub kernel_cmdline: Option<String>,
    /// `PRETTY_NAME` from `/etc/os-release`.
    pub distro: Option<String>,
    /// Whether the node looks like a virtual machine (DMI vendor, hypervisor CPU flag).
    pub virtualized: Option<bool>,
}

/// Versions of the drivers and libraries GPU networking depends on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Versions {
    /// From `/proc/driver/nvidia/version` or `/sys/module/nvidia/version`.
    pub nvidia_driver: Option<String>,
    /// `ofed_info -s` (`MLNX_OFED_LINUX-5.8-3.0.7.0:`) or `/sys/module/mlx5_core/version`.
    pub ofed: Option<String>,
    /// rdma-core / libibverbs package version where found.
    pub rdma_core: Option<String>,
    /// mlx5_core (or other NIC driver) module version.
    pub nic_driver: Option<String>,
    /// NCCL library version where a `libnccl.so.X.Y.Z` was found.
    pub nccl: Option<String>,
    /// Whether the loaded NVIDIA kernel module is the open one (`/proc/driver/nvidia/version`
    /// reads `Open Kernel Module`) rather than the proprietary `Kernel Module`; `None` when no
    /// NVIDIA driver version line was read. dma-buf GPUDirect RDMA needs the open module.
    #[serde(default)]
    pub nvidia_open_kernel_module: Option<bool>,
}

/// Why a fact could not be read: probing never fails on a missing or malformed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProbeWarning {
    /// The file or capture, as a path under the probed root.
    pub path: String,
    /// What went wrong.
    pub message: String,
}

/// A loaded kernel module (a line of `/proc/modules`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct KernelModule {
    /// Module name (`mlx5_ib`, `nvidia_peermem`).
    pub name: String,
    /// Reference count (third column of `/proc/modules`).
    pub refcount: Option<u32>,
    /// Version from `/sys/module/NAME/version` where the module exposes one.
    pub version: Option<String>,
}

/// The garbage-collection thresholds of the IPv4 neighbour table,
/// `/proc/sys/net/ipv4/neigh/default/gc_thresh{1,2,3}`: no collection below `gc_thresh1`,
/// entries older than 5 s collected above `gc_thresh2`, and no new entry past `gc_thresh3` (the
/// hard limit; the kernel logs `neighbour: arp_cache: neighbor table overflow!` and the peer
/// cannot be resolved). The kernel keeps one table for every network namespace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NeighbourLimits {
    /// `gc_thresh1` (kernel default 128).
    pub gc_thresh1: Option<u64>,
    /// `gc_thresh2` (kernel default 512).
    pub gc_thresh2: Option<u64>,
    /// `gc_thresh3` (kernel default 1024).
    pub gc_thresh3: Option<u64>,
}

/// `net.ipv4.tcp_rmem` and `net.ipv4.tcp_wmem`: the minimum, default and maximum bytes of a TCP
/// socket's receive and send buffers (the kernel's `Documentation/networking/ip-sysctl.rst`),
/// per network namespace. The maximum bounds what autotuning gives every connection NCCL's
/// bootstrap and socket transport open.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TcpBuffers {
    /// `tcp_rmem`: min, default, max.
    pub rmem: Option<[u64; 3]>,
    /// `tcp_wmem`: min, default, max.
    pub wmem: Option<[u64; 3]>,
}

/// `Max locked memory` from `/proc/self/limits` (or the captured limits of a snapshot).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MemlockLimit {
    /// `None` means unlimited.
    pub soft_bytes: Option<u64>,
    /// `None` means unlimited.
    pub hard_bytes: Option<u64>,
}

impl MemlockLimit {
    /// The `Max locked memory` line of `/proc/PID/limits` text (the kernel's `proc_pid_limits`
    /// prints soft then hard, each a number of bytes or `unlimited`); `None` when the line is
    /// missing or malformed.
    pub fn from_proc_limits(text: &str) -> Option<Self> {
        let line = text.lines().find(|l| l.starts_with("Max locked memory"))?;
        let rest = line.strip_prefix("Max locked memory")?;
        let mut w = rest.split_whitespace();
        let value = |s: Option<&str>| -> Option<Option<u64>> {
            match s? {
                "unlimited" => Some(None),
                n => n.parse().ok().map(Some),
            }
        };
        let soft = value(w.next())?;
        let hard = value(w.next())?;
        Some(MemlockLimit {
            soft_bytes: soft,
            hard_bytes: hard,
        })
    }

    /// Whether the soft limit is unlimited.
    pub fn is_unlimited(&self) -> bool {
        self.soft_bytes.is_none()
    }
}

/// Whether an IOMMU translates DMA, and how.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct IommuInfo {
    /// `intel_iommu=on`, `amd_iommu=on`, `iommu=pt`, `iommu.passthrough=1`... as on the cmdline.
    pub cmdline_flags: Vec<String>,
    /// Whether `/sys/kernel/iommu_groups` has groups (an IOMMU is active).
    pub groups_present: Option<bool>,
    /// Derived: an IOMMU is on (cmdline or groups).
    pub enabled: Option<bool>,
    /// Derived: passthrough mode (`iommu=pt`, `iommu.passthrough=1`).
    pub passthrough: Option<bool>,
}

/// An RDMA device (`/sys/class/infiniband/NAME`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RdmaDevice {
    /// `mlx5_0`, `rxe0`, `efa_0`.
    pub name: String,
    /// `/sys/class/infiniband/X/node_type`: `1: CA`.
    pub node_type: Option<String>,
    /// `node_guid`, as sysfs writes it.
    pub node_guid: Option<String>,
    /// `sys_image_guid`, as sysfs writes it.
    pub sys_image_guid: Option<String>,
    /// Firmware version (`fw_ver`).
    pub fw_ver: Option<String>,
    /// `hca_type` (`MT4123`).
    pub hca_type: Option<String>,
    /// `board_id` (`MT_0000000223`).
    pub board_id: Option<String>,
    /// The PCI function behind the device; `None` for software devices (`rxe`, `siw`).
    pub pci: Option<PciFunction>,
    /// The device's ports.
    pub ports: Vec<Port>,
}

impl RdmaDevice {
    /// AWS Elastic Fabric Adapter. NCCL's built-in IB transport cannot drive it (it needs the
    /// aws-ofi-nccl plugin). rdma-core 27+ renames EFA devices `rdmapBUSsSLOT` (`rdmap115s0` on
    /// p5), so the `efa_` name alone is not enough: the driver (`efa`), or Amazon's vendor id
    /// `0x1d0f` with an EFA device id (`0xefa0`, `0xefa1`...; Amazon's ENA is `0xec20`) tell.
    pub fn is_efa(&self) -> bool {
        self.name.starts_with("efa")
            || self.pci.as_ref().is_some_and(|p| {
                p.driver.as_deref() == Some("efa")
                    || (p
                        .vendor
                        .as_deref()
                        .is_some_and(|v| v.eq_ignore_ascii_case("0x1d0f"))
                        && p.device.as_deref().is_some_and(|d| {
                            d.get(..5).is_some_and(|h| h.eq_ignore_ascii_case("0xefa"))
                        }))
            })
    }

    /// iWARP devices (`node_type` `4: RNIC`; Intel's i40iw and irdma in iWARP mode, Chelsio's
    /// cxgb4, soft-iWARP): RDMA over TCP, which NCCL's IB transport (IB and RoCE only) cannot
    /// use. Older kernels print `InfiniBand` as their link layer and a made-up IB rate, so the
    /// node type (or a name only iWARP drivers use) is what tells.
    pub fn is_iwarp(&self) -> bool {
        self.node_type
            .as_deref()
            .is_some_and(|t| t.trim().starts_with("4:") || t.contains("RNIC"))
            || ["i40iw", "cxgb3", "cxgb4", "siw"]
                .iter()
                .any(|p| self.name.starts_with(p))
    }

    /// Soft-RoCE (`rxe`) and soft-iWARP (`siw`): software on top of a netdev, with no PCI
    /// function of their own and no hardware offload.
    pub fn is_software(&self) -> bool {
        self.name.starts_with("rxe") || self.name.starts_with("siw")
    }
}

/// One port of an RDMA device (`ports/N`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Port {
    /// Port number, from 1.
    pub number: u32,
    /// Logical state (`4: ACTIVE`).
    pub state: Option<StateValue>,
    /// Physical state (`5: LinkUp`).
    pub phys_state: Option<StateValue>,
    /// Signalling rate.
    pub rate: Option<LinkRate>,
    /// InfiniBand or Ethernet (RoCE).
    pub link_layer: Option<LinkLayer>,
    /// IB only: `0x12`.
    pub lid: Option<String>,
    /// IB only: the subnet manager's LID.
    pub sm_lid: Option<String>,
    /// Active MTU in bytes where exposed (sysfs does not; `ibv_devinfo -v` captures do).
    pub active_mtu: Option<u32>,
    /// Largest MTU the port supports, bytes, where exposed.
    pub max_mtu: Option<u32>,
    /// The netdev behind this port (from `gid_attrs/ndevs` or the device's `net/` directory).
    pub netdev: Option<String>,
    /// Non-empty GID table entries.
    pub gids: Vec<Gid>,
    /// `ports/N/counters/*`, raw values (`port_xmit_data` counts 4-byte words).
    pub counters: BTreeMap<String, u64>,
    /// `ports/N/hw_counters/*`.
    pub hw_counters: BTreeMap<String, u64>,
    /// The port GUID, where a tool printed it (`ibstat`'s `Port GUID`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guid: Option<String>,
}

/// A numbered state as sysfs writes it: `4: ACTIVE`, `5: LinkUp`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StateValue {
    /// The number, when the text has one.
    pub code: Option<u32>,
    /// The name after the number, or the whole text.
    pub name: String,
}

impl StateValue {
    /// Parses `4: ACTIVE`; a text without a number keeps it whole as the name.
    pub fn parse(raw: &str) -> Self {
        let raw = raw.trim();
        match raw.split_once(':') {
            Some((num, name)) => match num.trim().parse() {
                Ok(code) => StateValue {
                    code: Some(code),
                    name: name.trim().to_string(),
                },
                Err(_) => StateValue {
                    code: None,
                    name: raw.to_string(),
                },
            },
            None => StateValue {
                code: None,
                name: raw.to_string(),
            },
        }
    }

    /// The state read as a logical port state.
    pub fn port_state(&self) -> PortState {
        PortState::from_state(self)
    }

    /// The state read as a physical port state.
    pub fn phys_state(&self) -> PhysState {
        PhysState::from_state(self)
    }
}

/// Logical port state (IB spec; sysfs `state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PortState {
    /// 0: no state change.
    Nop,
    /// 1: down.
    Down,
    /// 2: initialising (no subnet manager has configured it yet).
    Init,
    /// 3: armed.
    Armed,
    /// 4: active.
    Active,
    /// 5: active, deferring.
    ActiveDefer,
    /// Any other value.
    Unknown,
}

impl PortState {
    fn from_state(s: &StateValue) -> Self {
        match s.code {
            Some(0) => PortState::Nop,
            Some(1) => PortState::Down,
            Some(2) => PortState::Init,
            Some(3) => PortState::Armed,
            Some(4) => PortState::Active,
            Some(5) => PortState::ActiveDefer,
            _ => match s.name.to_ascii_uppercase().as_str() {
                "DOWN" => PortState::Down,
                "INIT" => PortState::Init,
                "ARMED" => PortState::Armed,
                "ACTIVE" => PortState::Active,
                "ACTIVE_DEFER" => PortState::ActiveDefer,
                _ => PortState::Unknown,
            },
        }
    }
}

/// Physical port state (sysfs `phys_state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PhysState {
    /// 1: sleep.
    Sleep,
    /// 2: polling (no link partner).
    Polling,
    /// 3: disabled.
    Disabled,
    /// 4: link training.
    PortConfigurationTraining,
    /// 5: link up.
    LinkUp,
    /// 6: link error recovery.
    LinkErrorRecovery,
    /// 7: PHY test.
    PhyTest,
    /// Any other value.
    Unknown,
}

impl PhysState {
    fn from_state(s: &StateValue) -> Self {
        match s.code {
            Some(1) => PhysState::Sleep,
            Some(2) => PhysState::Polling,
            Some(3) => PhysState::Disabled,
            Some(4) => PhysState::PortConfigurationTraining,
            Some(5) => PhysState::LinkUp,
            Some(6) => PhysState::LinkErrorRecovery,
            Some(7) => PhysState::PhyTest,
            _ => match s.name.as_str() {
                "Sleep" => PhysState::Sleep,
                "Polling" => PhysState::Polling,
                "Disabled" => PhysState::Disabled,
                "PortConfigurationTraining" => PhysState::PortConfigurationTraining,
                "LinkUp" => PhysState::LinkUp,
                "LinkErrorRecovery" => PhysState::LinkErrorRecovery,
                "Phy Test" | "PhyTest" => PhysState::PhyTest,
                _ => PhysState::Unknown,
            },
        }
    }
}

/// `ports/N/rate`: `400 Gb/sec (4X NDR)`, `100 Gb/sec (2X HDR)`, `10 Gb/sec (1X QDR)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LinkRate {
    /// The kernel's text, kept whole.
    pub text: String,
    /// `None` when the number could not be read (the text is still reported).
    pub gbps: Option<f64>,
    /// Lane count from `4X`.
    pub width: Option<u32>,
    /// Lane speed name: `SDR`, `DDR`, `QDR`, `FDR10`, `FDR`, `EDR`, `HDR`, `NDR`, `XDR`.
    pub speed: Option<String>,
}

/// `ports/N/link_layer`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LinkLayer {
    /// `InfiniBand`.
    Infiniband,
    /// `Ethernet` (RoCE).
    Ethernet,
    /// A value this version of fabrik does not know, kept as written.
    Other(String),
}

impl LinkLayer {
    /// Reads sysfs' text; unknown values become [`LinkLayer::Other`].
    pub fn parse(raw: &str) -> Self {
        match raw.trim() {
            "InfiniBand" => LinkLayer::Infiniband,
            "Ethernet" => LinkLayer::Ethernet,
            other => LinkLayer::Other(other.to_string()),
        }
    }
}

/// One non-empty GID table slot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Gid {
    /// Slot number in the port's GID table.
    pub index: u32,
    /// As sysfs writes it: `fe80:0000:0000:0000:0000:5eff:fe00:0001`.
    pub gid: String,
    /// `gid_attrs/types/N`.
    pub gid_type: Option<GidType>,
    /// `gid_attrs/ndevs/N`.
    pub netdev: Option<String>,
    /// The IPv4 address encoded in an IPv4-mapped GID (`::ffff:a.b.c.d`), if any.
    pub ipv4: Option<String>,
}

/// A GID's RoCE version (`gid_attrs/types/N`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GidType {
    /// `IB/RoCE v1`
    IbRoceV1,
    /// `RoCE v2`
    RoceV2,
    /// A value this version of fabrik does not know, kept as written.
    Other(String),
}

impl GidType {
    /// Reads sysfs' text; unknown values become [`GidType::Other`].
    pub fn parse(raw: &str) -> Self {
        match raw.trim() {
            "IB/RoCE v1" => GidType::IbRoceV1,
            "RoCE v2" => GidType::RoceV2,
            other => GidType::Other(other.to_string()),
        }
    }
}

/// What kind of network interface a netdev is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NetKind {
    /// A physical (or SR-IOV) Ethernet port.
    Ethernet,
    /// IP over InfiniBand.
    Ipoib,
    /// `lo`.
    Loopback,
    /// A Linux bridge.
    Bridge,
    /// veth, bond, macvlan, tun, docker0-like software devices.
    Virtual,
    /// Anything not recognised.
    #[default]
    Unknown,
}

/// A network interface (`/sys/class/net/NAME`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NetInterface {
    /// Interface name (`eth0`, `ib0`).
    pub name: String,
    /// What kind of interface it is.
    pub kind: NetKind,
    /// MTU in bytes.
    pub mtu: Option<u32>,
    /// `up`, `down`, `unknown`, `lowerlayerdown`... as the kernel writes it.
    pub operstate: Option<String>,
    /// Mb/s; `None` when the kernel reports -1 or nothing.
    pub speed_mbps: Option<u64>,
    /// Hardware address, as the kernel writes it.
    pub mac: Option<String>,
    /// CIDR notation, `10.0.0.5/24`.
    pub ipv4: Vec<String>,
    /// IPv6 addresses in CIDR notation.
    pub ipv6: Vec<String>,
    /// Bound kernel driver.
    pub driver: Option<String>,
    /// The PCI function behind it; `None` for software devices.
    pub pci: Option<PciFunction>,
    /// The RDMA device whose port uses this netdev (RoCE, IPoIB).
    pub rdma_device: Option<String>,
    /// Whether the default route leaves through this interface.
    pub default_route: bool,
    /// mlx5 RoCE ECN switches, where the device has them.
    pub ecn: Option<RoceEcn>,
    /// Priority flow control, where `mlnx_qos` was captured.
    pub pfc: Option<Pfc>,
    /// `statistics/*`.
    pub statistics: BTreeMap<String, u64>,
    /// Link settings as `ethtool IF` prints them, where captured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_settings: Option<crate::EthLinkSettings>,
    /// The NIC's own statistics (`ethtool -S IF`: physical-layer errors, per-priority pause
    /// frames), where captured.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub nic_stats: BTreeMap<String, u64>,
}

impl NetInterface {
    /// An interface known by its name and kind alone, every other fact unknown.
    pub fn new(name: impl Into<String>, kind: NetKind) -> Self {
        NetInterface {
            name: name.into(),
            kind,
            mtu: None,
            operstate: None,
            speed_mbps: None,
            mac: None,
            ipv4: vec![],
            ipv6: vec![],
            driver: None,
            pci: None,
            rdma_device: None,
            default_route: false,
            ecn: None,
            pfc: None,
            statistics: BTreeMap::new(),
            link_settings: None,
            nic_stats: BTreeMap::new(),
        }
    }
}

/// mlx5 RoCE ECN switches: `ecn/roce_np/enable/P` and `ecn/roce_rp/enable/P` for priority P.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RoceEcn {
    /// Notification point (receiver) ECN, by priority.
    pub np_enabled: BTreeMap<u8, bool>,
    /// Reaction point (sender) ECN, by priority.
    pub rp_enabled: BTreeMap<u8, bool>,
}

/// Priority flow control as `mlnx_qos -i IF` prints it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Pfc {
    /// Priorities 0..=7 with PFC enabled.
    pub enabled_priorities: Vec<u8>,
    /// `pcp` or `dscp`.
    pub trust: Option<String>,
    /// Where this was read.
    pub source: String,
}

#[cfg(test)]
mod tests;
