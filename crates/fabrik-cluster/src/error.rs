use fabrik_wire::WireError;

/// Everything that can go wrong in a cluster run. Errors about a peer name its rank and host.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("{var}: {why}")]
    Env { var: String, why: String },
    #[error("hostlist {list:?}: {why}")]
    Hostlist { list: String, why: String },
    #[error(transparent)]
    Wire(#[from] WireError),
    #[error("rendezvous: {0}")]
    Rendezvous(String),
    #[error("{peer}: {why}")]
    Peer { peer: String, why: String },
    /// An operating-system error while doing `what`. The cause is part of the message rather
    /// than a `source`, so that a caller printing the chain (`{:#}`) prints it once.
    #[error("{what}: {err}")]
    Io { what: String, err: std::io::Error },
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
    #[error("{0}")]
    Invalid(String),
    #[error("the run was aborted: {0}")]
    Aborted(String),
    /// The RDMA transport: libibverbs, the device, or a verbs call or completion.
    #[error(transparent)]
    Verbs(#[from] fabrik_verbs::VerbsError),
}

#[cfg(test)]
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
}
