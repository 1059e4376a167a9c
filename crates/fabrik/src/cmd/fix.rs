//! `fabrik fix`: the configuration changes the doctor's findings call for, printed as a plan,
//! a bash script or an Ansible playbook; `--apply` makes them on this machine with an undo
//! record and runs the checks again; `--undo RECORD` puts the values back.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{bail, Context};
use fabrik_fix::options::{FixFormat, FixOptions};

pub fn run(args: FixOptions) -> anyhow::Result<ExitCode> {
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
    let opts = args.apply_options(expect.as_ref());
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
