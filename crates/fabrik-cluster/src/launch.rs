//! From command-line options and the environment to a joined [`Group`] ([`run_ranked`]), and
//! `--local N`: the same command started N times on this machine as ranks of one job.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::net::{IpAddr, TcpListener};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use fabrik_wire::Token;

use crate::ranks::{discover, process_env, RankInfo};
use crate::rendezvous::{join, Group, JoinConfig};
use crate::ClusterError;

/// How this process finds the other ranks, as the command line says it. Ranks come from the
/// launcher's environment (torchrun/Kubernetes `RANK`/`WORLD_SIZE`/`MASTER_ADDR`/`MASTER_PORT`,
/// Open MPI, PMI, Slurm).
#[derive(Debug, Clone, Default)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct JoinOptions {
    /// Start N ranks on this machine (loopback) instead of reading them from a launcher.
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    pub local: Option<u32>,
    /// Shared secret every rank must present (default: $FABRIK_TOKEN).
    #[cfg_attr(
        feature = "clap",
        arg(long, env = "FABRIK_TOKEN", hide_env_values = true)
    )]
    pub token: Option<String>,
    /// Rank 0's rendezvous address, HOST:PORT (default: $MASTER_ADDR:$MASTER_PORT, or the first
    /// host of $SLURM_JOB_NODELIST).
    #[cfg_attr(feature = "clap", arg(long, value_name = "HOST:PORT"))]
    pub master: Option<String>,
    /// Seconds any wait may take (joining, each transfer) before the run fails naming the rank.
    #[cfg_attr(
        feature = "clap",
        arg(long, default_value = "60", value_name = "SECS", value_parser = wait_secs)
    )]
    pub timeout: Duration,
    /// Address(es) of this rank's data NICs, announced at the rendezvous: the other ranks send
    /// collective and matrix traffic to them. The cluster doctor moves no data over them.
    #[cfg_attr(
        feature = "clap",
        arg(long = "data-ip", value_name = "IP", value_delimiter = ',')
    )]
    pub data_ips: Vec<IpAddr>,
    /// How this rank's host is named in output (default: the host name).
    #[cfg_attr(feature = "clap", arg(long, value_name = "NAME"))]
    pub name: Option<String>,
}

/// `--timeout SECS`: at least 0.1 s.
pub fn wait_secs(s: &str) -> Result<Duration, String> {
    let v: f64 = s.trim().parse().map_err(|e| format!("{e}"))?;
    if !(v.is_finite() && v < 1e9) {
        return Err(format!("{s} is not a number of seconds"));
    }
    Ok(Duration::from_secs_f64(v.max(0.1)))
}

/// What [`run_ranked`] came to.
#[derive(Debug)]
pub enum Ranked<T> {
    /// This process ran as one rank of the job; what the body returned.
    Rank(T),
    /// `--local N`: this process started N ranks of itself and waited for them.
    Local(LocalOutcome),
}

/// How the ranks of a `--local N` run ended.
#[derive(Debug)]
pub struct LocalOutcome {
    /// Rank 0's exit code; `None` when a signal ended it.
    pub rank0: Option<i32>,
    /// Every rank that did not succeed, with its status.
    pub failed: Vec<(u32, ExitStatus)>,
}

impl LocalOutcome {
    /// `rank 1 (exit status: 1), rank 3 (signal: 9 (SIGKILL))`: the ranks that failed, `None`
    /// when none did.
    pub fn failed_list(&self) -> Option<String> {
        let list: Vec<String> = self
            .failed
            .iter()
            .map(|(r, s)| format!("rank {r} ({s})"))
            .collect();
        (!list.is_empty()).then(|| list.join(", "))
    }

    /// The run's exit code: rank 0's, which carries the verdict; `tool_failure` when a signal
    /// ended rank 0, or when rank 0 succeeded while another rank failed.
    pub fn exit_code(&self, tool_failure: u8) -> u8 {
        match self.rank0 {
            Some(0) if !self.failed.is_empty() => tool_failure,
            Some(c) => c.clamp(0, 255) as u8,
            None => tool_failure,
        }
    }
}

