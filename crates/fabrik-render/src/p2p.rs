//! A point-to-point run as a table: a parsed perftest run (`parse perftest`) with the failure
//! messages perftest printed, and fabrik's own RDMA run (`bench p2p`) in perftest's layout;
//! [`tcp`] prints the TCP run.

use std::fmt::Write as _;

use fabrik_model::perftest::PerftestOutput;
use fabrik_model::{BwRow, P2pReport, P2pRows, P2pTest};

pub mod tcp;

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

/// A `bench p2p` server's first lines: where it listens, and the token it made up (for the
/// client) when none was given.
pub fn listening(server: &str, addr: std::net::SocketAddr, made_up_token: Option<&str>) -> String {
    let mut out = format!("{server} listening on {addr}\n");
    if let Some(t) = made_up_token {
        out.push_str(&format!(
            "token: {t} (give it to the client with --token or FABRIK_TOKEN)\n"
        ));
    }
    out
}

/// The test's name in words, as perftest's banner says it.
pub fn test_name(t: P2pTest) -> &'static str {
    match t {
        P2pTest::Bw => "bandwidth",
        P2pTest::Lat => "latency",
    }
}

/// `bench p2p --transport rdma`: a table in perftest's own shape, so that the two can be read
/// side by side; a run from GPU memory adds its host-memory reference and the ratio of the two.
pub fn rdma(r: &P2pReport) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        " RDMA {} {} | device {} | link {} | MTU {} | GID index {} | QPs {}\n",
        r.op.as_deref().unwrap_or("?"),
        test_name(r.test),
        r.device.as_deref().unwrap_or("?"),
        r.link_type.as_deref().unwrap_or("?"),
        r.mtu.map(|m| m.to_string()).unwrap_or_else(|| "?".into()),
        r.gid_index
            .map(|g| g.to_string())
            .unwrap_or_else(|| "?".into()),
        r.streams,
    ));
    for n in &r.notes {
        out.push_str(&format!(" {n}\n"));
    }
    if let Some(m) = &r.memory {
        out.push_str(&format!(
            " memory: {} | registration: {} | access: {} | relaxed ordering: {}\n",
            m.kind,
            m.registration,
            m.access_flags.join("|"),
            if m.relaxed_ordering { "on" } else { "off" }
        ));
    }
    match &r.results {
        P2pRows::Bw(rows) => {
            out.push_str(&bw_table(rows));
            if let Some(m) = r.memory.as_ref().filter(|m| !m.host_reference.is_empty()) {
                out.push_str(
                    " host-memory reference (same QPs and sizes, host buffer on this end):\n",
                );
                out.push_str(&bw_table(&m.host_reference));
                if let Some(ratio) = m.ratio_to_host {
                    out.push_str(&format!(
                        " {}/host BW average: {ratio:.2}x (warning below {:.2}x)\n",
                        m.kind,
                        m.warn_below.unwrap_or(f64::NAN)
                    ));
                }
                if let Some(w) = &m.warning {
                    out.push_str(&format!(" WARNING: {w}\n"));
                }
            }
        }
        P2pRows::Lat(rows) => {
            out.push_str(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]\n");
            let o = |v: Option<f64>| v.map(|x| format!("{x:.2}")).unwrap_or_else(|| "-".into());
            for l in rows {
                out.push_str(&format!(
                    " {:<7} {:<10}     {:<10.2}     {:<10.2}   {:<10.2}       {:<10.2}     {:<10}      {:<10}             {}\n",
                    l.bytes,
                    l.iterations,
                    l.t_min_us,
                    l.t_max_us,
                    l.t_typical_us,
                    l.t_avg_us,
                    o(l.t_stdev_us),
                    o(l.p99_us),
                    o(l.p999_us)
                ));
            }
        }
    }
    out
}

fn bw_table(rows: &[BwRow]) -> String {
    let mut out = String::from(
        " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n",
    );
    for w in rows {
        out.push_str(&format!(
            " {:<10} {:<10}       {:<10.2}         {:<10.2}           {:.6}\n",
            w.bytes, w.iterations, w.bw_peak_gbps, w.bw_avg_gbps, w.msg_rate_mpps
        ));
    }
    out
}
