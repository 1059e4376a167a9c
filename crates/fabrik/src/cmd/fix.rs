//! `fabrik fix`: the configuration changes the doctor's findings call for, printed as a plan,
//! a bash script or an Ansible playbook; `--apply` makes them on this machine with an undo
//! record and runs the checks again; `--undo RECORD` puts the values back.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use fabrik_fix::run::ApplyOptions;

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum FixFormat {
    /// The plan for people.
    Text,
    /// The plan (or the apply/undo result) as JSON.
    Json,
    /// An idempotent bash script.
    Script,
    /// An Ansible playbook.
    Ansible,
}

#[derive(clap::Args)]
pub struct Args {
    /// Root to plan for: `/` for this machine, or a snapshot directory or .tar.gz. Give it
    /// several times for several nodes; cross-node findings converge them. With --apply, `/`
    /// is the node changed and the others are its peers.
    #[arg(long, default_value = "/")]
    pub root: Vec<PathBuf>,
    /// Only the findings of this rule (repeatable).
    #[arg(long = "rule", value_name = "ID")]
    pub rules: Vec<String>,
    #[arg(long, value_enum, default_value = "text")]
    pub format: FixFormat,
    /// Make the changes on this machine (the root `/`), then run the checks again.
    #[arg(long, conflicts_with = "undo")]
    pub apply: bool,
    /// With --apply: also make the changes that need a drained node (MTU, PFC, ACS, firmware).
    #[arg(long, requires = "apply")]
    pub drained: bool,
    /// Where --apply writes its undo record (default /var/lib/fabrik/fix/undo-<time>.json).
    #[arg(long, value_name = "PATH", requires = "apply")]
    pub record: Option<PathBuf>,
    /// Put back the values an --apply run recorded.
    #[arg(long, value_name = "RECORD")]
    pub undo: Option<PathBuf>,
    #[command(flatten)]
    pub expect: fabrik_doctor::expect::ExpectOptions,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut write = |path: &Path, bytes: &[u8]| {
        crate::output::write_atomically(path, bytes)
            .map_err(|e| std::io::Error::other(format!("{:#}", anyhow::Error::new(e))))
    };
    if let Some(record) = &args.undo {
        let undone = fabrik_fix::run::undo_file(record, &mut write)?;
        match args.format {
            FixFormat::Json => crate::output::print_json(&undone)?,
            _ => crate::output::print_text(&fabrik_fix::text::undone(&undone))?,
        }
        return Ok(if undone.failed.is_empty() {
            ExitCode::SUCCESS
        } else {
            crate::exit::failure()
        });
    }
    let expect = crate::cmd::expect::load(&args.expect)?;
    let planned = fabrik_fix::run::plan_roots(&args.root, expect.as_ref(), &args.rules)?;
    if !args.apply {
        let plan = &planned.plan;
        match args.format {
            FixFormat::Text => crate::output::print_text(&fabrik_fix::text::plan(plan))?,
            FixFormat::Json => crate::output::print_json(plan)?,
            FixFormat::Script => crate::output::print_text(
                &fabrik_fix::script::render(plan).context("writing the script")?,
            )?,
            FixFormat::Ansible => crate::output::print_text(
                &fabrik_fix::ansible::render(plan).context("writing the playbook")?,
            )?,
        }
        return Ok(crate::exit::of_findings(&planned.covered));
    }
    if matches!(args.format, FixFormat::Script | FixFormat::Ansible) {
        bail!("--apply prints its result as text or json, not as a script or playbook");
    }
    let opts = ApplyOptions {
        roots: &args.root,
        expect: expect.as_ref(),
        drained: args.drained,
        record: args.record.clone(),
    };
    let applied = fabrik_fix::run::apply_here(planned, &opts, &mut write)?;
    match args.format {
        FixFormat::Json => crate::output::print_json(&applied)?,
        _ => crate::output::print_text(&fabrik_fix::text::applied(
            &applied.node,
            &applied.outcome,
            &applied.verdicts,
            &applied.record_path.display().to_string(),
        ))?,
    }
    if applied.failed() {
        return Ok(crate::exit::failure());
    }
    Ok(crate::exit::status(applied.still_present()))
}
