//! The shape of a rule's page: what every crate that emits findings registers for
//! `fabrik rules`, `fabrik explain` and docs/rules/.

use serde::Serialize;

use crate::Severity;

/// What a rule reads.
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

/// Where a rule's knowledge comes from: a public page.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Source {
    /// The page's title.
    pub title: &'static str,
    /// Its public URL.
    pub url: &'static str,
}

/// A rule's stable id, severity, and its page: what it checks, why it matters, the evidence it
/// reads, the fix, and where the knowledge comes from.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Rule {
    /// Stable id, `FAB-...`.
    pub id: &'static str,
    /// The most severe level the rule reports (some findings of a rule are milder).
    pub severity: Severity,
    /// What the rule reads.
    pub scope: Scope,
    /// One-line title.
    pub title: &'static str,
    /// What the rule checks.
    pub checks: &'static str,
    /// Why it matters.
    pub why: &'static str,
    /// The evidence it reads (files, captures, variables).
    pub evidence: &'static str,
    /// The fix it proposes.
    pub fix: &'static str,
    /// Where the knowledge comes from.
    pub sources: &'static [Source],
}
