//! `fabrik parse`: nccl-tests and perftest output into fabrik's result types.

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`fabrik parse` is not built yet")
}
