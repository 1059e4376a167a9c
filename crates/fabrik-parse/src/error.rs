//! Errors of the parsers: only I/O can fail; malformed text is skipped, never fatal.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error("reading {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not valid nccl-tests JSON")]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

impl ParseError {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        ParseError::Io {
            path: path.into(),
            source,
        }
    }
}
