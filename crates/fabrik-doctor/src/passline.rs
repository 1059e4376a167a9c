//! The bandwidth judge: whether a benchmark's numbers are good enough, with the line and where
//! it comes from, and whether the run is a complete result at all. One rule for every command
//! that prints bandwidth (`parse perftest`, `parse nccl-tests`, `bench p2p` over TCP and RDMA,
//! `bench collective`, `cluster matrix`):
//!
//! - A line the expectations file gives for what was measured is the line (`[bandwidth]`
//!   `p2p_gbps_per_nic`, `all_reduce_busbw_gbs`): a value a vendor or an operator states as a
//!   pass line (AzNHC's 460 GB/s, Oracle's ib_write_bw line) is taken as stated.
//! - Else the line is a share of the hardware's rate, 0.9 unless `[bandwidth] pass_fraction`
//!   says otherwise. 0.9 is the tolerance of both tools this judge stands in for: NVIDIA's
//!   ngc_multinode_perf passes a link at `multiplier * 0.9 * port_rate` (`BW_PASS_RATE`, its
//!   `PASS_CRITERION` 0.9), and nccl-tests fails a run whose bus bandwidth is below 0.9 of the
//!   one it is given (`NCCL_TESTS_MIN_BW`, `bw < check_avg_bw*(0.9)` in src/common.cu).
//!   - Point-to-point (perftest, `bench p2p`, each link of the matrix): the NIC's link rate,
//!     times the NICs striped over, doubled for a bidirectional run; rows from 64 KiB up
//!     (ngc_multinode_perf's message size) are judged.
//!   - A collective across hosts (output that lists no hosts counts as one when it is given a
//!     link rate): one NIC's link rate, as bus bandwidth (Gb/s / 8). nccl-tests
//!     defines bus bandwidth so that it "should reflect the speed of the hardware bottleneck"
//!     (doc/PERFORMANCE.md); across hosts every rank's data crosses the network, which moves at
//!     least one NIC's rate per node, so bus bandwidth below that means the job does not use the
//!     network as it should (socket fallback, GPUDirect off, a slow rail). A run on one host has
//!     no network line. The largest size is judged, when it is at least
//!     [`COLLECTIVE_JUDGED_BYTES`]: below, bus bandwidth still climbs with the size.
//! - A run that did not finish is not a result: [`collective_incomplete`] and
//!   [`p2p_incomplete`] say why, and `fabrik report` shows the same words.

use fabrik_model::{
    CollectiveReport, Evidence, Finding, LinkMeasurement, Node, P2pReport, P2pRows, PairMatrix,
    Severity,
};
use fabrik_parse::check::{port_gbps, slowest_nic_gbps};
use serde::Serialize;

use crate::expect::Expectations;

/// The judged results are model types: every renderer reads them.
pub use fabrik_model::passline::{
    collective_incomplete, p2p_incomplete, Judgement, LinkVerdict, LinksJudgement, Measure,
    PassLine, RowVerdict, Verdict,
};

/// The share of the hardware's rate a run must reach when no line is given: ngc_multinode_perf's
/// `PASS_CRITERION` and nccl-tests' `NCCL_TESTS_MIN_BW` tolerance.
pub const DEFAULT_FRACTION: f64 = 0.9;
/// ngc_multinode_perf's default bandwidth message size (`bw_ms_list=("65536")` in
/// ngc_rdma_test.sh): rows from this size up are judged; smaller messages are bound by message
/// rate, not the link.
pub const P2P_JUDGED_BYTES: u64 = 65_536;
/// The smallest collective size judged against a line drawn from the link rate: below 32 MiB
/// the bus bandwidth of a multi-host run still climbs with the size.
pub const COLLECTIVE_JUDGED_BYTES: u64 = 32 << 20;

/// Rule id of a point-to-point run (or link) below its pass line.
pub const LOW_BW: &str = "FAB-BENCH-LOW-BW";
/// Rule id of a collective below its bus bandwidth pass line.
pub const LOW_BUSBW: &str = "FAB-BENCH-LOW-BUSBW";
/// Rule id of a run that did not finish (aborted, cut, header only).
pub const INCOMPLETE: &str = "FAB-BENCH-INCOMPLETE";

