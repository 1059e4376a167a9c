//! Reading files under a root directory as if it were `/`.
//!
//! Symlinks are resolved by hand, one component at a time, so that an absolute target is taken
//! inside the root and `..` never climbs above it: a snapshot's `/sys/class/net/eth0` link must
//! lead to the snapshot's own `/sys/devices/...`, never the host's. Every access can be recorded,
//! which is how `snapshot` knows exactly which names probing reads.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use fabrik_model::ProbeWarning;

use crate::confined::Root;

/// sysfs and procfs files fabrik reads are small, and a command capture is a few hundred KiB
/// (`nvidia-smi -q` on 8 GPUs); this bounds a hostile or odd one.
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// `fabrik/unreadable.txt` holds one `ERRNO<TAB>PATH` line per file that failed on the machine:
/// a few hundred at most on a real node.
const MAX_MANIFEST_BYTES: u64 = 1024 * 1024;

/// One thing probing touched, keyed by its resolved path inside the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recorded {
    /// A file and its bytes.
    File(Vec<u8>),
    /// A directory and the names it listed.
    Dir(Vec<String>),
    /// A symlink and its target as written.
    Link(String),
    /// A file that exists but refused to be read, with the OS error number (sysfs answers
    /// EINVAL or EIO for some attributes), so a snapshot can answer the same.
    Failed(i32),
}

/// Where a snapshot lists the files that could not be read on the machine: `ERRNO<TAB>PATH`.
pub const UNREADABLE_MANIFEST: &str = "/fabrik/unreadable.txt";

fn parse_manifest(text: &str) -> BTreeMap<String, i32> {
    text.lines()
        .filter_map(|l| {
            let (code, path) = l.split_once('\t')?;
            Some((path.to_string(), code.trim().parse().ok()?))
        })
        .collect()
}

/// A probed root: every read goes through it, confined to the root, answering a snapshot's recorded failures the same way, and optionally recording what it touched.
pub struct RootFs {
    root: Root,
    /// Why facts are unknown, collected as probing goes.
    pub warnings: Vec<ProbeWarning>,
    record: Option<BTreeMap<String, Recorded>>,
    /// Files a snapshot saw fail, answered with the same error.
    unreadable: BTreeMap<String, i32>,
    live: bool,
    /// The helper tools run on the live machine and how each ended (for `snapshot`'s summary).
    pub tool_runs: Vec<(crate::live::Tool, crate::live::ToolOutcome)>,
}

/// Joins a root-relative path: `/a` + `b` → `/a/b`.
pub fn join(base: &str, name: &str) -> String {
    if base.ends_with('/') {
        format!("{base}{name}")
    } else {
        format!("{base}/{name}")
    }
}

/// The last component of a path.
pub fn base_name(p: &str) -> &str {
    p.rsplit('/').find(|c| !c.is_empty()).unwrap_or(p)
}

/// The parent of a root-relative path (`/` for a top-level name).
pub fn parent(p: &str) -> String {
    match p.trim_end_matches('/').rsplit_once('/') {
        Some(("", _)) | None => "/".to_string(),
        Some((head, _)) => head.to_string(),
    }
}

impl RootFs {
    /// Opens `root`; fails only when it cannot be opened as a directory.
    pub fn new(root: &Path) -> io::Result<Self> {
        let dir = Root::open(root)?;
        let unreadable = dir
            .read(UNREADABLE_MANIFEST, MAX_MANIFEST_BYTES)
            .map(|t| parse_manifest(&String::from_utf8_lossy(&t)))
            .unwrap_or_default();
        Ok(RootFs {
            root: dir,
            warnings: Vec::new(),
            record: None,
            unreadable,
            live: std::fs::canonicalize(root).is_ok_and(|p| p == Path::new("/")),
            tool_runs: Vec::new(),
        })
    }

    /// Records every name touched from now on (for `snapshot`).
    pub fn recording(mut self) -> Self {
        self.record = Some(BTreeMap::new());
        self
    }

    /// Everything recorded since [`RootFs::recording`]; empty when not recording.
    pub fn take_record(&mut self) -> BTreeMap<String, Recorded> {
        self.record.take().unwrap_or_default()
    }

    /// Whether the root is this machine's own `/` (facts that only the kernel's APIs give, such
    /// as interface addresses, can then be asked for).
    pub fn is_live(&self) -> bool {
        self.live
    }

