//! Two samples to deltas and rates (pure).
//!
//! A counter that goes down was reset (driver reload, `perfquery -R`, a VF re-created): it is
//! reported as `reset`, never as a negative or wrapped-around rate. A PMA counter stuck at its
//! ceiling is `saturated` (see [`crate::width`]); its rate is unknown.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

pub use fabrik_model::counters::{
    is_traffic, Change, CounterChange, NetdevDelta, PortDelta, Presence, Report, Traffic,
};

use crate::sample::{NetdevSample, PortSample, Reading, Sample, Source};
use crate::width::is_saturated;

/// The interval between two samples from their timestamps, when both have one and the second
/// is later.
pub fn interval_between(before: &Sample, after: &Sample) -> Option<Duration> {
    let (a, b) = (before.taken_at_unix_s?, after.taken_at_unix_s?);
    let d = b - a;
    (d.is_finite() && d > 0.0).then(|| Duration::from_secs_f64(d))
}

/// One counter's change. Pure.
pub fn change(
    source: Source,
    name: &str,
    before: Option<&Reading>,
    after: Option<&Reading>,
    interval: Option<Duration>,
) -> CounterChange {
    let bv = before.and_then(Reading::value);
    let av = after.and_then(Reading::value);
    let change = match (before, after) {
        (None, None) => Change::Unchanged,
        (Some(_), None) => Change::Vanished,
        (None, Some(Reading::Value(_))) => Change::Appeared,
        (_, Some(Reading::Unreadable(r))) | (Some(Reading::Unreadable(r)), Some(_)) => {
            Change::Unreadable { reason: r.clone() }
        }
        (Some(Reading::Value(b)), Some(Reading::Value(a))) => {
            if a < b {
                Change::Reset
            } else if is_saturated(source, name, Some(*b), *a) {
                Change::Saturated {
                    delta_at_least: a - b,
                }
            } else if a == b {
                Change::Unchanged
            } else {
                Change::Moved { delta: a - b }
            }
        }
    };
    let per_second = match (&change, interval) {
        (Change::Moved { delta }, Some(i)) if !i.is_zero() => Some(*delta as f64 / i.as_secs_f64()),
        (Change::Unchanged, Some(_)) => Some(0.0),
        _ => None,
    };
    CounterChange {
        source,
        name: name.to_string(),
        before: bv,
        after: av,
        change,
        per_second,
    }
}

/// Compares two samples: every port and netdev in either, with traffic rates and each counter
/// that moved, reset, saturated, appeared, vanished or could not be read.
pub fn compare(before: &Sample, after: &Sample, interval: Option<Duration>) -> Report {
    let mut ports = Vec::new();
    let mut keys: BTreeSet<(String, u32)> = BTreeSet::new();
    for p in before.ports.iter().chain(after.ports.iter()) {
        keys.insert((p.device.clone(), p.port));
    }
    for (dev, port) in keys {
        let b = before.port(&dev, port);
        let a = after.port(&dev, port);
        ports.push(port_delta(b, a, interval));
    }
    let mut names: BTreeSet<String> = BTreeSet::new();
    for n in before.netdevs.iter().chain(after.netdevs.iter()) {
        names.insert(n.name.clone());
    }
    let netdevs = names
        .iter()
        .map(|n| netdev_delta(before.netdev(n), after.netdev(n), interval))
        .collect();
    let mut problems = before.problems.clone();
    for p in &after.problems {
        if !problems.contains(p) {
            problems.push(p.clone());
        }
    }
    Report {
        interval_s: interval.map(|d| d.as_secs_f64()),
        ports,
        netdevs,
        problems,
    }
}

fn presence<T>(b: Option<&T>, a: Option<&T>) -> Presence {
    match (b, a) {
        (Some(_), None) => Presence::Vanished,
        (None, Some(_)) => Presence::Appeared,
        _ => Presence::Both,
    }
}

/// One source's counters of one port or interface, by name.
type Readings = BTreeMap<String, Reading>;

/// Every counter that changed between two readings of one port or interface, source by
/// source; a counter present in only one reading is compared with its absence.
fn counter_changes(
    maps: &[(Source, &Readings, &Readings)],
    i: Option<Duration>,
) -> Vec<CounterChange> {
    let mut changes = Vec::new();
    for &(source, before, after) in maps {
        let names: BTreeSet<&str> = before
            .keys()
            .chain(after.keys())
            .map(String::as_str)
            .collect();
        for name in names {
            let c = change(source, name, before.get(name), after.get(name), i);
            if c.change != Change::Unchanged {
                changes.push(c);
            }
        }
    }
    changes
}

