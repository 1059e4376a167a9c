use std::io;

use fabrik_wire::WireError;

/// Everything a benchmark run can fail on; every variant names the peer or stream involved.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Wire(#[from] WireError),
    // The cause is part of the message rather than a `source`, so that a caller printing the
    // chain does not print it twice.
    #[error("{what}: {err}")]
    Io { what: String, err: io::Error },
    #[error("data stream {stream} with {peer}: {detail}")]
    Stream {
        stream: u32,
        peer: String,
        detail: String,
    },
    #[error("payload check failed: stream {stream}, message {message}, byte offset {offset} in the message ({global_offset} in the stream) differs from the pattern")]
    Corrupt {
        stream: u32,
        message: u64,
        offset: u64,
        global_offset: u64,
    },
    #[error("{peer} reported an error: {message}")]
    Remote { peer: String, message: String },
    #[error("{peer} sent an unexpected message: {detail}")]
    Unexpected { peer: String, detail: String },
    #[error("invalid settings: {0}")]
    Config(String),
}

impl BenchError {
    pub(crate) fn io(what: impl Into<String>, source: io::Error) -> Self {
        BenchError::Io {
            what: what.into(),
            err: source,
        }
    }
}