    /// Whether the root's network interfaces are this process's: the live `/`, or a host's
    /// root mounted elsewhere (`/host` in a container on the host network) whose
    /// `sys/class/net` lists the same interfaces with the same index as this process's network
    /// namespace. Then the kernel's network interfaces (netlink) answer for the root.
    pub fn shares_network_namespace(&mut self) -> bool {
        if self.live {
            return true;
        }
        let names: Vec<String> = self
            .list_opt("/sys/class/net")
            .into_iter()
            .filter(|n| n != "bonding_masters")
            .collect();
        !names.is_empty()
            && names.iter().all(|n| {
                let theirs = self
                    .attr_quiet(&join(&format!("/sys/class/net/{n}"), "ifindex"))
                    .and_then(|v| v.parse::<u32>().ok());
                let ours = nix::net::if_::if_nametoindex(n.as_str()).ok();
                theirs.is_some() && theirs == ours
            })
    }

    /// Records a file that probing derived from the live kernel rather than read, so that a
    /// snapshot carries it and reads back the same.
    pub fn record_derived(&mut self, logical: &str, bytes: Vec<u8>) {
        self.note(logical.to_string(), Recorded::File(bytes));
    }

    fn note(&mut self, logical: String, r: Recorded) {
        if let Some(rec) = self.record.as_mut() {
            rec.insert(logical, r);
        }
    }

    /// Notes that `path` could not be read or understood. A file read twice (a NIC's PCI function is read for its RDMA device and again among the
    /// bus's network functions) is warned about once.
    pub fn warn(&mut self, path: &str, message: impl Into<String>) {
        let w = ProbeWarning {
            path: path.to_string(),
            message: message.into(),
        };
        if !self.warnings.contains(&w) {
            self.warnings.push(w);
        }
    }

    /// Resolves every symlink in `logical` inside the root; returns the resolved root-relative
    /// path (`/sys/devices/...`). Fails when a component is missing or links loop.
    pub fn resolve(&mut self, logical: &str) -> io::Result<String> {
        let record = &mut self.record;
        crate::confined::resolve(self.root.fd(), logical, |link, target| {
            if let Some(rec) = record.as_mut() {
                rec.insert(link.to_string(), Recorded::Link(target.to_string()));
            }
        })
    }

    /// Reads a file whole (bounded), following links inside the root.
    pub fn read_bytes(&mut self, logical: &str) -> io::Result<Vec<u8>> {
        let resolved = self.resolve(logical)?;
        if let Some(code) = self.unreadable.get(&resolved).copied() {
            self.note(resolved, Recorded::Failed(code));
            return Err(io::Error::from_raw_os_error(code));
        }
        match self.root.read(&resolved, MAX_FILE_BYTES) {
            Ok(buf) => {
                self.note(resolved, Recorded::File(buf.clone()));
                Ok(buf)
            }
            Err(e) => {
                if let Some(code) = e
                    .raw_os_error()
                    .filter(|_| e.kind() != io::ErrorKind::NotFound)
                {
                    self.note(resolved, Recorded::Failed(code));
                }
                Err(e)
            }
        }
    }

    /// A file's content as text (invalid UTF-8 replaced); errors are the OS's.
    pub fn read_text(&mut self, logical: &str) -> io::Result<String> {
        self.read_bytes(logical)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    }

    /// A value that should be there: any failure is a warning.
    pub fn attr(&mut self, logical: &str) -> Option<String> {
        match self.read_text(logical) {
            Ok(s) => Some(s.trim().to_string()),
            Err(e) => {
                let msg = describe(&e);
                self.warn(logical, msg);
                None
            }
        }
    }

