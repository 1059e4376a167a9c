//! The one reader every crate uses for a root (`/` or a snapshot): every name is resolved inside
//! the root, only regular files are read, and every read is bounded.
//!
//! A snapshot is someone else's file tree. Its symlinks may point at `/etc/shadow`, its counters
//! may be FIFOs that never answer, its files may be sparse and a terabyte long. So:
//! - names are resolved by the kernel with `openat2(RESOLVE_IN_ROOT)`: an absolute link target or
//!   a `..` is taken inside the root, exactly as [`crate::fs::RootFs`] re-roots links by hand.
//!   Where `openat2` is missing (Linux < 5.6, or a seccomp filter that refuses it) the same
//!   re-rooting is done by hand, one component at a time, and the last step is opened with
//!   `O_NOFOLLOW`;
//! - files are opened `O_NONBLOCK` (a FIFO opens at once instead of waiting for a writer) and
//!   `fstat`ed: anything but a regular file is refused before a byte is read;
//! - every read has a cap chosen by the caller from what the format can hold; a file longer
//!   than its cap is an error, never a silent truncation, and a regular file whose size already
//!   says so is refused without reading.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{openat, openat2, statat, AtFlags, FileType, Mode, OFlags, ResolveFlags, CWD};

/// The most symlinks followed for one name, as the kernel's own limit (ELOOP).
pub const MAX_LINK_HOPS: usize = 40;

/// A sysfs attribute is at most one page (`PAGE_SIZE`, 64 KiB on the largest-page kernels).
pub const MAX_SYSFS_BYTES: u64 = 64 * 1024;

