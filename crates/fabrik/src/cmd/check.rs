//! `fabrik check`: the doctor as a node health check for a scheduler (Slurm's HealthCheckProgram
//! or prolog, a Kubernetes node-problem-detector plugin). One line per problem in LBNL NHC's
//! style, exit codes a prolog understands, and a hard time budget: Slurm kills a health check
//! after 60 s, and a check that hangs is worse than one that says it could not decide.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use fabrik_doctor::health::{HealthDoc, TOOL_SHARE};
use fabrik_doctor::{diagnose, name_nodes};
use fabrik_probe::open::BudgetError;
use fabrik_render::doctor as render;
use fabrik_render::Format;

#[derive(clap::Args)]
pub struct Args {
    /// Root to check: `/` for this machine, or a snapshot directory or .tar.gz.
    #[arg(long, default_value = "/")]
    pub root: PathBuf,
    /// Give up after this long (`20s`) and exit 2: well under Slurm's 60 s HealthCheckProgram
    /// limit, so that the scheduler never kills the check itself.
    #[arg(long, default_value = "20s", value_parser = humantime::parse_duration)]
    pub budget: Duration,
    /// Fail (exit 1) on warnings too; without it warnings are printed and exit 0.
    #[arg(long)]
    pub strict: bool,
    #[arg(long, default_value = "text", value_parser = Format::text_or_json())]
    pub format: Format,
    #[command(flatten)]
    pub expect: fabrik_doctor::expect::ExpectOptions,
    #[command(flatten)]
    pub env: crate::cmd::doctor::EnvArgs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.budget.is_zero() {
        anyhow::bail!("--budget must be more than zero");
    }
    let expect = crate::cmd::expect::load(&args.expect)?;
    let env = args.env.load()?;
    let started = Instant::now();
    let judged =
        fabrik_probe::open::judge_node_within(&args.root, args.budget, TOOL_SHARE, move |node| {
            let named = name_nodes(vec![node]);
            let mut report = diagnose(&named, env.as_ref());
            if let Some(e) = &expect {
                crate::cmd::expect::apply(&mut report, &named, e, env.as_ref());
            }
            report
        });
    let report = match judged {
        Ok(report) => report,
        Err(e) => {
            match e {
                BudgetError::OverBudget { .. } => println!("ERROR: fabrik: check {e}"),
                _ => println!("ERROR: fabrik: check could not run: {e:#}"),
            }
            // Undecided (tool failure or budget spent): a wrapper must not drain a node on it.
            return Ok(crate::exit::failure());
        }
    };
    let doc = HealthDoc::new(&report, args.strict, started.elapsed(), args.budget);
    match args.format {
        Format::Json => crate::output::print_json(&doc)?,
        Format::Text | Format::Markdown => {
            let mut text = render::health_lines(&report);
            text.push_str(&render::verdict(&report));
            text.push('\n');
            text.push_str(&render::waived(&report));
            crate::output::print_text(&text)?;
        }
    }
    Ok(crate::exit::status(!doc.healthy))
}
