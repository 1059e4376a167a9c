//! Facts below a port's state: a NIC's firmware settings, the physical quality of its link and
//! module, Ethernet link settings and NIC statistics, kernel log events, NVLink and the
//! InfiniBand fabric's own links. Each is read from a tool's output (`mstconfig q`, `mstlink`,
//! `ethtool`, `dmesg`, `nvidia-smi nvlink -s`, `iblinkinfo`, `ibdiagnet`), captured or pasted.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One firmware setting as `mstconfig q` prints it: `False(0)`, `per_mkey(0)`, `8`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FirmwareSetting {
    /// The value the device takes at its next boot (`Next Boot`, the column every query has).
    pub next_boot: String,
    /// The value in force now (`Current`, with `mstconfig -e q`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<String>,
    /// The factory default (`Default`, with `mstconfig -e q`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

impl FirmwareSetting {
    /// The value in force: `Current` where shown, else `Next Boot` (what older tools label
    /// `Current`).
    pub fn effective(&self) -> &str {
        self.current.as_deref().unwrap_or(&self.next_boot)
    }
}

/// A NIC's non-volatile firmware configuration (`mstconfig -d DEV q`, `mlxconfig`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NicFirmware {
    /// The device as the tool names it (`3b:00.0`, `/dev/mst/mt4123_pciconf0`).
    pub device: String,
    /// Its PCI address, when the device is given as one.
    pub pci: Option<String>,
    /// `Device type:` (`ConnectX6`).
    pub device_type: Option<String>,
    /// `Name:`, the board part number (`MCX653105A-HDA_Ax`).
    pub part: Option<String>,
    /// Settings by name (`PCI_WR_ORDERING`, `ATS_ENABLED`, `LINK_TYPE_P1`...).
    pub settings: BTreeMap<String, FirmwareSetting>,
}

/// The pluggable module (transceiver or cable) of a port, as `mstlink -m` prints it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TransceiverModule {
    /// `Cable Type` (`Optical Module (separated)`, `Passive copper cable`).
    pub cable_type: Option<String>,
    /// `Vendor Name`.
    pub vendor: Option<String>,
    /// `Vendor Part Number`.
    pub part_number: Option<String>,
    /// `Vendor Serial Number`.
    pub serial: Option<String>,
    /// `Temperature [C]`.
    pub temperature_c: Option<f64>,
    /// The module's own alarm range for its temperature (`[-5..75]`), where printed.
    pub temperature_range_c: Option<(f64, f64)>,
}

/// A port's physical link as `mstlink`/`mlxlink` reports it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LinkQuality {
    /// The device as the tool names it (`mlx5_0`, `/dev/mst/mt4129_pciconf0`, `3b:00.0`).
    pub device: String,
    /// `State` of the physical layer manager (`Active`, `Polling`, `Disable`).
    pub state: Option<String>,
    /// `Physical state` (`LinkUp`, `ETH_AN_FSM_ENABLE`).
    pub physical_state: Option<String>,
    /// `Speed` (`IB-NDR`, `100G`).
    pub speed: Option<String>,
    /// `Width` in lanes.
    pub width: Option<u32>,
    /// `FEC` in use.
    pub fec: Option<String>,
    /// The tool's own `Recommendation` (`No issue was observed.`).
    pub recommendation: Option<String>,
    /// `Time Since Last Clear [Min]`: the window the counters cover.
    pub minutes_since_clear: Option<f64>,
    /// `Effective Physical Errors`: errors left after FEC.
    pub effective_errors: Option<u64>,
    /// `Effective Physical BER`.
    pub effective_ber: Option<f64>,
    /// `Raw Physical BER`: before FEC.
    pub raw_ber: Option<f64>,
    /// `Raw Physical Errors Per Lane`.
    pub raw_errors_per_lane: Vec<u64>,
    /// `Symbol Errors` (InfiniBand).
    pub symbol_errors: Option<u64>,
    /// `Link Down Counter`.
    pub link_down: Option<u64>,
    /// `Link Error Recovery Counter`.
    pub link_error_recovery: Option<u64>,
    /// The module, where `-m` was given.
    pub module: Option<TransceiverModule>,
}

