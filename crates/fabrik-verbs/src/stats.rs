//! Result math, as perftest computes it, so that fabrik's rows and perftest's rows mean the same.

use fabrik_model::{BwRow, LatRow};

/// A bandwidth row from per-message post and completion times (seconds from any origin).
///
/// BW average: all bytes over first post → last completion. BW peak: perftest's "best average
/// over any run of consecutive messages", min over i ≤ j of
/// `(completed[j] − posted[i]) / (j−i+1)`,
/// with j only at the messages whose completion was signaled (`completed` holds, for every
/// message, the time its covering completion was reaped; perftest stamps only those), evaluated
/// on at most ~2000 starting points to keep it cheap on long runs.
/// Rates in Gb/s (10⁹ bits) as perftest prints with `--report_gbits`; MsgRate in Mpps.
pub fn bw_row(bytes: u64, posted: &[f64], completed: &[f64]) -> Option<BwRow> {
    let n = posted.len().min(completed.len());
    if n == 0 {
        return None;
    }
    let total = completed[n - 1] - posted[0];
    if total.is_nan() || total <= 0.0 {
        return None;
    }
    let bits = bytes as f64 * 8.0;
    let avg = bits * n as f64 / total / 1e9;
    // Ends of completion batches: the last message of each run of equal completion times.
    let ends: Vec<usize> = (0..n)
        .filter(|&j| j + 1 == n || completed[j + 1] != completed[j])
        .collect();
    let step = n.div_ceil(2000).max(1);
    let mut best = f64::INFINITY;
    for i in (0..n).step_by(step) {
        let first = ends.partition_point(|&j| j < i);
        for &j in &ends[first..] {
            let per_msg = (completed[j] - posted[i]) / (j - i + 1) as f64;
            if per_msg > 0.0 && per_msg < best {
                best = per_msg;
            }
        }
    }
    let peak = if best.is_finite() {
        (bits / best / 1e9).max(avg)
    } else {
        avg
    };
    Some(BwRow {
        bytes,
        iterations: n as u64,
        bw_peak_gbps: peak,
        bw_avg_gbps: avg,
        msg_rate_mpps: n as f64 / total / 1e6,
    })
}

/// Samples perftest leaves out at the slow end before its statistics (`LAT_MEASURE_TAIL`).
pub const LAT_MEASURE_TAIL: usize = 2;