fn port_delta(b: Option<&PortSample>, a: Option<&PortSample>, i: Option<Duration>) -> PortDelta {
    let pres = presence(b, a);
    // Describe the port by its latest state; a vanished port by its last known one.
    let latest = a.or(b);
    let changes = match (b, a) {
        (Some(b), Some(a)) => counter_changes(
            &[
                (Source::Counters, &b.counters, &a.counters),
                (Source::HwCounters, &b.hw_counters, &a.hw_counters),
            ],
            i,
        ),
        _ => Vec::new(),
    };
    let mut problems = Vec::new();
    match pres {
        Presence::Vanished => problems.push("port vanished between the two samples".to_string()),
        Presence::Appeared => problems.push("port appeared between the two samples".to_string()),
        Presence::Both => {}
    }
    if let Some(s) = a {
        problems.extend(s.problems.iter().cloned());
    }
    let find = |src: Source, n: &str| changes.iter().find(|c| c.source == src && c.name == n);
    let traffic = if pres == Presence::Both {
        let unchanged_zero = |src: Source, n: &str| -> Option<u64> {
            // An unchanged counter is not in `changes`; it moved by zero if both readings exist.
            let bv = b.and_then(|s| s.reading(src, n)).and_then(Reading::value);
            let av = a.and_then(|s| s.reading(src, n)).and_then(Reading::value);
            (bv.is_some() && bv == av).then_some(0)
        };
        let delta_of = |src: Source, n: &str| -> Option<u64> {
            match find(src, n) {
                Some(c) => c.delta(),
                None => unchanged_zero(src, n),
            }
        };
        let tx_bytes = delta_of(Source::Counters, "port_xmit_data").map(|w| w.saturating_mul(4));
        let rx_bytes = delta_of(Source::Counters, "port_rcv_data").map(|w| w.saturating_mul(4));
        let tx_packets = delta_of(Source::Counters, "port_xmit_packets")
            .or_else(|| delta_of(Source::HwCounters, "sent_pkts"));
        let rx_packets = delta_of(Source::Counters, "port_rcv_packets")
            .or_else(|| delta_of(Source::HwCounters, "rcvd_pkts"));
        traffic(tx_bytes, rx_bytes, tx_packets, rx_packets, i)
    } else {
        Traffic::default()
    };
    PortDelta {
        device: latest.map(|s| s.device.clone()).unwrap_or_default(),
        port: latest.map(|s| s.port).unwrap_or_default(),
        presence: pres,
        state: latest.and_then(|s| s.state.clone()),
        rate: latest.and_then(|s| s.rate.clone()),
        link_layer: latest.and_then(|s| s.link_layer.clone()),
        netdevs: latest.map(|s| s.netdevs.clone()).unwrap_or_default(),
        traffic,
        changes,
        problems,
    }
}

fn netdev_delta(
    b: Option<&NetdevSample>,
    a: Option<&NetdevSample>,
    i: Option<Duration>,
) -> NetdevDelta {
    let pres = presence(b, a);
    let latest = a.or(b);
    let changes = match (b, a) {
        (Some(b), Some(a)) => counter_changes(
            &[
                (Source::Statistics, &b.statistics, &a.statistics),
                (Source::Ethtool, &b.ethtool, &a.ethtool),
            ],
            i,
        ),
        _ => Vec::new(),
    };
    let mut problems = Vec::new();
    match pres {
        Presence::Vanished => {
            problems.push("interface vanished between the two samples".to_string())
        }
        Presence::Appeared => {
            problems.push("interface appeared between the two samples".to_string())
        }
        Presence::Both => {}
    }
    if let Some(s) = a {
        problems.extend(s.problems.iter().cloned());
    }
    let traffic = if pres == Presence::Both {
        let delta_of = |n: &str| -> Option<u64> {
            let bv = b
                .and_then(|s| s.statistics.get(n))
                .and_then(Reading::value)?;
            let av = a
                .and_then(|s| s.statistics.get(n))
                .and_then(Reading::value)?;
            av.checked_sub(bv)
        };
        traffic(
            delta_of("tx_bytes"),
            delta_of("rx_bytes"),
            delta_of("tx_packets"),
            delta_of("rx_packets"),
            i,
        )
    } else {
        Traffic::default()
    };
    NetdevDelta {
        name: latest.map(|s| s.name.clone()).unwrap_or_default(),
        presence: pres,
        physical: latest.is_some_and(|s| s.physical),
        rdma_ports: latest.map(|s| s.rdma_ports.clone()).unwrap_or_default(),
        operstate: latest.and_then(|s| s.operstate.clone()),
        traffic,
        changes,
        problems,
    }
}

