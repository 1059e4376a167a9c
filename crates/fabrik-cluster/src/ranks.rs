//! Who am I in the job: rank, world size and where rank 0 listens, read from the environment
//! the user's launcher already sets. Pure: the environment comes in as a map.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::hostlist::expand_hostlist;
use crate::ClusterError;

/// Port rank 0 listens on when the launcher names none (torchrun's default).
pub const DEFAULT_MASTER_PORT: u16 = 29500;

/// Which launcher's variables gave the rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Launcher {
    /// torchrun, Kubernetes jobs, or `--local` children: `RANK`/`WORLD_SIZE`.
    Torchrun,
    /// Open MPI's `mpirun`: `OMPI_COMM_WORLD_*`.
    OpenMpi,
    /// MPICH/Hydra and other PMI launchers: `PMI_RANK`/`PMI_SIZE`.
    Pmi,
    /// `srun`: `SLURM_PROCID`/`SLURM_NTASKS`.
    Slurm,
}

impl Launcher {
    /// The name used in output (`torchrun`, `openmpi`, `pmi`, `slurm`).
    pub fn name(self) -> &'static str {
        match self {
            Launcher::Torchrun => "torchrun",
            Launcher::OpenMpi => "openmpi",
            Launcher::Pmi => "pmi",
            Launcher::Slurm => "slurm",
        }
    }
}

/// This process's place in the job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankInfo {
    /// Whose variables these came from.
    pub launcher: Launcher,
    /// This process's rank, from 0.
    pub rank: u32,
    /// Number of ranks in the job.
    pub world_size: u32,
    /// Rank on this host, where the launcher says.
    pub local_rank: Option<u32>,
    /// Where rank 0's rendezvous listens; `None` when the launcher gave no way to know it.
    pub master_addr: Option<String>,
    /// Rank 0's rendezvous port.
    pub master_port: u16,
}

/// Reads the rank from `env`. `Ok(None)` when no launcher variables are present at all.
/// Precedence: explicit `RANK`/`WORLD_SIZE` (what torchrun and `--local` set, and what users
/// export by hand to override), then Open MPI, then PMI, then Slurm.
pub fn discover(env: &BTreeMap<String, String>) -> Result<Option<RankInfo>, ClusterError> {
    let get = |k: &str| env.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
    let sets: [(Launcher, &str, &str, Option<&str>); 4] = [
        (Launcher::Torchrun, "RANK", "WORLD_SIZE", Some("LOCAL_RANK")),
        (
            Launcher::OpenMpi,
            "OMPI_COMM_WORLD_RANK",
            "OMPI_COMM_WORLD_SIZE",
            Some("OMPI_COMM_WORLD_LOCAL_RANK"),
        ),
        (
            Launcher::Pmi,
            "PMI_RANK",
            "PMI_SIZE",
            Some("MPI_LOCALRANKID"),
        ),
        (
            Launcher::Slurm,
            "SLURM_PROCID",
            "SLURM_NTASKS",
            Some("SLURM_LOCALID"),
        ),
    ];
    for (launcher, rank_var, size_var, local_var) in sets {
        let (Some(rank), Some(size)) = (get(rank_var), get(size_var)) else {
            continue;
        };
        let rank = parse_u32(rank_var, rank)?;
        let world_size = parse_u32(size_var, size)?;
        if world_size == 0 || rank >= world_size {
            return Err(ClusterError::Env {
                var: rank_var.to_string(),
                why: format!("rank {rank} is not below the world size {world_size} ({size_var})"),
            });
        }
        let local_rank = match local_var.and_then(|v| get(v).map(|x| (v, x))) {
            Some((var, value)) => Some(parse_u32(var, value)?),
            None => None,
        };
        let master_port = match get("MASTER_PORT") {
            Some(p) => p.parse::<u16>().map_err(|_| ClusterError::Env {
                var: "MASTER_PORT".into(),
                why: format!("{p:?} is not a port number"),
            })?,
            None => DEFAULT_MASTER_PORT,
        };
        let mut master_addr = get("MASTER_ADDR").map(str::to_string);
        if master_addr.is_none() && launcher == Launcher::Slurm {
            if let Some(list) = get("SLURM_JOB_NODELIST").or_else(|| get("SLURM_NODELIST")) {
                master_addr = expand_hostlist(list)?.into_iter().next();
            }
        }
        return Ok(Some(RankInfo {
            launcher,
            rank,
            world_size,
            local_rank,
            master_addr,
            master_port,
        }));
    }
    Ok(None)
}

