//! A root as a command names it: a directory (the live `/` or a snapshot) or a snapshot
//! `.tar.gz`, unpacked for as long as it is open; and the node read from one.

use std::path::{Path, PathBuf};
use std::time::Instant;

use fabrik_model::Node;

use crate::root::RootError;
use crate::snapshot::{is_snapshot_tarball, unpack, SnapshotError, Unpacked};
use crate::{probe_with, ProbeError, ProbeOptions, DEFAULT_LIVE_WAIT};

/// Why a named root could not be opened or probed.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// A snapshot tarball that could not be unpacked.
    #[error("reading snapshot {}", path.display())]
    Unpack {
        /// The tarball as given.
        path: PathBuf,
        /// Why.
        #[source]
        source: SnapshotError,
    },
    /// Neither a live root nor a finished snapshot.
    #[error(transparent)]
    NotANode(#[from] RootError),
    /// The root could not be probed.
    #[error("probing {}", path.display())]
    Probe {
        /// The root as given.
        path: PathBuf,
        /// Why.
        #[source]
        source: ProbeError,
    },
    /// An unpacked snapshot tarball could not be probed.
    #[error("probing snapshot {}", path.display())]
    ProbeSnapshot {
        /// The tarball as given.
        path: PathBuf,
        /// Why.
        #[source]
        source: ProbeError,
    },
}

/// A root to read: a directory as is, or a `.tar.gz` unpacked for as long as this lives.
pub struct Opened {
    /// The directory to read.
    pub root: PathBuf,
    _unpacked: Option<Unpacked>,
}

/// Opens `p`, checked as a live root or a finished snapshot (a tarball once it is unpacked).
pub fn open(p: &Path) -> Result<Opened, OpenError> {
    if is_snapshot_tarball(p) {
        let unpacked = unpack(p).map_err(|source| OpenError::Unpack {
            path: p.to_path_buf(),
            source,
        })?;
        crate::root::check_named(&unpacked.root, p)?;
        return Ok(Opened {
            root: unpacked.root.clone(),
            _unpacked: Some(unpacked),
        });
    }
    crate::root::check(p)?;
    Ok(Opened {
        root: p.to_path_buf(),
        _unpacked: None,
    })
}

/// Refuses a root that is neither a live root nor a finished snapshot (see [`crate::root`]),
/// for the commands that read counters without probing. A tarball is checked once it is
/// unpacked, by whoever unpacks it.
pub fn check_root(root: &Path) -> Result<(), RootError> {
    if !is_snapshot_tarball(root) {
        crate::root::check(root)?;
    }
    Ok(())
}

/// Probes a root, unpacking a snapshot tarball first when given one.
pub fn load_node(root: &Path) -> Result<Node, OpenError> {
    load_node_within(root, Instant::now() + DEFAULT_LIVE_WAIT)
}

/// [`load_node`] with every fact of a live root (its tools included) gathered by `deadline`:
/// what `check`, `doctor`, `expect --from-root` and `inventory` all judge.
pub fn load_node_within(root: &Path, deadline: Instant) -> Result<Node, OpenError> {
    let opts = ProbeOptions::every_fact(deadline);
    if is_snapshot_tarball(root) {
        let opened = open(root)?;
        let mut node =
            probe_with(&opened.root, &opts).map_err(|source| OpenError::ProbeSnapshot {
                path: root.to_path_buf(),
                source,
            })?;
        node.root = root.display().to_string();
        return Ok(node);
    }
    probe_with(root, &opts).map_err(|source| OpenError::Probe {
        path: root.to_path_buf(),
        source,
    })
}
