//! A root as a command names it: a directory (the live `/` or a snapshot) or a snapshot
//! `.tar.gz`, unpacked for as long as it is open; and the node read from one.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use fabrik_model::Node;

use crate::root::RootError;
use crate::snapshot::{is_snapshot_tarball, unpack, SnapshotError, Unpacked};
use crate::{probe_with, ProbeError, ProbeOptions, DEFAULT_LIVE_WAIT};

/// Why a node could not be judged within its time budget.
#[derive(Debug, thiserror::Error)]
pub enum BudgetError {
    /// The root could not be opened or probed.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// The probe's thread ended without an answer (it panicked).
    #[error("the probe stopped without a result")]
    Stopped,
    /// The budget ran out before the judgement was made.
    #[error(
        "did not finish within its {} budget reading {}",
        humantime::format_duration(*budget),
        root.display()
    )]
    OverBudget {
        /// The budget given.
        budget: Duration,
        /// The root as given.
        root: PathBuf,
    },
}

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

/// Probes `root` (its tools within `tool_share` of `budget`) and judges the node with `judge`,
/// answering within `budget` whatever the kernel does: the probe reads sysfs, which a hung
/// driver can block, so it runs on its own thread, and a thread left blocked ends with the
/// process.
pub fn judge_node_within<T: Send + 'static>(
    root: &Path,
    budget: Duration,
    tool_share: f64,
    judge: impl FnOnce(Node) -> T + Send + 'static,
) -> Result<T, BudgetError> {
    let deadline = Instant::now() + budget.mul_f64(tool_share);
    let (tx, rx) = mpsc::channel();
    let path = root.to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(load_node_within(&path, deadline).map(judge));
    });
    match rx.recv_timeout(budget) {
        Ok(answer) => Ok(answer?),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(BudgetError::Stopped),
        Err(mpsc::RecvTimeoutError::Timeout) => Err(BudgetError::OverBudget {
            budget,
            root: root.to_path_buf(),
        }),
    }
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

/// Why the node a command was given could not be read.
#[derive(Debug, thiserror::Error)]
pub enum GivenNodeError {
    /// The root could not be opened or probed.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// The node document could not be read.
    #[error(transparent)]
    Read(#[from] crate::input::InputError),
    /// The node document is not one.
    #[error("{} is not a fabrik node document", path.display())]
    NotANode {
        /// The document.
        path: PathBuf,
        /// What is wrong with it.
        #[source]
        source: serde_json::Error,
    },
}

/// The node a command is given: a node document as `fabrik inventory --format json` wrote it,
/// else the node probed under `root`, else this machine's (`/`) when `live` is set, else none.
pub fn given_node(
    document: Option<&Path>,
    root: Option<&Path>,
    live: bool,
) -> Result<Option<Node>, GivenNodeError> {
    if let Some(path) = document {
        let text = crate::input::read_text(path, "node file", crate::input::cap::NODE)?;
        return serde_json::from_str(&text)
            .map(Some)
            .map_err(|source| GivenNodeError::NotANode {
                path: path.to_path_buf(),
                source,
            });
    }
    match root {
        Some(root) => Ok(Some(load_node(root)?)),
        None if live => Ok(Some(load_node(Path::new("/"))?)),
        None => Ok(None),
    }
}
