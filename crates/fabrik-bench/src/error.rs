use std::io;

use fabrik_wire::WireError;

/// Everything a benchmark run can fail on; every variant names the peer or stream involved.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The control channel failed.
    #[error(transparent)]
    Wire(#[from] WireError),
    /// A socket or file operation failed.
    // The cause is part of the message rather than a `source`, so that a caller printing the
    // chain does not print it twice.
    #[error("{what}: {err}")]
    Io {
        /// What was being done (`listening on 0.0.0.0:18515`).
        what: String,
        /// The operating system's error.
        err: io::Error,
    },
    /// A data connection failed.
    #[error("data stream {stream} with {peer}: {detail}")]
    Stream {
        /// The stream's number in the round.
        stream: u32,
        /// The other end.
        peer: String,
        /// What went wrong.
        detail: String,
    },
    /// A received payload differs from the pattern the sender wrote (`--verify`).
    #[error("payload check failed: stream {stream}, message {message}, byte offset {offset} in the message ({global_offset} in the stream) differs from the pattern")]
    Corrupt {
        /// The stream's number in the round.
        stream: u32,
        /// The message's sequence number in the stream.
        message: u64,
        /// The first differing byte within the message.
        offset: u64,
        /// The same byte counted from the stream's start.
        global_offset: u64,
    },
    /// The peer reported a failure of its own.
    #[error("{peer} reported an error: {message}")]
    Remote {
        /// The other end.
        peer: String,
        /// Its message.
        message: String,
    },
    /// The peer sent a message out of turn.
    #[error("{peer} sent an unexpected message: {detail}")]
    Unexpected {
        /// The other end.
        peer: String,
        /// What came and what was expected.
        detail: String,
    },
    /// The settings cannot make a run (no sizes, out of bounds).
    #[error("invalid settings: {0}")]
    Config(String),
    /// The options asked for something that cannot be (the text says what and why).
    #[error("{0}")]
    Options(String),
}

impl BenchError {
    pub(crate) fn io(what: impl Into<String>, source: io::Error) -> Self {
        BenchError::Io {
            what: what.into(),
            err: source,
        }
    }
}
