//! Parsed nccl-tests and perftest outputs judged as `fabrik parse` reports them: each run with
//! its findings and its pass line, and a perftest run's failure messages ahead of its reports.

use std::path::{Path, PathBuf};

use fabrik_model::{CollectiveReport, Finding, P2pReport, SCHEMA_VERSION};
use fabrik_parse::error::ParseError;
use fabrik_parse::nccl_tests::NcclTestsRun;
use fabrik_parse::perftest::PerftestOutput;
use fabrik_parse::perftest_failures::PerftestFailure;
use serde::Serialize;

pub use fabrik_model::passline::Judged;

use crate::expect::Expectations;
use crate::passline::{judge_nccl_tests_run, judge_perftest, Verdict};

/// Whether any of `runs` is below its pass line.
pub fn any_below<T>(runs: &[Judged<T>]) -> bool {
    runs.iter()
        .filter_map(|r| r.pass_line.as_ref())
        .any(|j| j.verdict == Verdict::Fail)
}

/// Every finding of `runs`, in order.
pub fn all_findings<T>(runs: &[Judged<T>]) -> Vec<Finding> {
    runs.iter()
        .flat_map(|r| r.findings.iter().cloned())
        .collect()
}

/// Judges parsed nccl-tests runs against `expect`'s line, else 90 % of `link_gbps`; `op`
/// names the collective when the text does not.
pub fn judge_nccl_tests(
    runs: Vec<NcclTestsRun>,
    op: Option<&str>,
    expect: Option<&Expectations>,
    link_gbps: Option<f64>,
) -> Vec<Judged<CollectiveReport>> {
    runs.into_iter()
        .map(|mut run| {
            if let Some(op) = op {
                run.report.op = op.to_string();
            }
            let (findings, pass_line) = judge_nccl_tests_run(&run, expect, link_gbps);
            Judged {
                report: run.report,
                findings,
                pass_line,
            }
        })
        .collect()
}

/// A perftest run that printed failure messages: what it printed and the findings about it.
#[derive(Debug, Clone, Serialize)]
pub struct FailedRun {
    /// [`fabrik_model::SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// `perftest`.
    pub source: &'static str,
    /// Always true.
    pub failed: bool,
    /// The failure lines.
    pub failures: Vec<PerftestFailure>,
    /// The findings about them.
    pub findings: Vec<Finding>,
}

/// One document of `parse perftest`'s JSON: the failure first (it is why the reports, if any,
/// are short or absent), then each report.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum PerftestDoc {
    /// The run's failure messages.
    Failed(FailedRun),
    /// One judged report.
    Report(Box<Judged<P2pReport>>),
}

/// A parsed perftest output judged: its failure messages (with their findings) and its reports.
#[derive(Debug, Clone)]
pub struct JudgedPerftest {
    /// The failure messages, when it printed any.
    pub failed: Option<FailedRun>,
    /// The reports.
    pub runs: Vec<Judged<P2pReport>>,
}

impl JudgedPerftest {
    /// Every finding: the failures' first.
    pub fn findings(&self) -> Vec<Finding> {
        let mut all: Vec<Finding> = self
            .failed
            .iter()
            .flat_map(|f| f.findings.iter().cloned())
            .collect();
        all.extend(all_findings(&self.runs));
        all
    }

    /// The JSON documents, the failure first.
    pub fn docs(&self) -> Vec<PerftestDoc> {
        let mut docs: Vec<PerftestDoc> = self
            .failed
            .iter()
            .cloned()
            .map(PerftestDoc::Failed)
            .collect();
        docs.extend(
            self.runs
                .iter()
                .map(|r| PerftestDoc::Report(Box::new(r.clone()))),
        );
        docs
    }
}

/// Judges a parsed perftest output's reports against `expect`'s line, else 90 % of
/// `link_gbps`, and turns its failure messages into findings.
pub fn judge_perftest_output(
    out: &PerftestOutput,
    expect: Option<&Expectations>,
    link_gbps: Option<f64>,
) -> JudgedPerftest {
    let runs = out
        .reports
        .iter()
        .map(|r| {
            let (findings, pass_line) = judge_perftest(r, expect, link_gbps);
            Judged {
                report: r.clone(),
                findings,
                pass_line,
            }
        })
        .collect();
    let failed = (!out.failures.is_empty()).then(|| FailedRun {
        schema_version: SCHEMA_VERSION,
        source: "perftest",
        failed: true,
        failures: out.failures.clone(),
        findings: fabrik_parse::perftest_failures::findings(&out.failures),
    });
    JudgedPerftest { failed, runs }
}

