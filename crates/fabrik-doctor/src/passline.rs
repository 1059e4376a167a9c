//! Pass lines: whether a benchmark's numbers are good enough, with the line and where it comes
//! from. One place for every command that prints bandwidth (`parse perftest`, `parse
//! nccl-tests`, `bench p2p`, `bench collective`, `cluster matrix`).
//!
//! The line is the expectations file's when it gives one (`[bandwidth]`); else, for
//! point-to-point runs, 90 % of the link rate of the NIC in use: NVIDIA's own acceptance line in
//! ngc_multinode_perf (`common.sh`: `BW_PASS_RATE = multiplier * 0.9 * port_rate`, the port rate
//! read from sysfs, multiplier 2 for bidirectional runs). Collectives have no default: no
//! public rule turns a node's links into an all_reduce bus bandwidth, so only an expectations
//! file judges them.

use fabrik_model::{CollectiveReport, LinkMeasurement, P2pReport, P2pRows};
use serde::Serialize;

use crate::expect::Expectations;

/// NVIDIA ngc_multinode_perf's pass fraction of the port rate.
pub const NGC_FRACTION: f64 = 0.9;
/// ngc_multinode_perf's default bandwidth message size (`bw_ms_list=("65536")` in
/// ngc_rdma_test.sh): rows from this size up are judged; smaller messages are bound by message
/// rate, not the link.
pub const P2P_JUDGED_BYTES: u64 = 65_536;

const NGC_SOURCE: &str = "NVIDIA ngc_multinode_perf common.sh (BW_PASS_RATE = 0.9 x port rate), https://github.com/Mellanox/ngc_multinode_perf/blob/main/common.sh";

/// A line a number must reach, its unit and why it is there.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PassLine {
    /// The line, in `unit`.
    pub value: f64,
    /// `Gb/s` (point-to-point) or `GB/s` (collective bus bandwidth).
    pub unit: &'static str,
    /// Where the line comes from (the expectations file, or 90 % of the link rate and its source).
    pub basis: String,
}

/// Whether a number reached its line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// At or above the line.
    Pass,
    /// Below the line.
    Fail,
}

impl Verdict {
    /// `pass` or `fail`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
        }
    }
}

/// One judged row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RowVerdict {
    /// Message size in bytes.
    pub bytes: u64,
    /// The row's number, in the line's unit.
    pub value: f64,
    /// Whether it reached the line.
    pub verdict: Verdict,
}

/// A result judged against a line: every judged row, and `fail` when any row is below it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Judgement {
    /// The line judged against.
    pub line: PassLine,
    /// Every judged row.
    pub rows: Vec<RowVerdict>,
    /// `fail` when any row failed.
    pub verdict: Verdict,
}

/// The point-to-point line per NIC: the expectations' `p2p_gbps_per_nic`, else 90 % of the link
/// rate (doubled for a bidirectional run, whose numbers add both directions).
pub fn p2p_line(
    expect: Option<&Expectations>,
    link_gbps: Option<f64>,
    bidirectional: bool,
) -> Option<PassLine> {
    let factor = if bidirectional { 2.0 } else { 1.0 };
    if let Some(g) = expect
        .and_then(|e| e.bandwidth.as_ref())
        .and_then(|b| b.p2p_gbps_per_nic)
    {
        return Some(PassLine {
            value: g * factor,
            unit: "Gb/s",
            basis: format!(
                "expectations: bandwidth.p2p_gbps_per_nic = {g}{}",
                if bidirectional {
                    ", x2 bidirectional"
                } else {
                    ""
                }
            ),
        });
    }
    let link = link_gbps.filter(|g| g.is_finite() && *g > 0.0)?;
    Some(PassLine {
        value: NGC_FRACTION * link * factor,
        unit: "Gb/s",
        basis: format!(
            "90 % of the {link} Gb/s link rate{} ({NGC_SOURCE})",
            if bidirectional {
                ", x2 bidirectional"
            } else {
                ""
            }
        ),
    })
}

/// The link rate most ranks report for the NIC their data address is on, the higher on a
/// tie, with how many report it and how many report any: one degraded port must not lower the
/// line its own links are judged by. `None` when no rank reports one.
pub fn common_rate(rates: &[Option<f64>]) -> Option<(f64, usize, usize)> {
    let known: Vec<f64> = rates
        .iter()
        .flatten()
        .copied()
        .filter(|g| g.is_finite() && *g > 0.0)
        .collect();
    let mut best: Option<(f64, usize)> = None;
    for &g in &known {
        let n = known.iter().filter(|&&o| (o - g).abs() < 1e-6).count();
        if best.is_none_or(|(bg, bn)| n > bn || (n == bn && g > bg)) {
            best = Some((g, n));
        }
    }
    best.map(|(g, n)| (g, n, known.len()))
}

