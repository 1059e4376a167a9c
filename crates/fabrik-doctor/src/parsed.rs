//! Parsed nccl-tests and perftest outputs judged as `fabrik parse` reports them: each run with
//! its findings and its pass line, and a perftest run's failure messages ahead of its reports.

use fabrik_model::{CollectiveReport, Finding, P2pReport, SCHEMA_VERSION};
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
