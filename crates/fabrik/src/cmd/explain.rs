//! `fabrik explain ID`: a rule's page (what it checks, why, evidence, fix, sources).

use std::process::ExitCode;

use fabrik_doctor::catalog;
use serde::Serialize;

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Format {
    /// Text for people (`table` is accepted as another name for it).
    #[value(name = "text", alias = "table")]
    Text,
    Json,
}

#[derive(clap::Args)]
pub struct Args {
    /// Rule id, e.g. FAB-PORT-001 (`fabrik rules` lists them).
    pub id: String,
    #[arg(long, value_enum, default_value_t = Format::Text)]
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
                Format::Text => crate::cmd::doctor::emit(&page)?,
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
