//! A benchmark result judged against its pass line: the line, what it measures and where it
//! comes from, the verdict per row (or per link of the all-pairs matrix), and whether a run is
//! a complete result at all. The doctor's bandwidth judge (`fabrik_doctor::passline`) draws the
//! lines and fills these; renderers and `--format json` read them.

use serde::Serialize;

use crate::{CollectiveReport, Finding, P2pReport, P2pRows, ResultSource};

/// What a line measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    /// Point-to-point bandwidth, Gb/s.
    PointToPoint,
    /// A collective's bus bandwidth, GB/s.
    BusBandwidth,
}

/// A line a number must reach, its unit and why it is there.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PassLine {
    /// The line, in `unit`.
    pub value: f64,
    /// `Gb/s` (point-to-point) or `GB/s` (collective bus bandwidth).
    pub unit: &'static str,
    /// Where the line comes from (the expectations file, or 90 % of the link rate and its source).
    pub basis: String,
    /// What it measures.
    pub measure: Measure,
    /// The one collective it is for (`all_reduce` for the file's all_reduce line); none: any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op: Option<String>,
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

/// One parsed result with the findings about it; the report's own keys stay at the top level,
/// so the JSON reads back as the model type.
#[derive(Debug, Clone, Serialize)]
pub struct Judged<T> {
    /// The result.
    #[serde(flatten)]
    pub report: T,
    /// The findings about it.
    pub findings: Vec<Finding>,
    /// Its judgement against the pass line, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pass_line: Option<Judgement>,
}

/// Why a collective run is not a complete result, if it is not: fabrik's own run noted that it
/// was aborted (`bench collective --output` keeps the rows so far when a run fails), no rows at
/// all (a header only), or (parsed nccl-tests output) no `# Avg bus bandwidth` line, which
/// nccl-tests prints once every size has run (`writeResultFooter`).
pub fn collective_incomplete(r: &CollectiveReport) -> Option<String> {
    if let Some(note) = r.notes.iter().find(|n| n.starts_with("aborted")) {
        return Some(note.clone());
    }
    if r.rows.is_empty() {
        return Some("aborted: no result rows".into());
    }
    if r.source != ResultSource::Fabrik && r.avg_busbw.is_none() {
        return Some(
            "incomplete: no \"# Avg bus bandwidth\" line (the run stopped before its last \
             size, or the output was cut)"
                .into(),
        );
    }
    None
}

/// Why a point-to-point run is not a result, if it is not: no result rows.
pub fn p2p_incomplete(r: &P2pReport) -> Option<String> {
    let empty = match &r.results {
        P2pRows::Bw(rows) => rows.is_empty(),
        P2pRows::Lat(rows) => rows.is_empty(),
    };
    empty.then(|| "aborted: no result rows".to_string())
}
