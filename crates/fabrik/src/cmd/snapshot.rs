//! `fabrik snapshot`: captures what inventory reads into a directory or `.tar.gz`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use fabrik_probe::snapshot::{capture, default_output_name, SnapshotOptions};
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
    let output = match args.output {
        Some(o) => o,
        None => {
            // Through the confined reader: the root may be someone else's tree (HOST_NAME_MAX 64).
            let host = fabrik_probe::confined::Root::open(&args.root)
                .and_then(|r| r.read("proc/sys/kernel/hostname", 256))
                .ok()
                .map(|b| String::from_utf8_lossy(&b).into_owned());
            PathBuf::from(default_output_name(
                host.as_deref().map(str::trim),
                SystemTime::now(),
            ))
        }
    };
    let mut opts = SnapshotOptions::new(output.clone());
    opts.source_root = args.root;
    opts.run_commands = !args.no_commands;
    opts.command_timeout = Duration::from_secs(args.timeout.max(1));
    let summary =
        capture(&opts).with_context(|| format!("writing snapshot {}", output.display()))?;
    match args.format {
        Format::Json => crate::output::print_json(&summary)?,
        Format::Text | Format::Markdown => {
            crate::output::print_text(&fabrik_render::snapshot::summary(&summary))?
        }
    }
    Ok(ExitCode::SUCCESS)
}