/// Why a read was refused, as an `io::Error` so callers keep one error type.
fn refused(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

/// Splits a root-relative name into its normal components.
pub fn components(p: &str) -> impl Iterator<Item = &str> {
    p.split('/').filter(|c| !c.is_empty() && *c != ".")
}

/// A root directory, held open: every name is looked up from this descriptor, so a root that
/// is renamed or replaced while it is read is still the same tree.
#[derive(Debug)]
pub struct Root {
    dir: OwnedFd,
    path: PathBuf,
    in_root: bool,
}

impl Root {
    /// Opens `path` as a root. The path itself is the caller's (a user's argument), so links in
    /// it are followed; only names below it are confined.
    pub fn open(path: &Path) -> io::Result<Root> {
        let dir = openat(
            CWD,
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        // One harmless lookup tells whether this kernel (and any seccomp filter around us)
        // allows openat2; the answer holds for the life of the process.
        let in_root = match openat2(
            &dir,
            ".",
            OFlags::PATH | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::IN_ROOT,
        ) {
            Ok(_) => true,
            Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM) => false,
            Err(e) => return Err(e.into()),
        };
        Ok(Root {
            dir,
            path: path.to_path_buf(),
            in_root,
        })
    }

    /// The root as the caller named it (for messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The root's own descriptor.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.dir.as_fd()
    }

    /// Whether names are resolved by the kernel (`openat2`) rather than by hand.
    pub fn kernel_confined(&self) -> bool {
        self.in_root
    }

    fn open_flags(&self, logical: &str, flags: OFlags) -> io::Result<OwnedFd> {
        let rel = relative(logical);
        if self.in_root {
            // EAGAIN: a rename elsewhere raced the lookup; the kernel asks for a retry.
            let mut tries = 0;
            loop {
                match openat2(
                    &self.dir,
                    &rel,
                    flags,
                    Mode::empty(),
                    ResolveFlags::IN_ROOT | ResolveFlags::NO_MAGICLINKS,
                ) {
                    Err(rustix::io::Errno::AGAIN) if tries < 8 => tries += 1,
                    Err(rustix::io::Errno::INTR) => {}
                    other => return other.map_err(io::Error::from),
                }
            }
        } else {
            let resolved = resolve(self.fd(), logical, |_, _| {})?;
            let rel = relative(&resolved);
            Ok(openat(
                &self.dir,
                &rel,
                flags | OFlags::NOFOLLOW,
                Mode::empty(),
            )?)
        }
    }

    /// Opens a directory below the root.
    pub fn open_dir(&self, logical: &str) -> io::Result<OwnedFd> {
        self.open_flags(
            logical,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NONBLOCK,
        )
    }

    /// Opens a regular file below the root, refusing anything else.
    pub fn open_file(&self, logical: &str) -> io::Result<OwnedFd> {
        let fd = self.open_flags(logical, FILE_FLAGS)?;
        check_regular(&fd)?;
        Ok(fd)
    }

    /// Reads a regular file below the root, at most `cap` bytes.
    pub fn read(&self, logical: &str, cap: u64) -> io::Result<Vec<u8>> {
        let mut buf = Vec::new();
        self.read_into(logical, &mut buf, cap)?;
        Ok(buf)
    }

    /// [`Root::read`] into a buffer the caller reuses.
    pub fn read_into(&self, logical: &str, buf: &mut Vec<u8>, cap: u64) -> io::Result<()> {
        buf.clear();
        let fd = self.open_flags(logical, FILE_FLAGS)?;
        read_fd(&fd, buf, cap, false)
    }

    /// Reads a sysfs attribute (or a snapshot's copy of one) into `buf`: regular files only, at
    /// most [`MAX_SYSFS_BYTES`], and a short read ends it, since sysfs hands an attribute's
    /// whole text to the first read and a regular file reads short only at its end. That saves
    /// a read per file on the counter reader's hot path. Not for procfs, whose files can read
    /// short in the middle.
    pub fn read_attr(&self, logical: &str, buf: &mut Vec<u8>) -> io::Result<()> {
        buf.clear();
        let fd = self.open_flags(logical, FILE_FLAGS)?;
        read_fd(&fd, buf, MAX_SYSFS_BYTES, true)
    }

    /// Sorted names of a directory below the root (names that are not UTF-8 are left out: no
    /// sysfs or procfs name fabrik reads is).
    pub fn list(&self, logical: &str) -> io::Result<Vec<String>> {
        let fd = self.open_dir(logical)?;
        list_fd(fd)
    }

    /// What a name below the root is, after links (resolved inside the root).
    pub fn file_type(&self, logical: &str) -> io::Result<FileType> {
        let fd = self.open_flags(logical, OFlags::PATH | OFlags::CLOEXEC)?;
        Ok(FileType::from_raw_mode(rustix::fs::fstat(&fd)?.st_mode))
    }

    /// The target of the link `logical` as written, or `None` when it is not a link. The
    /// directory holding it is found inside the root; the link itself is not followed.
    pub fn link_target(&self, logical: &str) -> io::Result<Option<String>> {
        let mut parts: Vec<&str> = components(logical).collect();
        let Some(base) = parts.pop() else {
            return Ok(None);
        };
        if base == ".." {
            return Ok(None);
        }
        let parent = self.open_flags(
            &parts.join("/"),
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        )?;
        let st = statat(&parent, base, AtFlags::SYMLINK_NOFOLLOW)?;
        if FileType::from_raw_mode(st.st_mode) != FileType::Symlink {
            return Ok(None);
        }
        let target = rustix::fs::readlinkat(&parent, base, Vec::new())?;
        Ok(Some(
            OsString::from_vec(target.into_bytes())
                .to_string_lossy()
                .into_owned(),
        ))
    }

    /// Whether a name exists below the root (after links, inside the root).
    pub fn exists(&self, logical: &str) -> bool {
        self.file_type(logical).is_ok()
    }

    /// Whether a name is a directory (after links, inside the root).
    pub fn is_dir(&self, logical: &str) -> bool {
        self.file_type(logical)
            .is_ok_and(|t| t == FileType::Directory)
    }
}

const FILE_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::CLOEXEC)
    .union(OFlags::NONBLOCK)
    .union(OFlags::NOCTTY);

/// `a/b` for `/a/b`; `.` for the root itself.
fn relative(logical: &str) -> String {
    let rel: Vec<&str> = components(logical).collect();
    if rel.is_empty() {
        ".".to_string()
    } else {
        rel.join("/")
    }
}

fn check_regular(fd: &OwnedFd) -> io::Result<rustix::fs::Stat> {
    let st = rustix::fs::fstat(fd)?;
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => Ok(st),
        FileType::Directory => Err(refused("is a directory".into())),
        other => Err(refused(format!("not a regular file ({other:?})"))),
    }
}

