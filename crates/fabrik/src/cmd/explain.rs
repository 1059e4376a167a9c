//! `fabrik explain ID`: a rule's page (what it checks, why, evidence, fix, sources).

use std::process::ExitCode;

use fabrik_doctor::catalog;
use fabrik_render::Format;
use serde::Serialize;

#[derive(clap::Args)]
pub struct Args {
    /// Rule id, e.g. FAB-PORT-001 (`fabrik rules` lists them).
    pub id: String,
    #[arg(long, default_value = "text", value_parser = Format::text_or_json())]
    pub format: Format,
}

#[derive(Serialize)]
struct ExplainDoc<'a> {
    schema_version: u32,
    rule: &'a catalog::Rule,
    /// The page as `--format text` prints it.
    page: String,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match catalog::rule(&args.id) {
        Some(rule) => {
            let page = catalog::page(rule);
            match args.format {
                Format::Text | Format::Markdown => crate::cmd::doctor::emit(&page)?,
                Format::Json => crate::output::print_json(&ExplainDoc {
                    schema_version: fabrik_model::SCHEMA_VERSION,
                    rule,
                    page,
                })?,
            }
            Ok(ExitCode::SUCCESS)
        }
        None => anyhow::bail!(
            "unknown rule `{}`; `fabrik rules` lists the rule ids",
            args.id
        ),
    }
}