/// An Ethernet interface's link settings as `ethtool IF` prints them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EthLinkSettings {
    /// `Speed:` in Mb/s; `None` for `Unknown!` (no link).
    pub speed_mbps: Option<u64>,
    /// `Lanes:`.
    pub lanes: Option<u32>,
    /// `Duplex:` (`Full`).
    pub duplex: Option<String>,
    /// `Auto-negotiation:` on or off.
    pub autoneg: Option<bool>,
    /// `Port:` (`Direct Attach Copper`, `FIBRE`).
    pub port: Option<String>,
    /// `Link detected:`.
    pub link_detected: Option<bool>,
    /// The fastest mode in `Supported link modes`, Mb/s.
    pub max_supported_mbps: Option<u64>,
    /// The fastest mode in `Link partner advertised link modes`, Mb/s, where shown.
    pub max_partner_mbps: Option<u64>,
    /// `FEC` modes in use (`Active FEC encoding` of `ethtool --show-fec`, or `Advertised FEC
    /// modes`).
    pub fec: Option<String>,
}

/// What a kernel log event is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum KernelEventKind {
    /// An NVIDIA GPU error (`NVRM: Xid (PCI:0000:3b:00): 79, ...`).
    Xid {
        /// The Xid number.
        code: u32,
        /// What NVIDIA's Xid catalog says it means, where fabrik knows it.
        meaning: Option<String>,
        /// The catalog's recommended action (`RESET_GPU`, `RESTART_APP`, `IGNORE`...).
        action: Option<String>,
    },
    /// An mlx5 firmware health report, command timeout or fatal error.
    Mlx5Health,
    /// An interface or port lost its link (`Link down`).
    LinkDown,
    /// An interface or port got its link back (`Link up`).
    LinkUp,
    /// A PCIe Advanced Error Reporting event.
    Aer {
        /// `Correctable`, `Uncorrectable (Non-Fatal)` or `Uncorrectable (Fatal)` (older
        /// kernels print `Corrected`/`Uncorrected`).
        severity: String,
    },
    /// Pinning or registering memory failed (GPU memory for GPUDirect RDMA, or user memory).
    PinFailure,
}

/// One kernel log line fabrik recognised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KernelEvent {
    /// What it is about.
    #[serde(flatten)]
    pub kind: KernelEventKind,
    /// The device it names: a PCI address, a netdev or an RDMA device.
    pub device: Option<String>,
    /// The timestamp as printed (`[ 1234.567890]`, `Mar  5 10:00:01`), where present.
    pub time: Option<String>,
    /// Seconds since boot, from a `[ 1234.567890]` stamp.
    pub seconds: Option<f64>,
    /// The line, cut to a readable length.
    pub line: String,
}

/// The kernel log events read, and how much log they come from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KernelLog {
    /// Log lines read.
    pub lines: u64,
    /// The events recognised, in log order.
    pub events: Vec<KernelEvent>,
}

/// One NVLink of a GPU (`nvidia-smi nvlink -s`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NvLink {
    /// The link number.
    pub link: u32,
    /// GB/s; `None` for an `<inactive>` link.
    pub gbps: Option<f64>,
}

/// One port-to-port link of the InfiniBand fabric (`iblinkinfo`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FabricLink {
    /// The switch or node the port belongs to (its description or GUID).
    pub node: String,
    /// Its LID.
    pub lid: Option<u32>,
    /// The port number.
    pub port: u32,
    /// Width (`4X`).
    pub width: Option<String>,
    /// Lane speed (`25.78125 Gbps`, `HDR`).
    pub speed: Option<String>,
    /// Logical state (`Active`, `Down`).
    pub state: Option<String>,
    /// Physical state (`LinkUp`, `Polling`).
    pub phys_state: Option<String>,
    /// The far end's description, where linked.
    pub peer: Option<String>,
    /// The far end's LID and port.
    pub peer_lid: Option<u32>,
    /// The far end's port number.
    pub peer_port: Option<u32>,
    /// What iblinkinfo says the link could run at (`Could be 14.0625 Gbps`).
    pub could_be: Option<String>,
}

