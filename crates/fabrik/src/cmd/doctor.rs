//! `fabrik doctor`: probes one or more roots and runs the rule catalog on them.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use fabrik_doctor::{diagnose, name_nodes, render, PlannedEnv};

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
    Markdown,
}

#[derive(clap::Args)]
pub struct Args {
    /// Root to check: `/` for this machine, or a snapshot directory or .tar.gz. Give it several
    /// times to check snapshots of several nodes and compare them.
    #[arg(long, default_value = "/")]
    pub root: Vec<PathBuf>,
    /// A planned NCCL environment to check against the fabric: KEY=VALUE lines.
    #[arg(long, conflicts_with = "env")]
    pub env_file: Option<PathBuf>,
    /// Check this process's NCCL_*, FI_*, RDMAV_* and UCX_* environment variables.
    #[arg(long)]
    pub env: bool,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Exit 1 on warnings too, not only on errors.
    #[arg(long)]
    pub strict: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let env = if let Some(path) = &args.env_file {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading env file {}", path.display()))?;
        Some(PlannedEnv::parse(
            format!("env file {}", path.display()),
            &text,
        ))
    } else if args.env {
        Some(PlannedEnv::from_pairs(
            "process environment",
            std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))),
        ))
    } else {
        None
    };
    let mut nodes = Vec::with_capacity(args.root.len());
    for root in &args.root {
        nodes.push(crate::cmd::inventory::load_node(root)?);
    }
    let report = diagnose(&name_nodes(nodes), env.as_ref());
    match args.format {
        Format::Json => crate::output::print_json(&report)?,
        Format::Table => emit(&render::table(&report))?,
        Format::Markdown => emit(&render::markdown(&report))?,
    }
    Ok(ExitCode::from(report.exit_code(args.strict)))
}

/// Writes text to stdout; a reader that went away (`fabrik rules | head`) is not an error.
pub(crate) fn emit(text: &str) -> anyhow::Result<()> {
    crate::output::print_text(text)
}
