use fabrik_wire::WireError;

/// Everything that can go wrong in a cluster run. Errors about a peer name its rank and host.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// A launcher variable is missing or malformed.
    #[error("{var}: {why}")]
    Env {
        /// The variable (`WORLD_SIZE`).
        var: String,
        /// What is wrong with it.
        why: String,
    },
    /// A Slurm hostlist (`node[01-04]`) could not be expanded.
    #[error("hostlist {list:?}: {why}")]
    Hostlist {
        /// The list as given.
        list: String,
        /// What is wrong with it.
        why: String,
    },
    /// The control channel: a peer that died, stalled, or failed the handshake.
    #[error(transparent)]
    Wire(#[from] WireError),
    /// The rendezvous failed: a rank missing, duplicated or refused, in words.
    #[error("rendezvous: {0}")]
    Rendezvous(String),
    /// A peer failed or broke the protocol.
    #[error("{peer}: {why}")]
    Peer {
        /// The peer's label (`rank 3 (node04)`).
        peer: String,
        /// What went wrong.
        why: String,
    },
    /// An operating-system error while doing `what`. The cause is part of the message rather
    /// than a `source`, so that a caller printing the chain (`{:#}`) prints it once.
    #[error("{what}: {err}")]
    Io {
        /// What was being done (`binding the rendezvous port`).
        what: String,
        /// The OS error.
        err: std::io::Error,
    },
    /// A value given by the user or the launcher that has no meaning here.
    #[error("unknown {what} {value:?} ({known})")]
    Unknown {
        /// What the value names: "data type", "reduction", "collective".
        what: &'static str,
        /// The value as given.
        value: String,
        /// The values that are known, comma-separated.
        known: &'static str,
    },
    /// The NCCL library loaded is too old for what was asked.
    #[error("NCCL {version} has no {lacks} (NCCL {needs} or later)")]
    NcclTooOld {
        /// The loaded library's version.
        version: String,
        /// The missing feature.
        lacks: &'static str,
        /// The first NCCL version that has it.
        needs: &'static str,
    },
    /// A worker thread panicked; `0` names the thread ("a send", "the data-connection").
    #[error("{0} thread panicked")]
    ThreadPanicked(&'static str),
    /// The GPU side: CUDA or NCCL.
    #[error(transparent)]
    Gpu(#[from] fabrik_gpu::GpuError),
    /// A rank number outside the job.
    #[error("{role} {rank} is not below the world size {world_size}")]
    NotARank {
        /// What the number was given as: `rank`, `root`, `peer`.
        role: &'static str,
        /// The number given.
        rank: u32,
        /// Number of ranks in the job.
        world_size: u32,
    },
    /// An operation needs a direct (mesh) connection to a rank and the communicator has none.
    #[error(
        "no connection to rank {rank}: this algorithm needs the mesh (open the communicator with \
         mesh)"
    )]
    NoMeshLink {
        /// The rank there is no connection to.
        rank: u32,
    },
    /// A communicator of several ranks was given no ring lane.
    #[error("a group of {ranks} ranks needs at least one ring lane")]
    NoRingLane {
        /// Number of ranks.
        ranks: u32,
    },
    /// A communicator was given more mesh links than there are ranks.
    #[error("{links} mesh links for a group of {ranks}")]
    TooManyMeshLinks {
        /// Mesh links given.
        links: usize,
        /// Number of ranks.
        ranks: u32,
    },
    /// An address that should be `host:port` is not.
    #[error("{addr:?} is not host:port")]
    NotHostPort {
        /// The address as given.
        addr: String,
    },
    /// A peer announced no data address to connect to.
    #[error("{peer} has no data address")]
    NoDataAddress {
        /// The peer's label.
        peer: String,
    },
    /// `--local` was asked for no rank at all.
    #[error("--local needs at least 1 rank")]
    NoLocalRanks,
    /// A call made out of order or without what it needs: a bug in the caller, not bad input.
    #[error("{0}")]
    Misuse(&'static str),
    /// Input that cannot be used, in words (report inputs and plots).
    #[error("{0}")]
    Invalid(String),
    /// The run stopped because a rank failed; the text says which and why.
    #[error("the run was aborted: {0}")]
    Aborted(String),
    /// The RDMA transport: libibverbs, the device, or a verbs call or completion.
    #[error(transparent)]
    Verbs(#[from] fabrik_verbs::VerbsError),
    /// A result file could not be written.
    #[error(transparent)]
    Write(#[from] fabrik_probe::output::WriteError),
    /// A text that is not a byte count.
    #[error(transparent)]
    Size(#[from] fabrik_model::size::SizeError),
    /// What was being done when `source` happened (`opening data connections`); the chain
    /// (`{:#}`) reads `what: source`.
    #[error("{what}")]
    Context {
        /// The step that failed, in words.
        what: String,
        /// Why it failed.
        #[source]
        source: Box<ClusterError>,
    },
}

impl ClusterError {
    /// This error as the cause of `what`.
    pub fn context(self, what: impl Into<String>) -> ClusterError {
        ClusterError::Context {
            what: what.into(),
            source: Box::new(self),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The CLI prints errors as anyhow's chain (`{:#}`): the OS message must appear once.
    #[test]
    fn the_chain_names_the_os_error_once() {
        let os = std::io::Error::from_raw_os_error(98);
        let text = os.to_string();
        let e = ClusterError::Io {
            what: "binding the rendezvous port".into(),
            err: os,
        };
        let chain = format!("{:#}", anyhow::Error::new(e));
        assert!(
            chain.starts_with("binding the rendezvous port: "),
            "{chain}"
        );
        assert_eq!(chain.matches(&text).count(), 1, "{chain}");
    }

    /// The typed variants keep the words the user saw when they were `Invalid(String)`.
    #[test]
    fn typed_variants_keep_their_messages() {
        let e = "ringg"
            .parse::<crate::collective::AlgoChoice>()
            .unwrap_err();
        assert!(matches!(
            e,
            ClusterError::Unknown {
                what: "algorithm",
                ..
            }
        ));
        assert_eq!(
            e.to_string(),
            "unknown algorithm \"ringg\" (ring, rd, tree or auto)"
        );

        let e = crate::collective::Comm::from_links(5, 4, vec![], vec![], vec![], 4096)
            .err()
            .unwrap();
        assert!(matches!(
            e,
            ClusterError::NotARank {
                role: "rank",
                rank: 5,
                world_size: 4
            }
        ));
        assert_eq!(e.to_string(), "rank 5 is not below the world size 4");

        let e = crate::collective::Comm::from_links(0, 3, vec![], vec![], vec![], 4096)
            .err()
            .unwrap();
        assert!(matches!(e, ClusterError::NoRingLane { ranks: 3 }));
        assert_eq!(
            e.to_string(),
            "a group of 3 ranks needs at least one ring lane"
        );
    }
}
