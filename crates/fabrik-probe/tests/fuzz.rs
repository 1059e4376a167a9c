//! The mutation campaign over the probe, run by CI within a bounded budget:
//! - every capture parser fed the real captures (fixtures/doctor/captures, the nodes' own
//!   `fabrik/cmd` and `/proc` files) mutated by `fuzz_support`;
//! - the probe on real node trees (fixtures/nodes: real-procfs, sandbox-vm, roce-dualport)
//!   mutated as a hostile snapshot would be: files garbled, turned into FIFOs, directories, huge
//!   sparse files or links out of the root, links retargeted into loops, to `/`, out of the root.
//!
//! Each probe must finish (a hang fails the test), not panic, and never show a byte of the
//! file planted outside the root. `FABRIK_FUZZ_SECS=60 cargo test -p fabrik-probe --test fuzz
//! -- --nocapture` is the longer run for release checks (docs/benchmarks/fuzz.md).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../fabrik-parse/tests/fuzz_support/mod.rs"]
mod fuzz_support;

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use fabrik_probe::parse as p;
use fuzz_support::{campaign, check, mutate, mutated, Rng};

const SECRET: &str = "outside-the-root-7f3a9c";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut v: Vec<_> = rd.flatten().map(|e| e.path()).collect();
    v.sort();
    for path in v {
        let Ok(m) = path.symlink_metadata() else {
            continue;
        };
        if m.is_dir() {
            files_under(&path, out);
        } else if m.is_file() {
            out.push(path);
        }
    }
}

fn run_parsers(s: &str) {
    let _ = p::parse_mlnx_qos(s, "fuzz");
    let _ = p::parse_lspci_acs(s);
    let _ = p::parse_proc_modules(s);
    let _ = p::parse_memlock(s);
    let _ = p::parse_fib_trie_local(s);
    let _ = p::parse_proc_route(s);
    let _ = p::parse_if_inet6(s);
    let _ = p::parse_ip_o_addr(s);
    let _ = p::parse_addresses_file(s);
    let _ = p::parse_nvidia_smi_topo(s);
    let _ = p::parse_os_release(s, "PRETTY_NAME");
    let _ = p::parse_ibv_devinfo_mtu(s);
    let _ = p::parse_ofed_info(s);
    let _ = p::parse_nvidia_version(s);
    let _ = p::parse_nvidia_open_module(s);
    let _ = p::parse_nvidia_gpu_information(s);
    let _ = p::iommu_cmdline_flags(s);
    // The one-value parsers, on each line as sysfs would hold it.
    for line in s.lines().take(200) {
        let _ = p::parse_rate(line);
        let _ = p::parse_pci_speed(line);
        let _ = p::parse_u64(line);
        let _ = p::parse_int_auto(line);
        let _ = p::parse_numa(line);
        let _ = p::normalize_bdf(line);
        let _ = p::is_bdf(line);
        let _ = p::gid_ipv4(line);
        let _ = p::gid_is_zero(line);
    }
}

#[test]
fn capture_parsers() {
    let mut paths = Vec::new();
    files_under(&fixtures().join("doctor/captures"), &mut paths);
    for node in [
        "sandbox-vm",
        "roce-dualport",
        "ib-ndr-8gpu",
        "gcp-a3",
        "aws-p5",
    ] {
        files_under(
            &fixtures().join("nodes").join(node).join("fabrik"),
            &mut paths,
        );
        files_under(
            &fixtures().join("nodes").join(node).join("proc"),
            &mut paths,
        );
    }
    let corpus: Vec<Vec<u8>> = paths
        .iter()
        .filter_map(|p| std::fs::read(p).ok())
        .filter(|b| !b.is_empty())
        .collect();
    assert!(corpus.len() > 20, "{} captures", corpus.len());
    let o = campaign(
        "probe-parsers",
        move |rng| {
            let d = mutated(rng, &corpus);
            (d.clone(), d)
        },
        |d: &Vec<u8>| run_parsers(&String::from_utf8_lossy(d)),
    );
    check(&o);
}

/// Copies a tree, links as links.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let src = e.path();
        let dst = to.join(e.file_name());
        let m = src.symlink_metadata().unwrap();
        if m.file_type().is_symlink() {
            symlink(std::fs::read_link(&src).unwrap(), &dst).unwrap();
        } else if m.is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

/// Every file and link of a tree (not following links).
fn entries(dir: &Path, out: &mut Vec<PathBuf>, dirs: &mut Vec<PathBuf>) {
    dirs.push(dir.to_path_buf());
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    v.sort();
    for path in v {
        let m = path.symlink_metadata().unwrap();
        if m.is_dir() {
            entries(&path, out, dirs);
        } else {
            out.push(path);
        }
    }
}

/// What was at a path before a mutation, to put it back.
enum Saved {
    File(Vec<u8>),
    Link(PathBuf),
    Nothing,
}