const NGC_SOURCE: &str = "NVIDIA ngc_multinode_perf common.sh (BW_PASS_RATE = 0.9 x port rate), https://github.com/Mellanox/ngc_multinode_perf/blob/main/common.sh";
const NCCL_TESTS_SOURCE: &str = "nccl-tests doc/PERFORMANCE.md (bus bandwidth reflects the hardware bottleneck) and src/common.cu (NCCL_TESTS_MIN_BW x 0.9), https://github.com/NVIDIA/nccl-tests";

/// The share of the link rate the runs must reach: the file's `pass_fraction`, else 0.9, and
/// how a basis says it (`90 %`, `85 % (expectations: bandwidth.pass_fraction)`).
fn fraction(expect: Option<&Expectations>) -> (f64, String) {
    match expect
        .and_then(|e| e.bandwidth.as_ref())
        .and_then(|b| b.pass_fraction)
    {
        Some(f) => (
            f,
            format!("{} % (expectations: bandwidth.pass_fraction)", f * 100.0),
        ),
        None => (DEFAULT_FRACTION, format!("{} %", DEFAULT_FRACTION * 100.0)),
    }
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
            measure: Measure::PointToPoint,
            op: None,
        });
    }
    let link = link_gbps.filter(|g| g.is_finite() && *g > 0.0)?;
    let (f, share) = fraction(expect);
    Some(PassLine {
        value: f * link * factor,
        unit: "Gb/s",
        basis: format!(
            "{share} of the {link} Gb/s link rate{} ({NGC_SOURCE})",
            if bidirectional {
                ", x2 bidirectional"
            } else {
                ""
            }
        ),
        measure: Measure::PointToPoint,
        op: None,
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

/// The expectations file's all_reduce bus bandwidth line (for all_reduce runs only).
pub fn busbw_line(expect: Option<&Expectations>) -> Option<PassLine> {
    let g = expect?.bandwidth.as_ref()?.all_reduce_busbw_gbs?;
    Some(PassLine {
        value: g,
        unit: "GB/s",
        basis: format!("expectations: bandwidth.all_reduce_busbw_gbs = {g}"),
        measure: Measure::BusBandwidth,
        op: Some("all_reduce".into()),
    })
}

/// The line of a collective run: the file's all_reduce line for an all_reduce run, else, for
/// a run across hosts, the share of one NIC's link rate as bus bandwidth (the module's rule);
/// output that lists no hosts (no device lines) is taken to cross the link it is given.
/// `None` when neither applies (one host, no link rate, another op than the file's).
pub fn collective_line(
    expect: Option<&Expectations>,
    report: &CollectiveReport,
    link_gbps: Option<f64>,
) -> Option<PassLine> {
    if report.op == "all_reduce" {
        if let Some(line) = busbw_line(expect) {
            return Some(line);
        }
    }
    let mut hosts: Vec<&String> = report.hosts.iter().collect();
    hosts.sort();
    hosts.dedup();
    let link = link_gbps.filter(|g| g.is_finite() && *g > 0.0)?;
    let across = match hosts.len() {
        1 => return None,
        0 => "the output lists no hosts: a run given a link rate is taken to cross it".to_string(),
        n => format!("a run across {n} hosts"),
    };
    let (f, share) = fraction(expect);
    Some(PassLine {
        value: f * link / 8.0,
        unit: "GB/s",
        basis: format!(
            "{share} of one NIC's {link} Gb/s link rate ({} GB/s) as bus bandwidth, {across} ({NCCL_TESTS_SOURCE})",
            link / 8.0,
        ),
        measure: Measure::BusBandwidth,
        op: None,
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

/// Judges a collective run's out-of-place bus bandwidth (in-place when that is all there is)
/// at its largest message size: the bus bandwidth curve climbs with the size and an expected
/// value is its plateau (AzNHC runs all_reduce_perf at one size, 16 GiB, and judges that).
/// `None` for a collective the line is not for, and, against a line drawn from the link rate,
/// when the largest size is below [`COLLECTIVE_JUDGED_BYTES`].
pub fn judge_collective(report: &CollectiveReport, line: &PassLine) -> Option<Judgement> {
    if line.op.as_ref().is_some_and(|op| *op != report.op) {
        return None;
    }
    let largest = report
        .rows
        .iter()
        .filter(|r| r.out_of_place.is_some() || r.in_place.is_some())
        .map(|r| r.size)
        .max()?;
    if line.op.is_none() && largest < COLLECTIVE_JUDGED_BYTES {
        return None;
    }
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

/// The finding of a run below its line (`None` when it passed): every row below it, the line
/// and its basis. An error: a run below its line exits 1 like one.
pub fn below_line_finding(j: &Judgement, subject: impl Into<String>) -> Option<Finding> {
    if j.verdict == Verdict::Pass {
        return None;
    }
    let below: Vec<&RowVerdict> = j
        .rows
        .iter()
        .filter(|r| r.verdict == Verdict::Fail)
        .collect();
    let worst = below.iter().min_by(|a, b| a.value.total_cmp(&b.value))?;
    let unit = j.line.unit;
    let (rule, what, fix) = match j.line.measure {
        Measure::PointToPoint => (
            LOW_BW,
            "bandwidth",
            "Check link width/speed and errors (`fabrik doctor`), the PCIe width of the NIC, the MTU, and that both ends use the same GID/port; try more QPs (-q 4).",
        ),
        Measure::BusBandwidth => (
            LOW_BUSBW,
            "bus bandwidth",
            "Check the transport NCCL used (`fabrik logs`: socket fallback, GPUDirect RDMA off), the GPU-NIC affinity, and each link with `fabrik bench` or `fabrik cluster matrix`.",
        ),
    };
    Some(Finding {
        rule: rule.into(),
        severity: Severity::Error,
        subject: subject.into(),
        message: format!(
            "{} of {} judged row(s) below the pass line {:.2} {unit}, the lowest {what} {:.2} {unit} at {} bytes (line: {})",
            below.len(),
            j.rows.len(),
            j.line.value,
            worst.value,
            worst.bytes,
            j.line.basis
        ),
        evidence: below
            .iter()
            .take(8)
            .map(|r| Evidence::new(format!("{} bytes", r.bytes), format!("{:.2} {unit}", r.value)))
            .collect(),
        fix: fix.into(),
    })
}

/// The finding of a run that is not a complete result, with why ([`collective_incomplete`],
/// [`p2p_incomplete`]): an error, since neither its numbers nor its silence can be trusted.
pub fn incomplete_finding(subject: impl Into<String>, why: &str) -> Finding {
    Finding {
        rule: INCOMPLETE.into(),
        severity: Severity::Error,
        subject: subject.into(),
        message: format!("the run is not a complete result: {why}"),
        evidence: vec![Evidence::new("run", why)],
        fix: "Rerun the benchmark to its end and keep its whole output (the footer with `# Avg bus bandwidth` for nccl-tests); if it stopped by itself, its last lines and `fabrik logs` on its NCCL_DEBUG=INFO output say why.".into(),
    }
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

/// A result with its judgement beside it (the JSON of `bench p2p`, `bench collective`); the
/// result's own keys stay at the top level.
#[derive(Serialize)]
pub struct WithPassLine<'a, T: Serialize> {
    /// The result.
    #[serde(flatten)]
    pub report: &'a T,
    /// Its judgement, when a line was known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pass_line: Option<Judgement>,
}

/// The matrix with its links judged beside it (the JSON of `cluster matrix`).
#[derive(Serialize)]
pub struct WithLinksPassLine<'a, T: Serialize> {
    /// The matrix.
    #[serde(flatten)]
    pub report: &'a T,
    /// Its links judged, when a line was known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pass_line: Option<LinksJudgement>,
}

/// Judges a `bench p2p` run over TCP: against the expectations' per-NIC line, else 90 % of
/// `link_gbps` (per NIC), else of the slowest speed `nics` (this machine's inventory, read only
/// then) gives the `ifaces` in use; times the number of NICs the run was striped over.
pub fn judge_tcp_p2p<'n, E>(
    report: &P2pReport,
    expect: Option<&Expectations>,
    link_gbps: Option<f64>,
    ifaces: &[String],
    bidirectional: bool,
    nics: impl FnOnce() -> Result<&'n Node, E>,
) -> Result<Option<Judgement>, E> {
    let mut used: Vec<&String> = ifaces.iter().collect();
    used.sort();
    used.dedup();
    let link = match link_gbps {
        Some(g) => Some(g),
        None if !used.is_empty() && expect.is_none() => slowest_nic_gbps(nics()?, &used),
        None => None,
    };
    let line = p2p_line_striped(expect, link, used.len().max(1), bidirectional);
    Ok(line.and_then(|l| judge_p2p(report, &l)))
}

/// Judges a `bench p2p` run over RDMA verbs: against the expectations' per-NIC line, else 90 %
/// of `link_gbps`, else of the rate `nics` (this machine's inventory, read only then) gives the
/// port in use, where ngc_multinode_perf reads it too.
pub fn judge_rdma_p2p<'n, E>(
    report: &P2pReport,
    expect: Option<&Expectations>,
    link_gbps: Option<f64>,
    nics: impl FnOnce() -> Result<&'n Node, E>,
) -> Result<Option<Judgement>, E> {
    let link = match (link_gbps, &report.device) {
        (Some(g), _) => Some(g),
        (None, Some(dev)) if expect.is_none() => port_gbps(nics()?, dev),
        _ => None,
    };
    Ok(p2p_line(expect, link, false).and_then(|l| judge_p2p(report, &l)))
}

/// Judges the all-pairs matrix: each link against the expectations' per-NIC line, else 90 % of
/// `link_gbps`, else of the rate most ranks give their data NIC (`rank_rates`).
pub fn judge_matrix(
    m: &PairMatrix,
    expect: Option<&Expectations>,
    link_gbps: Option<f64>,
    rank_rates: &[Option<f64>],
) -> Option<LinksJudgement> {
    matrix_line(expect, link_gbps, rank_rates).and_then(|l| judge_links(&m.links, &l))
}

/// Judges a `bench collective` run against the expectations' all_reduce bus bandwidth line.
pub fn judge_busbw(report: &CollectiveReport, expect: Option<&Expectations>) -> Option<Judgement> {
    busbw_line(expect).and_then(|l| judge_collective(report, &l))
}

/// Whether a judgement was made and failed (the exit status of a judged run).
pub fn failed(judged: Option<&Judgement>) -> bool {
    judged.is_some_and(|j| j.verdict == Verdict::Fail)
}

/// Judges a parsed nccl-tests run (`fabrik parse nccl-tests`): the findings about it (wrong
/// values, a run that did not finish, bus bandwidth below its line) and its judgement, all by
/// the one bandwidth judge.
pub fn judge_nccl_tests_run(
    run: &fabrik_parse::nccl_tests::NcclTestsRun,
    expect: Option<&Expectations>,
    link_gbps: Option<f64>,
) -> (Vec<Finding>, Option<Judgement>) {
    let r = &run.report;
    let subject = format!("nccl-tests {}", r.op);
    let mut findings = fabrik_parse::check::check_collective(run);
    if let Some(why) = collective_incomplete(r) {
        findings.push(incomplete_finding(&subject, &why));
    }
    let judged = collective_line(expect, r, link_gbps).and_then(|l| judge_collective(r, &l));
    findings.extend(
        judged
            .as_ref()
            .and_then(|j| below_line_finding(j, &subject)),
    );
    (findings, judged)
}

/// Judges a parsed perftest report (`fabrik parse perftest`): a report without rows, and its
/// bandwidth against the point-to-point line.
pub fn judge_perftest(
    report: &P2pReport,
    expect: Option<&Expectations>,
    link_gbps: Option<f64>,
) -> (Vec<Finding>, Option<Judgement>) {
    let subject = format!("perftest {}", report.device.as_deref().unwrap_or("?"));
    let mut findings = vec![];
    if let Some(why) = p2p_incomplete(report) {
        findings.push(incomplete_finding(&subject, &why));
    }
    let bidir = fabrik_parse::perftest::is_bidirectional(report);
    let judged = p2p_line(expect, link_gbps, bidir).and_then(|l| judge_p2p(report, &l));
    findings.extend(
        judged
            .as_ref()
            .and_then(|j| below_line_finding(j, &subject)),
    );
    (findings, judged)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;
