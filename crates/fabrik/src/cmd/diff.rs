//! `fabrik diff SNAP_A SNAP_B`: counter rates and counter findings between two snapshots.

use std::path::PathBuf;
use std::process::ExitCode;

use fabrik_model::{Finding, SCHEMA_VERSION};
use fabrik_monitor::{compare, interval_between, report_findings, sample, Report, Thresholds};
use fabrik_render::Format;
use serde::Serialize;

#[derive(clap::Args)]
pub struct Args {
    /// The earlier snapshot: a directory or .tar.gz written by `fabrik snapshot` (or any root
    /// with sys/).
    pub before: PathBuf,
    /// The later snapshot.
    pub after: PathBuf,
    #[arg(long, default_value = "text", value_parser = Format::text_or_json())]
    pub format: Format,
    #[command(flatten)]
    pub thresholds: Thresholds,
}

#[derive(Serialize)]
struct DiffDoc<'a> {
    schema_version: u32,
    before: String,
    after: String,
    /// `captured_at` when both snapshots carry `fabrik/captured_at`, else `unknown`.
    interval_source: &'static str,
    #[serde(flatten)]
    report: &'a Report,
    findings: &'a [Finding],
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (a, b) = (
        fabrik_probe::open::open(&args.before)?,
        fabrik_probe::open::open(&args.after)?,
    );
    let before = sample(&a.root);
    let after = sample(&b.root);
    let interval = interval_between(&before, &after);
    let report = compare(&before, &after, interval);
    let findings = report_findings(&report, &args.thresholds);
    match args.format {
        Format::Json => crate::output::print_json(&DiffDoc {
            schema_version: SCHEMA_VERSION,
            before: args.before.display().to_string(),
            after: args.after.display().to_string(),
            interval_source: if interval.is_some() {
                "captured_at"
            } else {
                "unknown"
            },
            report: &report,
            findings: &findings,
        })?,
        Format::Text | Format::Markdown => {
            print!("{}", fabrik_render::monitor::diff(&report, &findings))
        }
    }
    Ok(crate::exit::status(crate::exit::has_problems(
        &findings, false,
    )))
}
