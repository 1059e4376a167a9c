//! Reading a snapshot tarball: unpacked into a temporary directory within [`UnpackLimits`],
//! removed when done or when a signal ends the process. (Re-exported by [`crate::snapshot`].)

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::archive::{io_err, is_tarball, SnapshotError};

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
    /// Components in one entry's name: a snapshot's deepest names (a GPU behind several PCIe
    /// switches) stay under 30.
    pub max_depth: usize,
    /// Bytes in one entry's name or link target (the kernel's PATH_MAX less one).
    pub max_name_bytes: usize,
}

impl Default for UnpackLimits {
    fn default() -> Self {
        UnpackLimits {
            max_bytes: 512 * 1024 * 1024,
            max_entries: 500_000,
            max_entry_bytes: 16 * 1024 * 1024,
            max_ratio: 200,
            ratio_after: 16 * 1024 * 1024,
            max_depth: 64,
            max_name_bytes: 4095,
        }
    }
}

/// A snapshot tarball unpacked in a temporary directory that lives as long as this value
/// (and is removed if the process is stopped by SIGTERM, SIGINT or SIGHUP meanwhile).
pub struct Unpacked {
    cleanup: Option<RemoveOnSignal>,
    dir: Option<tempfile::TempDir>,
    /// The unpacked snapshot's root, to pass to [`crate::probe`].
    pub root: PathBuf,
}

impl Drop for Unpacked {
    fn drop(&mut self) {
        // Removed while still registered and under the writers' lock: a signal meanwhile
        // finishes the removal instead of cutting it short.
        {
            let _w = writing();
            if let Some(d) = self.dir.take() {
                let _ = d.close();
            }
        }
        self.cleanup.take();
    }
}

/// Paths (directories or files) to remove if a signal ends the process. The lock is also held
/// while an entry is written, so the cleanup never races a file being created.
static PENDING: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
static CLEANUP: std::sync::Once = std::sync::Once::new();

fn pending() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    PENDING.lock().unwrap_or_else(|p| p.into_inner())
}

/// Set by the signal watcher before it takes the lock: from then on no writer takes it again.
static STOPPING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Held while a file or directory is created (or a registered path removed) under a path
/// registered with [`RemoveOnSignal`]: a signal's cleanup waits for it, so nothing is created
/// after the removal. Once a signal has arrived the caller never gets it: it waits for the
/// process to end, so a writer cannot outrun the cleanup (the lock is not fair).
pub(crate) fn writing() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    let guard = (!stopping()).then(pending);
    match guard {
        Some(g) if !stopping() => g,
        _ => loop {
            std::thread::park();
        },
    }
}

fn stopping() -> bool {
    STOPPING.load(std::sync::atomic::Ordering::SeqCst)
}

/// Removes a path (a temporary directory or file) if SIGTERM, SIGINT or SIGHUP ends the
/// process while this value lives, then lets the process die of that signal as it would have.
/// A thread waits for the signals (signal-hook), so the removal runs outside a signal handler.
/// SIGKILL cannot be caught: what it leaves is bounded by [`UnpackLimits`].
pub(crate) struct RemoveOnSignal(PathBuf);

impl RemoveOnSignal {
    pub(crate) fn new(path: &Path) -> RemoveOnSignal {
        watch_signals();
        pending().push(path.to_path_buf());
        RemoveOnSignal(path.to_path_buf())
    }
}

impl Drop for RemoveOnSignal {
    fn drop(&mut self) {
        pending().retain(|d| *d != self.0);
    }
}

