//! `fabrik snapshot`: copies exactly the names that [`crate::probe`] reads (files, directories,
//! symlinks made relative) and the outputs of the helper commands present on the machine, so
//! that probing the copy gives the same node as probing the machine.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

pub use fabrik_model::snapshot::{CommandRun, SnapshotSummary};
use fabrik_model::Node;

use crate::fs::{parent, Recorded};
use crate::unpack::{writing, RemoveOnSignal};

pub use crate::archive::SnapshotError;
use crate::archive::{io_err, is_tarball};
pub use crate::unpack::{is_snapshot_tarball, unpack, unpack_with, UnpackLimits, Unpacked};

/// What [`capture`] copies and where to.
#[derive(Debug, Clone)]
pub struct SnapshotOptions {
    /// What to copy: `/` for this machine (a snapshot of a snapshot works too).
    pub source_root: PathBuf,
    /// A directory to create, or a file ending in `.tar.gz`/`.tgz`.
    pub output: PathBuf,
    /// Run the helper commands (only meaningful when `source_root` is `/`).
    pub run_commands: bool,
    /// How long one helper command may run before it is killed.
    pub command_timeout: Duration,
}

impl SnapshotOptions {
    /// A snapshot of this machine (`/`) into `output`, running the helper commands with a 20 s limit each.
    pub fn new(output: PathBuf) -> Self {
        SnapshotOptions {
            source_root: PathBuf::from("/"),
            output,
            run_commands: true,
            command_timeout: Duration::from_secs(20),
        }
    }
}

/// Where a snapshot of `root` goes when no output is named ([`default_output_name`]), the host
/// name read through the confined reader: the root may be someone else's tree.
pub fn default_output(root: &Path, now: SystemTime) -> PathBuf {
    // HOST_NAME_MAX is 64.
    let host = crate::confined::Root::open(root)
        .and_then(|r| r.read("proc/sys/kernel/hostname", 256))
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned());
    PathBuf::from(default_output_name(host.as_deref().map(str::trim), now))
}

/// `fabrik-snapshot-HOST-20261122T222009Z`.
pub fn default_output_name(hostname: Option<&str>, now: SystemTime) -> String {
    let stamp: String = humantime::format_rfc3339_seconds(now)
        .to_string()
        .chars()
        .filter(|c| *c != '-' && *c != ':')
        .collect();
    let host = file_name_part(hostname.unwrap_or("unknown"));
    format!("fabrik-snapshot-{host}-{stamp}")
}

