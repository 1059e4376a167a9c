//! `fabrik rules`: the rule catalog, one line per rule.

use std::process::ExitCode;

use fabrik_doctor::catalog;
use serde::Serialize;

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Format {
    /// Text for people (`table` is accepted as another name for it).
    #[value(name = "text", alias = "table")]
    Table,
    Json,
}

#[derive(clap::Args)]
pub struct Args {
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

#[derive(Serialize)]
struct RulesDoc {
    schema_version: u32,
    rules: Vec<&'static catalog::Rule>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.format {
        Format::Json => crate::output::print_json(&RulesDoc {
            schema_version: fabrik_model::SCHEMA_VERSION,
            rules: catalog::rules(),
        })?,
        Format::Table => {
            let mut text = String::new();
            for r in catalog::rules() {
                text.push_str(&format!(
                    "{:<14} {:<8} {}\n",
                    r.id,
                    r.severity.as_str(),
                    r.title
                ));
            }
            crate::cmd::doctor::emit(&text)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
