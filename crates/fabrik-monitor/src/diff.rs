//! Two snapshots compared (`fabrik diff`): the counter rates between them and the counter
//! findings on those rates.

use std::path::Path;

use fabrik_model::{Finding, SCHEMA_VERSION};
use fabrik_probe::open::OpenError;
use serde::Serialize;

use crate::{compare, interval_between, report_findings, sample, Report, Thresholds};

/// The comparison of two snapshots, as `fabrik diff --format json` writes it.
#[derive(Debug, Clone, Serialize)]
pub struct SnapshotDiff {
    /// The document's schema version.
    pub schema_version: u32,
    /// The earlier snapshot, as named.
    pub before: String,
    /// The later snapshot, as named.
    pub after: String,
    /// `captured_at` when both snapshots carry `fabrik/captured_at`, else `unknown`.
    pub interval_source: &'static str,
    /// The counter changes.
    #[serde(flatten)]
    pub report: Report,
    /// The counter findings on them.
    pub findings: Vec<Finding>,
}

/// Samples the snapshots (directories or `.tar.gz`) at `before` and `after` and compares them.
pub fn diff_snapshots(
    before: &Path,
    after: &Path,
    thresholds: &Thresholds,
) -> Result<SnapshotDiff, OpenError> {
    let (a, b) = (
        fabrik_probe::open::open(before)?,
        fabrik_probe::open::open(after)?,
    );
    let (first, second) = (sample(&a.root), sample(&b.root));
    let interval = interval_between(&first, &second);
    let report = compare(&first, &second, interval);
    let findings = report_findings(&report, thresholds);
    Ok(SnapshotDiff {
        schema_version: SCHEMA_VERSION,
        before: before.display().to_string(),
        after: after.display().to_string(),
        interval_source: if interval.is_some() {
            "captured_at"
        } else {
            "unknown"
        },
        report,
        findings,
    })
}
