//! Port and netdev counters as data: what one pass over the counters saw ([`Sample`]), what
//! changed between two passes ([`Report`]), and what a counter's name says about it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One counter file as read: a number, or why there is none. A bad file is data, not an error,
/// so that one broken counter never hides the others.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reading {
    /// The counter's value.
    Value(u64),
    /// Why there is no value (`empty file`, `not a number: ...`, an OS error).
    Unreadable(String),
}

impl Reading {
    /// The value, when there is one.
    pub fn value(&self) -> Option<u64> {
        match self {
            Reading::Value(v) => Some(*v),
            Reading::Unreadable(_) => None,
        }
    }

    /// Parses the text of a counter file the way the kernel writes it (`%llu\n`, or `%d\n` for
    /// 4-bit PMA fields). Anything else is kept as the reason it is unusable.
    pub fn parse(text: &str) -> Reading {
        let t = text.trim();
        if t.is_empty() {
            return Reading::Unreadable("empty file".to_string());
        }
        match t.parse::<u64>() {
            Ok(v) => Reading::Value(v),
            Err(_) => {
                let shown: String = t.chars().take(40).collect();
                Reading::Unreadable(format!("not a number: {shown:?}"))
            }
        }
    }
}

/// Which directory (or tool) a counter came from; decides its unit and width.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// `ports/N/counters/`: the IB PMA PortCounters(/Extended) attributes.
    Counters,
    /// `ports/N/hw_counters/`: driver counters (mlx5 Q/congestion counters, rxe...).
    HwCounters,
    /// `/sys/class/net/IF/statistics/`.
    Statistics,
    /// `ethtool -S IF`.
    Ethtool,
}

impl Source {
    /// The directory name used in JSON and output (`hw_counters`).
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Counters => "counters",
            Source::HwCounters => "hw_counters",
            Source::Statistics => "statistics",
            Source::Ethtool => "ethtool",
        }
    }
}

/// One RDMA port.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PortSample {
    /// RDMA device name (`mlx5_0`).
    pub device: String,
    /// Port number.
    pub port: u32,
    /// `state` as the kernel writes it: `4: ACTIVE`.
    pub state: Option<String>,
    /// `phys_state`: `5: LinkUp`.
    pub phys_state: Option<String>,
    /// `rate`: `100 Gb/sec (4X EDR)`.
    pub rate: Option<String>,
    /// `link_layer`: `InfiniBand` or `Ethernet`.
    pub link_layer: Option<String>,
    /// Netdevs behind this port (RoCE/rxe netdev from `gid_attrs/ndevs/0`, IPoIB from
    /// `device/net/`).
    pub netdevs: Vec<String>,
    /// `ports/N/counters/*`, by file name.
    pub counters: BTreeMap<String, Reading>,
    /// `ports/N/hw_counters/*`, by file name.
    pub hw_counters: BTreeMap<String, Reading>,
    /// Why the port's directories could not be listed, when that happened.
    pub problems: Vec<String>,
}

impl PortSample {
    /// `device:port`, as findings name a port.
    pub fn subject(&self) -> String {
        format!("{}:{}", self.device, self.port)
    }

    /// A counter of this port from `source` (`Counters` or `HwCounters`; `None` for the others).
    pub fn reading(&self, source: Source, name: &str) -> Option<&Reading> {
        match source {
            Source::Counters => self.counters.get(name),
            Source::HwCounters => self.hw_counters.get(name),
            _ => None,
        }
    }
}

/// One network interface.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetdevSample {
    /// Interface name.
    pub name: String,
    /// Backed by a device (`/sys/class/net/IF/device` exists): a NIC or VF, not a bridge or veth.
    pub physical: bool,
    /// RDMA ports that use this netdev (`mlx5_0:1`).
    pub rdma_ports: Vec<String>,
    /// `operstate` as the kernel writes it (`up`, `down`).
    pub operstate: Option<String>,
    /// `statistics/*`, by file name.
    pub statistics: BTreeMap<String, Reading>,
    /// `ethtool -S` counters, by name; empty when not read.
    pub ethtool: BTreeMap<String, Reading>,
    /// Why some of it could not be read, when that happened.
    pub problems: Vec<String>,
}

impl NetdevSample {
    /// A counter of this interface from `source` (`Statistics` or `Ethtool`; `None` for the others).
    pub fn reading(&self, source: Source, name: &str) -> Option<&Reading> {
        match source {
            Source::Statistics => self.statistics.get(name),
            Source::Ethtool => self.ethtool.get(name),
            _ => None,
        }
    }
}

