//! The hot path: read only the counter files of a root (`/` or a snapshot) into a [`Sample`].
//!
//! This is deliberately leaner than `fabrik_probe::probe` (no GIDs, PCI walk or GPU topology):
//! the exporter and `top` call it every interval, and a scrape of 16 ports must stay within a
//! few milliseconds. Every failure becomes data on the line it concerns; nothing here panics or
//! returns early on a bad file.
//!
//! Every name is read through `fabrik_probe::confined`, the reader the probe uses: a snapshot's
//! links stay inside it, only regular files are read, and each read has a cap, so a counter that
//! links to `/etc/shadow` or a FIFO named `operstate` is an unreadable value, not a leak or a hang.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fabrik_probe::confined::{self, Root};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};

use crate::ethtool::parse_ethtool_stats;
use crate::sample::{NetdevSample, PortSample, Reading, Sample};

/// Where `ethtool -S` comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EthtoolMode {
    /// Never read it.
    Off,
    /// From `ROOT/fabrik/cmd/ethtool-S-IF.txt`, as `fabrik snapshot` writes it.
    Snapshot,
    /// Run `ethtool -S IF` (RDMA-backed netdevs only), killed after `timeout`.
    Live {
        /// How long one `ethtool -S` may run.
        timeout: Duration,
    },
}

/// How to sample.
#[derive(Debug, Clone)]
pub struct SampleOptions {
    /// Include every netdev except `lo`, not just RDMA-backed and physical ones.
    pub all_netdevs: bool,
    /// Whether and how to read `ethtool -S`.
    pub ethtool: EthtoolMode,
}

impl SampleOptions {
    /// The defaults for a root: run ethtool on the live system ([`is_live`]) when it is
    /// installed, read captures otherwise.
    pub fn for_root(root: &Path) -> SampleOptions {
        let live = is_live(root);
        let ethtool = if live && !ethtool_on_path() {
            EthtoolMode::Off
        } else if live {
            EthtoolMode::Live {
                timeout: Duration::from_secs(2),
            }
        } else {
            EthtoolMode::Snapshot
        };
        SampleOptions {
            all_netdevs: false,
            ethtool,
        }
    }
}

/// Whether an `ethtool` executable is on `PATH` (checked once per process start of a command,
/// so that a machine without it does not pay a failed spawn per netdev per scrape).
pub fn ethtool_on_path() -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join("ethtool").is_file()))
}

/// Whether `root` is the live system as this process reaches it: `/`, or a tree that is not a
/// snapshot and whose network interfaces are this process's, with the same interface indexes
/// (the host's `/` mounted at `/host` in a DaemonSet pod on the host's network). Then
/// `ethtool -S IF`, which asks the kernel of this process's network namespace, speaks of the
/// root's interfaces, and a sample is stamped with the clock. A snapshot of this very machine
/// is never live (it holds `fabrik/complete` or `fabrik/partial`); a tree whose interfaces
/// this process cannot reach (a pod on its own network, a copy from another node) is not.
/// Up to 64 interfaces besides `lo` are compared; one that differs is enough to say no.
pub fn is_live(root: &Path) -> bool {
    if root == Path::new("/") {
        return true;
    }
    let Ok(dir) = Root::open(root) else {
        return false;
    };
    let snapshot = [
        fabrik_probe::root::COMPLETE_MARKER,
        fabrik_probe::root::PARTIAL_MARKER,
        fabrik_probe::snapshot::CAPTURED_AT,
    ];
    if snapshot.iter().any(|m| dir.exists(m)) {
        return false;
    }
    let Ok(names) = dir.list("sys/class/net") else {
        return false;
    };
    let Ok(sock) = rustix::net::socket(
        rustix::net::AddressFamily::INET,
        rustix::net::SocketType::DGRAM,
        None,
    ) else {
        return false;
    };
    let mut matched = 0;
    for name in names.iter().filter(|n| *n != "lo").take(64) {
        // `bonding_masters` and the like are files, not interfaces.
        let Ok(text) = dir.read(&format!("sys/class/net/{name}/ifindex"), 32) else {
            continue;
        };
        let Ok(index) = String::from_utf8_lossy(&text).trim().parse::<u32>() else {
            return false;
        };
        match rustix::net::netdevice::name_to_index(&sock, name) {
            Ok(i) if i == index => matched += 1,
            _ => return false,
        }
    }
    matched > 0
}

/// Reads every counter under `root` with the defaults for that root.
pub fn sample(root: &Path) -> Sample {
    sample_with(root, &SampleOptions::for_root(root))
}

