//! `fabrik inventory`: one node's fabric, read from a root directory (the live `/` by default, a
//! snapshot directory, or a snapshot `.tar.gz`).

use std::path::PathBuf;
use std::process::ExitCode;

use fabrik_render::Format;

#[derive(clap::Args)]
pub struct Args {
    /// Root to read: `/` for this machine, or a snapshot directory or .tar.gz.
    #[arg(long, default_value = "/")]
    pub root: PathBuf,
    #[arg(long, default_value = "text", value_parser = Format::text_or_json())]
    pub format: Format,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let node = fabrik_probe::open::load_node(&args.root)?;
    crate::output::print(args.format, &node, fabrik_render::inventory::text)?;
    Ok(ExitCode::SUCCESS)
}
