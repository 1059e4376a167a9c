//! `fabrik explain ID`: a rule's page (what it checks, why, evidence, fix, sources).

use std::process::ExitCode;

use fabrik_doctor::catalog;

#[derive(clap::Args)]
pub struct Args {
    /// Rule id, e.g. FAB-PORT-001 (`fabrik rules` lists them).
    pub id: String,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match catalog::rule(&args.id) {
        Some(rule) => {
            crate::cmd::doctor::emit(&catalog::page(rule))?;
            Ok(ExitCode::SUCCESS)
        }
        None => anyhow::bail!(
            "unknown rule `{}`; `fabrik rules` lists the rule ids",
            args.id
        ),
    }
}
