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
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Invalid(String),
    #[error("the run was aborted: {0}")]
    Aborted(String),
    /// The RDMA transport: libibverbs, the device, or a verbs call or completion.
    #[error(transparent)]
    Verbs(#[from] fabrik_verbs::VerbsError),
}