    /// A value that may be absent: a missing file is silent, other failures warn.
    pub fn attr_opt(&mut self, logical: &str) -> Option<String> {
        match self.read_text(logical) {
            Ok(s) => Some(s.trim().to_string()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => {
                let msg = describe(&e);
                self.warn(logical, msg);
                None
            }
        }
    }

    /// A value whose failure means "not applicable" (the kernel answers EINVAL for an empty GID
    /// slot's type, or for the speed of a link that is down).
    pub fn attr_quiet(&mut self, logical: &str) -> Option<String> {
        self.read_text(logical).ok().map(|s| s.trim().to_string())
    }

    /// A whole text file that may be absent (missing is silent, other failures warn).
    pub fn text_opt(&mut self, logical: &str) -> Option<String> {
        match self.read_text(logical) {
            Ok(s) => Some(s),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => {
                let msg = describe(&e);
                self.warn(logical, msg);
                None
            }
        }
    }

    /// Sorted names in a directory, following links inside the root.
    pub fn list(&mut self, logical: &str) -> io::Result<Vec<String>> {
        let resolved = self.resolve(logical)?;
        let names = self.root.list(&resolved)?;
        self.note(resolved, Recorded::Dir(names.clone()));
        Ok(names)
    }

    /// Sorted names, or empty when the directory does not exist; other failures warn.
    pub fn list_opt(&mut self, logical: &str) -> Vec<String> {
        match self.list(logical) {
            Ok(v) => v,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => {
                let msg = describe(&e);
                self.warn(logical, msg);
                Vec::new()
            }
        }
    }

    /// Whether a name exists (after links).
    pub fn exists(&mut self, logical: &str) -> bool {
        match self.resolve(logical) {
            Ok(r) => {
                let kind = self.root.file_type(&r);
                let ok = kind.is_ok();
                if kind.is_ok_and(|k| k == rustix::fs::FileType::Directory) {
                    // Keep a listing already recorded for this directory.
                    if let Some(rec) = self.record.as_mut() {
                        rec.entry(r).or_insert(Recorded::Dir(Vec::new()));
                    }
                }
                ok
            }
            Err(_) => false,
        }
    }

    /// Whether a name is a directory (after links).
    pub fn is_dir(&mut self, logical: &str) -> bool {
        self.resolve(logical).is_ok_and(|r| self.root.is_dir(&r))
    }

    /// The name a link such as `device/driver` points at (`mlx5_core`).
    /// Only the link itself is read, so a snapshot need not hold what it points at.
    pub fn link_name(&mut self, logical: &str) -> Option<String> {
        let dir = self.resolve(&parent(logical)).ok()?;
        let here = join(&dir, base_name(logical));
        if let Some(target) = self.root.link_target(&here).ok()? {
            self.note(here, Recorded::Link(target.clone()));
            let name = base_name(&target);
            return (!name.is_empty() && name != ".." && name != ".").then(|| name.to_string());
        }
        None
    }

    /// Numeric files of a directory (`counters/`, `statistics/`), sorted by name. Unreadable or
    /// non-numeric entries are left out quietly: some counters refuse reads on some firmware.
    pub fn numeric_dir(&mut self, logical: &str) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for name in self.list_opt(logical) {
            let p = join(logical, &name);
            if let Some(v) = self
                .attr_quiet(&p)
                .and_then(|s| crate::parse::parse_u64(&s))
            {
                out.insert(name, v);
            }
        }
        out
    }
}

fn describe(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => "missing".to_string(),
        io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => format!("unreadable: {e}"),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn absolute_links_stay_inside_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("sys/devices/x")).unwrap();
        std::fs::write(root.join("sys/devices/x/value"), "inside\n").unwrap();
        std::fs::create_dir_all(root.join("sys/class")).unwrap();
        std::fs::create_dir_all(root.join("etc")).unwrap();
        std::os::unix::fs::symlink("/sys/devices/x", root.join("sys/class/abs")).unwrap();
        std::os::unix::fs::symlink("../../../../../../etc", root.join("sys/class/up")).unwrap();
        std::os::unix::fs::symlink("loop", root.join("sys/class/loop")).unwrap();
        let mut fs = RootFs::new(root).unwrap().recording();
        assert_eq!(fs.attr("/sys/class/abs/value").as_deref(), Some("inside"));
        assert_eq!(fs.resolve("/sys/class/up").unwrap(), "/etc");
        assert!(fs.read_text("/sys/class/up/passwd").is_err());
        assert!(fs.resolve("/sys/class/loop").is_err());
        assert_eq!(fs.attr("/sys/none"), None);
        assert_eq!(fs.warnings.len(), 1);
        let rec = fs.take_record();
        assert_eq!(
            rec.get("/sys/class/abs"),
            Some(&Recorded::Link("/sys/devices/x".into()))
        );
        assert!(matches!(
            rec.get("/sys/devices/x/value"),
            Some(Recorded::File(_))
        ));
    }

    #[test]
    fn read_failures_are_recorded_and_replayed() {
        // /proc/self/mem refuses a read at offset 0 (EIO): a real kernel failure.
        let mut live = RootFs::new(Path::new("/")).unwrap().recording();
        assert_eq!(live.attr("/proc/self/mem"), None);
        let warned = live.warnings[0].message.clone();
        let rec = live.take_record();
        let failed: Vec<i32> = rec
            .values()
            .filter_map(|r| match r {
                Recorded::Failed(c) => Some(*c),
                _ => None,
            })
            .collect();
        assert_eq!(failed.len(), 1);
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("fabrik")).unwrap();
        std::fs::create_dir_all(dir.path().join("sys")).unwrap();
        std::fs::write(dir.path().join("sys/rate"), "").unwrap();
        std::fs::write(
            dir.path().join("fabrik/unreadable.txt"),
            format!("{}\t/sys/rate\n", failed[0]),
        )
        .unwrap();
        let mut snap = RootFs::new(dir.path()).unwrap();
        assert_eq!(snap.attr("/sys/rate"), None);
        assert_eq!(snap.warnings[0].message, warned);
    }

    #[test]
    fn path_helpers() {
        assert_eq!(parent("/sys/class"), "/sys");
        assert_eq!(parent("/sys"), "/");
        assert_eq!(base_name("/a/b/"), "b");
        assert_eq!(join("/", "sys"), "/sys");
    }
}