/// Runs `body` as one rank of the job (joined as `opts` and the launcher's environment say), or
/// with `opts.local` starts that many ranks of this very command on this machine and waits for
/// them.
pub fn run_ranked<T>(
    opts: &JoinOptions,
    body: impl FnOnce(&mut Group) -> T,
) -> Result<Ranked<T>, ClusterError> {
    if let Some(n) = opts.local {
        let exe = std::env::current_exe().map_err(|err| ClusterError::Io {
            what: "finding this program to start local ranks".into(),
            err,
        })?;
        let argv: Vec<_> = std::env::args_os().skip(1).collect();
        let (first, failed) = spawn_local(&exe, &strip_local(&argv), n)?.wait()?;
        return Ok(Ranked::Local(LocalOutcome {
            rank0: first.code(),
            failed,
        }));
    }
    let (cfg, _) = join_config(opts, &process_env(), &fabrik_probe::system::this_host())?;
    let rank = cfg.rank;
    let mut group = join(&cfg).map_err(|e| e.context(format!("rank {rank} joining the job")))?;
    Ok(Ranked::Rank(body(&mut group)))
}

/// Works out how this process joins: rank and size from the launcher's variables (a lone
/// process is rank 0 of 1), rank 0's address, and the token.
pub fn join_config(
    opts: &JoinOptions,
    env: &BTreeMap<String, String>,
    hostname: &str,
) -> Result<(JoinConfig, Option<RankInfo>), ClusterError> {
    let info = discover(env)?;
    let (rank, world_size) = info.as_ref().map_or((0, 1), |i| (i.rank, i.world_size));
    let master = match (&opts.master, &info) {
        (Some(m), _) => m.clone(),
        (None, Some(i)) => match &i.master_addr {
            Some(a) => format!("{a}:{}", i.master_port),
            None if world_size > 1 => {
                return Err(ClusterError::Env {
                    var: "MASTER_ADDR".into(),
                    why: format!(
                        "{} gave rank {rank} of {world_size} but no address for rank 0; set MASTER_ADDR (and MASTER_PORT) or pass --master HOST:PORT",
                        i.launcher.name()
                    ),
                })
            }
            None => format!("127.0.0.1:{}", i.master_port),
        },
        (None, None) => "127.0.0.1:0".into(),
    };
    let token = match opts
        .token
        .clone()
        .or_else(|| env.get("FABRIK_TOKEN").cloned())
    {
        Some(t) => Token::new(&t)?,
        None if world_size == 1 => Token::random()?,
        None => {
            return Err(ClusterError::Env {
                var: "FABRIK_TOKEN".into(),
                why: "no token: set FABRIK_TOKEN (the same on every rank) or pass --token".into(),
            })
        }
    };
    let cfg = JoinConfig {
        rank,
        world_size,
        master,
        token,
        timeout: opts.timeout,
        host: opts.name.clone().unwrap_or_else(|| hostname.to_string()),
        data_ips: opts.data_ips.clone(),
    };
    Ok((cfg, info))
}

/// Children of a `--local N` run.
#[derive(Debug)]
pub struct LocalRun {
    children: Vec<Child>,
}

/// Starts `n` copies of `exe args` as ranks 0..n on this machine, on loopback with a fresh
/// token. Rank 0 keeps this process's stdout; the others' stdout is discarded (only rank 0
/// prints results) while everyone's stderr stays, so errors show.
pub fn spawn_local(exe: &Path, args: &[OsString], n: u32) -> Result<LocalRun, ClusterError> {
    if n == 0 {
        return Err(ClusterError::NoLocalRanks);
    }
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|err| ClusterError::Io {
            what: "finding a free port for the rendezvous".into(),
            err,
        })?
        .port();
    let token = Token::random()?;
    let mut children = Vec::with_capacity(n as usize);
    for rank in 0..n {
        let mut cmd = Command::new(exe);
        cmd.args(args)
            .env("RANK", rank.to_string())
            .env("WORLD_SIZE", n.to_string())
            .env("LOCAL_RANK", rank.to_string())
            .env("LOCAL_WORLD_SIZE", n.to_string())
            .env("MASTER_ADDR", "127.0.0.1")
            .env("MASTER_PORT", port.to_string())
            .env("FABRIK_TOKEN", token.as_str())
            .stdin(Stdio::null());
        if rank != 0 {
            cmd.stdout(Stdio::null());
        }
        let child = cmd.spawn().map_err(|err| ClusterError::Io {
            what: format!("starting rank {rank} ({})", exe.display()),
            err,
        })?;
        children.push(child);
    }
    Ok(LocalRun { children })
}

