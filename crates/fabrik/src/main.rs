//! The `fabrik` command line: argument parsing, wiring and rendering only. Every decision lives
//! in the library crates.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cmd;
mod output;

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
    /// RDMA verbs bandwidth/latency test (temporary; becomes `bench p2p --transport rdma`).
    #[command(hide = true)]
    BenchRdma(Box<cmd::rdma::Args>),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(cli.verbose);
    let result = match cli.command {
        Command::Inventory(args) => cmd::inventory::run(args),
        Command::Snapshot(args) => cmd::snapshot::run(args),
        Command::Doctor(args) => cmd::doctor::run(args),
        Command::BenchRdma(args) => cmd::rdma::run(*args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("fabrik: error: {err:#}");
            ExitCode::from(2)
        }
    }
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
        .init();
}
