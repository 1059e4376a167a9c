//! `fabrik diff SNAP_A SNAP_B`: counter rates and counter findings between two snapshots.

use std::path::PathBuf;
use std::process::ExitCode;

use fabrik_monitor::diff::diff_snapshots;
use fabrik_monitor::Thresholds;
use fabrik_render::Format;

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

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let diff = diff_snapshots(&args.before, &args.after, &args.thresholds)?;
    crate::output::print(args.format, &diff, |d| {
        fabrik_render::monitor::diff(&d.report, &d.findings)
    })?;
    Ok(crate::exit::of_findings(&diff.findings))
}