/// Reads a regular file from an open descriptor, at most `cap` bytes; refuses anything else.
/// `short_is_end`: see [`Root::read_attr`].
fn read_fd(fd: &OwnedFd, buf: &mut Vec<u8>, cap: u64, short_is_end: bool) -> io::Result<()> {
    let st = check_regular(fd)?;
    // sysfs says 4096 and procfs 0 whatever they hold, so the size only ever refuses early.
    let size = u64::try_from(st.st_size).unwrap_or(0);
    if size > cap {
        return Err(refused(format!(
            "{size} bytes, more than the {cap} such a file can hold"
        )));
    }
    read_capped(fd, buf, cap, short_is_end)
}

/// The reading part of [`read_fd`], for a descriptor known to be a regular file.
fn read_capped(fd: &OwnedFd, buf: &mut Vec<u8>, cap: u64, short_is_end: bool) -> io::Result<()> {
    let mut chunk = [0u8; 4096];
    loop {
        let n = match rustix::io::read(fd, &mut chunk) {
            Ok(n) => n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        };
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.len() as u64 > cap {
            buf.clear();
            return Err(refused(format!(
                "more than the {cap} bytes such a file can hold"
            )));
        }
        if short_is_end && n < chunk.len() {
            return Ok(());
        }
    }
}

/// Opens `name`, an entry directly inside an open directory, with `flags` and without
/// following a link: the one place a plain name is checked and opened, for files and
/// directories alike. A name with a `/` or `..` is refused (it would leave the directory) and
/// a link is refused (it may point anywhere), so what opens is the entry itself.
fn open_plain_name(dir: BorrowedFd<'_>, name: &str, flags: OFlags) -> io::Result<OwnedFd> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(refused(format!("{name:?} is not a plain name")));
    }
    openat(dir, name, flags | OFlags::NOFOLLOW, Mode::empty()).map_err(|e| match e {
        rustix::io::Errno::LOOP => refused("a symbolic link".into()),
        // O_DIRECTORY on a link reports ENOTDIR before ELOOP.
        rustix::io::Errno::NOTDIR if flags.contains(OFlags::DIRECTORY) => {
            match statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Symlink => {
                    refused("a symbolic link".into())
                }
                _ => e.into(),
            }
        }
        e => e.into(),
    })
}

/// Opens `name`, a directory directly inside the open directory `dir`, without following a
/// link. With a directory found once through [`Root::open_dir`], this reads what lies below it
/// one plain name at a time instead of resolving the whole path from the root again.
pub fn open_dir_at(dir: BorrowedFd<'_>, name: &str) -> io::Result<OwnedFd> {
    open_plain_name(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NONBLOCK,
    )
}

/// Reads `name`, a file directly inside an open directory, without following a link and only
/// if it is a regular file, as [`Root::read_attr`] reads: the counter reader's hot path (open,
/// fstat, one read, close).
pub fn read_at(dir: BorrowedFd<'_>, name: &str, buf: &mut Vec<u8>) -> io::Result<()> {
    buf.clear();
    let fd = open_plain_name(dir, name, FILE_FLAGS)?;
    read_fd(&fd, buf, MAX_SYSFS_BYTES, true)
}

/// [`read_at`] for a name just listed with its type by [`list_dir_typed`]: the counter reader's
/// hot path. See [`open_listed_at`] and [`reread_attr`].
pub fn read_listed_at(
    dir: BorrowedFd<'_>,
    name: &str,
    kind: FileType,
    buf: &mut Vec<u8>,
) -> io::Result<()> {
    buf.clear();
    let fd = open_listed_at(dir, name, kind)?;
    reread_attr(fd.as_fd(), buf)
}

