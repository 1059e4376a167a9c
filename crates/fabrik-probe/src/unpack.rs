//! Reading a snapshot tarball: unpacked into a temporary directory within [`UnpackLimits`],
//! removed when done or when a signal ends the process. (Re-exported by [`crate::snapshot`].)

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::snapshot::{io_err, is_tarball, SnapshotError};

/// What a snapshot tarball may unpack to. A real snapshot is a few MiB in a few thousand
/// entries (an 8-GPU, 8-HCA node's PCI tree included), its largest file a command capture, and
/// sysfs text compresses some 20-60 to 1; the defaults leave room for ten times that.
#[derive(Debug, Clone)]
pub struct UnpackLimits {
    /// All file contents together.
    pub max_bytes: u64,
    /// Entries of any kind (each counts, even those skipped).
    pub max_entries: u64,
    /// One file: the largest a snapshot writes is a command's output, capped at 16 MiB.
    pub max_entry_bytes: u64,
    /// Bytes out of gzip per byte in, checked once more than `ratio_after` came out (gzip can
    /// reach about 1000:1 on zeros; a tar of sysfs text reaches under 100).
    pub max_ratio: u64,
    /// Bytes out before `max_ratio` is checked.
    pub ratio_after: u64,
}

impl Default for UnpackLimits {
    fn default() -> Self {
        UnpackLimits {
            max_bytes: 512 * 1024 * 1024,
            max_entries: 500_000,
            max_entry_bytes: 16 * 1024 * 1024,
            max_ratio: 200,
            ratio_after: 16 * 1024 * 1024,
        }
    }
}

/// A snapshot tarball unpacked in a temporary directory that lives as long as this value
/// (and is removed if the process is stopped by SIGTERM, SIGINT or SIGHUP meanwhile).
pub struct Unpacked {
    _dir: tempfile::TempDir,
    /// The unpacked snapshot's root, to pass to [`crate::probe`].
    pub root: PathBuf,
}

impl Drop for Unpacked {
    fn drop(&mut self) {
        forget_on_signal(self._dir.path());
    }
}

/// Temporary directories to remove if a signal ends the process. The lock is also held while an
/// entry is written, so the cleanup never races a file being created.
static PENDING: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
static CLEANUP: std::sync::Once = std::sync::Once::new();

fn pending() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    PENDING.lock().unwrap_or_else(|p| p.into_inner())
}

/// Removes `dir` if SIGTERM, SIGINT or SIGHUP arrives, then dies of that signal as it would
/// have. A thread waits for the signals (signal-hook), so the removal runs outside a signal
/// handler. SIGKILL cannot be caught: what it leaves is bounded by [`UnpackLimits`].
fn remove_on_signal(dir: &Path) {
    CLEANUP.call_once(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP]) else {
            tracing::warn!("cannot watch for signals: a killed unpack may leave its directory");
            return;
        };
        let spawned = std::thread::Builder::new()
            .name("snapshot-cleanup".into())
            .spawn(move || {
                if let Some(sig) = signals.forever().next() {
                    // Held to the end: no entry is written after the removal.
                    let dirs = pending();
                    for d in dirs.iter() {
                        let _ = std::fs::remove_dir_all(d);
                    }
                    let _ = signal_hook::low_level::emulate_default_handler(sig);
                    std::process::exit(128 + sig);
                }
            });
        if spawned.is_err() {
            tracing::warn!(
                "cannot start the signal watcher: a killed unpack may leave its directory"
            );
        }
    });
    pending().push(dir.to_path_buf());
}

fn forget_on_signal(dir: &Path) {
    pending().retain(|d| d != dir);
}

/// Counts what goes through a reader, and stops the stream when a limit is passed.
struct Metered<R> {
    inner: R,
    count: std::rc::Rc<std::cell::Cell<u64>>,
    /// For the decompressed side only.
    check: Option<StreamCheck>,
}

/// What the decompressed side is held to.
struct StreamCheck {
    /// Bytes read from the file so far.
    packed: std::rc::Rc<std::cell::Cell<u64>>,
    limits: UnpackLimits,
    /// Why the stream was stopped, for the error (the tar crate wraps the reader's error).
    why: std::rc::Rc<std::cell::RefCell<Option<String>>>,
}

impl<R: Read> Read for Metered<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let total = self.count.get().saturating_add(n as u64);
        self.count.set(total);
        if let Some(StreamCheck {
            packed,
            limits,
            why,
        }) = &self.check
        {
            // The tar stream is headers and padding as well as contents: allow it its 512-byte
            // blocks on top of the content budget.
            let stream_cap = limits
                .max_bytes
                .saturating_add(limits.max_entries.saturating_mul(1024));
            let reason = if total > stream_cap {
                Some(format!("more than {stream_cap} bytes once decompressed"))
            } else if total > limits.ratio_after && total / packed.get().max(1) > limits.max_ratio {
                Some(format!(
                    "decompresses more than {}:1 ({} bytes from {})",
                    limits.max_ratio,
                    total,
                    packed.get()
                ))
            } else {
                None
            };
            if let Some(r) = reason {
                *why.borrow_mut() = Some(r.clone());
                return Err(std::io::Error::other(r));
            }
        }
        Ok(n)
    }
}

