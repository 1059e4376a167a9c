//! `fabrik doctor`: probes one or more roots and runs the rule catalog on them.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use fabrik_doctor::PlannedEnv;
use fabrik_render::doctor as render;
use fabrik_render::Format;

#[derive(clap::Args)]
pub struct Args {
    /// Root to check: `/` for this machine, or a snapshot directory or .tar.gz. Give it several
    /// times to check snapshots of several nodes and compare them.
    #[arg(long, default_value = "/")]
    pub root: Vec<PathBuf>,
    #[command(flatten)]
    pub env: EnvArgs,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Exit 1 on warnings too, not only on errors.
    #[arg(long)]
    pub strict: bool,
    /// Also sample every root's counters twice, this long apart (`10s`, `1m`), and add the
    /// counter findings (FAB-CNT-1xx: errors, flaps, retransmissions, pause and CNP rates).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub watch: Option<Duration>,
    #[command(flatten)]
    pub thresholds: fabrik_monitor::Thresholds,
    #[command(flatten)]
    pub expect: fabrik_doctor::expect::ExpectOptions,
}

/// The planned NCCL environment `doctor` and `check` judge the node with.
#[derive(clap::Args, Clone, Default)]
pub struct EnvArgs {
    /// A planned NCCL environment to check against the fabric (and the expectations' `[nccl]`
    /// table): KEY=VALUE lines.
    #[arg(long, conflicts_with = "env")]
    pub env_file: Option<PathBuf>,
    /// Check this process's NCCL_*, FI_*, RDMAV_* and UCX_* environment variables.
    #[arg(long)]
    pub env: bool,
}

impl EnvArgs {
    /// The environment the flags give, or `None`.
    pub fn load(&self) -> anyhow::Result<Option<PlannedEnv>> {
        if let Some(path) = &self.env_file {
            let text = fabrik_probe::input::read_text(
                path,
                "env file",
                fabrik_probe::input::cap::ENV_FILE,
            )?;
            return Ok(Some(PlannedEnv::parse(
                format!("env file {}", path.display()),
                &text,
            )));
        }
        Ok(self.env.then(PlannedEnv::from_process))
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let expect = crate::cmd::expect::load(&args.expect)?;
    let env = args.env.load()?;
    if args.watch.is_some_and(|d| d.is_zero()) {
        anyhow::bail!("--watch must be more than zero");
    }
    let (named, mut report) = fabrik_monitor::checkup::diagnose_roots(
        &args.root,
        env.as_ref(),
        args.watch,
        &args.thresholds,
        &mut |root| {
            eprintln!(
                "fabrik doctor: --watch skips {}: a snapshot archive's counters do not move \
                 (use `fabrik diff` on two snapshots)",
                root.display()
            )
        },
    )?;
    if let Some(e) = &expect {
        crate::cmd::expect::apply(&mut report, &named, e, env.as_ref());
    }
    match args.format {
        Format::Json => crate::output::print_json(&report)?,
        Format::Text => crate::output::print_text(&render::table(&report))?,
        Format::Markdown => crate::output::print_text(&render::markdown(&report))?,
    }
    Ok(crate::exit::status(crate::exit::has_problems(
        &report.findings,
        args.strict,
    )))
}