/// One stage of an `ibdiagnet` run's summary.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FabricCheck {
    /// The stage (`Links Check`, `Port Counters`...).
    pub stage: String,
    /// Warnings it reported.
    pub warnings: u64,
    /// Errors it reported.
    pub errors: u64,
}

/// The InfiniBand fabric as seen from this node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Fabric {
    /// Port-to-port links (`iblinkinfo`).
    pub links: Vec<FabricLink>,
    /// `ibdiagnet`'s summary by stage.
    pub checks: Vec<FabricCheck>,
    /// `ibdiagnet`'s `-E-` lines.
    pub errors: Vec<String>,
}

/// One lane (channel) of a pluggable module as `ethtool -m` reads its diagnostics: the laser's
/// bias current and the transmitted and received optical power.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ModuleLane {
    /// The lane number as printed (`Channel 1`); 0 for a one-lane module (SFP), which names
    /// none.
    pub lane: u32,
    /// Laser bias current, mA.
    pub bias_ma: Option<f64>,
    /// Transmitted optical power, mW.
    pub tx_power_mw: Option<f64>,
    /// Received optical power, mW (average power, or OMA where the module measures that).
    pub rx_power_mw: Option<f64>,
}

/// A module's own alarm and warning thresholds for one quantity, in its unit (°C, V, mA, mW).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ModuleThresholds {
    /// Above this the module raises its high alarm.
    pub high_alarm: Option<f64>,
    /// Below this the module raises its low alarm.
    pub low_alarm: Option<f64>,
    /// Above this the module raises its high warning.
    pub high_warning: Option<f64>,
    /// Below this the module raises its low warning.
    pub low_warning: Option<f64>,
}

/// An alarm or warning flag a module raises, or a loss of signal or fault it reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ModuleFlag {
    /// The flag as printed, without its lane (`Laser rx power low alarm`, `Rx loss of signal`).
    pub name: String,
    /// The lane it is about, where printed.
    pub lane: Option<u32>,
    /// Whether it is an alarm (or a loss of signal or fault) rather than a warning.
    pub alarm: bool,
}

/// A pluggable module (transceiver or cable) of a network interface as `ethtool -m` decodes its
/// EEPROM (SFF-8472 for SFP, SFF-8636 for QSFP, CMIS for QSFP-DD/OSFP).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Transceiver {
    /// The interface it is plugged into, where known (`ens22f0`).
    pub interface: String,
    /// `Identifier` (`0x11 (QSFP28)`).
    pub identifier: Option<String>,
    /// `Transceiver type` (`100G Ethernet: 100G Base-SR4 or 25GBase-SR`).
    pub transceiver_type: Option<String>,
    /// `Vendor name`.
    pub vendor: Option<String>,
    /// `Vendor PN`.
    pub part_number: Option<String>,
    /// `Vendor SN`.
    pub serial: Option<String>,
    /// `Module temperature`, °C.
    pub temperature_c: Option<f64>,
    /// `Module voltage`, V.
    pub voltage_v: Option<f64>,
    /// Per-lane readings, by lane.
    pub lanes: Vec<ModuleLane>,
    /// The module's own thresholds by quantity: `temperature`, `voltage`, `bias`, `tx_power`,
    /// `rx_power`.
    pub thresholds: BTreeMap<String, ModuleThresholds>,
    /// Whether the module implements alarm and warning flags (`Alarm/warning flags
    /// implemented`), where printed.
    pub flags_implemented: Option<bool>,
    /// How many alarm, warning, loss-of-signal and fault flags were read.
    pub flags_read: u32,
    /// The flags that are set.
    pub flags_set: Vec<ModuleFlag>,
}