/// A host name as part of a file name: anything but ASCII letters, digits, `-` and `.`
/// becomes `_`, so that a name read from a node cannot add a directory or hide a character.
pub fn file_name_part(host: &str) -> String {
    host.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Takes a snapshot as `opts` says.
pub fn capture(opts: &SnapshotOptions) -> Result<SnapshotSummary, SnapshotError> {
    if opts.output.exists() || opts.output.symlink_metadata().is_ok() {
        return Err(SnapshotError::OutputExists(opts.output.clone()));
    }
    // The counters are read during the probe: its start is when they were captured.
    let read_at = SystemTime::now();
    let run_here = opts.run_commands && opts.source_root == Path::new("/");
    let probe_opts = crate::ProbeOptions {
        run_tools: run_here,
        deadline: Some(std::time::Instant::now() + opts.command_timeout),
        // Reading /dev/kmsg runs no command: a snapshot of the live machine keeps its log
        // with or without them.
        read_kernel_log: opts.source_root == Path::new("/"),
    };
    let (node, record, tool_runs) = crate::probe_recording(&opts.source_root, &probe_opts)?;
    let tarball = is_tarball(&opts.output);
    // The tree is written under a temporary name and renamed into place once finished, and it
    // holds fabrik/partial until then: a killed snapshot is never found under the name asked
    // for, and a left-over partial tree is refused by `root::check` if given as a root.
    let staging = if tarball {
        tempfile::tempdir().map_err(io_err("creating a temporary directory for", &opts.output))?
    } else {
        let parent = match opts.output.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&parent).map_err(io_err("creating", &parent))?;
        tempfile::Builder::new()
            .prefix(&format!(".{}.partial-", top_dir_name(&opts.output)))
            .tempdir_in(&parent)
            .map_err(io_err("creating a temporary directory for", &opts.output))?
    };
    // SIGTERM, SIGINT or SIGHUP while the snapshot is written removes the staging tree; the
    // tree is written under `writing()`, which the removal waits for.
    let staged = RemoveOnSignal::new(staging.path());
    let tree = if tarball {
        staging.path().join(top_dir_name(&opts.output))
    } else {
        staging.path().to_path_buf()
    };
    let (files, directories, symlinks) = {
        let _w = writing();
        std::fs::create_dir_all(&tree).map_err(io_err("creating", &tree))?;
        write_marker(
            &tree,
            crate::root::PARTIAL_MARKER,
            "this snapshot is being written, or its writer was stopped before it finished\n",
        )?;
        let counts = write_tree(&tree, &record)?;
        write_captured_at(&tree, &opts.source_root, read_at)?;
        counts
    };
    // The tools the probe ran are its facts (already in the record); the rest are captured
    // for the reader.
    let mut commands: Vec<CommandRun> = tool_runs
        .iter()
        // A NIC tool that is not installed is said: its facts are unknown, not healthy.
        .filter(|(t, o)| {
            *o != crate::live::ToolOutcome::Missing || crate::nic_tools::is_nic_capture(&t.name)
        })
        .map(|(t, o)| CommandRun {
            name: t.name.clone(),
            command: format!("{} {}", t.program, t.args.join(" "))
                .trim()
                .to_string(),
            outcome: o.describe(),
        })
        .collect();
    if run_here {
        let done: Vec<String> = tool_runs.iter().map(|(t, _)| t.name.clone()).collect();
        commands.extend(run_commands(&tree, &node, opts.command_timeout, &done)?);
    }
    {
        let _w = writing();
        write_marker(
            &tree,
            crate::root::COMPLETE_MARKER,
            &format!("fabrik-probe {}\n", env!("CARGO_PKG_VERSION")),
        )?;
        let partial = host_path(&tree, crate::root::PARTIAL_MARKER);
        std::fs::remove_file(&partial).map_err(io_err("removing", &partial))?;
    }
    if tarball {
        write_tarball(staging.path(), &tree, &opts.output)?;
        // Removed while still registered (see `Unpacked`'s drop).
        {
            let _w = writing();
            let _ = staging.close();
        }
        drop(staged);
    } else {
        use std::os::unix::fs::PermissionsExt;
        // The temporary directory is private (0700); a snapshot directory is not.
        std::fs::set_permissions(&tree, std::fs::Permissions::from_mode(0o755))
            .map_err(io_err("setting the permissions of", &tree))?;
        let kept = staging.keep();
        let renamed = {
            let _w = writing();
            rename_new(&kept, &opts.output)
        };
        drop(staged);
        if let Err(e) = renamed {
            let _ = std::fs::remove_dir_all(&kept);
            return Err(e);
        }
    }
    Ok(SnapshotSummary {
        schema_version: fabrik_model::SCHEMA_VERSION,
        output: opts.output.display().to_string(),
        files,
        directories,
        symlinks,
        commands,
    })
}

/// Writes `fabrik/captured_at` (RFC 3339, UTC, milliseconds), which `fabrik diff` turns into
/// the interval between two snapshots. A snapshot of a snapshot keeps the original's time,
/// since its counters are the original's.
fn write_captured_at(
    tree: &Path,
    source_root: &Path,
    read_at: SystemTime,
) -> Result<(), SnapshotError> {
    let original = crate::confined::Root::open(source_root)
        .and_then(|r| r.read(CAPTURED_AT, 128))
        .ok()
        .and_then(|t| parse_captured_at(&String::from_utf8_lossy(&t)));
    let stamp = humantime::format_rfc3339_millis(original.unwrap_or(read_at));
    let path = host_path(tree, CAPTURED_AT);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io_err("creating", dir))?;
    }
    std::fs::write(&path, format!("{stamp}\n")).map_err(io_err("writing", &path))
}

