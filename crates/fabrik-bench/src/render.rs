//! The text table, laid out as perftest prints its results.

use std::fmt::Write;

use fabrik_model::{P2pReport, P2pRows};

use crate::client::per_interface;

const RULE: &str =
    "---------------------------------------------------------------------------------------";

pub fn table(r: &P2pReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{RULE}");
    let _ = writeln!(
        out,
        " fabrik bench p2p: {} {} test, {} stream(s) over {}",
        r.transport,
        match r.results {
            P2pRows::Bw(_) => "bandwidth",
            P2pRows::Lat(_) => "latency",
        },
        r.streams,
        r.interfaces.join(", ")
    );
    let _ = writeln!(out, "{RULE}");
    match &r.results {
        P2pRows::Bw(rows) => {
            let _ = writeln!(
                out,
                " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]    BW peak[GB/sec]    BW average[GB/sec]"
            );
            for row in rows {
                let _ = writeln!(
                    out,
                    " {:<10} {:<14} {:<18.2} {:<20.2} {:<16.6} {:<18.3} {:.3}",
                    row.bytes,
                    row.iterations,
                    row.bw_peak_gbps,
                    row.bw_avg_gbps,
                    row.msg_rate_mpps,
                    row.bw_peak_gbps / 8.0,
                    row.bw_avg_gbps / 8.0
                );
            }
            if r.per_stream.len() > 1 {
                let _ = writeln!(out, "{RULE}");
                let _ = writeln!(out, " stream  interface        local address     bytes            BW average[Gb/sec]");
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
        }
        P2pRows::Lat(rows) => {
            let _ = writeln!(
                out,
                " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]"
            );
            for row in rows {
                let _ = writeln!(
                    out,
                    " {:<6} {:<14} {:<14.2} {:<12.2} {:<18.2} {:<14.2} {:<15.2} {:<22.2} {:.2}",
                    row.bytes,
                    row.iterations,
                    row.t_min_us,
                    row.t_max_us,
                    row.t_typical_us,
                    row.t_avg_us,
                    row.t_stdev_us.unwrap_or(0.0),
                    row.p99_us.unwrap_or(0.0),
                    row.p999_us.unwrap_or(0.0)
                );
            }
        }
    }
    let _ = writeln!(out, "{RULE}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabrik_model::{BwRow, P2pTest, ResultSource};

    #[test]
    fn bandwidth_table_has_perftest_columns_and_gbytes() {
        let r = P2pReport {
            schema_version: 1,
            source: ResultSource::Fabrik,
            test: P2pTest::Bw,
            transport: "tcp".into(),
            op: None,
            streams: 1,
            interfaces: vec!["lo".into()],
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
            per_stream: vec![],
            notes: vec![],
        };
        let t = table(&r);
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
}
