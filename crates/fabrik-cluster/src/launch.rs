//! From command-line options and the environment to a [`JoinConfig`], and `--local N`: the
//! same command started N times on this machine as ranks of one job.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::net::{IpAddr, TcpListener};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use fabrik_wire::Token;

use crate::ranks::{discover, RankInfo};
use crate::rendezvous::JoinConfig;
use crate::ClusterError;

/// What the user said on the command line about joining.
#[derive(Debug, Clone, Default)]
pub struct JoinOptions {
    /// `--token`; otherwise `FABRIK_TOKEN` from the environment.
    pub token: Option<String>,
    /// `--master host:port`, overriding the launcher's.
    pub master: Option<String>,
    /// Every wait gives up after this.
    pub timeout: Duration,
    /// Addresses peers should open data connections to (one per NIC); empty: the one rank 0 is reached from.
    pub data_ips: Vec<IpAddr>,
    /// `--name`: how this rank's host is shown (default: the host name).
    pub name: Option<String>,
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