/// `fabrik/captured_at` as snapshots write it (RFC 3339) or as older ones did (Unix seconds).
pub fn parse_captured_at(text: &str) -> Option<SystemTime> {
    let t = text.trim();
    if let Ok(secs) = t.parse::<f64>() {
        let d = Duration::try_from_secs_f64(secs).ok()?;
        return SystemTime::UNIX_EPOCH.checked_add(d);
    }
    humantime::parse_rfc3339_weak(t).ok()
}

/// When the snapshot's files were read, relative to its root (beside the other markers in
/// [`crate::root`]).
pub use crate::root::CAPTURED_AT;

fn top_dir_name(output: &Path) -> String {
    let name = output
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "fabrik-snapshot".to_string());
    name.trim_end_matches(".tar.gz")
        .trim_end_matches(".tgz")
        .to_string()
}

/// Where a recorded name goes in the copy. `/proc/PID/...` (reached through `/proc/self`) is
/// stored as `/proc/self/...`, so the copy holds one process's view under a stable name.
fn stored_path(logical: &str) -> String {
    let mut parts = logical.splitn(4, '/');
    let (_, first, second, rest) = (parts.next(), parts.next(), parts.next(), parts.next());
    match (first, second) {
        (Some("proc"), Some(pid)) if !pid.is_empty() && pid.chars().all(|c| c.is_ascii_digit()) => {
            match rest {
                Some(r) => format!("/proc/self/{r}"),
                None => "/proc/self".to_string(),
            }
        }
        _ => logical.to_string(),
    }
}

fn host_path(tree: &Path, logical: &str) -> PathBuf {
    let mut p = tree.to_path_buf();
    for c in logical
        .split('/')
        .filter(|c| !c.is_empty() && *c != "." && *c != "..")
    {
        p.push(c);
    }
    p
}

/// A link target made relative to the link's directory, so the copy reads the same anywhere.
fn relative_target(link: &str, target: &str) -> String {
    if !target.starts_with('/') {
        return target.to_string();
    }
    let depth = parent(link).split('/').filter(|c| !c.is_empty()).count();
    let up = "../".repeat(depth);
    let rest = target.trim_start_matches('/');
    if rest.is_empty() {
        if depth == 0 {
            ".".to_string()
        } else {
            up.trim_end_matches('/').to_string()
        }
    } else {
        format!("{up}{rest}")
    }
}

fn write_tree(
    tree: &Path,
    record: &BTreeMap<String, Recorded>,
) -> Result<(usize, usize, usize), SnapshotError> {
    let (mut files, mut dirs, mut links) = (0, 0, 0);
    let mut listed: Vec<(String, &Vec<String>)> = Vec::new();
    for (logical, r) in record {
        if let Recorded::Dir(names) = r {
            let p = host_path(tree, &stored_path(logical));
            std::fs::create_dir_all(&p).map_err(io_err("creating", &p))?;
            dirs += 1;
            listed.push((stored_path(logical), names));
        }
    }
    for (logical, r) in record {
        if let Recorded::File(bytes) = r {
            let p = host_path(tree, &stored_path(logical));
            if let Some(dir) = p.parent() {
                std::fs::create_dir_all(dir).map_err(io_err("creating", dir))?;
            }
            std::fs::write(&p, bytes).map_err(io_err("writing", &p))?;
            files += 1;
        }
    }
    for (logical, r) in record {
        let Recorded::Link(target) = r else { continue };
        // `/proc/self` is stored as a real directory (see `stored_path`).
        if logical == "/proc/self" || logical == "/proc/thread-self" {
            continue;
        }
        let stored = stored_path(logical);
        let p = host_path(tree, &stored);
        if p.symlink_metadata().is_ok() {
            continue;
        }
        if let Some(dir) = p.parent() {
            std::fs::create_dir_all(dir).map_err(io_err("creating", dir))?;
        }
        std::os::unix::fs::symlink(relative_target(&stored, target), &p)
            .map_err(io_err("linking", &p))?;
        links += 1;
    }
    // Files that refused to be read on the machine answer the same from the copy.
    let manifest: String = record
        .iter()
        .filter_map(|(logical, r)| match r {
            Recorded::Failed(code) => Some(format!("{code}\t{}\n", stored_path(logical))),
            _ => None,
        })
        .collect();
    if !manifest.is_empty() {
        let p = host_path(tree, crate::fs::UNREADABLE_MANIFEST);
        if let Some(dir) = p.parent() {
            std::fs::create_dir_all(dir).map_err(io_err("creating", dir))?;
        }
        std::fs::write(&p, manifest).map_err(io_err("writing", &p))?;
        files += 1;
    }
    // Names that were listed but never opened (`/dev/infiniband/uverbs0`, IOMMU groups) keep
    // their place as empty files: probing only counts them.
    for (dir, names) in listed {
        for n in names {
            let p = host_path(tree, &format!("{dir}/{n}"));
            if p.symlink_metadata().is_err() {
                std::fs::write(&p, b"").map_err(io_err("writing", &p))?;
                files += 1;
            }
        }
    }
    Ok((files, dirs, links))
}