/// Unpacks a `.tar.gz` snapshot with the default [`UnpackLimits`]; the root is its single top
/// directory when it has one.
pub fn unpack(tarball: &Path) -> Result<Unpacked, SnapshotError> {
    unpack_with(tarball, &UnpackLimits::default())
}

/// Unpacks a `.tar.gz` snapshot within `limits`. Only directories, regular files and symlinks
/// are written (a snapshot holds nothing else: FIFOs, devices and hard links are skipped); names
/// with `..` are skipped and nothing is written through a link (the tar crate checks that every
/// parent is inside the directory). A single top entry that is a link is refused: `snap -> /`
/// would otherwise make the host the snapshot. Links below the top stay, and are read through
/// [`crate::confined`], which keeps them inside the root.
///
/// The archive is unpacked rather than read in place: every reader of a root (the probe, the
/// counter reader) works on a directory descriptor, and a tarball is small once bounded.
pub fn unpack_with(tarball: &Path, limits: &UnpackLimits) -> Result<Unpacked, SnapshotError> {
    use std::cell::{Cell, RefCell};
    use std::rc::Rc;
    let refuse = |reason: String| SnapshotError::Refused {
        path: tarball.to_path_buf(),
        reason,
    };
    let dir = tempfile::tempdir().map_err(io_err("creating a temporary directory for", tarball))?;
    remove_on_signal(dir.path());
    let mut unpacked = Unpacked {
        root: dir.path().to_path_buf(),
        _dir: dir,
    };
    let dest = unpacked.root.clone();
    let file = std::fs::File::open(tarball).map_err(io_err("opening", tarball))?;
    let packed = Rc::new(Cell::new(0u64));
    let why: Rc<RefCell<Option<String>>> = Rc::new(RefCell::new(None));
    let gz = flate2::read::GzDecoder::new(Metered {
        inner: std::io::BufReader::new(file),
        count: packed.clone(),
        check: None,
    });
    let stream = Metered {
        inner: gz,
        count: Rc::new(Cell::new(0)),
        check: Some(StreamCheck {
            packed,
            limits: limits.clone(),
            why: why.clone(),
        }),
    };
    let mut archive = tar::Archive::new(stream);
    archive.set_preserve_permissions(false);
    archive.set_preserve_mtime(false);
    archive.set_unpack_xattrs(false);
    let stopped = |e: std::io::Error| match why.borrow().clone() {
        Some(reason) => refuse(reason),
        None => SnapshotError::Io {
            action: "unpacking",
            path: tarball.to_path_buf(),
            source: e,
        },
    };
    let (mut entries, mut bytes) = (0u64, 0u64);
    for entry in archive.entries().map_err(stopped)? {
        let mut entry = entry.map_err(stopped)?;
        entries += 1;
        if entries > limits.max_entries {
            return Err(refuse(format!("more than {} entries", limits.max_entries)));
        }
        let kind = entry.header().entry_type();
        if !(kind.is_file() || kind.is_dir() || kind.is_symlink()) {
            continue;
        }
        let size = entry.header().entry_size().unwrap_or(u64::MAX);
        if size > limits.max_entry_bytes {
            return Err(refuse(format!(
                "{} claims {size} bytes, more than the {} a snapshot file can hold",
                entry
                    .path()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
                limits.max_entry_bytes
            )));
        }
        bytes = bytes.saturating_add(size);
        if bytes > limits.max_bytes {
            return Err(refuse(format!(
                "more than {} bytes of files",
                limits.max_bytes
            )));
        }
        let written = {
            let _no_cleanup_meanwhile = pending();
            entry.unpack_in(&dest).map_err(stopped)?
        };
        if written && kind.is_dir() {
            // A directory archived without search permission would block its own removal.
            let mut p = dest.clone();
            p.extend(
                entry
                    .path()
                    .iter()
                    .flat_map(|p| p.components())
                    .filter_map(|c| match c {
                        std::path::Component::Normal(n) => Some(n.to_os_string()),
                        _ => None,
                    }),
            );
            if p.symlink_metadata().is_ok_and(|m| m.is_dir()) {
                use std::os::unix::fs::PermissionsExt;
                let _ = std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755));
            }
        }
    }
    let mut tops: Vec<PathBuf> = std::fs::read_dir(&dest)
        .map_err(io_err("reading", &dest))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    tops.sort();
    let root = match tops.as_slice() {
        [only] => {
            let meta = only.symlink_metadata().map_err(io_err("reading", only))?;
            if meta.file_type().is_symlink() {
                return Err(refuse(format!(
                    "its only top entry {} is a symbolic link",
                    only.file_name().unwrap_or_default().to_string_lossy()
                )));
            }
            let is_root_dir = matches!(
                only.file_name().and_then(|n| n.to_str()),
                Some("sys" | "proc" | "dev")
            );
            if meta.is_dir() && !is_root_dir {
                only.clone()
            } else {
                dest
            }
        }
        _ => dest,
    };
    unpacked.root = root;
    Ok(unpacked)
}

/// Whether a path names a snapshot tarball.
pub fn is_snapshot_tarball(p: &Path) -> bool {
    is_tarball(p) && p.is_file()
}