/// Opens a name just listed with its type by [`list_dir_typed`], to read as a sysfs attribute.
/// A name the directory lists as a regular file is opened without an `fstat` (`getdents`
/// already said what it is, sparing a syscall per counter; were it swapped for a FIFO in
/// between, `O_NONBLOCK` still keeps a read from waiting, and the cap bounds it); a name of
/// unknown type is checked as [`read_at`] does; anything else is refused unopened.
pub fn open_listed_at(dir: BorrowedFd<'_>, name: &str, kind: FileType) -> io::Result<OwnedFd> {
    match kind {
        FileType::RegularFile => open_plain_name(dir, name, FILE_FLAGS),
        FileType::Unknown => {
            let fd = open_plain_name(dir, name, FILE_FLAGS)?;
            check_regular(&fd)?;
            Ok(fd)
        }
        FileType::Symlink => Err(refused("a symbolic link".into())),
        FileType::Directory => Err(refused("is a directory".into())),
        other => Err(refused(format!("not a regular file ({other:?})"))),
    }
}

/// Reads an attribute opened by [`open_listed_at`] from its start (`pread` at offset 0), at
/// most [`MAX_SYSFS_BYTES`], a short read ending it as in [`Root::read_attr`]. sysfs renders
/// an attribute afresh for each read from offset 0, so a descriptor kept open reads the
/// counter's current value with one syscall instead of an open, a read and a close.
pub fn reread_attr(fd: BorrowedFd<'_>, buf: &mut Vec<u8>) -> io::Result<()> {
    buf.clear();
    let mut chunk = [0u8; 4096];
    loop {
        let n = match rustix::io::pread(fd, &mut chunk, buf.len() as u64) {
            Ok(n) => n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        };
        buf.extend_from_slice(&chunk[..n]);
        if buf.len() as u64 > MAX_SYSFS_BYTES {
            buf.clear();
            return Err(refused(format!(
                "more than the {MAX_SYSFS_BYTES} bytes such a file can hold"
            )));
        }
        if n < chunk.len() {
            return Ok(());
        }
    }
}

/// A name listed by [`list_dir_typed`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// The name (UTF-8).
    pub name: String,
    /// Its type as the directory lists it (`FileType::Unknown` where the file system does
    /// not say).
    pub kind: FileType,
    /// Its inode number: a name that now lists another inode is another file.
    pub ino: u64,
}

/// Sorted UTF-8 names of a directory stream with their types and inodes as the directory
/// lists them. The stream keeps its descriptor, so the names it lists are then read through
/// `dir.fd()` without another open.
pub fn list_dir_typed(dir: &mut rustix::fs::Dir) -> io::Result<Vec<Listed>> {
    let mut names = Vec::new();
    while let Some(entry) = dir.read() {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        if let Ok(s) = std::str::from_utf8(name) {
            names.push(Listed {
                name: s.to_string(),
                kind: entry.file_type(),
                ino: entry.ino(),
            });
        }
    }
    names.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(names)
}

/// Sorted UTF-8 names of an open directory.
pub fn list_fd(fd: OwnedFd) -> io::Result<Vec<String>> {
    let mut dir = rustix::fs::Dir::new(fd)?;
    Ok(list_dir_typed(&mut dir)?
        .into_iter()
        .map(|l| l.name)
        .collect())
}

