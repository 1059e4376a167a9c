//! The `fabrik` command line: argument parsing, wiring and rendering only. Every decision lives
//! in the library crates.

use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};

mod cmd;
mod exit;
mod output;
mod progress;

#[derive(Parser)]
#[command(name = "fabrik", version, about, propagate_version = true)]
struct Cli {
    /// More log output on stderr (-v info, -vv debug); RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Discover one node's fabric: RDMA devices, ports, GIDs, NICs, GPUs and their distances.
    Inventory(cmd::inventory::Args),
    /// Capture what inventory reads into a directory or .tar.gz, to read back with --root.
    Snapshot(cmd::snapshot::Args),
    /// Find what makes multi-node GPU training slow or broken, with evidence and the fix.
    Doctor(cmd::doctor::Args),
    /// The doctor as a node health check: one line per problem, exit 1 to drain, a time budget.
    Check(cmd::check::Args),
    /// The configuration changes the findings call for: a plan, a script or a playbook;
    /// --apply makes them here with an undo record, --undo puts them back.
    Fix(fabrik_fix::options::FixOptions),
    /// Write a cluster expectations file (TOML) from a known-good node, for --expect.
    Expect(cmd::expect::Args),
    /// List the doctor's rules: id, severity, title.
    Rules(cmd::rules::Args),
    /// Print a rule's page: what it checks, why it matters, evidence, fix and sources.
    Explain(cmd::explain::Args),
    /// The NCCL environment for this fabric or a platform profile, each variable with its reason.
    Env(cmd::env::Args),
    /// Render a runnable job (torchrun, docker, k8s, slurm, hostfile) with that environment.
    Launch(cmd::launch::Args),
    /// Measure the network between hosts: point-to-point bandwidth and latency, collectives.
    Bench(cmd::bench::Args),
    /// Read NCCL_DEBUG=INFO logs: transport, GDR, socket fallback, NICs, errors with their fix.
    Logs(cmd::logs::Args),
    /// Read nccl-tests, perftest and tool outputs (ibstat, lspci, mstconfig...) into facts and findings.
    Parse(cmd::parse::Args),
    /// Ask a running NCCL job's RAS port for its status, diagnostics or monitor events.
    Ras(cmd::ras::ClientArgs),
    /// Live rates and moving error/congestion counters of every RDMA port and netdev.
    Top(cmd::top::Args),
    /// Serve this node's port and netdev counters as Prometheus metrics.
    Exporter(fabrik_monitor::options::ExporterOptions),
    /// Counter rates and counter findings between two snapshots.
    Diff(cmd::diff::Args),
    /// Runs across the ranks of a job: the all-pairs matrix, the cluster-wide doctor.
    Cluster(cmd::cluster::Args),
    /// One self-contained HTML page from result files: busbw curves, pair heatmap, findings, nodes.
    Report(cmd::report::Args),
    /// Shell completions for bash, zsh, fish, elvish or powershell, on stdout.
    Completions { shell: clap_complete::Shell },
    /// The manual page (roff), on stdout: `fabrik manpage | man -l -`.
    #[command(hide = true)]
    Manpage,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(cli.verbose);
    let result = match cli.command {
        Command::Inventory(args) => cmd::inventory::run(args),
        Command::Snapshot(args) => cmd::snapshot::run(args),
        Command::Check(args) => cmd::check::run(args),
        Command::Doctor(args) => cmd::doctor::run(args),
        Command::Fix(args) => cmd::fix::run(args),
        Command::Expect(args) => cmd::expect::run(args),
        Command::Rules(args) => cmd::rules::run(args),
        Command::Explain(args) => cmd::explain::run(args),
        Command::Env(args) => cmd::env::run(args),
        Command::Launch(args) => cmd::launch::run(args),
        Command::Bench(args) => cmd::bench::run(args),
        Command::Logs(args) => cmd::logs::run(args),
        Command::Parse(args) => cmd::parse::run(args),
        Command::Ras(args) => cmd::ras::run_client(args),
        Command::Top(args) => cmd::top::run(args),
        Command::Exporter(args) => cmd::exporter::run(args),
        Command::Diff(args) => cmd::diff::run(args),
        Command::Cluster(args) => cmd::cluster::run(args),
        Command::Report(args) => cmd::report::run(args),
        Command::Completions { shell } => generated(Some(shell)),
        Command::Manpage => generated(None),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            // One write: ranks started with --local share this stderr, and eprintln! writes
            // the pieces of a formatted error separately, so two ranks' errors interleaved.
            let line = format!("fabrik: error: {err:#}\n");
            let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
            exit::failure()
        }
    }
}

/// Shell completions, or the manual page without a shell, on stdout.
fn generated(shell: Option<clap_complete::Shell>) -> anyhow::Result<ExitCode> {
    let mut command = <Cli as clap::CommandFactory>::command();
    let mut bytes = Vec::new();
    match shell {
        Some(shell) => clap_complete::generate(shell, &mut command, "fabrik", &mut bytes),
        None => clap_mangen::Man::new(command)
            .render(&mut bytes)
            .context("rendering the manual page")?,
    }
    output::print_text(&String::from_utf8_lossy(&bytes))?;
    Ok(ExitCode::SUCCESS)
}

fn init_tracing(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(output::colour(&std::io::stderr()))
        .init();
}

#[cfg(test)]
mod tests {
    /// Every subcommand's flags, flattened from several crates, without clashing names.
    #[test]
    fn the_command_line_is_consistent() {
        <super::Cli as clap::CommandFactory>::command().debug_assert();
    }
}