fn save(path: &Path) -> Saved {
    match path.symlink_metadata() {
        Ok(m) if m.file_type().is_symlink() => Saved::Link(std::fs::read_link(path).unwrap()),
        Ok(m) if m.is_file() => Saved::File(std::fs::read(path).unwrap()),
        _ => Saved::Nothing,
    }
}

fn clear(path: &Path) {
    match path.symlink_metadata() {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path).unwrap(),
        Ok(_) => std::fs::remove_file(path).unwrap(),
        Err(_) => {}
    }
}

fn restore(path: &Path, saved: &Saved) {
    clear(path);
    match saved {
        Saved::File(b) => std::fs::write(path, b).unwrap(),
        Saved::Link(t) => symlink(t, path).unwrap(),
        Saved::Nothing => {}
    }
}

struct Tree {
    root: PathBuf,
    files: Vec<PathBuf>,
    dirs: Vec<PathBuf>,
}

/// One hostile change to a tree; returns what to undo and a description.
fn hostile_change(rng: &mut Rng, t: &Tree, secret: &Path) -> (Vec<(PathBuf, Saved)>, String) {
    let target = rng.pick(&t.files).clone();
    let depth = target
        .strip_prefix(&t.root)
        .map_or(0, |r| r.components().count());
    let kind = rng.below(9);
    if kind == 8 {
        // A new link in a directory, making a loop or leading out.
        let dir = rng.pick(&t.dirs).clone();
        let at = dir.join("fuzz-link");
        let to: PathBuf = match rng.below(4) {
            0 => ".".into(),
            1 => "..".into(),
            2 => "/".into(),
            _ => "fuzz-link".into(),
        };
        symlink(&to, &at).unwrap();
        return (
            vec![(at.clone(), Saved::Nothing)],
            format!("link {} -> {}", at.display(), to.display()),
        );
    }
    let saved = save(&target);
    let what = match kind {
        0 => {
            let mut bytes = match &saved {
                Saved::File(b) => b.clone(),
                _ => b"0\n".to_vec(),
            };
            mutate(rng, &mut bytes);
            clear(&target);
            std::fs::write(&target, &bytes).unwrap();
            "garbled".to_string()
        }
        1 => {
            clear(&target);
            rustix::fs::mknodat(
                rustix::fs::CWD,
                &target,
                rustix::fs::FileType::Fifo,
                rustix::fs::Mode::from_raw_mode(0o644),
                0,
            )
            .unwrap();
            "FIFO".to_string()
        }
        2 => {
            clear(&target);
            symlink(secret, &target).unwrap();
            "absolute link out".to_string()
        }
        3 => {
            clear(&target);
            let up = "../".repeat(depth + 3);
            let rel = secret.strip_prefix("/").unwrap();
            symlink(format!("{up}{}", rel.display()), &target).unwrap();
            "relative link out".to_string()
        }
        4 => {
            clear(&target);
            let f = std::fs::File::create(&target).unwrap();
            f.set_len(1 << (30 + rng.below(7))).unwrap();
            "huge sparse file".to_string()
        }
        5 => {
            clear(&target);
            std::fs::create_dir(&target).unwrap();
            "directory".to_string()
        }
        6 => {
            clear(&target);
            let to = match rng.below(3) {
                0 => "/".to_string(),
                1 => ".".to_string(),
                _ => target.file_name().unwrap().to_string_lossy().into_owned(),
            };
            symlink(&to, &target).unwrap();
            format!("link to {to}")
        }
        _ => {
            clear(&target);
            "deleted".to_string()
        }
    };
    (
        vec![(target.clone(), saved)],
        format!("{what}: {}", target.display()),
    )
}

#[test]
fn probe_on_hostile_trees() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret");
    std::fs::write(&secret, format!("{SECRET}\n")).unwrap();
    let mut trees = Vec::new();
    for name in ["real-procfs", "sandbox-vm", "roce-dualport"] {
        let root = dir.path().join(name);
        copy_tree(&fixtures().join("nodes").join(name), &root);
        let (mut files, mut dirs) = (Vec::new(), Vec::new());
        entries(&root, &mut files, &mut dirs);
        trees.push(Tree { root, files, dirs });
    }
    let mut undo: Vec<(PathBuf, Saved)> = Vec::new();
    let o = campaign(
        "probe-trees",
        move |rng| {
            // The previous input's changes are put back before the next one.
            for (path, saved) in undo.drain(..).rev() {
                restore(&path, &saved);
            }
            let t = &trees[rng.below(trees.len())];
            let mut said = Vec::new();
            for _ in 0..=rng.below(3) {
                let (u, what) = hostile_change(rng, t, &secret);
                undo.extend(u);
                said.push(what);
            }
            (t.root.clone(), said.join("\n").into_bytes())
        },
        |root: &PathBuf| {
            let node = fabrik_probe::probe(root).unwrap();
            let json = serde_json::to_string(&node).unwrap();
            assert!(!json.contains(SECRET), "read outside the root: {json}");
        },
    );
    check(&o);
}