/// Resolves every symlink in `logical` inside the root open at `root`, by hand: an absolute
/// target restarts at the root and `..` never climbs above it. Returns the resolved
/// root-relative name (`/sys/devices/...`) and calls `on_link(link, target)` for each link met.
pub fn resolve(
    root: BorrowedFd<'_>,
    logical: &str,
    mut on_link: impl FnMut(&str, &str),
) -> io::Result<String> {
    let mut todo: VecDeque<String> = components(logical).map(str::to_string).collect();
    let mut cur: Vec<String> = Vec::new();
    let mut hops = 0usize;
    while let Some(c) = todo.pop_front() {
        if c == ".." {
            cur.pop();
            continue;
        }
        cur.push(c);
        let here = cur.join("/");
        let st = statat(root, here.as_str(), AtFlags::SYMLINK_NOFOLLOW)?;
        if FileType::from_raw_mode(st.st_mode) != FileType::Symlink {
            continue;
        }
        hops += 1;
        if hops > MAX_LINK_HOPS {
            return Err(io::Error::other("too many levels of symbolic links"));
        }
        let target = rustix::fs::readlinkat(root, here.as_str(), Vec::new())?;
        let target = OsString::from_vec(target.into_bytes())
            .to_string_lossy()
            .into_owned();
        on_link(&format!("/{here}"), &target);
        cur.pop();
        if target.starts_with('/') {
            cur.clear();
        }
        for t in components(&target).collect::<Vec<_>>().into_iter().rev() {
            todo.push_front(t.to_string());
        }
    }
    Ok(format!("/{}", cur.join("/")))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("sys/devices/x")).unwrap();
        std::fs::write(root.join("sys/devices/x/value"), "inside\n").unwrap();
        std::fs::create_dir_all(root.join("sys/class")).unwrap();
        std::os::unix::fs::symlink("/sys/devices/x", root.join("sys/class/abs")).unwrap();
        std::os::unix::fs::symlink("../../../../../../etc/hostname", root.join("sys/class/up"))
            .unwrap();
        dir
    }

    #[test]
    fn both_resolutions_stay_inside_the_root() {
        let dir = tree();
        let root = Root::open(dir.path()).unwrap();
        assert!(root.kernel_confined(), "this kernel has openat2");
        for r in [
            root,
            Root {
                in_root: false,
                ..Root::open(dir.path()).unwrap()
            },
        ] {
            assert_eq!(r.read("/sys/class/abs/value", 64).unwrap(), b"inside\n");
            // The host's /etc/hostname exists; inside the root there is no /etc.
            let e = r.read("/sys/class/up", 64).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::NotFound, "{e}");
            assert_eq!(r.list("/sys/class").unwrap(), ["abs", "up"]);
            assert!(r.is_dir("/sys/class/abs"));
            assert!(!r.exists("/sys/class/up"));
        }
        assert_eq!(
            resolve(
                Root::open(dir.path()).unwrap().fd(),
                "/sys/class/abs/value",
                |_, _| {}
            )
            .unwrap(),
            "/sys/devices/x/value"
        );
    }

    #[test]
    fn only_regular_files_within_their_cap_are_read() {
        let dir = tree();
        let p = dir.path();
        rustix::fs::mknodat(
            CWD,
            p.join("sys/fifo").as_path(),
            FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        let root = Root::open(p).unwrap();
        let e = root.read("/sys/fifo", 64).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let e = root.read("/sys/devices", 64).unwrap_err();
        assert!(e.to_string().contains("directory"), "{e}");
        let e = root.read("/sys/devices/x/value", 3).unwrap_err();
        assert!(e.to_string().contains("more than the 3"), "{e}");
        let dirfd = root.open_dir("/sys/class").unwrap();
        let mut buf = Vec::new();
        let e = read_at(dirfd.as_fd(), "abs", &mut buf).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        let e = read_at(dirfd.as_fd(), "../devices", &mut buf).unwrap_err();
        assert!(e.to_string().contains("plain name"), "{e}");
        // Directories below an open one: by plain name, never through a link.
        let e = open_dir_at(dirfd.as_fd(), "abs").unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        let e = open_dir_at(dirfd.as_fd(), "..").unwrap_err();
        assert!(e.to_string().contains("plain name"), "{e}");
        let devices = root.open_dir("/sys/devices").unwrap();
        let x = open_dir_at(devices.as_fd(), "x").unwrap();
        read_at(x.as_fd(), "value", &mut buf).unwrap();
        assert_eq!(buf, b"inside\n");
        let mut listed = rustix::fs::Dir::new(x).unwrap();
        let names = list_dir_typed(&mut listed).unwrap();
        assert_eq!(names.len(), 1);
        assert_eq!(
            (names[0].name.as_str(), names[0].kind),
            ("value", FileType::RegularFile)
        );
        // A kept descriptor reads the file's current text, from its start, each time.
        let kept = open_listed_at(listed.fd().unwrap(), "value", names[0].kind).unwrap();
        reread_attr(kept.as_fd(), &mut buf).unwrap();
        assert_eq!(buf, b"inside\n");
        std::fs::write(p.join("sys/devices/x/value"), "changed\n").unwrap();
        reread_attr(kept.as_fd(), &mut buf).unwrap();
        assert_eq!(buf, b"changed\n");
    }
}
