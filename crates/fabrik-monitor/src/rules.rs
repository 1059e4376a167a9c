//! Counter rules: they live in the doctor beside their pages
//! ([`fabrik_doctor::counter_rules`]); this module runs them on two samples.

use std::time::Duration;

pub use fabrik_doctor::counter_rules::*;
use fabrik_model::Finding;

use crate::delta::compare;
use crate::sample::Sample;

/// Findings for counters that moved between two samples, with default thresholds.
pub fn counter_findings(
    before: &Sample,
    after: &Sample,
    interval: Option<Duration>,
) -> Vec<Finding> {
    let report = compare(before, after, interval);
    report_findings(&report, &Thresholds::default())
}