/// The environment of this process as a map, for [`discover`].
pub fn process_env() -> BTreeMap<String, String> {
    std::env::vars().collect()
}

fn parse_u32(var: &str, value: &str) -> Result<u32, ClusterError> {
    value.parse::<u32>().map_err(|_| ClusterError::Env {
        var: var.to_string(),
        why: format!("{value:?} is not a non-negative integer"),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A process environment of `pairs`, for this module's and the launcher's tests.
    pub(crate) fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn torchrun_and_kubernetes() {
        let r = discover(&env(&[
            ("RANK", "3"),
            ("WORLD_SIZE", "8"),
            ("LOCAL_RANK", "1"),
            ("MASTER_ADDR", "trainer-0.svc"),
            ("MASTER_PORT", "23456"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(r.launcher, Launcher::Torchrun);
        assert_eq!((r.rank, r.world_size, r.local_rank), (3, 8, Some(1)));
        assert_eq!(r.master_addr.as_deref(), Some("trainer-0.svc"));
        assert_eq!(r.master_port, 23456);
    }

    #[test]
    fn open_mpi_needs_master_addr_from_env() {
        let r = discover(&env(&[
            ("OMPI_COMM_WORLD_RANK", "5"),
            ("OMPI_COMM_WORLD_SIZE", "16"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "5"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(r.launcher, Launcher::OpenMpi);
        assert_eq!((r.rank, r.world_size, r.local_rank), (5, 16, Some(5)));
        assert_eq!(r.master_addr, None);
        assert_eq!(r.master_port, DEFAULT_MASTER_PORT);
    }

    #[test]
    fn pmi() {
        let r = discover(&env(&[("PMI_RANK", "0"), ("PMI_SIZE", "2")]))
            .unwrap()
            .unwrap();
        assert_eq!(r.launcher, Launcher::Pmi);
        assert_eq!((r.rank, r.world_size, r.local_rank), (0, 2, None));
    }

    #[test]
    fn slurm_master_is_first_host_of_the_nodelist() {
        let r = discover(&env(&[
            ("SLURM_PROCID", "9"),
            ("SLURM_NTASKS", "16"),
            ("SLURM_LOCALID", "1"),
            ("SLURM_JOB_NODELIST", "gpu[07-10,12],login1"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(r.launcher, Launcher::Slurm);
        assert_eq!((r.rank, r.world_size, r.local_rank), (9, 16, Some(1)));
        assert_eq!(r.master_addr.as_deref(), Some("gpu07"));
    }

    #[test]
    fn slurm_master_addr_wins_over_the_nodelist() {
        let r = discover(&env(&[
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "2"),
            ("SLURM_JOB_NODELIST", "gpu[07-10]"),
            ("MASTER_ADDR", "10.0.0.1"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(r.master_addr.as_deref(), Some("10.0.0.1"));
    }

    #[test]
    fn explicit_rank_wins_over_the_launcher_underneath() {
        // torchrun inside an srun allocation: torchrun's per-process RANK is the one that counts.
        let r = discover(&env(&[
            ("RANK", "6"),
            ("WORLD_SIZE", "8"),
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "1"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!((r.launcher, r.rank), (Launcher::Torchrun, 6));
    }

    #[test]
    fn nothing_set_is_none_and_nonsense_is_an_error() {
        assert_eq!(discover(&env(&[("HOME", "/root")])).unwrap(), None);
        assert!(discover(&env(&[("RANK", "x"), ("WORLD_SIZE", "2")])).is_err());
        let e = discover(&env(&[("RANK", "4"), ("WORLD_SIZE", "4")])).unwrap_err();
        assert!(e.to_string().contains("RANK"), "{e}");
        assert!(discover(&env(&[("RANK", "0"), ("WORLD_SIZE", "0")])).is_err());
        assert!(discover(&env(&[
            ("RANK", "0"),
            ("WORLD_SIZE", "2"),
            ("MASTER_PORT", "99999")
        ]))
        .is_err());
    }

    proptest! {
        #[test]
        fn arbitrary_values_never_panic(
            rank in any::<String>(), size in any::<String>(), list in any::<String>()
        ) {
            let _ = discover(&env(&[
                ("SLURM_PROCID", &rank), ("SLURM_NTASKS", &size), ("SLURM_JOB_NODELIST", &list),
            ]));
        }
    }
}
