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
    pub thresholds: ThresholdArgs,
}

/// The counter rules' rate thresholds, as every command that runs them (diff, top, doctor
/// --watch, exporter) takes them; the defaults and why are on [`Thresholds`].
#[derive(clap::Args, Debug, Clone)]
pub struct ThresholdArgs {
    /// PFC pause frames per second (per priority and direction) above which FAB-CNT-108 fires.
    #[arg(long, value_name = "PER_S", default_value_t = Thresholds::default().pause_frames_per_s, value_parser = rate)]
    pub pause_threshold: f64,
    /// CNPs per second above which FAB-CNT-109 fires.
    #[arg(long, value_name = "PER_S", default_value_t = Thresholds::default().cnp_per_s, value_parser = rate)]
    pub cnp_threshold: f64,
}

impl ThresholdArgs {
    /// The thresholds these flags give.
    pub fn get(&self) -> Thresholds {
        Thresholds {
            pause_frames_per_s: self.pause_threshold,
            cnp_per_s: self.cnp_threshold,
        }
    }
}

fn rate(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!(
            "{s:?} is not a rate per second (a number, 0 or more)"
        )),
    }
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
    let th = args.thresholds.get();
    let findings = report_findings(&report, &th);
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