/// Every counter of one node at one moment.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Sample {
    /// Wall-clock time of the sample, seconds since the Unix epoch: now for a live root, the
    /// snapshot's `fabrik/captured_at` otherwise (absent when the snapshot has none).
    pub taken_at_unix_s: Option<f64>,
    /// Every RDMA port.
    pub ports: Vec<PortSample>,
    /// Every interface sampled.
    pub netdevs: Vec<NetdevSample>,
    /// Problems that concern the whole sample (a missing `/sys/class/infiniband`...).
    pub problems: Vec<String>,
}

impl Sample {
    /// The sample of port `port` of `device`.
    pub fn port(&self, device: &str, port: u32) -> Option<&PortSample> {
        self.ports
            .iter()
            .find(|p| p.device == device && p.port == port)
    }

    /// The sample of interface `name`.
    pub fn netdev(&self, name: &str) -> Option<&NetdevSample> {
        self.netdevs.iter().find(|n| n.name == name)
    }
}

/// What happened to one counter between two samples.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    /// Same value in both samples.
    Unchanged,
    /// It went up by `delta`.
    Moved {
        /// The increase, in the counter's units.
        delta: u64,
    },
    /// It went down: the counter was cleared in between. `after` is what it counted since.
    Reset,
    /// Stuck at its ceiling: the true count is unknown, at least `delta_at_least` more.
    Saturated {
        /// The least it can have increased by.
        delta_at_least: u64,
    },
    /// One of the two readings is unusable.
    Unreadable {
        /// Why, as the reading said.
        reason: String,
    },
    /// Only in the second sample.
    Appeared,
    /// Only in the first sample.
    Vanished,
}

/// One counter's change, with its rate when the interval is known.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CounterChange {
    /// Where the counter lives.
    pub source: Source,
    /// The counter's file or ethtool name (`port_rcv_errors`).
    pub name: String,
    /// The first sample's value, when readable.
    pub before: Option<u64>,
    /// The second sample's value, when readable.
    pub after: Option<u64>,
    /// What happened to it.
    #[serde(flatten)]
    pub change: Change,
    /// Counter units per second (for `port_*_data`: 4-byte words per second, as counted).
    pub per_second: Option<f64>,
}

impl CounterChange {
    /// The increase, when it is known exactly.
    pub fn delta(&self) -> Option<u64> {
        match self.change {
            Change::Moved { delta } => Some(delta),
            Change::Unchanged => Some(0),
            _ => None,
        }
    }
}

/// Whether a thing is in both samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Presence {
    /// In both samples.
    Both,
    /// Gone in the second sample (device removed, driver unloaded, VF destroyed).
    Vanished,
    /// New in the second sample.
    Appeared,
}

/// Traffic of one line, in bytes and packets.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Traffic {
    /// Bytes sent between the samples (`port_xmit_data` × 4 for RDMA ports).
    pub tx_bytes: Option<u64>,
    /// Bytes received between the samples (`port_rcv_data` × 4 for RDMA ports).
    pub rx_bytes: Option<u64>,
    /// Packets sent between the samples.
    pub tx_packets: Option<u64>,
    /// Packets received between the samples.
    pub rx_packets: Option<u64>,
    /// Send rate, bits per second; `None` without an interval.
    pub tx_bits_per_s: Option<f64>,
    /// Receive rate, bits per second; `None` without an interval.
    pub rx_bits_per_s: Option<f64>,
    /// Packets sent per second; `None` without an interval.
    pub tx_packets_per_s: Option<f64>,
    /// Packets received per second; `None` without an interval.
    pub rx_packets_per_s: Option<f64>,
}

/// One RDMA port compared across two samples.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PortDelta {
    /// RDMA device name (`mlx5_0`).
    pub device: String,
    /// Port number.
    pub port: u32,
    /// Whether the port is in both samples.
    pub presence: Presence,
    /// `state` in the latest sample that has the port.
    pub state: Option<String>,
    /// `rate` in the latest sample that has the port.
    pub rate: Option<String>,
    /// `link_layer` in the latest sample that has the port.
    pub link_layer: Option<String>,
    /// Netdevs behind the port.
    pub netdevs: Vec<String>,
    /// What moved through the port.
    pub traffic: Traffic,
    /// Every counter that did not simply stay put.
    pub changes: Vec<CounterChange>,
    /// What could not be compared, in words (the port vanished, a directory was unreadable).
    pub problems: Vec<String>,
}

impl PortDelta {
    /// `device:port`, as findings name a port.
    pub fn subject(&self) -> String {
        format!("{}:{}", self.device, self.port)
    }
}

/// One network interface compared across two samples.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NetdevDelta {
    /// Interface name.
    pub name: String,
    /// Whether the interface is in both samples.
    pub presence: Presence,
    /// Backed by a device (a NIC or VF).
    pub physical: bool,
    /// RDMA ports that use this netdev (`mlx5_0:1`).
    pub rdma_ports: Vec<String>,
    /// `operstate` in the latest sample that has the interface.
    pub operstate: Option<String>,
    /// What moved through the interface (`statistics/`).
    pub traffic: Traffic,
    /// Every counter that did not simply stay put.
    pub changes: Vec<CounterChange>,
    /// What could not be compared, in words.
    pub problems: Vec<String>,
}