/// The flags of `fabrik parse nccl-tests` and `fabrik parse perftest`: the file, and what its
/// numbers are judged against.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct ResultOptions {
    /// The tool's output; `-` reads stdin.
    pub file: PathBuf,
    /// Link rate in Gb/s of one NIC: the pass line is 90 % of it (perftest; a collective
    /// across hosts as bus bandwidth, Gb/s / 8) unless `--expect` gives one.
    #[cfg_attr(feature = "clap", arg(long))]
    pub link_gbps: Option<f64>,
    /// Take the link rate from this machine's inventory instead (a sysfs root such as `/`
    /// or a captured tree): the slowest active RDMA port, else the default-route NIC speed.
    #[cfg_attr(feature = "clap", arg(long, conflicts_with = "link_gbps"))]
    pub root: Option<PathBuf>,
    /// Collective name when the text does not say (`all_reduce`, `reduce_scatter`...).
    #[cfg_attr(feature = "clap", arg(long))]
    pub op: Option<String>,
    /// Judge the numbers against this cluster file's `[bandwidth]` lines (else against 90 %,
    /// or its `pass_fraction`, of the link rate, when one is known); exit 1 below the line.
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE"))]
    pub expect: Option<PathBuf>,
}

/// Why a file gave `fabrik parse` nothing to judge.
#[derive(Debug, thiserror::Error)]
pub enum ParsedError {
    /// The nccl-tests output could not be read.
    #[error("parsing nccl-tests output {}", .0.display())]
    NcclTests(PathBuf, #[source] ParseError),
    /// It holds no nccl-tests table.
    #[error("{}: no nccl-tests table found", .0.display())]
    NoTable(PathBuf),
    /// The perftest output could not be read.
    #[error("parsing perftest output {}", .0.display())]
    Perftest(PathBuf, #[source] ParseError),
    /// It holds neither a report nor a failure message.
    #[error("{}: no perftest report and no perftest failure message found", .0.display())]
    NoPerftest(PathBuf),
}

/// The nccl-tests output at `path` (`-`: standard input) parsed and judged as
/// [`judge_nccl_tests`] does; an output without a table is an error.
pub fn nccl_tests_file(
    path: &Path,
    op: Option<&str>,
    expect: Option<&Expectations>,
    link_gbps: Option<f64>,
) -> Result<Vec<Judged<CollectiveReport>>, ParsedError> {
    let runs = fabrik_parse::nccl_tests::parse_path(path)
        .map_err(|e| ParsedError::NcclTests(path.to_path_buf(), e))?;
    if runs.is_empty() {
        return Err(ParsedError::NoTable(path.to_path_buf()));
    }
    Ok(judge_nccl_tests(runs, op, expect, link_gbps))
}

/// The perftest output at `path` (`-`: standard input) parsed, and judged as
/// [`judge_perftest_output`] does; an output with neither a report nor a failure message is an
/// error.
pub fn perftest_file(
    path: &Path,
    expect: Option<&Expectations>,
    link_gbps: Option<f64>,
) -> Result<(PerftestOutput, JudgedPerftest), ParsedError> {
    let out = fabrik_parse::perftest::parse_path_full(path)
        .map_err(|e| ParsedError::Perftest(path.to_path_buf(), e))?;
    if out.reports.is_empty() && out.failures.is_empty() {
        return Err(ParsedError::NoPerftest(path.to_path_buf()));
    }
    let judged = judge_perftest_output(&out, expect, link_gbps);
    Ok((out, judged))
}

/// Whether `fabrik parse` fails on judged runs: one below its pass line, or an error finding.
pub fn failed<T>(runs: &[Judged<T>], findings: &[Finding]) -> bool {
    any_below(runs) || fabrik_model::has_problems(findings, false)
}

/// A pasted tool output's facts with the doctor's findings on them, as
/// `fabrik parse TOOL --format json` writes them.
#[derive(Serialize)]
pub struct PasteDoc<'a> {
    /// The document's schema version.
    pub schema_version: u32,
    /// The tool and the facts read from its output.
    #[serde(flatten)]
    pub pasted: &'a fabrik_parse::formats::paste::Pasted,
    /// The doctor's findings on those facts.
    pub findings: Vec<Finding>,
}

impl<'a> PasteDoc<'a> {
    /// The document of `pasted`, with the rules that apply to its tool's facts run on them.
    pub fn new(pasted: &'a fabrik_parse::formats::paste::Pasted) -> Self {
        PasteDoc {
            schema_version: SCHEMA_VERSION,
            pasted,
            findings: crate::check_paste(&pasted.node, pasted.tool),
        }
    }
}
