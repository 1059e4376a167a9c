//! The doctor as a node health check (`fabrik check`): the verdict with the time it took.

use std::time::Duration;

use serde::Serialize;

use crate::Report;

/// The share of a health check's time budget the probe's tools and kernel queries may use: the
/// rest is left for the rules and the answer, so the check answers before the budget ends.
pub const TOOL_SHARE: f64 = 0.75;

/// A health check's answer, as `fabrik check --format json` writes it.
#[derive(Debug, Serialize)]
pub struct HealthDoc<'a> {
    /// No error finding (and no warning, when strict).
    pub healthy: bool,
    /// Seconds the check took.
    pub elapsed_s: f64,
    /// Seconds it was given.
    pub budget_s: f64,
    /// The doctor's report.
    #[serde(flatten)]
    pub report: &'a Report,
}

impl<'a> HealthDoc<'a> {
    /// The answer on `report`: unhealthy on an error finding, or on a warning when `strict`.
    pub fn new(report: &'a Report, strict: bool, elapsed: Duration, budget: Duration) -> Self {
        HealthDoc {
            healthy: !fabrik_model::has_problems(&report.findings, strict),
            elapsed_s: elapsed.as_secs_f64(),
            budget_s: budget.as_secs_f64(),
            report,
        }
    }
}