/// Renames the finished tree to `output`, which must still not exist: `rename(2)` would
/// replace an empty directory made there meanwhile, and a snapshot never replaces anything.
fn rename_new(from: &Path, output: &Path) -> Result<(), SnapshotError> {
    if output.symlink_metadata().is_ok() {
        return Err(SnapshotError::OutputExists(output.to_path_buf()));
    }
    std::fs::rename(from, output).map_err(io_err("renaming into", output))
}

fn write_marker(tree: &Path, name: &str, text: &str) -> Result<(), SnapshotError> {
    let p = host_path(tree, name);
    if let Some(dir) = p.parent() {
        std::fs::create_dir_all(dir).map_err(io_err("creating", dir))?;
    }
    std::fs::write(&p, text).map_err(io_err("writing", &p))
}

/// Writes the archive under a temporary name beside `output` and renames it into place, so a
/// killed snapshot leaves no `.tar.gz` that looks whole.
fn write_tarball(stage: &Path, tree: &Path, output: &Path) -> Result<(), SnapshotError> {
    let dir = match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".{}.partial-", top_dir_name(output)))
        .tempfile_in(dir)
        .map_err(io_err("creating a temporary file for", output))?;
    let tmp_out = tmp.path().to_path_buf();
    let _staged = RemoveOnSignal::new(&tmp_out);
    let _w = writing();
    let file = tmp.reopen().map_err(io_err("opening", &tmp_out))?;
    let gz = flate2::write::GzEncoder::new(file, flate2::Compression::default());
    let mut builder = tar::Builder::new(gz);
    builder.follow_symlinks(false);
    let top = tree.strip_prefix(stage).unwrap_or(tree);
    builder
        .append_dir_all(top, tree)
        .map_err(io_err("archiving", tree))?;
    let gz = builder.into_inner().map_err(io_err("writing", &tmp_out))?;
    gz.finish().map_err(io_err("compressing", &tmp_out))?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tmp_out, std::fs::Permissions::from_mode(0o644))
            .map_err(io_err("setting the permissions of", &tmp_out))?;
    }
    tmp.persist_noclobber(output)
        .map_err(|e| io_err("renaming into", output)(e.error))?;
    Ok(())
}

