//! Findings: the doctor's (and every analyser's) unit of output.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How bad a finding is. Ordered so that sorting descending puts errors first.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// A notable fact, nothing to fix.
    Info,
    /// Likely to cost performance or to fail under some conditions.
    Warning,
    /// Broken: NCCL will fail or fall back to a slower path.
    Error,
}

impl Severity {
    /// The lower-case name used in JSON and text output.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One fact a finding rests on: where it was read and what it said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Evidence {
    /// A path under the probed root (`/sys/class/infiniband/mlx5_0/ports/1/state`), a command
    /// capture (`fabrik/cmd/mlnx_qos-eth2.txt`), an env variable (`env:NCCL_IB_HCA`) or a log line.
    pub path: String,
    /// What it said: a file's content, a variable's value, a measured number.
    pub value: String,
}

impl Evidence {
    /// Evidence read at `path` with `value`.
    pub fn new(path: impl Into<String>, value: impl Into<String>) -> Self {
        Evidence {
            path: path.into(),
            value: value.into(),
        }
    }
}

/// A problem (or a notable fact) with its explanation and fix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Finding {
    /// Stable rule id, `FAB-...`.
    pub rule: String,
    /// How bad it is (at most the rule's severity).
    pub severity: Severity,
    /// What the finding is about: a device/port (`mlx5_0:1`), an interface, a GPU, a node or a rank.
    pub subject: String,
    /// What is wrong, in one or two sentences naming the values.
    pub message: String,
    /// The facts the finding rests on.
    pub evidence: Vec<Evidence>,
    /// What to do about it.
    pub fix: String,
}

/// Whether findings make a command fail (exit 1): any error, and with `strict` any warning as
/// well. The one statement of this policy; every command and the doctor's report ask it here.
pub fn has_problems(findings: &[Finding], strict: bool) -> bool {
    findings.iter().any(|f| match f.severity {
        Severity::Error => true,
        Severity::Warning => strict,
        Severity::Info => false,
    })
}

/// Sorts findings the way every renderer shows them: errors first, then by rule and subject, so
/// that output never depends on the order files were read.
pub fn sort_findings(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then_with(|| a.rule.cmp(&b.rule))
            .then_with(|| a.subject.cmp(&b.subject))
            .then_with(|| a.message.cmp(&b.message))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(severity: Severity) -> Finding {
        Finding {
            rule: "FAB-PORT-001".into(),
            severity,
            subject: "mlx5_0:1".into(),
            message: "port is not active".into(),
            evidence: vec![],
            fix: "bring the port up".into(),
        }
    }

    #[test]
    fn errors_fail_warnings_only_when_strict() {
        assert!(!has_problems(&[], true));
        assert!(!has_problems(&[with(Severity::Info)], true));
        assert!(!has_problems(&[with(Severity::Warning)], false));
        assert!(has_problems(&[with(Severity::Warning)], true));
        assert!(has_problems(
            &[with(Severity::Info), with(Severity::Error)],
            false
        ));
    }
}