/// `fabrik/cmd/ethtool-S-IF.txt` is at most what `fabrik snapshot` keeps of a command's output.
const MAX_ETHTOOL_BYTES: u64 = 16 * 1024 * 1024;
/// `fabrik/captured_at`: one timestamp, RFC 3339 with nanoseconds or Unix seconds.
const MAX_TIMESTAMP_BYTES: u64 = 128;

/// Reads every counter under `root` once.
pub fn sample_with(root: &Path, opts: &SampleOptions) -> Sample {
    Sampler::new(root, opts.clone()).sample()
}

/// Samples one root again and again (`top`, the exporter, `doctor --watch`), keeping each
/// counter file open between samples: a kept counter is read again with one `pread` from its
/// start (sysfs renders the value afresh) instead of an open, a read and a close, which on a
/// 16-port node is over a thousand syscalls fewer per sample. A kept file is used only while
/// its directory still lists the same inode under its name, so a netdev renamed, a device
/// removed or a snapshot file replaced is opened afresh; one whose read fails is closed and
/// opened afresh. At most half of the process's descriptor limit is kept open.
pub struct Sampler {
    root: PathBuf,
    options: SampleOptions,
    kept: KeptFiles,
    /// [`is_live`], decided once: whose network namespace a root is in does not change.
    live: bool,
}

impl Sampler {
    /// A sampler of `root` with `options`; nothing is opened until [`Sampler::sample`].
    pub fn new(root: &Path, options: SampleOptions) -> Sampler {
        Sampler {
            root: root.to_path_buf(),
            options,
            kept: KeptFiles::new(),
            live: is_live(root),
        }
    }

    /// Reads every counter under the root.
    pub fn sample(&mut self) -> Sample {
        self.kept.generation += 1;
        let out = read_all(&self.root, &self.options, &mut self.kept, self.live);
        self.kept.sweep();
        out
    }
}

/// The counter files kept open between samples, by counter directory.
struct KeptFiles {
    dirs: HashMap<String, KeptDir>,
    /// Descriptors held now, and the most that may be.
    open: usize,
    budget: usize,
    generation: u64,
}

#[derive(Default)]
struct KeptDir {
    /// Counter name to (inode, descriptor).
    files: HashMap<String, (u64, OwnedFd)>,
    generation: u64,
}

impl KeptFiles {
    fn new() -> KeptFiles {
        let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile)
            .current
            .unwrap_or(1024);
        // Half the limit leaves the rest to the exporter's connections and to everything else.
        let budget = usize::try_from(soft / 2).unwrap_or(usize::MAX).min(1 << 16);
        KeptFiles {
            dirs: HashMap::new(),
            open: 0,
            budget,
            generation: 0,
        }
    }

    /// Closes the directories not read in this sample (a device or netdev gone).
    fn sweep(&mut self) {
        let generation = self.generation;
        let mut closed = 0;
        self.dirs.retain(|_, d| {
            let keep = d.generation == generation;
            if !keep {
                closed += d.files.len();
            }
            keep
        });
        self.open = self.open.saturating_sub(closed);
    }
}

