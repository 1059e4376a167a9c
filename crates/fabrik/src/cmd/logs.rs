//! `fabrik logs`: what NCCL really did, read from NCCL_DEBUG=INFO output.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use fabrik_parse::nccl_log::analyze_paths;
use fabrik_render::Format;

#[derive(clap::Args)]
pub struct Args {
    /// Log files (plain or gzip; NCCL_DEBUG_FILE per-process files or whole job logs); `-` reads stdin.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let report = analyze_paths(&args.files).context("reading NCCL logs")?;
    match args.format {
        Format::Json => crate::output::print_json(&report)?,
        Format::Text => print!("{}", fabrik_render::logs::text(&report)),
        Format::Markdown => print!("{}", fabrik_render::logs::markdown(&report)),
    }
    Ok(crate::exit::status(report.failed()))
}
