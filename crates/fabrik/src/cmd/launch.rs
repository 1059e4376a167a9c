//! `fabrik launch KIND`: a runnable job (torchrun, docker, k8s, slurm, hostfile) carrying the
//! environment `fabrik env` would print.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use fabrik_launch::options::{named, ShapeOptions};
use fabrik_launch::{Kind, LaunchDoc};

use super::env::{build_env, NodeArgs};
use fabrik_render::Format;

#[derive(clap::Args)]
pub struct Args {
    /// What to render.
    #[arg(value_parser = named::<Kind>(Kind::ALL.map(Kind::as_str)))]
    pub kind: Kind,
    #[command(flatten)]
    pub shape: ShapeOptions,
    #[command(flatten)]
    pub env: NodeArgs,
    /// Write to this file (atomically) instead of stdout.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    #[arg(long, default_value = "text", value_parser = Format::text_or_json())]
    pub format: Format,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (env, node) = build_env(&args.env)?;
    let shape = args.shape.shape(node.as_ref());
    let text = fabrik_launch::render(args.kind, &env, &shape)?;
    let out = match args.format {
        Format::Text | Format::Markdown => text,
        Format::Json => {
            let doc = LaunchDoc::new(args.kind, &shape, &env, &text);
            let mut s = serde_json::to_string_pretty(&doc).context("serializing")?;
            s.push('\n');
            s
        }
    };
    match &args.output {
        Some(path) => {
            crate::output::write_atomically(path, out.as_bytes())?;
            eprintln!("fabrik launch: wrote {} ({})", path.display(), env.summary);
        }
        None => crate::output::print_text(&out)?,
    }
    Ok(ExitCode::SUCCESS)
}