/// A latency row as perftest's `print_report_lat` computes it, from the one-way times (µs) of
/// the intervals between consecutive posts (perftest's `tposted[i+1] - tposted[i]`, halved for
/// send/write): sorted, the `LAT_MEASURE_TAIL` slowest dropped; t_typical is perftest's median
/// (the mean of the two middle samples when the kept count is even); t_min the fastest; t_max
/// the first dropped sample (perftest prints `delta[measure_cnt]`); avg and stdev over the kept
/// samples; the 99% and 99.9% percentiles the samples at `ceil(kept·p)`. `iterations` is the
/// number of round trips run, as perftest prints it.
pub fn lat_row(bytes: u64, iterations: u64, samples_us: &[f64]) -> Option<LatRow> {
    let mut s: Vec<f64> = samples_us
        .iter()
        .copied()
        .filter(|x| x.is_finite())
        .collect();
    if s.is_empty() {
        return None;
    }
    s.sort_by(f64::total_cmp);
    // perftest needs more samples than its tail; with fewer, keep them all.
    let kept = if s.len() > LAT_MEASURE_TAIL + 1 {
        s.len() - LAT_MEASURE_TAIL
    } else {
        s.len()
    };
    let k = &s[..kept];
    let median = if (kept - 1) % 2 == 1 {
        (k[kept / 2] + k[kept / 2 - 1]) / 2.0
    } else {
        k[kept / 2]
    };
    let n = kept as f64;
    let avg = k.iter().sum::<f64>() / n;
    let var = k.iter().map(|x| (x - avg) * (x - avg)).sum::<f64>() / n;
    let at = |p: f64| s[((kept as f64 * p).ceil() as usize).min(s.len() - 1)];
    Some(LatRow {
        bytes,
        iterations,
        t_min_us: s[0],
        t_typical_us: median,
        t_avg_us: avg,
        t_max_us: s[kept.min(s.len() - 1)],
        t_stdev_us: Some(var.sqrt()),
        p99_us: Some(at(0.99)),
        p999_us: Some(at(0.999)),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn steady_stream_has_equal_peak_and_average() {
        // 1000 messages of 1 MB, one completing every 100 µs, pipelined: 80 Gb/s.
        let posted: Vec<f64> = (0..1000).map(|i| i as f64 * 100e-6).collect();
        let completed: Vec<f64> = posted.iter().map(|t| t + 100e-6).collect();
        let r = bw_row(1_000_000, &posted, &completed).unwrap();
        assert!((r.bw_avg_gbps - 80.0).abs() < 0.01, "{r:?}");
        assert!((r.bw_peak_gbps - 80.0).abs() < 0.01, "{r:?}");
        assert!((r.msg_rate_mpps - 0.01).abs() < 1e-6, "{r:?}");
        assert_eq!(r.iterations, 1000);
    }

    #[test]
    fn a_stall_lowers_average_not_peak() {
        let mut posted: Vec<f64> = (0..100).map(|i| i as f64 * 1e-3).collect();
        let mut completed: Vec<f64> = posted.iter().map(|t| t + 1e-3).collect();
        // A 100 ms stall before the second half.
        for t in posted
            .iter_mut()
            .chain(completed.iter_mut())
            .filter(|t| **t >= 0.05)
        {
            *t += 0.1;
        }
        completed.sort_by(f64::total_cmp);
        posted.sort_by(f64::total_cmp);
        let r = bw_row(125_000, &posted, &completed).unwrap();
        assert!(r.bw_peak_gbps > 2.0 * r.bw_avg_gbps, "{r:?}");
        assert!((r.bw_peak_gbps - 1.0).abs() < 0.05, "{r:?}");
    }

    #[test]
    fn peak_only_ends_at_signaled_completions() {
        // 200 messages posted at once; a completion every 100 reaped at 1 s and 2 s. Ending a
        // window inside a batch would claim 100 messages in ~0 s.
        let posted = vec![0.0; 200];
        let mut completed = vec![1.0; 100];
        completed.extend(vec![2.0; 100]);
        let r = bw_row(125_000_000, &posted, &completed).unwrap();
        assert!((r.bw_avg_gbps - 100.0).abs() < 1e-6, "{r:?}");
        assert!((r.bw_peak_gbps - 100.0).abs() < 1e-6, "{r:?}");
    }

    #[test]
    fn empty_or_zero_time_gives_none() {
        assert!(bw_row(1, &[], &[]).is_none());
        assert!(bw_row(1, &[1.0], &[1.0]).is_none());
        assert!(lat_row(1, 1, &[]).is_none());
    }

    #[test]
    fn latency_stats_as_perftest() {
        // 1000 round trips give 999 intervals; perftest keeps 997 after its tail of 2.
        let samples: Vec<f64> = (1..=999).map(|i| i as f64).collect();
        let r = lat_row(8, 1000, &samples).unwrap();
        assert_eq!(r.iterations, 1000);
        assert_eq!(r.t_min_us, 1.0);
        // delta[measure_cnt] with measure_cnt = 997: the 998th smallest.
        assert_eq!(r.t_max_us, 998.0);
        // 997 kept, (997-1) % 2 == 0: delta[498], the 499th smallest.
        assert_eq!(r.t_typical_us, 499.0);
        assert!((r.t_avg_us - 499.0).abs() < 1e-9);
        // ceil(997 · 0.99) = 988 → the 989th; ceil(997 · 0.999) = 997 → the 998th.
        assert_eq!(r.p99_us, Some(989.0));
        assert_eq!(r.p999_us, Some(998.0));
        let sd = r.t_stdev_us.unwrap();
        assert!((sd - 287.809).abs() < 0.01, "{sd}");
        // An even kept count: the mean of the two middle samples.
        let r = lat_row(8, 7, &[4.0, 1.0, 3.0, 2.0, 100.0, 200.0]).unwrap();
        assert_eq!(r.t_typical_us, 2.5);
        assert_eq!(r.t_max_us, 100.0);
        // Too few samples for the tail: all kept.
        let r = lat_row(8, 3, &[5.0, 7.0]).unwrap();
        assert_eq!((r.t_min_us, r.t_max_us), (5.0, 7.0));
    }

    #[test]
    fn slow_tail_does_not_move_the_median() {
        let mut v = vec![10.0; 500];
        v.extend(vec![1e6; 2]);
        let r = lat_row(2, 503, &v).unwrap();
        assert_eq!(r.t_typical_us, 10.0);
        assert_eq!(r.t_avg_us, 10.0);
    }

    proptest::proptest! {
        #[test]
        fn lat_row_bounds(v in proptest::collection::vec(0.0f64..1e6, 1..200)) {
            let r = lat_row(1, v.len() as u64 + 1, &v).unwrap();
            proptest::prop_assert!(r.t_min_us <= r.t_typical_us && r.t_typical_us <= r.t_max_us);
            proptest::prop_assert!(r.t_min_us <= r.t_avg_us + 1e-9 && r.t_avg_us <= r.t_max_us + 1e-9);
            proptest::prop_assert!(r.p99_us.unwrap() <= r.t_max_us);
        }
    }
}
