//! What may be given as `--root`: a live root (sysfs mounted at `sys/`, as `/` is) or a
//! snapshot that `fabrik snapshot` finished. Anything else (an empty directory, a source tree,
//! a tarball of something else, a snapshot whose writer was killed) is refused here, once for
//! every command, so that it is never probed into an empty node and diagnosed as one.

use std::path::{Path, PathBuf};

/// Written first into a snapshot being captured and removed when it is finished: a tree that
/// still holds it was cut short.
pub const PARTIAL_MARKER: &str = "fabrik/partial";
/// Written last into a finished snapshot. Snapshots from before this marker existed have only
/// `fabrik/captured_at` (or no `fabrik/` at all) and are still accepted: what refuses a tree is
/// the partial marker, or no sysfs.
pub const COMPLETE_MARKER: &str = "fabrik/complete";
/// When the snapshot's files were read, relative to its root.
pub const CAPTURED_AT: &str = "fabrik/captured_at";

/// What kind of root a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootKind {
    /// A machine's own root (sysfs at `sys/`, nothing fabrik wrote).
    Live,
    /// A tree written by `fabrik snapshot` (it holds `fabrik/complete` or `fabrik/captured_at`).
    Snapshot,
}

/// Why a directory is not something fabrik can probe.
#[derive(Debug, thiserror::Error)]
pub enum RootError {
    /// The root does not exist.
    #[error("root {0} does not exist")]
    Missing(PathBuf),
    /// The root exists but is not a directory.
    #[error("root {0} is not a directory")]
    NotDirectory(PathBuf),
    /// The root could not be listed.
    #[error("root {path} cannot be read")]
    Unreadable {
        /// The root.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{0} is neither a live root nor a snapshot: it has no sys/class/ (a live root has sysfs \
         mounted at sys/; a snapshot written by `fabrik snapshot` holds sys/ and fabrik/); give \
         --root / for this machine, or a directory or .tar.gz that `fabrik snapshot` wrote"
    )]
    /// Neither a live root (no `sys/class/`) nor a snapshot.
    NotANode(PathBuf),
    #[error(
        "{0} is a snapshot that was cut short ({PARTIAL_MARKER} is still there: its writer was \
         stopped before it finished); take the snapshot again"
    )]
    /// A snapshot whose writer stopped before it finished.
    Unfinished(PathBuf),
}

/// Checks that `root` is a live root or a finished snapshot, and says which.
pub fn check(root: &Path) -> Result<RootKind, RootError> {
    check_named(root, root)
}

