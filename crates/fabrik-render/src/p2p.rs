//! A point-to-point run (`parse perftest`) as a table, and the failure messages perftest
//! printed.

use std::fmt::Write as _;

use fabrik_model::{P2pReport, P2pRows};
use fabrik_parse::perftest::PerftestOutput;

/// A point-to-point run: a line naming the test, device, link, MTU, GID index and queue
/// pairs, then one row per message size (bandwidth or latency columns), then its notes and a
/// blank line.
pub fn table(r: &P2pReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} {:?}  device {}  link {}  mtu {}  gid {}  qps {}",
        r.op.as_deref().unwrap_or("?"),
        r.test,
        r.device.as_deref().unwrap_or("-"),
        r.link_type.as_deref().unwrap_or("-"),
        r.mtu.map_or_else(|| "-".into(), |v| v.to_string()),
        r.gid_index.map_or_else(|| "-".into(), |v| v.to_string()),
        r.streams
    );
    match &r.results {
        P2pRows::Bw(rows) => {
            let _ = writeln!(
                out,
                "{:>10} {:>12} {:>12} {:>12} {:>10}",
                "bytes", "iterations", "peak Gb/s", "avg Gb/s", "Mpps"
            );
            for x in rows {
                let _ = writeln!(
                    out,
                    "{:>10} {:>12} {:>12.2} {:>12.2} {:>10.6}",
                    x.bytes, x.iterations, x.bw_peak_gbps, x.bw_avg_gbps, x.msg_rate_mpps
                );
            }
        }
        P2pRows::Lat(rows) => {
            let _ = writeln!(
                out,
                "{:>10} {:>12} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
                "bytes",
                "iterations",
                "min us",
                "max us",
                "typ us",
                "avg us",
                "stdev",
                "p99",
                "p99.9"
            );
            let o = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.2}"));
            for x in rows {
                let _ = writeln!(
                    out,
                    "{:>10} {:>12} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8} {:>8} {:>8}",
                    x.bytes,
                    x.iterations,
                    x.t_min_us,
                    x.t_max_us,
                    x.t_typical_us,
                    x.t_avg_us,
                    o(x.t_stdev_us),
                    o(x.p99_us),
                    o(x.p999_us)
                );
            }
        }
    }
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out.push('\n');
    out
}

/// What a perftest output printed besides its reports: one line per failure message (with its
/// rule and how many times it repeated), and what the parser's caps left out.
pub fn perftest_failures(out: &PerftestOutput) -> String {
    let mut text = String::new();
    for f in &out.failures {
        let _ = writeln!(
            text,
            "perftest failure [{}]{}: {}",
            f.class.rule(),
            if f.count > 1 {
                format!(" x{}", f.count)
            } else {
                String::new()
            },
            f.line
        );
    }
    if out.rows_dropped + out.reports_dropped + out.failures_dropped > 0 {
        let _ = writeln!(
            text,
            "note: not kept (caps): {} rows, {} reports, {} failure lines",
            out.rows_dropped, out.reports_dropped, out.failures_dropped
        );
    }
    text
}
