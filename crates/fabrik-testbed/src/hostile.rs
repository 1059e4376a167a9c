//! Hostile root trees, for the tests of every reader of a root (the probe, the counter reader):
//! a copy of the real sysfs of `fixtures/nodes/real-procfs`, links kept, beside a secret file
//! outside it, and the means to plant what a hostile snapshot holds where a reader looks: links
//! out of the root, FIFOs that never answer, and huge sparse files.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The secret planted outside the tree: a reader that prints it has left the root.
pub const SECRET: &str = "root:$6$outside-the-snapshot:19000:0:99999:7:::";

/// A copy of the real tree, removed with this value.
pub struct Planted {
    /// The temporary directory that holds the tree and the secret.
    pub dir: tempfile::TempDir,
    /// The tree: give it as the root.
    pub root: PathBuf,
    /// A file outside the tree holding [`SECRET`].
    pub secret: PathBuf,
}

/// Copies `fixtures/nodes/real-procfs` (links kept as links, as a snapshot holds them) beside a
/// file holding [`SECRET`].
pub fn planted() -> std::io::Result<Planted> {
    let dir = tempfile::tempdir()?;
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/nodes/real-procfs");
    let root = dir.path().join("snap");
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(&fixture)
        .arg(&root)
        .status()?;
    if !status.success() {
        return Err(std::io::Error::other(format!(
            "cp -a {} {}: {status}",
            fixture.display(),
            root.display()
        )));
    }
    let secret = dir.path().join("shadow");
    std::fs::write(&secret, format!("{SECRET}\n"))?;
    Ok(Planted { dir, root, secret })
}

/// Replaces `p` with a FIFO (made by `mkfifo(1)`), which blocks a reader that opens it without
/// `O_NONBLOCK` until a writer comes, that is forever.
pub fn mkfifo(p: &Path) -> std::io::Result<()> {
    let _ = std::fs::remove_file(p);
    let status = std::process::Command::new("mkfifo").arg(p).status()?;
    if !status.success() {
        return Err(std::io::Error::other(format!(
            "mkfifo {}: {status}",
            p.display()
        )));
    }
    Ok(())
}

/// Replaces `p` with a symbolic link to `target`.
pub fn link(p: &Path, target: &Path) -> std::io::Result<()> {
    let _ = std::fs::remove_file(p);
    std::os::unix::fs::symlink(target, p)
}

/// Replaces `p` with a sparse file `len` bytes long: nothing on disk, `len` bytes to a reader
/// that trusts its size.
pub fn huge(p: &Path, len: u64) -> std::io::Result<()> {
    std::fs::File::create(p)?.set_len(len)
}

/// Runs `f` on a thread and waits at most `limit` for it, so that a read that blocks fails the
/// test instead of hanging it. `None` when it did not finish in time.
pub fn within<T: Send + 'static>(
    limit: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> Option<(T, Duration)> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let start = Instant::now();
        let out = f();
        let _ = tx.send((out, start.elapsed()));
    });
    rx.recv_timeout(limit).ok()
}

/// This process's peak resident set (`VmHWM`), in KiB.
pub fn peak_rss_kib() -> Option<u64> {
    std::fs::read_to_string("/proc/self/status")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}