fn read_all(root: &Path, opts: &SampleOptions, kept: &mut KeptFiles, live: bool) -> Sample {
    let mut out = Sample {
        taken_at_unix_s: live
            .then(|| {
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .ok()
                    .map(|d| d.as_secs_f64())
            })
            .flatten(),
        ..Sample::default()
    };
    let dir = match Root::open(root) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return out,
        Err(e) => {
            out.problems.push(format!("{}: {e}", root.display()));
            return out;
        }
    };
    if !live {
        out.taken_at_unix_s = captured_at_in(&dir);
    }
    let mut buf: Vec<u8> = Vec::with_capacity(256);

    let ib = "sys/class/infiniband";
    match dir.list(ib) {
        Ok(devices) => {
            for dev_name in devices {
                let dev_path = format!("{ib}/{dev_name}");
                read_device(&dir, &dev_name, &dev_path, &mut buf, kept, &mut out);
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => out.problems.push(format!("{}/{ib}: {e}", root.display())),
    }

    let rdma_netdevs: BTreeMap<String, Vec<String>> = {
        let mut m: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for p in &out.ports {
            for nd in &p.netdevs {
                m.entry(nd.clone()).or_default().push(p.subject());
            }
        }
        m
    };

    let net = "sys/class/net";
    match dir.list(net) {
        Ok(ifaces) => {
            for name in ifaces {
                let path = format!("{net}/{name}");
                let physical = dir.exists(&format!("{path}/device"));
                let rdma_ports = rdma_netdevs.get(&name).cloned().unwrap_or_default();
                let wanted = if opts.all_netdevs {
                    name != "lo"
                } else {
                    physical || !rdma_ports.is_empty()
                };
                if !wanted {
                    continue;
                }
                let nd = NetdevSample {
                    name,
                    physical,
                    operstate: None,
                    statistics: BTreeMap::new(),
                    ethtool: BTreeMap::new(),
                    problems: Vec::new(),
                    rdma_ports,
                };
                let nd = read_netdev(&dir, &path, nd, opts, &mut buf, kept);
                out.netdevs.push(nd);
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => out.problems.push(format!("{}/{net}: {e}", root.display())),
    }
    out
}

fn read_device(
    dir: &Root,
    dev_name: &str,
    dev_path: &str,
    buf: &mut Vec<u8>,
    kept: &mut KeptFiles,
    out: &mut Sample,
) {
    let ports_dir = format!("{dev_path}/ports");
    let ports = match dir.list(&ports_dir) {
        Ok(p) => p,
        Err(e) => {
            out.problems
                .push(format!("{dev_name}: cannot list {ports_dir}: {e}"));
            return;
        }
    };
    // IPoIB and mlx5 RoCE netdevs hang off the PCI function; rxe has no `device` link and is
    // found through the GID table instead.
    let pci_netdevs: Vec<String> = dir
        .list(&format!("{dev_path}/device/net"))
        .unwrap_or_default();
    for port_name in ports {
        let Ok(port) = port_name.parse::<u32>() else {
            continue;
        };
        let port_path = format!("{ports_dir}/{port_name}");
        let mut ps = PortSample {
            device: dev_name.to_string(),
            port,
            state: None,
            phys_state: None,
            rate: None,
            link_layer: None,
            netdevs: Vec::new(),
            counters: BTreeMap::new(),
            hw_counters: BTreeMap::new(),
            problems: Vec::new(),
        };
        // The port's directory is found once from the root; everything below it is opened by
        // plain name from its descriptor (see `read_counter_dir`).
        let pfd = match dir.open_dir(&port_path) {
            Ok(fd) => fd,
            Err(e) => {
                ps.problems.push(format!("{port_path}: {e}"));
                out.ports.push(ps);
                continue;
            }
        };
        let pfd = pfd.as_fd();
        ps.state = read_text_at(pfd, "state", buf);
        ps.phys_state = read_text_at(pfd, "phys_state", buf);
        ps.rate = read_text_at(pfd, "rate", buf);
        ps.link_layer = read_text_at(pfd, "link_layer", buf);
        let mut nds: BTreeSet<String> = BTreeSet::new();
        let ndev0 = confined::open_dir_at(pfd, "gid_attrs")
            .and_then(|g| confined::open_dir_at(g.as_fd(), "ndevs"))
            .ok()
            .and_then(|n| read_text_at(n.as_fd(), "0", buf));
        if let Some(nd) = ndev0 {
            nds.insert(nd);
        }
        if pci_netdevs.len() == 1 || nds.is_empty() {
            // A multi-port PCI function lists all its netdevs; only trust the list when it
            // cannot be ambiguous or when the GID table gave nothing.
            nds.extend(pci_netdevs.iter().cloned());
        }
        ps.netdevs = nds.into_iter().collect();
        read_counter_dir(
            pfd,
            &port_path,
            "counters",
            buf,
            kept,
            &mut ps.counters,
            &mut ps.problems,
        );
        read_counter_dir(
            pfd,
            &port_path,
            "hw_counters",
            buf,
            kept,
            &mut ps.hw_counters,
            &mut ps.problems,
        );
        out.ports.push(ps);
    }
}

/// Reads the netdev `nd` names (at `path`) into it.
fn read_netdev(
    dir: &Root,
    path: &str,
    mut nd: NetdevSample,
    opts: &SampleOptions,
    buf: &mut Vec<u8>,
    kept: &mut KeptFiles,
) -> NetdevSample {
    let name = nd.name.clone();
    let name = name.as_str();
    match dir.open_dir(path) {
        Ok(nfd) => {
            nd.operstate = read_text_at(nfd.as_fd(), "operstate", buf);
            read_counter_dir(
                nfd.as_fd(),
                path,
                "statistics",
                buf,
                kept,
                &mut nd.statistics,
                &mut nd.problems,
            );
        }
        Err(e) => nd.problems.push(format!("{path}: {e}")),
    }
    let text = match &opts.ethtool {
        EthtoolMode::Off => None,
        EthtoolMode::Snapshot => {
            let p = format!("fabrik/cmd/ethtool-S-{name}.txt");
            match dir.read(&p, MAX_ETHTOOL_BYTES) {
                Ok(t) => Some(String::from_utf8_lossy(&t).into_owned()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => {
                    nd.problems.push(format!("{p}: {e}"));
                    None
                }
            }
        }
        EthtoolMode::Live { timeout } if !nd.rdma_ports.is_empty() => {
            match run_ethtool(name, *timeout) {
                Ok(t) => Some(t),
                Err(msg) => {
                    nd.problems.push(msg);
                    None
                }
            }
        }
        EthtoolMode::Live { .. } => None,
    };
    if let Some(text) = text {
        let parsed = parse_ethtool_stats(&text);
        nd.ethtool = parsed.stats;
        for c in parsed.complaints {
            nd.problems.push(format!("ethtool -S {name}: {c}"));
        }
    }
    nd
}

/// Runs `ethtool -S IF` with a deadline; a hung driver query must not stall a scrape.
fn run_ethtool(iface: &str, timeout: Duration) -> Result<String, String> {
    let out = fabrik_probe::run::run(
        Command::new("ethtool").arg("-S").arg(iface),
        timeout,
        MAX_ETHTOOL_BYTES,
    )
    .map_err(|e| format!("ethtool -S {iface}: cannot run ethtool: {e}"))?;
    let Some(status) = out.status else {
        return Err(format!(
            "ethtool -S {iface}: no answer within {:.1} s, killed",
            timeout.as_secs_f64()
        ));
    };
    if !status.success() {
        return Err(format!(
            "ethtool -S {iface}: {status}: {}",
            String::from_utf8_lossy(&out.stderr)
                .trim()
                .chars()
                .take(200)
                .collect::<String>()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Reads `ROOT/fabrik/captured_at`: Unix seconds (`1700000000.25`) or RFC 3339
/// (`2026-11-22T22:20:08Z`).
pub fn captured_at(root: &Path) -> Option<f64> {
    captured_at_in(&Root::open(root).ok()?)
}

fn captured_at_in(dir: &Root) -> Option<f64> {
    let text = dir.read("fabrik/captured_at", MAX_TIMESTAMP_BYTES).ok()?;
    parse_timestamp(&String::from_utf8_lossy(&text))
}

/// Parses a timestamp as `fabrik snapshot` writes it (RFC 3339) or older ones did (Unix
/// seconds), in seconds since the epoch.
pub fn parse_timestamp(text: &str) -> Option<f64> {
    fabrik_probe::snapshot::parse_captured_at(text)?
        .duration_since(UNIX_EPOCH)
        .ok()
        .map(|d| d.as_secs_f64())
}

/// Every file of the counter directory `name` inside `parent` (whose root-relative path is
/// `parent_path`, for messages). `lifespan` in `hw_counters` is the driver's cache time in
/// milliseconds, a setting and not a counter, so it is skipped.
///
/// The directory is opened by its plain name from its parent's descriptor and each counter
/// from the directory's (`openat`), so the kernel resolves one name per file instead of a path
/// from the root: on a 16-port node that is over a thousand path walks saved per scrape. A
/// counter (or its directory) is never a link in sysfs or in a snapshot, so one that is, or a
/// counter that is not a regular file, is refused as unreadable.
fn read_counter_dir(
    parent: BorrowedFd<'_>,
    parent_path: &str,
    name: &str,
    buf: &mut Vec<u8>,
    kept: &mut KeptFiles,
    into: &mut BTreeMap<String, Reading>,
    problems: &mut Vec<String>,
) {
    let listed = confined::open_dir_at(parent, name)
        .and_then(|fd| Ok(rustix::fs::Dir::new(fd)?))
        .and_then(|mut d| Ok((confined::list_dir_typed(&mut d)?, d)));
    let (names, dir) = match listed {
        Ok(l) => l,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) => {
            problems.push(format!("{parent_path}/{name}: {e}"));
            return;
        }
    };
    let dfd = match dir.fd() {
        Ok(fd) => fd,
        Err(e) => {
            problems.push(format!("{parent_path}/{name}: {e}"));
            return;
        }
    };
    let generation = kept.generation;
    let entry = kept
        .dirs
        .entry(format!("{parent_path}/{name}"))
        .or_default();
    entry.generation = generation;
    let mut before = std::mem::take(&mut entry.files);
    let mut now: HashMap<String, (u64, OwnedFd)> = HashMap::new();
    let mut open = kept.open.saturating_sub(before.len());
    for l in names {
        if l.name == "lifespan" {
            continue;
        }
        let mut read = None;
        if let Some((ino, fd)) = before.remove(&l.name) {
            if ino == l.ino && confined::reread_attr(fd.as_fd(), buf).is_ok() {
                read = Some(Ok(fd));
            }
        }
        let read = read.unwrap_or_else(|| {
            confined::open_listed_at(dfd, &l.name, l.kind)
                .and_then(|fd| confined::reread_attr(fd.as_fd(), buf).map(|()| fd))
        });
        let reading = match read {
            Ok(fd) => {
                if open < kept.budget {
                    open += 1;
                    now.insert(l.name.clone(), (l.ino, fd));
                }
                Reading::parse(&String::from_utf8_lossy(buf))
            }
            Err(e) => Reading::Unreadable(e.to_string()),
        };
        into.insert(l.name, reading);
    }
    entry.files = now;
    kept.open = open;
}

/// Reads a small sysfs attribute directly inside `dir` into `buf` (reused to spare an
/// allocation per file).
fn read_text_at(dir: BorrowedFd<'_>, name: &str, buf: &mut Vec<u8>) -> Option<String> {
    confined::read_at(dir, name, buf).ok()?;
    let t = String::from_utf8_lossy(buf);
    let t = t.trim();
    (!t.is_empty()).then(|| t.to_string())
}

/// One RDMA port's retransmission and sequence-error counters (the doctor's
/// [`retransmission_counters`](crate::rules::retransmission_counters)), read afresh on each
/// call: what a pair test over RDMA records as its loss.
pub struct PortCounters {
    sampler: Sampler,
    device: String,
    port: u32,
    names: Vec<(fabrik_model::counters::Source, &'static str)>,
}

impl PortCounters {
    /// The counters of `device`'s `port` under `root` (`/` for the live node).
    pub fn new(root: &Path, device: &str, port: u32) -> PortCounters {
        PortCounters {
            sampler: Sampler::new(
                root,
                SampleOptions {
                    all_netdevs: false,
                    ethtool: EthtoolMode::Off,
                },
            ),
            device: device.to_string(),
            port,
            names: crate::rules::retransmission_counters(),
        }
    }

    /// Every counter the port has now, by name; `None` when the port is gone.
    pub fn read(&mut self) -> Option<BTreeMap<String, u64>> {
        let sample = self.sampler.sample();
        let ps = sample.port(&self.device, self.port)?;
        Some(
            self.names
                .iter()
                .filter_map(|(src, name)| {
                    Some((name.to_string(), ps.reading(*src, name)?.value()?))
                })
                .collect(),
        )
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        assert_eq!(parse_timestamp("1700000000\n"), Some(1_700_000_000.0));
        assert_eq!(parse_timestamp("1700000000.5"), Some(1_700_000_000.5));
        assert_eq!(
            parse_timestamp("2023-11-14T22:13:20Z"),
            Some(1_700_000_000.0)
        );
        assert_eq!(parse_timestamp("yesterday"), None);
        assert_eq!(parse_timestamp("-5"), None);
    }

    #[test]
    fn missing_root_is_empty_not_error() {
        let dir = tempfile::tempdir().unwrap();
        let s = sample(dir.path());
        assert!(s.ports.is_empty());
        assert!(s.netdevs.is_empty());
        assert!(s.problems.is_empty());
        assert_eq!(s.taken_at_unix_s, None);
    }

    #[test]
    fn a_sampler_reads_kept_counters_afresh_and_follows_replaced_files() {
        let dir = tempfile::tempdir().unwrap();
        let port = dir.path().join("sys/class/infiniband/mlx5_0/ports/1");
        let counters = port.join("counters");
        std::fs::create_dir_all(&counters).unwrap();
        std::fs::write(counters.join("link_downed"), "1\n").unwrap();
        std::fs::write(counters.join("symbol_error"), "2\n").unwrap();
        std::fs::write(counters.join("port_rcv_errors"), "3\n").unwrap();
        let opts = SampleOptions {
            all_netdevs: false,
            ethtool: EthtoolMode::Off,
        };
        let mut sampler = Sampler::new(dir.path(), opts);
        let value = |s: &Sample, n: &str| s.port("mlx5_0", 1).unwrap().counters.get(n).cloned();
        let first = sampler.sample();
        assert_eq!(value(&first, "link_downed"), Some(Reading::Value(1)));
        assert_eq!(sampler.kept.open, 3);
        // Rewritten in place (as sysfs changes a value), replaced by another file, and
        // replaced by a FIFO: each reads as it now is.
        std::fs::write(counters.join("link_downed"), "10\n").unwrap();
        let tmp = port.join("new");
        std::fs::write(&tmp, "20\n").unwrap();
        std::fs::rename(&tmp, counters.join("symbol_error")).unwrap();
        std::fs::remove_file(counters.join("port_rcv_errors")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            counters.join("port_rcv_errors").as_path(),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        let second = sampler.sample();
        assert_eq!(value(&second, "link_downed"), Some(Reading::Value(10)));
        assert_eq!(value(&second, "symbol_error"), Some(Reading::Value(20)));
        assert!(matches!(
            value(&second, "port_rcv_errors"),
            Some(Reading::Unreadable(m)) if m.contains("not a regular file")
        ));
        assert_eq!(sampler.kept.open, 2);
        // A port that goes away closes what was kept of it.
        std::fs::remove_dir_all(dir.path().join("sys/class/infiniband/mlx5_0")).unwrap();
        let third = sampler.sample();
        assert!(third.ports.is_empty());
        assert_eq!(sampler.kept.open, 0);
        assert!(sampler.kept.dirs.is_empty());
    }

    #[test]
    fn bad_files_are_said_on_their_line() {
        let dir = tempfile::tempdir().unwrap();
        let port = dir.path().join("sys/class/infiniband/mlx5_0/ports/1");
        std::fs::create_dir_all(port.join("counters")).unwrap();
        std::fs::create_dir_all(port.join("hw_counters")).unwrap();
        std::fs::write(port.join("state"), "4: ACTIVE\n").unwrap();
        std::fs::write(port.join("counters/symbol_error"), "garbage\n").unwrap();
        std::fs::write(port.join("counters/link_downed"), "3\n").unwrap();
        std::fs::write(port.join("hw_counters/lifespan"), "10\n").unwrap();
        // A directory where a file should be: reading it fails with EISDIR.
        std::fs::create_dir_all(port.join("hw_counters/np_cnp_sent")).unwrap();
        let s = sample(dir.path());
        let p = s.port("mlx5_0", 1).unwrap();
        assert_eq!(p.state.as_deref(), Some("4: ACTIVE"));
        assert_eq!(p.counters.get("link_downed"), Some(&Reading::Value(3)));
        assert!(matches!(
            p.counters.get("symbol_error"),
            Some(Reading::Unreadable(m)) if m.contains("not a number")
        ));
        assert!(matches!(
            p.hw_counters.get("np_cnp_sent"),
            Some(Reading::Unreadable(_))
        ));
        assert!(!p.hw_counters.contains_key("lifespan"));
    }

    /// A tree holding this machine's own interfaces, names and indexes, is live; one index
    /// off, a snapshot marker, or no interface at all, and it is not.
    #[test]
    fn live_means_this_process_reaches_the_roots_interfaces() {
        assert!(is_live(Path::new("/")));
        let mine: Vec<(String, String)> = std::fs::read_dir("/sys/class/net")
            .unwrap()
            .filter_map(|e| {
                let name = e.ok()?.file_name().into_string().ok()?;
                let idx = std::fs::read_to_string(format!("/sys/class/net/{name}/ifindex")).ok()?;
                (name != "lo").then_some((name, idx))
            })
            .collect();
        if mine.is_empty() {
            eprintln!("skipped: this network namespace has no interface besides lo");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for (name, idx) in &mine {
            let d = root.join("sys/class/net").join(name);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("ifindex"), idx).unwrap();
        }
        assert!(is_live(root));
        let (first, idx) = &mine[0];
        let n: u32 = idx.trim().parse().unwrap();
        let wrong = root.join("sys/class/net").join(first).join("ifindex");
        std::fs::write(&wrong, format!("{}\n", n + 1000)).unwrap();
        assert!(!is_live(root), "an index of another namespace");
        std::fs::write(&wrong, idx).unwrap();
        std::fs::create_dir_all(root.join("fabrik")).unwrap();
        std::fs::write(root.join("fabrik/complete"), "x\n").unwrap();
        assert!(!is_live(root), "a snapshot of this very machine");
        let empty = tempfile::tempdir().unwrap();
        assert!(!is_live(empty.path()));
    }
}
