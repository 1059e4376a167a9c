//! `ethtool -S IF` text: the NIC's own statistics, where per-priority PFC pause counters and
//! physical-port discards live (they are not in `/sys/class/net/IF/statistics`).

use std::collections::BTreeMap;

use crate::sample::Reading;

pub use fabrik_model::counters::priority_pause;

/// What `ethtool -S` printed, as counters; or why it printed none.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EthtoolStats {
    /// `name: value` lines, by name.
    pub stats: BTreeMap<String, Reading>,
    /// Lines that were not `name: value` and not the header, e.g.
    /// `no stats available` or `Cannot get stats strings information: Operation not supported`.
    pub complaints: Vec<String>,
}

/// Parses `ethtool -S IF` output as every ethtool version prints it:
///
/// ```text
/// NIC statistics:
///      rx_packets: 1234
///      rx_prio3_pause: 17
/// ```
///
/// Names may contain `:`-free punctuation (`rx-0.packets`, `tx_queue_0_bytes`); the split is at the
/// last `": "` so that a value is never taken for part of a name.
pub fn parse_ethtool_stats(text: &str) -> EthtoolStats {
    let mut out = EthtoolStats::default();
    for raw in text.lines() {
        let line = raw.trim();
        if line.is_empty() || line.eq_ignore_ascii_case("NIC statistics:") {
            continue;
        }
        let Some((name, value)) = line.rsplit_once(':') else {
            out.complaints.push(line.chars().take(120).collect());
            continue;
        };
        let name = name.trim();
        let value = value.trim();
        if name.is_empty() {
            out.complaints.push(line.chars().take(120).collect());
            continue;
        }
        if value.is_empty() {
            // A section header some drivers print (`Queue stats:`); not a counter.
            continue;
        }
        match value.parse::<u64>() {
            Ok(v) => {
                out.stats.insert(name.to_string(), Reading::Value(v));
            }
            Err(_) if value.chars().all(|c| c.is_ascii_alphabetic() || c == ' ') => {
                // `Cannot get stats strings information: Operation not supported`.
                out.complaints.push(line.chars().take(120).collect());
            }
            Err(_) => {
                out.stats.insert(name.to_string(), Reading::parse(value));
            }
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_mlx5_style_output() {
        let text = "NIC statistics:\n     rx_packets: 100\n     rx_prio3_pause: 17\n     tx_prio3_pause: 4\n     rx_prio3_pause_duration: 900\n     rx_discards_phy: 2\n";
        let s = parse_ethtool_stats(text);
        assert_eq!(s.stats.get("rx_prio3_pause"), Some(&Reading::Value(17)));
        assert_eq!(s.stats.get("rx_discards_phy"), Some(&Reading::Value(2)));
        assert_eq!(s.stats.len(), 5);
        assert!(s.complaints.is_empty());
    }

    #[test]
    fn keeps_complaints() {
        let s = parse_ethtool_stats("no stats available\n");
        assert!(s.stats.is_empty());
        assert_eq!(s.complaints, vec!["no stats available".to_string()]);
        let s =
            parse_ethtool_stats("Cannot get stats strings information: Operation not supported\n");
        assert!(s.stats.is_empty());
        assert_eq!(s.complaints.len(), 1);
    }

    proptest! {
        #[test]
        fn never_panics(s in "(?s).{0,400}") {
            let _ = parse_ethtool_stats(&s);
        }
    }
}