fn traffic(
    tx_bytes: Option<u64>,
    rx_bytes: Option<u64>,
    tx_packets: Option<u64>,
    rx_packets: Option<u64>,
    i: Option<Duration>,
) -> Traffic {
    let secs = i.map(|d| d.as_secs_f64()).filter(|s| *s > 0.0);
    let per_s = |v: Option<u64>, scale: f64| -> Option<f64> { Some(v? as f64 * scale / secs?) };
    Traffic {
        tx_bytes,
        rx_bytes,
        tx_packets,
        rx_packets,
        tx_bits_per_s: per_s(tx_bytes, 8.0),
        rx_bits_per_s: per_s(rx_bytes, 8.0),
        tx_packets_per_s: per_s(tx_packets, 1.0),
        rx_packets_per_s: per_s(rx_packets, 1.0),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn v(x: u64) -> Reading {
        Reading::Value(x)
    }

    #[test]
    fn moved_reset_saturated() {
        let i = Some(Duration::from_secs(2));
        let c = change(
            Source::HwCounters,
            "np_cnp_sent",
            Some(&v(10)),
            Some(&v(30)),
            i,
        );
        assert_eq!(c.change, Change::Moved { delta: 20 });
        assert_eq!(c.per_second, Some(10.0));

        let c = change(
            Source::HwCounters,
            "np_cnp_sent",
            Some(&v(30)),
            Some(&v(5)),
            i,
        );
        assert_eq!(c.change, Change::Reset);
        assert_eq!(c.per_second, None);

        let c = change(
            Source::Counters,
            "symbol_error",
            Some(&v(65530)),
            Some(&v(65535)),
            i,
        );
        assert_eq!(c.change, Change::Saturated { delta_at_least: 5 });
        assert_eq!(c.per_second, None);

        let m = u64::from(u32::MAX);
        let c = change(
            Source::Counters,
            "port_xmit_data",
            Some(&v(m)),
            Some(&v(m)),
            i,
        );
        assert_eq!(c.change, Change::Saturated { delta_at_least: 0 });
        // A 64-bit extended data counter going past 2^32-1 is just traffic.
        let c = change(
            Source::Counters,
            "port_xmit_data",
            Some(&v(m - 10)),
            Some(&v(m + 10)),
            i,
        );
        assert_eq!(c.change, Change::Moved { delta: 20 });
    }

    proptest::proptest! {
        /// Whatever two readings are, the rate is never negative and a decrease is a reset.
        #[test]
        fn never_negative(b in proptest::prelude::any::<u64>(), a in proptest::prelude::any::<u64>(), ms in 0u64..100_000) {
            for (src, name) in [(Source::Counters, "port_xmit_data"), (Source::Counters, "symbol_error"), (Source::HwCounters, "np_cnp_sent")] {
                let c = change(src, name, Some(&v(b)), Some(&v(a)), Some(Duration::from_millis(ms)));
                if let Some(r) = c.per_second {
                    proptest::prop_assert!(r >= 0.0 && r.is_finite());
                }
                if a < b {
                    proptest::prop_assert_eq!(&c.change, &Change::Reset);
                }
            }
        }
    }

    #[test]
    fn unknown_interval_gives_deltas_only() {
        let c = change(
            Source::Statistics,
            "rx_errors",
            Some(&v(1)),
            Some(&v(4)),
            None,
        );
        assert_eq!(c.change, Change::Moved { delta: 3 });
        assert_eq!(c.per_second, None);
    }

    #[test]
    fn unreadable_and_vanished() {
        let bad = Reading::Unreadable("not a number".into());
        let c = change(Source::Counters, "x", Some(&v(1)), Some(&bad), None);
        assert!(matches!(c.change, Change::Unreadable { .. }));
        let c = change(Source::Counters, "x", Some(&v(1)), None, None);
        assert_eq!(c.change, Change::Vanished);
        let c = change(Source::Counters, "x", None, Some(&v(1)), None);
        assert_eq!(c.change, Change::Appeared);
    }
}