/// The per-link line of the all-pairs matrix: the expectations' or `--link-gbps`'s as for any
/// point-to-point run, else 90 % of the rate most ranks report ([`common_rate`]).
pub fn matrix_line(
    expect: Option<&Expectations>,
    link_gbps: Option<f64>,
    rank_rates: &[Option<f64>],
) -> Option<PassLine> {
    if expect.is_some() || link_gbps.is_some() {
        return p2p_line(expect, link_gbps, false);
    }
    let (g, agree, known) = common_rate(rank_rates)?;
    let mut line = p2p_line(None, Some(g), false)?;
    line.basis = format!(
        "{}; the rate {agree} of {known} ranks' inventories give the NIC of their data address",
        line.basis
    );
    Some(line)
}

/// The line for a run striped over `nics` NICs: the per-NIC line times their number (its
/// numbers add the NICs up).
pub fn p2p_line_striped(
    expect: Option<&Expectations>,
    link_gbps_per_nic: Option<f64>,
    nics: usize,
    bidirectional: bool,
) -> Option<PassLine> {
    let mut line = p2p_line(expect, link_gbps_per_nic, bidirectional)?;
    if nics > 1 {
        line.value *= nics as f64;
        line.basis = format!("{}, x{nics} NICs", line.basis);
    }
    Some(line)
}

/// The all_reduce bus bandwidth line: only an expectations file gives one.
pub fn busbw_line(expect: Option<&Expectations>) -> Option<PassLine> {
    let g = expect?.bandwidth.as_ref()?.all_reduce_busbw_gbs?;
    Some(PassLine {
        value: g,
        unit: "GB/s",
        basis: format!("expectations: bandwidth.all_reduce_busbw_gbs = {g}"),
    })
}

fn verdict_of(value: f64, line: &PassLine) -> Verdict {
    if value >= line.value {
        Verdict::Pass
    } else {
        Verdict::Fail
    }
}

fn judgement(line: &PassLine, rows: Vec<RowVerdict>) -> Option<Judgement> {
    if rows.is_empty() {
        return None;
    }
    let verdict = if rows.iter().any(|r| r.verdict == Verdict::Fail) {
        Verdict::Fail
    } else {
        Verdict::Pass
    };
    Some(Judgement {
        line: line.clone(),
        rows,
        verdict,
    })
}

/// Judges a bandwidth run's average bandwidth at every row from [`P2P_JUDGED_BYTES`] up;
/// `None` for latency runs and runs without such rows.
pub fn judge_p2p(report: &P2pReport, line: &PassLine) -> Option<Judgement> {
    let P2pRows::Bw(rows) = &report.results else {
        return None;
    };
    let judged = rows
        .iter()
        .filter(|r| r.bytes >= P2P_JUDGED_BYTES)
        .map(|r| RowVerdict {
            bytes: r.bytes,
            value: r.bw_avg_gbps,
            verdict: verdict_of(r.bw_avg_gbps, line),
        })
        .collect();
    judgement(line, judged)
}

/// Judges an all_reduce run's out-of-place bus bandwidth (in-place when that is all there is)
/// at its largest message size: the bus bandwidth curve climbs with the size and an expected
/// value is its plateau (AzNHC runs all_reduce_perf at one size, 16 GiB, and judges that).
/// `None` for other collectives, whose bus bandwidth the line does not speak of.
pub fn judge_collective(report: &CollectiveReport, line: &PassLine) -> Option<Judgement> {
    if report.op != "all_reduce" {
        return None;
    }
    let largest = report
        .rows
        .iter()
        .filter(|r| r.out_of_place.is_some() || r.in_place.is_some())
        .map(|r| r.size)
        .max()?;
    let judged = report
        .rows
        .iter()
        .filter(|r| r.size == largest)
        .filter_map(|r| {
            let t = r.out_of_place.as_ref().or(r.in_place.as_ref())?;
            Some(RowVerdict {
                bytes: r.size,
                value: t.busbw,
                verdict: verdict_of(t.busbw, line),
            })
        })
        .collect();
    judgement(line, judged)
}

/// One judged link of the all-pairs matrix.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkVerdict {
    /// The sending rank.
    pub src: u32,
    /// The receiving rank.
    pub dst: u32,
    /// The link's bandwidth, Gb/s.
    pub value: f64,
    /// Whether it reached the line.
    pub verdict: Verdict,
}

/// The all-pairs matrix judged link by link against the point-to-point line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinksJudgement {
    /// The line judged against.
    pub line: PassLine,
    /// Every judged link.
    pub links: Vec<LinkVerdict>,
    /// `fail` when any link failed.
    pub verdict: Verdict,
}

