//! What capturing a snapshot and unpacking one share: their error, and what names a tarball.

use std::path::{Path, PathBuf};

/// Why a snapshot could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// The source root could not be probed.
    #[error(transparent)]
    Probe(#[from] crate::ProbeError),
    /// A tarball or directory refused as a snapshot (a limit exceeded, an unsafe entry).
    #[error("refusing snapshot {path}: {reason}")]
    Refused {
        /// The snapshot refused.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The output path is taken; snapshots never overwrite.
    #[error("{0} already exists; choose another output path")]
    OutputExists(PathBuf),
    /// A file operation failed; `action` says which (`create`, `write`...).
    #[error("{action} {path}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file or directory it was done to.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

pub(crate) fn io_err(
    action: &'static str,
    path: &Path,
) -> impl FnOnce(std::io::Error) -> SnapshotError {
    let path = path.to_path_buf();
    move |source| SnapshotError::Io {
        action,
        path,
        source,
    }
}

/// Whether `p` names a gzipped tarball (`.tar.gz`, `.tgz`).
pub(crate) fn is_tarball(p: &Path) -> bool {
    let s = p.to_string_lossy();
    s.ends_with(".tar.gz") || s.ends_with(".tgz")
}
