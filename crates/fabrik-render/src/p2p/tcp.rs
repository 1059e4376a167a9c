//! `bench p2p` over TCP as a text table, laid out as perftest prints its results. The pieces
//! are separate so that a caller can print each row as soon as it is measured.

use std::fmt::Write;

use fabrik_model::{BwRow, LatRow, P2pReport, P2pRows, P2pTest};

use fabrik_model::per_interface;

use super::test_name;

const RULE: &str =
    "---------------------------------------------------------------------------------------";

/// The whole table of a finished run.
pub fn table(r: &P2pReport) -> String {
    let mut out = title(r);
    out.push_str(&columns(r.test));
    match &r.results {
        P2pRows::Bw(rows) => rows.iter().for_each(|row| out.push_str(&bw_line(row))),
        P2pRows::Lat(rows) => rows.iter().for_each(|row| out.push_str(&lat_line(row))),
    }
    out.push_str(&footer(r));
    out
}

/// What ran and over which interfaces.
pub fn title(r: &P2pReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{RULE}");
    let _ = writeln!(
        out,
        " fabrik bench p2p: {} {} test, {} stream(s) over {}",
        r.transport,
        test_name(r.test),
        r.streams,
        r.interfaces.join(", ")
    );
    out
}

/// The column titles.
pub fn columns(test: P2pTest) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{RULE}");
    let _ = match test {
        P2pTest::Bw => writeln!(
            out,
            " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]    BW peak[GB/sec]    BW average[GB/sec]"
        ),
        P2pTest::Lat => writeln!(
            out,
            " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]"
        ),
    };
    out
}

/// One bandwidth row in perftest's column layout.
pub fn bw_line(row: &BwRow) -> String {
    format!(
        " {:<10} {:<14} {:<18.2} {:<20.2} {:<16.6} {:<18.3} {:.3}\n",
        row.bytes,
        row.iterations,
        row.bw_peak_gbps,
        row.bw_avg_gbps,
        row.msg_rate_mpps,
        row.bw_peak_gbps / 8.0,
        row.bw_avg_gbps / 8.0
    )
}

/// One latency row in perftest's column layout.
pub fn lat_line(row: &LatRow) -> String {
    format!(
        " {:<6} {:<14} {:<14.2} {:<12.2} {:<18.2} {:<14.2} {:<15.2} {:<22.2} {:.2}\n",
        row.bytes,
        row.iterations,
        row.t_min_us,
        row.t_max_us,
        row.t_typical_us,
        row.t_avg_us,
        row.t_stdev_us.unwrap_or(0.0),
        row.p99_us.unwrap_or(0.0),
        row.p999_us.unwrap_or(0.0)
    )
}

/// Per stream and per interface when striping, then the closing rule.
pub fn footer(r: &P2pReport) -> String {
    let mut out = String::new();
    if r.per_stream.len() > 1 {
        let _ = writeln!(out, "{RULE}");
        let _ = writeln!(
            out,
            " stream  interface        local address     bytes            BW average[Gb/sec]"
        );
        for s in &r.per_stream {
            let _ = writeln!(
                out,
                " {:<7} {:<16} {:<17} {:<16} {:.2}",
                s.stream,
                s.interface.as_deref().unwrap_or("-"),
                s.local_addr.as_deref().unwrap_or("-"),
                s.bytes,
                s.bw_avg_gbps
            );
        }
        let _ = writeln!(
            out,
            " interface        streams  bytes            BW average[Gb/sec]"
        );
        for (name, n, bytes, gbps) in per_interface(&r.per_stream) {
            let _ = writeln!(out, " {name:<16} {n:<8} {bytes:<16} {gbps:.2}");
        }
    }
    let _ = writeln!(out, "{RULE}");
    out
}

/// What follows rows printed as they were measured: the [`footer`], then what ran (the
/// [`title`]'s line without its rule), since the columns came first.
pub fn closing(r: &P2pReport) -> String {
    let mut out = footer(r);
    out.push_str(title(r).trim_start_matches('-').trim_start());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabrik_model::{ResultSource, StreamResult};

    fn report(per_stream: Vec<StreamResult>) -> P2pReport {
        P2pReport {
            schema_version: 1,
            source: ResultSource::Fabrik,
            test: P2pTest::Bw,
            transport: "tcp".into(),
            op: None,
            streams: per_stream.len().max(1) as u32,
            interfaces: vec!["eth0".into(), "eth1".into()],
            device: None,
            link_type: None,
            mtu: None,
            gid_index: None,
            results: P2pRows::Bw(vec![BwRow {
                bytes: 65536,
                iterations: 1000,
                bw_peak_gbps: 16.0,
                bw_avg_gbps: 8.0,
                msg_rate_mpps: 0.015259,
            }]),
            per_stream,
            notes: vec![],
            memory: None,
        }
    }

    #[test]
    fn bandwidth_table_has_perftest_columns_and_gbytes() {
        let t = table(&report(vec![]));
        assert!(t.contains(
            "#bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"
        ));
        let row = t
            .lines()
            .find(|l| l.starts_with(" 65536"))
            .unwrap_or_default();
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            cols,
            ["65536", "1000", "16.00", "8.00", "0.015259", "2.000", "1.000"]
        );
    }

    #[test]
    fn the_closing_names_the_run_after_the_rule() {
        let t = closing(&report(vec![]));
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 2, "{t}");
        assert_eq!(lines[0], RULE);
        assert_eq!(
            lines[1],
            "fabrik bench p2p: tcp bandwidth test, 1 stream(s) over eth0, eth1"
        );
    }

    #[test]
    fn striped_runs_sum_per_interface() {
        let s = |stream, iface: &str, bytes, gbps| StreamResult {
            stream,
            interface: Some(iface.into()),
            local_addr: None,
            bytes,
            bw_avg_gbps: gbps,
        };
        let t = footer(&report(vec![
            s(0, "eth0", 100, 1.0),
            s(1, "eth1", 200, 2.0),
            s(2, "eth0", 300, 3.0),
        ]));
        let eth0 = t
            .lines()
            .find(|l| l.starts_with(" eth0 "))
            .unwrap_or_default();
        assert_eq!(
            eth0.split_whitespace().collect::<Vec<_>>(),
            ["eth0", "2", "400", "4.00"]
        );
    }
}
