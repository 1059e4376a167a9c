//! `fabrik rules`: the rule catalog, one line per rule.

use std::process::ExitCode;

use fabrik_doctor::catalog;
use fabrik_render::Format;
use serde::Serialize;

#[derive(clap::Args)]
pub struct Args {
    #[arg(long, default_value = "text", value_parser = Format::text_or_json())]
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
        Format::Text | Format::Markdown => {
            crate::cmd::doctor::emit(&fabrik_render::doctor::rules(&catalog::rules()))?
        }
    }
    Ok(ExitCode::SUCCESS)
}