/// The comparison of two samples.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// Seconds between the samples; `None` when unknown (then only deltas are given).
    pub interval_s: Option<f64>,
    /// Every RDMA port in either sample.
    pub ports: Vec<PortDelta>,
    /// Every interface sampled in either sample.
    pub netdevs: Vec<NetdevDelta>,
    /// Problems of the samples as a whole.
    pub problems: Vec<String>,
}

/// One interval of `fabrik top`: the comparison with its counter findings, stamped with the
/// time it was taken (one JSON object per interval).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Frame {
    /// [`crate::SCHEMA_VERSION`].
    pub schema_version: u32,
    /// When the interval ended, in seconds since the Unix epoch.
    pub time_unix_s: f64,
    /// The comparison over the interval.
    #[serde(flatten)]
    pub report: Report,
    /// The counter rules' findings on it.
    pub findings: Vec<crate::Finding>,
}

/// Counters that measure traffic rather than trouble; `top` does not highlight them.
pub fn is_traffic(source: Source, name: &str) -> bool {
    match source {
        Source::Counters => matches!(
            name,
            "port_xmit_data"
                | "port_rcv_data"
                | "port_xmit_packets"
                | "port_rcv_packets"
                | "unicast_xmit_packets"
                | "unicast_rcv_packets"
                | "multicast_xmit_packets"
                | "multicast_rcv_packets"
        ),
        Source::HwCounters => matches!(
            name,
            "sent_pkts"
                | "rcvd_pkts"
                | "rdma_sends"
                | "rdma_recvs"
                | "ack_deferred"
                | "ack_deffered"
                | "rx_write_requests"
                | "rx_read_requests"
                | "rx_atomic_requests"
                | "rx_dct_connect"
                | "rx_icrc_encapsulated"
        ),
        Source::Statistics => matches!(
            name,
            "rx_bytes"
                | "tx_bytes"
                | "rx_packets"
                | "tx_packets"
                | "multicast"
                | "rx_compressed"
                | "tx_compressed"
        ),
        // ethtool -S has hundreds of traffic counters per driver; name the trouble instead.
        Source::Ethtool => {
            !(priority_pause(name).is_some()
                || [
                    "pause",
                    "discard",
                    "err",
                    "drop",
                    "out_of_buffer",
                    "timeout",
                ]
                .iter()
                .any(|w| name.contains(w)))
        }
    }
}

/// A per-priority PFC pause counter name as mlx5 (and other drivers that follow its naming)
/// report it: `rx_prio3_pause`, `tx_prio0_pause`. Returns (direction, priority). The
/// `_duration` and `_transition` variants are not frame counts and are not matched.
pub fn priority_pause(name: &str) -> Option<(&'static str, u8)> {
    let (dir, rest) = if let Some(r) = name.strip_prefix("rx_prio") {
        ("rx", r)
    } else if let Some(r) = name.strip_prefix("tx_prio") {
        ("tx", r)
    } else {
        return None;
    };
    let digits = rest.strip_suffix("_pause")?;
    if digits.is_empty() || digits.len() > 1 {
        return None;
    }
    let prio = digits.parse::<u8>().ok()?;
    (prio <= 7).then_some((dir, prio))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_kernel_formats() {
        assert_eq!(Reading::parse("12345\n"), Reading::Value(12345));
        assert_eq!(
            Reading::parse("18446744073709551615\n"),
            Reading::Value(u64::MAX)
        );
        assert!(matches!(Reading::parse(""), Reading::Unreadable(_)));
        assert!(matches!(
            Reading::parse("N/A (no PMA)\n"),
            Reading::Unreadable(m) if m.contains("N/A")
        ));
        assert!(matches!(Reading::parse("-1\n"), Reading::Unreadable(_)));
    }

    #[test]
    fn priority_names() {
        assert_eq!(priority_pause("rx_prio3_pause"), Some(("rx", 3)));
        assert_eq!(priority_pause("tx_prio7_pause"), Some(("tx", 7)));
        assert_eq!(priority_pause("rx_prio3_pause_duration"), None);
        assert_eq!(priority_pause("rx_prio8_pause"), None);
        assert_eq!(priority_pause("rx_pause_ctrl_phy"), None);
    }

    proptest! {
        #[test]
        fn parse_never_panics(s in ".*") {
            let _ = Reading::parse(&s);
        }

        #[test]
        fn parse_round_trips_numbers(v in any::<u64>()) {
            prop_assert_eq!(Reading::parse(&format!("{v}\n")), Reading::Value(v));
        }

        #[test]
        fn names_never_panic(s in ".{0,40}") {
            let _ = priority_pause(&s);
        }
    }
}