fn watch_signals() {
    CLEANUP.call_once(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP]) else {
            tracing::warn!(
                "cannot watch for signals: a killed unpack or snapshot may leave its files"
            );
            return;
        };
        let spawned = std::thread::Builder::new()
            .name("snapshot-cleanup".into())
            .spawn(move || {
                if let Some(sig) = signals.forever().next() {
                    STOPPING.store(true, std::sync::atomic::Ordering::SeqCst);
                    // Held to the end: nothing is written after the removal.
                    let paths = pending();
                    for p in paths.iter() {
                        if std::fs::remove_dir_all(p).is_err() {
                            let _ = std::fs::remove_file(p);
                        }
                    }
                    let _ = signal_hook::low_level::emulate_default_handler(sig);
                    std::process::exit(128 + sig);
                }
            });
        if spawned.is_err() {
            tracing::warn!(
                "cannot start the signal watcher: a killed unpack or snapshot may leave its files"
            );
        }
    });
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
/// with `..` are skipped, and nothing is written through a link: every directory on the way is
/// opened with `O_NOFOLLOW` from its parent's descriptor. A name deeper than
/// [`UnpackLimits::max_depth`], longer than [`UnpackLimits::max_name_bytes`], not UTF-8, or
/// holding a control character or a line break is refused: no snapshot has one, and a device
/// name with a newline would otherwise travel from someone's tarball into a launch file. A
/// single top entry that is a link is refused: `snap -> /` would otherwise make the host the
/// snapshot. Links below the top stay, and are read through [`crate::confined`], which keeps
/// them inside the root.
///
/// The cost is linear in the entries: the directories of the current path stay open, so an
/// entry costs the components it does not share with the one before (at most `max_depth`
/// opens), and no name is looked up from the root.
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
    let mut unpacked = Unpacked {
        cleanup: Some(RemoveOnSignal::new(dir.path())),
        root: dir.path().to_path_buf(),
        dir: Some(dir),
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
    let stopped = |e: std::io::Error| match why.borrow().clone() {
        Some(reason) => refuse(reason),
        None => SnapshotError::Io {
            action: "unpacking",
            path: tarball.to_path_buf(),
            source: e,
        },
    };
    let mut writer = Writer::open(&dest).map_err(io_err("opening", &dest))?;
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
        let raw = entry.path_bytes().into_owned();
        let Some(names) = entry_names(&raw, limits).map_err(refuse)? else {
            continue;
        };
        let size = entry.header().entry_size().unwrap_or(u64::MAX);
        if size > limits.max_entry_bytes {
            return Err(refuse(format!(
                "{} claims {size} bytes, more than the {} a snapshot file can hold",
                String::from_utf8_lossy(&raw),
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
        let target = if kind.is_symlink() {
            let t = entry
                .link_name_bytes()
                .map(|t| t.into_owned())
                .unwrap_or_default();
            if t.is_empty() || t.len() > limits.max_name_bytes || t.contains(&0) {
                continue;
            }
            Some(t)
        } else {
            None
        };
        let _no_cleanup_meanwhile = writing();
        let Some((parent, leaf)) = names.split_last().map(|(l, p)| (p, *l)) else {
            continue;
        };
        let Some(dir) = writer.enter(parent).map_err(stopped)? else {
            // A parent is a file or a link: nothing is written through it.
            continue;
        };
        let written = if kind.is_dir() {
            mkdir(dir, leaf)
        } else if let Some(t) = target {
            replace(dir, leaf, |d, n| rustix::fs::symlinkat(t.as_slice(), d, n))
        } else {
            write_file(dir, leaf, &mut entry)
        };
        written.map_err(stopped)?;
    }
    drop(writer);
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

/// The components of an entry's name, `None` for a name to skip (`..`, the top itself), or why
/// the archive is refused.
fn entry_names<'a>(raw: &'a [u8], limits: &UnpackLimits) -> Result<Option<Vec<&'a [u8]>>, String> {
    let shown = || String::from_utf8_lossy(raw).escape_debug().to_string();
    if raw.len() > limits.max_name_bytes {
        return Err(format!(
            "an entry's name is {} bytes long, more than {}",
            raw.len(),
            limits.max_name_bytes
        ));
    }
    let text =
        std::str::from_utf8(raw).map_err(|_| format!("entry \"{}\" is not UTF-8", shown()))?;
    if let Some(c) = text
        .chars()
        .find(|c| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}'))
    {
        return Err(format!(
            "entry \"{}\" holds the control character U+{:04X}; no snapshot's names do",
            shown(),
            u32::from(c)
        ));
    }
    let names: Vec<&[u8]> = raw
        .split(|b| *b == b'/')
        .filter(|c| !c.is_empty() && *c != b".")
        .collect();
    if names.len() > limits.max_depth {
        return Err(format!(
            "entry \"{}...\" is {} directories deep, more than {}",
            shown().chars().take(80).collect::<String>(),
            names.len(),
            limits.max_depth
        ));
    }
    if names.is_empty() || names.iter().any(|c| *c == b"..") {
        return Ok(None);
    }
    Ok(Some(names))
}

/// Writes entries under the destination. The directories of the current path stay open (one
/// descriptor per level, at most `max_depth`), each opened from its parent with `O_NOFOLLOW`,
/// so nothing is written through a link and an entry costs only the levels it does not share
/// with the one before.
struct Writer {
    root: rustix::fd::OwnedFd,
    stack: Vec<(Vec<u8>, rustix::fd::OwnedFd)>,
}

impl Writer {
    fn open(dest: &Path) -> std::io::Result<Writer> {
        use rustix::fs::{open, Mode, OFlags};
        let root = open(
            dest,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Writer {
            root,
            stack: Vec::new(),
        })
    }

    /// The directory `names` (made where missing), or `None` when one of them is not a
    /// directory (a file or a link of the archive stands there).
    fn enter(&mut self, names: &[&[u8]]) -> std::io::Result<Option<rustix::fd::BorrowedFd<'_>>> {
        use rustix::fd::AsFd;
        use rustix::fs::{openat, Mode, OFlags};
        let shared = self
            .stack
            .iter()
            .zip(names)
            .take_while(|((open, _), name)| open.as_slice() == **name)
            .count();
        self.stack.truncate(shared);
        for name in &names[shared..] {
            let parent = self
                .stack
                .last()
                .map_or(self.root.as_fd(), |(_, fd)| fd.as_fd());
            mkdir(parent, name)?;
            match openat(
                parent,
                *name,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            ) {
                Ok(fd) => self.stack.push((name.to_vec(), fd)),
                Err(rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR) => return Ok(None),
                Err(e) => return Err(e.into()),
            }
        }
        Ok(Some(
            self.stack
                .last()
                .map_or(self.root.as_fd(), |(_, fd)| fd.as_fd()),
        ))
    }
}

/// Makes a directory, searchable whatever the archive said; one already there is kept.
fn mkdir(dir: rustix::fd::BorrowedFd<'_>, name: &[u8]) -> std::io::Result<()> {
    match rustix::fs::mkdirat(dir, name, rustix::fs::Mode::from_raw_mode(0o755)) {
        Ok(()) | Err(rustix::io::Errno::EXIST) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Creates `name` with `make`; a file or link already there (a later entry of the same name)
/// is replaced, a directory is kept and the entry skipped.
fn replace(
    dir: rustix::fd::BorrowedFd<'_>,
    name: &[u8],
    make: impl Fn(rustix::fd::BorrowedFd<'_>, &[u8]) -> rustix::io::Result<()>,
) -> std::io::Result<()> {
    match make(dir, name) {
        Err(rustix::io::Errno::EXIST) => {
            match rustix::fs::unlinkat(dir, name, rustix::fs::AtFlags::empty()) {
                Ok(()) => make(dir, name).map_err(Into::into),
                Err(rustix::io::Errno::ISDIR | rustix::io::Errno::PERM) => Ok(()),
                Err(e) => Err(e.into()),
            }
        }
        other => other.map_err(Into::into),
    }
}

/// A regular file's contents, created without following a link at its name.
fn write_file(
    dir: rustix::fd::BorrowedFd<'_>,
    name: &[u8],
    contents: &mut impl Read,
) -> std::io::Result<()> {
    use rustix::fs::{openat, Mode, OFlags};
    let created = std::cell::RefCell::new(None);
    replace(dir, name, |d, n| {
        let fd = openat(
            d,
            n,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )?;
        *created.borrow_mut() = Some(fd);
        Ok(())
    })?;
    let Some(fd) = created.into_inner() else {
        return Ok(());
    };
    let mut file = std::fs::File::from(fd);
    std::io::copy(contents, &mut file)?;
    Ok(())
}

/// Whether a path names a snapshot tarball.
pub fn is_snapshot_tarball(p: &Path) -> bool {
    is_tarball(p) && p.is_file()
}
