//! The numbers perftest prints, computed from raw measurements. Pure functions.

use fabrik_model::{BwRow, LatRow};

/// Bytes per second to Gb/s (10^9 bits per second, as perftest's `--report_gbits` and iperf3).
pub fn gbps(bytes: u64, secs: f64) -> f64 {
    if secs <= 0.0 {
        return 0.0;
    }
    bytes as f64 * 8.0 / secs / 1e9
}

/// A bandwidth row: `bytes_total` moved in `secs`, `messages` of `size` bytes, and the best
/// interval rate (`peak_gbps`, never below the average so a run shorter than one interval still
/// reads sensibly).
pub fn bw_row(size: u64, messages: u64, bytes_total: u64, secs: f64, peak_gbps: f64) -> BwRow {
    let avg = gbps(bytes_total, secs);
    let msg_rate = if secs > 0.0 {
        messages as f64 / secs / 1e6
    } else {
        0.0
    };
    BwRow {
        bytes: size,
        iterations: messages,
        bw_peak_gbps: peak_gbps.max(avg),
        bw_avg_gbps: avg,
        msg_rate_mpps: msg_rate,
    }
}

/// The best rate over consecutive samples of a cumulative byte counter: `samples` are
/// `(seconds since start, bytes so far)` in time order.
pub fn peak_gbps(samples: &[(f64, u64)]) -> f64 {
    samples
        .windows(2)
        .filter_map(|w| {
            let dt = w[1].0 - w[0].0;
            (dt > 0.0).then(|| gbps(w[1].1.saturating_sub(w[0].1), dt))
        })
        .fold(0.0, f64::max)
}

/// A latency row from one-way latencies in nanoseconds (half of each measured round trip, as
/// perftest's `*_lat`, qperf's `tcp_lat` and sockperf's ping-pong report them).
pub fn lat_row(size: u64, one_way_ns: &[u64]) -> Option<LatRow> {
    if one_way_ns.is_empty() {
        return None;
    }
    let mut v: Vec<f64> = one_way_ns.iter().map(|&ns| ns as f64 / 1000.0).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let avg = v.iter().sum::<f64>() / n as f64;
    let var = v.iter().map(|x| (x - avg) * (x - avg)).sum::<f64>() / n as f64;
    Some(LatRow {
        bytes: size,
        iterations: n as u64,
        t_min_us: v[0],
        t_typical_us: percentile(&v, 50.0),
        t_avg_us: avg,
        t_max_us: v[n - 1],
        t_stdev_us: Some(var.sqrt()),
        p99_us: Some(percentile(&v, 99.0)),
        p999_us: Some(percentile(&v, 99.9)),
    })
}

/// Nearest-rank percentile of sorted, non-empty `v` (perftest reports the sample at
/// `ceil(p/100 * n)`).
fn percentile(v: &[f64], p: f64) -> f64 {
    let n = v.len();
    // The epsilon keeps 0.99 * 1000 = 990.0000000000001 from rounding up to rank 991.
    let rank = ((p / 100.0) * n as f64 - 1e-9).ceil() as usize;
    v[rank.clamp(1, n) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn bandwidth_row_from_bytes_and_seconds() {
        // 1.25 GB in one second is 10 Gb/s; 1.25e9 / 65536 messages.
        let r = bw_row(65536, 19073, 1_250_000_000, 1.0, 12.0);
        assert!((r.bw_avg_gbps - 10.0).abs() < 1e-9);
        assert!((r.bw_peak_gbps - 12.0).abs() < 1e-9);
        assert!((r.msg_rate_mpps - 0.019073).abs() < 1e-9);
        // A peak below the average (one short interval) is raised to the average.
        assert!((bw_row(8, 1, 1_250_000_000, 1.0, 3.0).bw_peak_gbps - 10.0).abs() < 1e-9);
    }

    #[test]
    fn peak_is_the_best_interval() {
        let s = [
            (0.0, 0),
            (0.1, 125_000_000),
            (0.2, 375_000_000),
            (0.3, 400_000_000),
        ];
        assert!((peak_gbps(&s) - 20.0).abs() < 1e-6);
        assert_eq!(peak_gbps(&s[..1]), 0.0);
    }

    #[test]
    fn latency_percentiles_follow_nearest_rank() {
        let ns: Vec<u64> = (1..=1000).map(|i| i * 1000).collect();
        let r = lat_row(2, &ns).unwrap_or_else(|| panic!("no row"));
        assert_eq!(r.iterations, 1000);
        assert_eq!(r.t_min_us, 1.0);
        assert_eq!(r.t_max_us, 1000.0);
        assert_eq!(r.t_typical_us, 500.0);
        assert_eq!(r.p99_us, Some(990.0));
        assert_eq!(r.p999_us, Some(999.0));
        assert!((r.t_avg_us - 500.5).abs() < 1e-9);
        assert!((r.t_stdev_us.unwrap_or(0.0) - 288.675).abs() < 1e-3);
        assert!(lat_row(2, &[]).is_none());
    }

    proptest! {
        #[test]
        fn latency_stats_are_ordered(ns in proptest::collection::vec(0u64..10_000_000, 1..500)) {
            let r = lat_row(64, &ns).unwrap_or_else(|| panic!("no row"));
            prop_assert!(r.t_min_us <= r.t_typical_us && r.t_typical_us <= r.t_max_us);
            prop_assert!(r.t_min_us <= r.t_avg_us && r.t_avg_us <= r.t_max_us);
            let p99 = r.p99_us.unwrap_or(0.0);
            prop_assert!(r.t_typical_us <= p99 && p99 <= r.p999_us.unwrap_or(0.0));
        }
    }
}
