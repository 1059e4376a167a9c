//! `fabrik cluster`: runs across the ranks of a job (matrix, doctor), and the rank options
//! every multi-rank command shares.

use std::net::IpAddr;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use fabrik_cluster::launch::{join_config, spawn_local, strip_local, JoinOptions};
use fabrik_cluster::ranks::process_env;
use fabrik_cluster::rendezvous::{join, Group};

/// How this process finds the other ranks. Ranks come from the launcher's environment
/// (torchrun/Kubernetes `RANK`/`WORLD_SIZE`/`MASTER_ADDR`/`MASTER_PORT`, Open MPI, PMI, Slurm).
#[derive(clap::Args, Debug, Clone)]
pub struct RankArgs {
    /// Start N ranks on this machine (loopback) instead of reading them from a launcher.
    #[arg(long, value_name = "N")]
    pub local: Option<u32>,
    /// Shared secret every rank must present (default: $FABRIK_TOKEN).
    #[arg(long, env = "FABRIK_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Rank 0's rendezvous address, HOST:PORT (default: $MASTER_ADDR:$MASTER_PORT, or the first
    /// host of $SLURM_JOB_NODELIST).
    #[arg(long, value_name = "HOST:PORT")]
    pub master: Option<String>,
    /// Seconds any wait may take (joining, each transfer) before the run fails naming the rank.
    #[arg(long, default_value_t = 60.0, value_name = "SECS")]
    pub timeout: f64,
    /// Address(es) of this rank's data NICs; channels are spread over them.
    #[arg(long = "data-ip", value_name = "IP", value_delimiter = ',')]
    pub data_ips: Vec<IpAddr>,
    /// How this rank's host is named in output (default: the host name).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
}

/// Runs `body` as one rank of the job, or with `--local N` starts N ranks of this very command
/// and waits for them.
pub fn run_ranked(
    args: &RankArgs,
    body: impl FnOnce(&mut Group) -> anyhow::Result<ExitCode>,
) -> anyhow::Result<ExitCode> {
    if let Some(n) = args.local {
        let exe = std::env::current_exe().context("finding this program to start local ranks")?;
        let argv: Vec<_> = std::env::args_os().skip(1).collect();
        let run = spawn_local(&exe, &strip_local(&argv), n)?;
        let (first, failed) = run.wait()?;
        if !failed.is_empty() {
            let list: Vec<String> = failed
                .iter()
                .map(|(r, s)| format!("rank {r} ({s})"))
                .collect();
            eprintln!("fabrik: local ranks that failed: {}", list.join(", "));
        }
        let code = first.code().unwrap_or(2).clamp(0, 255) as u8;
        return Ok(if code == 0 && !failed.is_empty() {
            ExitCode::from(2)
        } else {
            ExitCode::from(code)
        });
    }
    let opts = JoinOptions {
        token: args.token.clone(),
        master: args.master.clone(),
        timeout: Duration::from_secs_f64(args.timeout.max(0.1)),
        data_ips: args.data_ips.clone(),
        name: args.name.clone(),
    };
    let (cfg, _) = join_config(&opts, &process_env(), &hostname())?;
    let rank = cfg.rank;
    let mut group = join(&cfg).with_context(|| format!("rank {rank} joining the job"))?;
    body(&mut group)
}

/// The UTS host name (per network namespace's UTS namespace where set).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into())
}