/// [`check`], naming `shown` in errors: the tarball the user gave rather than the temporary
/// directory it was unpacked into.
pub fn check_named(root: &Path, shown: &Path) -> Result<RootKind, RootError> {
    match std::fs::metadata(root) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(RootError::NotDirectory(shown.to_path_buf())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(RootError::Missing(shown.to_path_buf()))
        }
        Err(source) => {
            return Err(RootError::Unreadable {
                path: shown.to_path_buf(),
                source,
            })
        }
    }
    // Read through the confined reader like every other name of a root: a snapshot whose
    // `sys` links to the host's `/sys` is not a node, and a marker that links out of it
    // says nothing.
    let dir = crate::confined::Root::open(root).map_err(|source| RootError::Unreadable {
        path: shown.to_path_buf(),
        source,
    })?;
    let partial =
        dir.exists(PARTIAL_MARKER) || matches!(dir.link_target(PARTIAL_MARKER), Ok(Some(_)));
    if partial {
        return Err(RootError::Unfinished(shown.to_path_buf()));
    }
    // `sys/class` rather than `sys`: the probe starts from `sys/class/infiniband` and
    // `sys/class/net`, and an empty `sys/` is no more a node than no `sys/`.
    match dir.open_dir("sys/class") {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(RootError::NotANode(shown.to_path_buf()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            return Err(RootError::NotANode(shown.to_path_buf()))
        }
        // A link that loops once taken inside the root (`sys -> /sys`) leads to no sysfs.
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => {
            return Err(RootError::NotANode(shown.to_path_buf()))
        }
        Err(source) => {
            return Err(RootError::Unreadable {
                path: root.join("sys/class"),
                source,
            })
        }
    }
    let fabrik_wrote = [COMPLETE_MARKER, CAPTURED_AT].iter().any(|m| {
        dir.file_type(m)
            .is_ok_and(|t| t == rustix::fs::FileType::RegularFile)
    });
    Ok(if fabrik_wrote {
        RootKind::Snapshot
    } else {
        RootKind::Live
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures")
            .join(name)
    }

    /// Each error that carries an OS error prints its text once, however it is wrapped.
    #[test]
    fn the_chain_names_the_os_error_once() {
        let text = std::io::Error::from_raw_os_error(13).to_string();
        let unreadable = || RootError::Unreadable {
            path: PathBuf::from("/x"),
            source: std::io::Error::from_raw_os_error(13),
        };
        // `{:#}` through anyhow, as the CLI prints errors.
        let errors = [
            anyhow::Error::new(unreadable()),
            anyhow::Error::new(crate::ProbeError::NotANode(unreadable())),
            anyhow::Error::new(crate::ProbeError::RootUnreadable(
                PathBuf::from("/x"),
                std::io::Error::from_raw_os_error(13),
            )),
        ];
        for e in errors {
            let c = format!("{e:#}");
            assert_eq!(c.matches(&text).count(), 1, "{c}");
            assert!(c.contains("/x"), "{c}");
        }
    }

    #[test]
    fn roots_that_are_not_nodes_are_refused_and_say_why() {
        let dir = tempfile::tempdir().unwrap();
        let err = check(dir.path()).unwrap_err();
        assert!(matches!(err, RootError::NotANode(_)), "{err}");
        assert!(err
            .to_string()
            .contains("neither a live root nor a snapshot"));
        // The repository itself: a directory full of files, no sysfs.
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        assert!(matches!(check(&repo), Err(RootError::NotANode(_))));
        std::fs::create_dir(dir.path().join("sys")).unwrap();
        assert!(matches!(check(dir.path()), Err(RootError::NotANode(_))));
        assert!(matches!(
            check(&dir.path().join("nope")),
            Err(RootError::Missing(_))
        ));
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        assert!(matches!(check(&file), Err(RootError::NotDirectory(_))));
    }

    #[test]
    fn links_out_of_the_root_do_not_make_it_a_node() {
        // `sys -> /sys` would read this machine's sysfs as the snapshot's.
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/sys", dir.path().join("sys")).unwrap();
        assert!(Path::new("/sys/class").is_dir(), "the host has sysfs");
        let err = check(dir.path()).unwrap_err();
        assert!(matches!(err, RootError::NotANode(_)), "{err}");
        // A marker that links to a file outside is no marker.
        std::fs::remove_file(dir.path().join("sys")).unwrap();
        std::fs::create_dir_all(dir.path().join("sys/class/net")).unwrap();
        std::fs::create_dir_all(dir.path().join("fabrik")).unwrap();
        let outside = tempfile::NamedTempFile::new().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join(COMPLETE_MARKER)).unwrap();
        assert_eq!(check(dir.path()).unwrap(), RootKind::Live);
        // A dangling partial marker still says the writer was stopped.
        std::os::unix::fs::symlink("/nonexistent", dir.path().join(PARTIAL_MARKER)).unwrap();
        assert!(matches!(check(dir.path()), Err(RootError::Unfinished(_))));
    }

    #[test]
    fn a_partial_snapshot_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sys/class/net")).unwrap();
        std::fs::create_dir_all(dir.path().join("fabrik")).unwrap();
        std::fs::write(dir.path().join(PARTIAL_MARKER), "").unwrap();
        let err = check(dir.path()).unwrap_err();
        assert!(matches!(err, RootError::Unfinished(_)), "{err}");
        std::fs::remove_file(dir.path().join(PARTIAL_MARKER)).unwrap();
        assert_eq!(check(dir.path()).unwrap(), RootKind::Live);
        std::fs::write(dir.path().join(COMPLETE_MARKER), "").unwrap();
        assert_eq!(check(dir.path()).unwrap(), RootKind::Snapshot);
    }

    #[test]
    fn the_live_root_and_every_fixture_root_are_accepted() {
        assert!(check(Path::new("/")).is_ok());
        let mut seen = 0;
        for group in [
            "nodes",
            "doctor/nodes",
            "doctor/cluster",
            "doctor/cluster-roce",
        ] {
            for e in std::fs::read_dir(fixture(group)).unwrap() {
                let p = e.unwrap().path();
                if p.join("sys").is_dir() {
                    check(&p).unwrap();
                    seen += 1;
                }
            }
        }
        // Old snapshots carry captured_at and no completion marker: still snapshots.
        let old = fixture("counters/rxe/before");
        assert_eq!(check(&old).unwrap(), RootKind::Snapshot);
        assert!(seen > 40, "{seen}");
    }
}
