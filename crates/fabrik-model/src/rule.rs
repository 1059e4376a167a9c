//! The shape of a rule's page: what every crate that emits findings registers for
//! `fabrik rules`, `fabrik explain` and docs/rules/.

use serde::Serialize;

use crate::Severity;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Reads one node.
    Node,
    /// Reads one node and the planned NCCL environment.
    Env,
    /// Compares several nodes.
    Cluster,
    /// Compares two samples of one node's counters (`doctor --watch`, `diff`, `top`).
    Counters,
    /// Reads an NCCL log or a benchmark's output.
    Log,
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct Source {
    pub title: &'static str,
    pub url: &'static str,
}

/// A rule's stable id, severity, and its page: what it checks, why it matters, the evidence it
/// reads, the fix, and where the knowledge comes from.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Rule {
    pub id: &'static str,
    /// The most severe level the rule reports (some findings of a rule are milder).
    pub severity: Severity,
    pub scope: Scope,
    pub title: &'static str,
    pub checks: &'static str,
    pub why: &'static str,
    pub evidence: &'static str,
    pub fix: &'static str,
    pub sources: &'static [Source],
}
