//! The doctor's document: the findings about one node or several, their counts by severity,
//! and what waivers did. The doctor fills it; renderers and `--format json` read it.

use serde::Serialize;

use crate::{has_problems, sort_findings, Finding, Severity};

/// How many findings of each severity a report holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Findings of severity error: "do not run the job here".
    pub errors: usize,
    /// Findings of severity warning.
    pub warnings: usize,
    /// Findings of severity info.
    pub infos: usize,
}

impl Summary {
    /// The counts of `findings`: what a report of them (one node's or a cluster's) summarises.
    pub fn of(findings: &[Finding]) -> Self {
        let count = |s: Severity| findings.iter().filter(|f| f.severity == s).count();
        Summary {
            errors: count(Severity::Error),
            warnings: count(Severity::Warning),
            infos: count(Severity::Info),
        }
    }
}

/// What a waiver did to one finding: the report lists these beside the findings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Waived {
    /// The finding's rule id.
    pub rule: String,
    /// The finding's subject.
    pub subject: String,
    /// The finding's severity before the waiver.
    pub severity: Severity,
    /// The severity the finding now has; `None` when it was removed.
    pub new_severity: Option<Severity>,
    /// The waiver's reason.
    pub reason: String,
    /// The finding's message.
    pub message: String,
    /// The waiver's last day (`2026-12-31`), when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires: Option<String>,
}

/// The doctor's document: `fabrik doctor --format json` prints it.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// [`crate::SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// The names findings use for the nodes, in the order given.
    pub nodes: Vec<String>,
    /// Every finding left after waivers, sorted by [`crate::sort_findings`].
    pub findings: Vec<Finding>,
    /// Counts of the findings by severity.
    pub summary: Summary,
    /// Findings waivers removed or changed, with the reason given (absent when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub waived: Vec<Waived>,
}

impl Report {
    /// Adds findings made outside the doctor's node rules (`doctor --watch`'s counter
    /// findings, the expectations' differences), keeping the order and the summary right.
    pub fn add_findings(&mut self, more: impl IntoIterator<Item = Finding>) {
        self.findings.extend(more);
        sort_findings(&mut self.findings);
        self.summary = Summary::of(&self.findings);
    }

    /// Whether the report fails a command (exit 1): [`crate::has_problems`] of its findings.
    pub fn has_problems(&self, strict: bool) -> bool {
        has_problems(&self.findings, strict)
    }
}
