//! Errors of the parsers: only I/O can fail; malformed text is skipped, never fatal.

use std::path::PathBuf;

/// Why a parser could not read its input.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    /// The input could not be read.
    #[error("reading {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The input is not the JSON it claims to be.
    #[error("{path} is not valid nccl-tests JSON")]
    Json {
        /// The file.
        path: PathBuf,
        /// The decoder's error.
        #[source]
        source: serde_json::Error,
    },
}

impl ParseError {
    /// The [`ParseError::Io`] of `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        ParseError::Io {
            path: path.into(),
            source,
        }
    }
}