/// The helper commands worth running on this node: (capture name, program, arguments).
fn command_list(node: &Node) -> Vec<(String, &'static str, Vec<String>)> {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let mut cmds = vec![
        ("ibv_devinfo-v".to_string(), "ibv_devinfo", s(&["-v"])),
        ("ibstat".to_string(), "ibstat", vec![]),
        (
            "nvidia-smi-topo-m".to_string(),
            "nvidia-smi",
            s(&["topo", "-m"]),
        ),
        ("nvidia-smi-q".to_string(), "nvidia-smi", s(&["-q"])),
        ("ofed_info-s".to_string(), "ofed_info", s(&["-s"])),
        (
            "lspci-nvidia".to_string(),
            "lspci",
            s(&["-D", "-vvv", "-d", "10de:"]),
        ),
        (
            "lspci-mellanox".to_string(),
            "lspci",
            s(&["-D", "-vvv", "-d", "15b3:"]),
        ),
        ("ip-o-addr".to_string(), "ip", s(&["-o", "addr"])),
    ];
    for b in &node.pci_bridges {
        let safe: String = b
            .address
            .chars()
            .filter(|c| c.is_ascii_hexdigit() || *c == ':' || *c == '.')
            .collect();
        cmds.push((
            format!("lspci-bridge-{safe}"),
            "lspci",
            vec!["-D".into(), "-vvv".into(), "-s".into(), safe],
        ));
    }
    for n in &node.net_interfaces {
        if !n
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.@".contains(c))
        {
            continue;
        }
        if n.rdma_device.is_some() {
            cmds.push((
                format!("mlnx_qos-{}", n.name),
                "mlnx_qos",
                vec!["-i".into(), n.name.clone()],
            ));
            // The NIC's per-priority pause and phy discard counters, for `fabrik diff`.
            cmds.push((
                format!("ethtool-S-{}", n.name),
                "ethtool",
                vec!["-S".into(), n.name.clone()],
            ));
            // The module's EEPROM (type, vendor, temperature, power), for the reader.
            cmds.push((
                format!("ethtool-m-{}", n.name),
                "ethtool",
                vec!["-m".into(), n.name.clone()],
            ));
        }
        if n.pci.is_some() {
            cmds.push((
                format!("ethtool-i-{}", n.name),
                "ethtool",
                vec!["-i".into(), n.name.clone()],
            ));
        }
    }
    cmds
}

fn run_commands(
    tree: &Path,
    node: &Node,
    timeout: Duration,
    done: &[String],
) -> Result<Vec<CommandRun>, SnapshotError> {
    let dir = tree.join("fabrik").join("cmd");
    let mut runs = Vec::new();
    for (name, program, args) in command_list(node) {
        if done.contains(&name) {
            continue;
        }
        let Some(exe) = crate::run::find_program(program) else {
            continue;
        };
        let command = format!("{program} {}", args.join(" ")).trim().to_string();
        let outcome = match run_helper(&exe, &args, timeout) {
            Ok(out) if out.timed_out() => "timed out".to_string(),
            Ok(out) => {
                let status = out.status.and_then(|s| s.code()).unwrap_or(-1);
                if out.stdout.is_empty() {
                    format!("exit {status} (nothing saved)")
                } else {
                    let _w = writing();
                    std::fs::create_dir_all(&dir).map_err(io_err("creating", &dir))?;
                    let p = dir.join(format!("{name}.txt"));
                    std::fs::write(&p, &out.stdout).map_err(io_err("writing", &p))?;
                    if status == 0 {
                        "saved".to_string()
                    } else {
                        format!("saved (exit {status})")
                    }
                }
            }
            Err(e) => format!("failed to start: {e}"),
        };
        runs.push(CommandRun {
            name,
            command,
            outcome,
        });
    }
    Ok(runs)
}

/// The most of a helper's output a snapshot keeps (`fabrik/cmd/NAME.txt`).
pub const MAX_CAPTURE_BYTES: u64 = 16 * 1024 * 1024;