impl LocalRun {
    /// Waits for every rank; returns rank 0's status and the ranks that failed.
    pub fn wait(mut self) -> Result<(ExitStatus, Vec<(u32, ExitStatus)>), ClusterError> {
        let mut statuses = Vec::new();
        for (rank, c) in self.children.iter_mut().enumerate() {
            let st = c.wait().map_err(|err| ClusterError::Io {
                what: format!("waiting for rank {rank}"),
                err,
            })?;
            statuses.push((rank as u32, st));
        }
        let first = statuses
            .first()
            .map(|s| s.1)
            .ok_or(ClusterError::Misuse("no ranks"))?;
        let failed = statuses.into_iter().filter(|(_, s)| !s.success()).collect();
        Ok((first, failed))
    }
}

/// Removes `--local N` / `--local=N` from an argument list so children do not spawn again.
pub fn strip_local(args: &[OsString]) -> Vec<OsString> {
    let mut out = Vec::with_capacity(args.len());
    let mut skip = false;
    for a in args {
        if skip {
            skip = false;
            continue;
        }
        let s = a.to_string_lossy();
        if s == "--local" {
            skip = true;
            continue;
        }
        if s.starts_with("--local=") {
            continue;
        }
        out.push(a.clone());
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    use crate::ranks::tests::env;

    #[test]
    fn a_lone_process_is_rank_0_of_1() {
        let (c, info) = join_config(&JoinOptions::default(), &env(&[]), "h").unwrap();
        assert_eq!((c.rank, c.world_size, info), (0, 1, None));
    }

    #[test]
    fn several_ranks_need_a_token_and_a_master() {
        let e = join_config(
            &JoinOptions::default(),
            &env(&[("RANK", "1"), ("WORLD_SIZE", "2"), ("MASTER_ADDR", "n0")]),
            "h",
        )
        .unwrap_err();
        assert!(e.to_string().contains("FABRIK_TOKEN"), "{e}");
        let e = join_config(
            &JoinOptions::default(),
            &env(&[
                ("OMPI_COMM_WORLD_RANK", "1"),
                ("OMPI_COMM_WORLD_SIZE", "2"),
                ("FABRIK_TOKEN", "x"),
            ]),
            "h",
        )
        .unwrap_err();
        assert!(e.to_string().contains("--master"), "{e}");
        let (c, _) = join_config(
            &JoinOptions {
                master: Some("10.1.1.1:4000".into()),
                name: Some("ns3".into()),
                ..Default::default()
            },
            &env(&[
                ("OMPI_COMM_WORLD_RANK", "1"),
                ("OMPI_COMM_WORLD_SIZE", "2"),
                ("FABRIK_TOKEN", "x"),
            ]),
            "h",
        )
        .unwrap();
        assert_eq!(
            (c.master.as_str(), c.host.as_str()),
            ("10.1.1.1:4000", "ns3")
        );
    }

    #[test]
    fn local_ranks_fold_into_rank_0s_code_or_a_tool_failure() {
        use std::os::unix::process::ExitStatusExt;
        let status = |code: i32| ExitStatus::from_raw(code << 8);
        let run = |rank0, failed: Vec<(u32, ExitStatus)>| LocalOutcome { rank0, failed };
        assert_eq!(run(Some(0), vec![]).exit_code(2), 0);
        assert_eq!(run(Some(0), vec![]).failed_list(), None);
        // Rank 0's verdict (1: something found) is the run's.
        assert_eq!(run(Some(1), vec![(0, status(1))]).exit_code(2), 1);
        // Rank 0 fine but another rank failed: the run could not say.
        let other = run(Some(0), vec![(2, status(3))]);
        assert_eq!(other.exit_code(2), 2);
        assert_eq!(
            other.failed_list().as_deref(),
            Some("rank 2 (exit status: 3)")
        );
        // Rank 0 killed by a signal.
        assert_eq!(
            run(None, vec![(0, ExitStatus::from_raw(9))]).exit_code(2),
            2
        );
    }

    #[test]
    fn waits_are_seconds_of_at_least_a_tenth() {
        assert_eq!(wait_secs("60"), Ok(Duration::from_secs(60)));
        assert_eq!(wait_secs("0"), Ok(Duration::from_millis(100)));
        assert_eq!(
            wait_secs("inf"),
            Err("inf is not a number of seconds".into())
        );
        assert_eq!(wait_secs("soon"), Err("invalid float literal".into()));
    }

    #[test]
    fn strip_local_removes_both_spellings() {
        let a: Vec<OsString> = [
            "bench",
            "collective",
            "--local",
            "4",
            "-b",
            "8",
            "--local=2",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        let want: Vec<OsString> = ["bench", "collective", "-b", "8"]
            .iter()
            .map(OsString::from)
            .collect();
        assert_eq!(strip_local(&a), want);
    }
}
