//! A collective run (`parse nccl-tests`) as a table in nccl-tests' own column layout.

use std::fmt::Write as _;

use fabrik_model::{CollTiming, CollectiveReport};

fn timing_cells(t: &Option<CollTiming>) -> String {
    match t {
        Some(t) => format!(
            "{:>10.2} {:>8.2} {:>8.2} {:>6}",
            t.time_us,
            t.algbw,
            t.busbw,
            t.wrong.map_or_else(|| "N/A".to_string(), |w| w.to_string())
        ),
        None => format!("{:>10} {:>8} {:>8} {:>6}", "-", "-", "-", "-"),
    }
}

/// A collective run as nccl-tests prints it: a line naming the operation, ranks, hosts and
/// average bus bandwidth, then one row per size with the out-of-place and in-place timings,
/// then the run's notes and a blank line.
pub fn table(r: &CollectiveReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}  ranks {}  hosts {}  avg busbw {}",
        r.op,
        r.ranks.map_or_else(|| "-".into(), |n| n.to_string()),
        if r.hosts.is_empty() {
            "-".into()
        } else {
            r.hosts.join(",")
        },
        r.avg_busbw
            .map_or_else(|| "-".into(), |v| format!("{v} GB/s"))
    );
    let _ = writeln!(
        out,
        "{:>12} {:>12} {:>8} {:>6} {:>5} | {:>10} {:>8} {:>8} {:>6} | {:>10} {:>8} {:>8} {:>6}",
        "size",
        "count",
        "type",
        "redop",
        "root",
        "time(us)",
        "algbw",
        "busbw",
        "wrong",
        "time(us)",
        "algbw",
        "busbw",
        "wrong"
    );
    for row in &r.rows {
        let _ = writeln!(
            out,
            "{:>12} {:>12} {:>8} {:>6} {:>5} | {} | {}",
            row.size,
            row.count,
            row.dtype,
            row.redop.as_deref().unwrap_or("-"),
            row.root.map_or_else(|| "-".into(), |v| v.to_string()),
            timing_cells(&row.out_of_place),
            timing_cells(&row.in_place)
        );
    }
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out.push('\n');
    out
}