/// Judges every measured link (one direction of a pair) of the matrix; `None` without links.
pub fn judge_links(links: &[LinkMeasurement], line: &PassLine) -> Option<LinksJudgement> {
    if links.is_empty() {
        return None;
    }
    let mut judged: Vec<LinkVerdict> = links
        .iter()
        .map(|l| LinkVerdict {
            src: l.src,
            dst: l.dst,
            value: l.gbps,
            verdict: verdict_of(l.gbps, line),
        })
        .collect();
    judged.sort_by_key(|l| (l.src, l.dst));
    let verdict = if judged.iter().any(|l| l.verdict == Verdict::Fail) {
        Verdict::Fail
    } else {
        Verdict::Pass
    };
    Some(LinksJudgement {
        line: line.clone(),
        links: judged,
        verdict,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn the_matrix_line_is_the_rate_most_ranks_report() {
        // Seven ranks at 200 Gb/s, one degraded to 100, one unknown: the line is 180.
        let mut rates = vec![Some(200.0); 7];
        rates.push(Some(100.0));
        rates.push(None);
        assert_eq!(common_rate(&rates), Some((200.0, 7, 8)));
        let l = matrix_line(None, None, &rates).unwrap();
        assert_eq!(l.value, 180.0);
        assert!(l.basis.contains("7 of 8 ranks"), "{}", l.basis);
        // A tie goes to the higher rate; nothing known, no line.
        assert_eq!(
            common_rate(&[Some(100.0), Some(400.0)]),
            Some((400.0, 1, 2))
        );
        assert_eq!(matrix_line(None, None, &[None, None]), None);
        assert_eq!(common_rate(&[Some(0.0), Some(f64::NAN)]), None);
        // --link-gbps and a file win over the inventories.
        assert_eq!(matrix_line(None, Some(100.0), &rates).unwrap().value, 90.0);
        let e = Expectations::parse("t", "[bandwidth]\np2p_gbps_per_nic = 380\n").unwrap();
        assert_eq!(matrix_line(Some(&e), None, &rates).unwrap().value, 380.0);
    }

    #[test]
    fn the_expectations_line_wins_over_the_link_rate() {
        let e = Expectations::parse("t", "[bandwidth]\np2p_gbps_per_nic = 380\n").unwrap();
        let l = p2p_line(Some(&e), Some(400.0), false).unwrap();
        assert_eq!(l.value, 380.0);
        assert!(l.basis.starts_with("expectations"));
        let l = p2p_line(None, Some(400.0), false).unwrap();
        assert_eq!(l.value, 360.0);
        assert!(l.basis.contains("ngc_multinode_perf"));
        assert_eq!(p2p_line(None, Some(400.0), true).unwrap().value, 720.0);
        let four = p2p_line_striped(None, Some(100.0), 4, false).unwrap();
        assert_eq!(four.value, 360.0);
        assert!(four.basis.ends_with("x4 NICs"));
        assert_eq!(p2p_line(None, None, false), None);
        assert_eq!(p2p_line(None, Some(f64::NAN), false), None);
        assert_eq!(busbw_line(None), None);
        let e = Expectations::parse("t", "[bandwidth]\nall_reduce_busbw_gbs = 460\n").unwrap();
        assert_eq!(busbw_line(Some(&e)).unwrap().value, 460.0);
    }

    #[test]
    fn a_row_below_the_line_fails_the_run_and_small_rows_are_not_judged() {
        let line = PassLine {
            value: 90.0,
            unit: "Gb/s",
            basis: "t".into(),
        };
        let row = |bytes, avg| fabrik_model::BwRow {
            bytes,
            iterations: 1000,
            bw_peak_gbps: avg,
            bw_avg_gbps: avg,
            msg_rate_mpps: 0.0,
        };
        let mut r = P2pReport {
            schema_version: 1,
            source: fabrik_model::ResultSource::Perftest,
            test: fabrik_model::P2pTest::Bw,
            transport: "IB".into(),
            op: Some("write".into()),
            streams: 1,
            interfaces: vec![],
            device: None,
            link_type: None,
            mtu: None,
            gid_index: None,
            results: P2pRows::Bw(vec![row(2, 0.1), row(65536, 95.0), row(1 << 20, 96.0)]),
            per_stream: vec![],
            notes: vec![],
            memory: None,
        };
        let j = judge_p2p(&r, &line).unwrap();
        assert_eq!(j.rows.len(), 2);
        assert_eq!(j.verdict, Verdict::Pass);
        r.results = P2pRows::Bw(vec![row(65536, 95.0), row(1 << 20, 89.9)]);
        let j = judge_p2p(&r, &line).unwrap();
        assert_eq!(j.verdict, Verdict::Fail);
        assert_eq!(j.rows[1].verdict, Verdict::Fail);
        r.results = P2pRows::Bw(vec![row(4096, 1.0)]);
        assert_eq!(judge_p2p(&r, &line), None);
    }

    #[test]
    fn one_slow_link_fails_the_matrix_and_is_named() {
        let line = PassLine {
            value: 90.0,
            unit: "Gb/s",
            basis: "t".into(),
        };
        let link = |src, dst, gbps| LinkMeasurement {
            src,
            dst,
            gbps,
            latency_us: None,
            round: 0,
        };
        let j = judge_links(&[link(1, 0, 95.0), link(0, 1, 40.0)], &line).unwrap();
        assert_eq!(j.verdict, Verdict::Fail);
        assert_eq!((j.links[0].src, j.links[0].verdict), (0, Verdict::Fail));
        assert_eq!((j.links[1].src, j.links[1].verdict), (1, Verdict::Pass));
        assert_eq!(judge_links(&[], &line), None);
    }
}
