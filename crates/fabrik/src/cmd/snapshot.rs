//! `fabrik snapshot`: captures what inventory reads into a directory or `.tar.gz`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use fabrik_probe::snapshot::{capture, default_output, SnapshotOptions};
use fabrik_render::Format;

#[derive(clap::Args)]
pub struct Args {
    /// Output directory, or a file ending in .tar.gz (default: fabrik-snapshot-HOST-DATE).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Root to copy from (a snapshot can be re-captured); helper commands run only for `/`.
    #[arg(long, default_value = "/")]
    pub root: PathBuf,
    /// Do not run helper commands (ibv_devinfo, mlnx_qos, lspci...).
    #[arg(long)]
    pub no_commands: bool,
    /// Seconds each helper command may run.
    #[arg(long, default_value_t = 20)]
    pub timeout: u64,
    #[arg(long, default_value = "text", value_parser = Format::text_or_json())]
    pub format: Format,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let output = args
        .output
        .unwrap_or_else(|| default_output(&args.root, SystemTime::now()));
    let mut opts = SnapshotOptions::new(output.clone());
    opts.source_root = args.root;
    opts.run_commands = !args.no_commands;
    opts.command_timeout = Duration::from_secs(args.timeout.max(1));
    let summary =
        capture(&opts).with_context(|| format!("writing snapshot {}", output.display()))?;
    crate::output::print(args.format, &summary, fabrik_render::snapshot::summary)?;
    Ok(ExitCode::SUCCESS)
}
