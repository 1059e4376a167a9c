//! `fabrik explain ID`: a rule's page (what it checks, why, evidence, fix, sources).

use std::process::ExitCode;

use fabrik_render::Format;

#[derive(clap::Args)]
pub struct Args {
    /// Rule id, e.g. FAB-PORT-001 (`fabrik rules` lists them).
    pub id: String,
    #[arg(long, default_value = "text", value_parser = Format::text_or_json())]
    pub format: Format,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Some(doc) = fabrik_doctor::catalog::explain(&args.id) else {
        anyhow::bail!(
            "unknown rule `{}`; `fabrik rules` lists the rule ids",
            args.id
        );
    };
    crate::output::print(args.format, &doc, |d| d.page.clone())?;
    Ok(ExitCode::SUCCESS)
}
