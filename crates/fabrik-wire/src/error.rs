use std::io;

/// Everything that can go wrong on a control connection; `peer` names the other end.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("connection to {peer} failed")]
    Io {
        peer: String,
        #[source]
        source: io::Error,
    },
    #[error("{peer} did not answer within {secs:.1} s")]
    Timeout { peer: String, secs: f64 },
    #[error("{peer} closed the connection")]
    Closed { peer: String },
    #[error("{peer} sent a frame of {len} bytes; the limit is {max}")]
    FrameTooLarge { peer: String, len: u64, max: u32 },
    #[error("{peer} failed authentication: the token differs (set the same --token or FABRIK_TOKEN on both ends)")]
    AuthFailed { peer: String },
    #[error("{peer} is not a fabrik peer of this protocol version ({detail})")]
    Protocol { peer: String, detail: String },
    #[error("{peer} sent a malformed message")]
    Malformed {
        peer: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("the token is empty or not printable ASCII")]
    BadToken,
    #[error("no randomness from the operating system: {0}")]
    Random(String),
}

impl WireError {
    /// Maps an I/O error on a socket with timeouts set to the error a user should read.
    pub(crate) fn from_io(peer: &str, err: io::Error, timeout_secs: f64) -> Self {
        match err.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => WireError::Timeout {
                peer: peer.to_string(),
                secs: timeout_secs,
            },
            io::ErrorKind::UnexpectedEof
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe => WireError::Closed {
                peer: peer.to_string(),
            },
            _ => WireError::Io {
                peer: peer.to_string(),
                source: err,
            },
        }
    }
}
