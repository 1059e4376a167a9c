//! Expectations and waivers on the command line: the `--expect`/`--ignore` flags that `doctor`
//! and `check` share, and `fabrik expect --from-root`, which writes a cluster file from a
//! known-good node.

use std::path::PathBuf;
use std::process::ExitCode;

use fabrik_doctor::expect::ExpectOptions;
use fabrik_doctor::{Expectations, NamedNode, PlannedEnv, Report};

/// The expectations `--expect` and its flags give (the file read through the bounded reader),
/// or `None` when none was asked for.
pub fn load(o: &ExpectOptions) -> anyhow::Result<Option<Expectations>> {
    let text = o
        .expect
        .as_deref()
        .map(|p| {
            fabrik_probe::input::read_text(p, "expectations", fabrik_probe::input::cap::EXPECT)
        })
        .transpose()?;
    let name = o.expect.as_ref().map(|p| p.display().to_string());
    Ok(o.resolve(name.as_deref().zip(text.as_deref()))?)
}

/// Adds the expectation findings to a report, then applies the waivers (today in UTC).
pub fn apply(
    report: &mut Report,
    nodes: &[NamedNode],
    expect: &Expectations,
    env: Option<&PlannedEnv>,
) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    fabrik_doctor::expect::apply(report, nodes, expect, env, now);
}

#[derive(clap::Args)]
pub struct Args {
    /// A known-good node: `/`, a snapshot directory or .tar.gz.
    #[arg(long, value_name = "DIR")]
    pub from_root: PathBuf,
    /// Write the file here instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let node = fabrik_probe::open::load_node(&args.from_root)?;
    let e = Expectations::from_node(&node);
    let text = e.to_reviewed_toml(&args.from_root.display().to_string())?;
    match &args.output {
        Some(path) => crate::output::write_atomically(path, text.as_bytes())?,
        None => crate::output::print_text(&text)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Reads an expectations file when one is given (the benchmarks' `--expect`).
pub fn load_file(path: Option<&std::path::Path>) -> anyhow::Result<Option<Expectations>> {
    let Some(path) = path else {
        return Ok(None);
    };
    let text =
        fabrik_probe::input::read_text(path, "expectations", fabrik_probe::input::cap::EXPECT)?;
    Ok(Some(Expectations::parse(
        &path.display().to_string(),
        &text,
    )?))
}
