//! The hot path: read only the counter files of a root (`/` or a snapshot) into a [`Sample`].
//!
//! This is deliberately leaner than `fabrik_probe::probe` (no GIDs, PCI walk or GPU topology):
//! the exporter and `top` call it every interval, and a scrape of 16 ports must stay within a
//! few milliseconds. Every failure becomes data on the line it concerns; nothing here panics or
//! returns early on a bad file.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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
    Live { timeout: Duration },
}

/// How to sample.
#[derive(Debug, Clone)]
pub struct SampleOptions {
    /// Include every netdev except `lo`, not just RDMA-backed and physical ones.
    pub all_netdevs: bool,
    pub ethtool: EthtoolMode,
}

impl SampleOptions {
    /// The defaults for a root: run ethtool on the live system (`/`) when it is installed, read
    /// captures otherwise.
    pub fn for_root(root: &Path) -> SampleOptions {
        let ethtool = if is_live(root) && !ethtool_on_path() {
            EthtoolMode::Off
        } else if is_live(root) {
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

/// True when `root` is this machine's own `/`.
pub fn is_live(root: &Path) -> bool {
    root == Path::new("/")
}

/// Reads every counter under `root` with the defaults for that root.
pub fn sample(root: &Path) -> Sample {
    sample_with(root, &SampleOptions::for_root(root))
}

/// Reads every counter under `root`.
pub fn sample_with(root: &Path, opts: &SampleOptions) -> Sample {
    let mut out = Sample {
        taken_at_unix_s: if is_live(root) {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .ok()
                .map(|d| d.as_secs_f64())
        } else {
            captured_at(root)
        },
        ..Sample::default()
    };
    let mut buf: Vec<u8> = Vec::with_capacity(256);

    let ib = root.join("sys/class/infiniband");
    match sorted_entries(&ib) {
        Ok(devices) => {
            for (dev_name, dev_path) in devices {
                read_device(&dev_name, &dev_path, &mut buf, &mut out);
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => out.problems.push(format!("{}: {e}", ib.display())),
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

    let net = root.join("sys/class/net");
    match sorted_entries(&net) {
        Ok(ifaces) => {
            for (name, path) in ifaces {
                let physical = path.join("device").exists();
                let rdma_ports = rdma_netdevs.get(&name).cloned().unwrap_or_default();
                let wanted = if opts.all_netdevs {
                    name != "lo"
                } else {
                    physical || !rdma_ports.is_empty()
                };
                if !wanted {
                    continue;
                }
                let nd = read_netdev(root, &name, &path, physical, rdma_ports, opts, &mut buf);
                out.netdevs.push(nd);
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => out.problems.push(format!("{}: {e}", net.display())),
    }
    out
}

fn read_device(dev_name: &str, dev_path: &Path, buf: &mut Vec<u8>, out: &mut Sample) {
    let ports_dir = dev_path.join("ports");
    let ports = match sorted_entries(&ports_dir) {
        Ok(p) => p,
        Err(e) => {
            out.problems.push(format!(
                "{dev_name}: cannot list {}: {e}",
                ports_dir.display()
            ));
            return;
        }
    };
    // IPoIB and mlx5 RoCE netdevs hang off the PCI function; rxe has no `device` link and is
    // found through the GID table instead.
    let pci_netdevs: Vec<String> = sorted_entries(&dev_path.join("device/net"))
        .map(|v| v.into_iter().map(|(n, _)| n).collect())
        .unwrap_or_default();
    for (port_name, port_path) in ports {
        let Ok(port) = port_name.parse::<u32>() else {
            continue;
        };
        let mut ps = PortSample {
            device: dev_name.to_string(),
            port,
            state: read_text(&port_path.join("state"), buf),
            phys_state: read_text(&port_path.join("phys_state"), buf),
            rate: read_text(&port_path.join("rate"), buf),
            link_layer: read_text(&port_path.join("link_layer"), buf),
            netdevs: Vec::new(),
            counters: BTreeMap::new(),
            hw_counters: BTreeMap::new(),
            problems: Vec::new(),
        };
        let mut nds: BTreeSet<String> = BTreeSet::new();
        if let Some(nd) = read_text(&port_path.join("gid_attrs/ndevs/0"), buf) {
            nds.insert(nd);
        }
        if pci_netdevs.len() == 1 || nds.is_empty() {
            // A multi-port PCI function lists all its netdevs; only trust the list when it
            // cannot be ambiguous or when the GID table gave nothing.
            nds.extend(pci_netdevs.iter().cloned());
        }
        ps.netdevs = nds.into_iter().collect();
        read_counter_dir(
            &port_path.join("counters"),
            buf,
            &mut ps.counters,
            &mut ps.problems,
        );
        read_counter_dir(
            &port_path.join("hw_counters"),
            buf,
            &mut ps.hw_counters,
            &mut ps.problems,
        );
        out.ports.push(ps);
    }
}

fn read_netdev(
    root: &Path,
    name: &str,
    path: &Path,
    physical: bool,
    rdma_ports: Vec<String>,
    opts: &SampleOptions,
    buf: &mut Vec<u8>,
) -> NetdevSample {
    let mut nd = NetdevSample {
        name: name.to_string(),
        physical,
        operstate: read_text(&path.join("operstate"), buf),
        statistics: BTreeMap::new(),
        ethtool: BTreeMap::new(),
        problems: Vec::new(),
        rdma_ports,
    };
    read_counter_dir(
        &path.join("statistics"),
        buf,
        &mut nd.statistics,
        &mut nd.problems,
    );
    let text = match &opts.ethtool {
        EthtoolMode::Off => None,
        EthtoolMode::Snapshot => {
            let p = root.join(format!("fabrik/cmd/ethtool-S-{name}.txt"));
            match fs::read_to_string(&p) {
                Ok(t) => Some(t),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => {
                    nd.problems.push(format!("{}: {e}", p.display()));
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
    use wait_timeout::ChildExt;
    let mut child = Command::new("ethtool")
        .arg("-S")
        .arg(iface)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("ethtool -S {iface}: cannot run ethtool: {e}"))?;
    let status = match child.wait_timeout(timeout) {
        Ok(Some(s)) => s,
        Ok(None) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "ethtool -S {iface}: no answer within {:.1} s, killed",
                timeout.as_secs_f64()
            ));
        }
        Err(e) => return Err(format!("ethtool -S {iface}: {e}")),
    };
    let mut stdout = String::new();
    let mut stderr = String::new();
    if let Some(mut s) = child.stdout.take() {
        let _ = s.read_to_string(&mut stdout);
    }
    if let Some(mut s) = child.stderr.take() {
        let _ = s.read_to_string(&mut stderr);
    }
    if !status.success() {
        return Err(format!(
            "ethtool -S {iface}: {status}: {}",
            stderr.trim().chars().take(200).collect::<String>()
        ));
    }
    Ok(stdout)
}

/// Reads `ROOT/fabrik/captured_at`: Unix seconds (`1700000000.25`) or RFC 3339
/// (`2026-11-22T22:20:08Z`).
pub fn captured_at(root: &Path) -> Option<f64> {
    let text = fs::read_to_string(root.join("fabrik/captured_at")).ok()?;
    parse_timestamp(&text)
}

/// Parses a timestamp as `fabrik snapshot` may write it: Unix seconds or RFC 3339.
pub fn parse_timestamp(text: &str) -> Option<f64> {
    let t = text.trim();
    if let Ok(v) = t.parse::<f64>() {
        return (v.is_finite() && v >= 0.0).then_some(v);
    }
    let when = humantime::parse_rfc3339_weak(t).ok()?;
    when.duration_since(UNIX_EPOCH)
        .ok()
        .map(|d| d.as_secs_f64())
}

/// Every file of a counter directory. `lifespan` in `hw_counters` is the driver's cache time
/// in milliseconds, a setting and not a counter, so it is skipped.
///
/// Files are opened relative to the directory's descriptor (`openat`), so the kernel resolves
/// one name per counter instead of the whole path: on a 16-port node that is over a thousand
/// path walks saved per scrape. std has no `openat`, hence rustix.
fn read_counter_dir(
    dir: &Path,
    buf: &mut Vec<u8>,
    into: &mut BTreeMap<String, Reading>,
    problems: &mut Vec<String>,
) {
    use rustix::fs::{openat, Dir, Mode, OFlags, CWD};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let dfd = match openat(CWD, dir, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return,
        Err(e) => {
            problems.push(format!("{}: {}", dir.display(), std::io::Error::from(e)));
            return;
        }
    };
    let mut listing = match Dir::new(dfd) {
        Ok(d) => d,
        Err(e) => {
            problems.push(format!("{}: {}", dir.display(), std::io::Error::from(e)));
            return;
        }
    };
    let mut names: Vec<std::ffi::CString> = Vec::new();
    while let Some(entry) = listing.read() {
        match entry {
            Ok(e) => {
                let name = e.file_name();
                let bytes = name.to_bytes();
                if bytes == b"." || bytes == b".." || bytes == b"lifespan" {
                    continue;
                }
                names.push(name.to_owned());
            }
            Err(e) => {
                problems.push(format!("{}: {}", dir.display(), std::io::Error::from(e)));
                break;
            }
        }
    }
    let Ok(dfd) = listing.fd() else {
        return;
    };
    for cname in names {
        let Ok(name) = cname.into_string() else {
            continue;
        };
        let reading = match read_at(dfd, &name, buf) {
            Ok(()) => Reading::parse(&String::from_utf8_lossy(buf)),
            Err(e) => Reading::Unreadable(e.to_string()),
        };
        into.insert(name, reading);
    }
}

/// [`read_into`] for a file named relative to an open directory.
fn read_at(dfd: rustix::fd::BorrowedFd<'_>, name: &str, buf: &mut Vec<u8>) -> std::io::Result<()> {
    use rustix::fs::{openat, Mode, OFlags};
    buf.clear();
    let fd = openat(dfd, name, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())?;
    let mut chunk = [0u8; 256];
    loop {
        let n = match rustix::io::read(&fd, &mut chunk) {
            Ok(n) => n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        };
        buf.extend_from_slice(&chunk[..n]);
        if n < chunk.len() || buf.len() > 64 * 1024 {
            return Ok(());
        }
    }
}

/// Reads a small sysfs attribute into `buf` (reused to spare an allocation per file).
///
/// Hand-rolled rather than `fs::read_to_string` because this is the hot path: that function
/// stats and seeks the file to size its buffer and reads until EOF, six syscalls per counter;
/// here it is open, one read, close. A read shorter than the chunk means the end: sysfs hands an
/// attribute's whole text to the first read, and regular files (snapshots) do the same.
fn read_into(path: &Path, buf: &mut Vec<u8>) -> std::io::Result<()> {
    buf.clear();
    let mut f = fs::File::open(path)?;
    let mut chunk = [0u8; 256];
    loop {
        let n = match f.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        buf.extend_from_slice(&chunk[..n]);
        if n < chunk.len() || buf.len() > 64 * 1024 {
            return Ok(());
        }
    }
}

fn read_text(path: &Path, buf: &mut Vec<u8>) -> Option<String> {
    read_into(path, buf).ok()?;
    let t = String::from_utf8_lossy(buf);
    let t = t.trim();
    (!t.is_empty()).then(|| t.to_string())
}

/// Directory entries sorted by name, so that output order never depends on readdir.
fn sorted_entries(dir: &Path) -> std::io::Result<Vec<(String, PathBuf)>> {
    let mut v: Vec<(String, PathBuf)> = fs::read_dir(dir)?
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok().map(|n| (n, e.path())))
        .collect();
    v.sort();
    Ok(v)
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
    fn bad_files_are_said_on_their_line() {
        let dir = tempfile::tempdir().unwrap();
        let port = dir.path().join("sys/class/infiniband/mlx5_0/ports/1");
        fs::create_dir_all(port.join("counters")).unwrap();
        fs::create_dir_all(port.join("hw_counters")).unwrap();
        fs::write(port.join("state"), "4: ACTIVE\n").unwrap();
        fs::write(port.join("counters/symbol_error"), "garbage\n").unwrap();
        fs::write(port.join("counters/link_downed"), "3\n").unwrap();
        fs::write(port.join("hw_counters/lifespan"), "10\n").unwrap();
        // A directory where a file should be: reading it fails with EISDIR.
        fs::create_dir_all(port.join("hw_counters/np_cnp_sent")).unwrap();
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
}