/// Runs a helper with a clean environment (nothing of the caller's is recorded) in the C locale.
fn run_helper(
    exe: &Path,
    args: &[String],
    timeout: Duration,
) -> std::io::Result<crate::run::Output> {
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .env_clear()
        .env(
            "PATH",
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        )
        .env("LC_ALL", "C");
    crate::run::run(&mut cmd, timeout, MAX_CAPTURE_BYTES)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    /// Each snapshot error that carries an OS error prints its text once, however it is wrapped.
    #[test]
    fn the_chain_names_the_os_error_once() {
        let text = std::io::Error::from_raw_os_error(13).to_string();
        let unreadable = || crate::root::RootError::Unreadable {
            path: PathBuf::from("/x"),
            source: std::io::Error::from_raw_os_error(13),
        };
        // `{:#}` through anyhow, as the CLI prints errors.
        let errors = [
            anyhow::Error::new(SnapshotError::Probe(crate::ProbeError::NotANode(
                unreadable(),
            ))),
            anyhow::Error::new(SnapshotError::Io {
                action: "create",
                path: PathBuf::from("/x"),
                source: std::io::Error::from_raw_os_error(13),
            }),
        ];
        for e in errors {
            let c = format!("{e:#}");
            assert_eq!(c.matches(&text).count(), 1, "{c}");
            assert!(c.contains("/x"), "{c}");
        }
    }

    #[test]
    fn captured_at_is_read_in_both_forms_and_written_in_rfc3339() {
        let t = parse_captured_at("2026-11-22T10:00:10Z\n").unwrap();
        assert_eq!(
            t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs(),
            1_795_341_610
        );
        let u = parse_captured_at("1795341610.5").unwrap();
        assert_eq!(
            u.duration_since(SystemTime::UNIX_EPOCH)
                .unwrap()
                .as_millis(),
            1_795_341_610_500
        );
        for bad in ["", "yesterday", "-5", "NaN", "inf", "2026-13-40T99:00:00Z"] {
            assert_eq!(parse_captured_at(bad), None, "{bad}");
        }
        let dir = tempfile::tempdir().unwrap();
        let (src, tree) = (dir.path().join("src"), dir.path().join("tree"));
        std::fs::create_dir_all(src.join("fabrik")).unwrap();
        write_captured_at(&tree, &src, u).unwrap();
        let written = std::fs::read_to_string(tree.join(CAPTURED_AT)).unwrap();
        assert_eq!(written, "2026-11-22T10:00:10.500Z\n");
        // A snapshot of a snapshot keeps the original's time.
        std::fs::write(src.join(CAPTURED_AT), "2026-11-22T10:00:10Z\n").unwrap();
        let tree2 = dir.path().join("tree2");
        write_captured_at(&tree2, &src, u).unwrap();
        let kept = std::fs::read_to_string(tree2.join(CAPTURED_AT)).unwrap();
        assert_eq!(kept, "2026-11-22T10:00:10.000Z\n");
    }

    proptest::proptest! {
        #[test]
        fn captured_at_never_panics(text in "\\PC{0,40}") {
            let _ = parse_captured_at(&text);
        }
    }

    #[test]
    fn proc_self_and_link_targets() {
        assert_eq!(stored_path("/proc/4242/limits"), "/proc/self/limits");
        assert_eq!(stored_path("/proc/4242/net/route"), "/proc/self/net/route");
        assert_eq!(stored_path("/proc/net"), "/proc/net");
        assert_eq!(stored_path("/sys/class/net/eth0"), "/sys/class/net/eth0");
        assert_eq!(
            relative_target("/sys/class/abs", "/sys/devices/x"),
            "../../sys/devices/x"
        );
        assert_eq!(relative_target("/proc/net", "self/net"), "self/net");
        assert_eq!(relative_target("/top", "/"), ".");
    }

    #[test]
    fn helpers_run_with_a_clean_environment() {
        let args = vec!["-c".to_string(), "env".to_string()];
        let out = run_helper(Path::new("/bin/sh"), &args, Duration::from_secs(10)).unwrap();
        let env = String::from_utf8_lossy(&out.stdout);
        assert!(!env.contains("HOME="), "{env}");
        assert!(env.contains("LC_ALL=C"), "{env}");
    }

    #[test]
    fn default_names_are_safe() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(86400 * 365);
        assert_eq!(
            default_output_name(Some("gpu node/1"), t),
            "fabrik-snapshot-gpu_node_1-19710101T000000Z"
        );
    }
}
