//! `fabrik rules`: the rule catalog, one line per rule.

use std::process::ExitCode;

use fabrik_doctor::catalog;
use fabrik_render::Format;

#[derive(clap::Args)]
pub struct Args {
    #[arg(long, default_value = "text", value_parser = Format::text_or_json())]
    pub format: Format,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let doc = catalog::rules_doc();
    crate::output::print(args.format, &doc, |d| {
        fabrik_render::doctor::rules(&d.rules)
    })?;
    Ok(ExitCode::SUCCESS)
}
