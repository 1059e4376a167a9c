//! What one pass over the counters saw: plain data, no I/O.

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

    proptest! {
        #[test]
        fn parse_never_panics(s in ".*") {
            let _ = Reading::parse(&s);
        }

        #[test]
        fn parse_round_trips_numbers(v in any::<u64>()) {
            prop_assert_eq!(Reading::parse(&format!("{v}\n")), Reading::Value(v));
        }
    }
}
