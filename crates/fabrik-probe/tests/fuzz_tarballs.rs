//! Snapshot tarballs in the mutation campaign (docs/benchmarks/fuzz.md): the entries of a real
//! snapshot tree, with hostile ones mixed in (names 1 to 200 directories deep, `..`, absolute,
//! very long, with control characters from the byte mutator; links out of the root or to a
//! directory outside, then files written through them; a name that is a file and then a
//! directory; FIFOs and hard links), and sometimes the tar stream itself mutated before it is
//! compressed. Each unpack must finish (a hang fails), never panic, never write outside its
//! directory, and its root must probe without panic. `FABRIK_FUZZ_SECS` sets the budget.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../fabrik-parse/tests/fuzz_support/mod.rs"]
mod fuzz_support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use fuzz_support::{campaign, check, mutate, Rng};

/// A real tree's entries: (name below the top, contents or link target, is a link).
fn real_entries(root: &Path) -> Vec<(String, Vec<u8>, bool)> {
    fn walk(dir: &Path, base: &Path, out: &mut Vec<(String, Vec<u8>, bool)>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        let mut v: Vec<_> = rd.flatten().map(|e| e.path()).collect();
        v.sort();
        for p in v {
            let name = p.strip_prefix(base).unwrap().display().to_string();
            let Ok(m) = p.symlink_metadata() else {
                continue;
            };
            if m.file_type().is_symlink() {
                let t = std::fs::read_link(&p).unwrap();
                out.push((name, t.display().to_string().into_bytes(), true));
            } else if m.is_dir() {
                walk(&p, base, out);
            } else if let Ok(b) = std::fs::read(&p) {
                out.push((name, b, false));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out
}

fn header(kind: tar::EntryType, size: usize) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(kind);
    h.set_size(size as u64);
    h.set_mode(0o644);
    h
}

/// One hostile tarball's bytes (gzip), built from the real entries and `outside`, a directory
/// nothing may be written into.
fn tarball(rng: &mut Rng, real: &[(String, Vec<u8>, bool)], outside: &Path) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    // A third of the tarballs hold names every unpack refuses (too deep, too long, control
    // characters); the others only what an unpack must write safely.
    let refusable = rng.below(3) == 0;
    let hostile_name = |rng: &mut Rng| -> String {
        let pick = if refusable {
            rng.below(6)
        } else {
            *rng.pick(&[1, 2, 5, 6])
        };
        match pick {
            0 => format!("snap/{}f", "d/".repeat(1 + rng.below(200))),
            6 => format!("snap/{}f", "d/".repeat(1 + rng.below(60))),
            1 => format!("snap/{}x", "../".repeat(1 + rng.below(5))),
            2 => "/tmp/fabrik-fuzz-abs".to_string(),
            3 => format!("snap/{}", "n".repeat(100 + rng.below(8000))),
            4 => {
                let mut bytes = b"snap/sys/class/net/eth0".to_vec();
                mutate(rng, &mut bytes);
                bytes.truncate(512);
                String::from_utf8_lossy(&bytes).into_owned()
            }
            _ => format!("snap/out{}/planted", rng.below(3)),
        }
    };
    let n = rng.below(real.len().min(300)) + 1;
    for _ in 0..n + rng.below(40) {
        let _ = match rng.below(10) {
            0..=5 => {
                let (name, data, link) = rng.pick(real);
                let name = format!("snap/{name}");
                if *link {
                    let mut h = header(tar::EntryType::Symlink, 0);
                    b.append_link(&mut h, &name, String::from_utf8_lossy(data).as_ref())
                } else {
                    let mut h = header(tar::EntryType::Regular, data.len());
                    b.append_data(&mut h, &name, &data[..])
                }
            }
            6 => {
                let target = match rng.below(4) {
                    0 => outside.display().to_string(),
                    1 => "/".to_string(),
                    2 => "../../../../../../../..".to_string(),
                    _ => ".".to_string(),
                };
                let mut h = header(tar::EntryType::Symlink, 0);
                b.append_link(&mut h, format!("snap/out{}", rng.below(3)), target)
            }
            7 => {
                let kind = *rng.pick(&[
                    tar::EntryType::Fifo,
                    tar::EntryType::Link,
                    tar::EntryType::Char,
                    tar::EntryType::Directory,
                ]);
                let mut h = header(kind, 0);
                b.append_data(&mut h, hostile_name(rng), std::io::empty())
            }
            _ => {
                let mut h = header(tar::EntryType::Regular, 2);
                b.append_data(&mut h, hostile_name(rng), &b"1\n"[..])
            }
        };
    }
    let mut raw = b.into_inner().unwrap_or_default();
    if rng.below(5) == 0 {
        mutate(rng, &mut raw);
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&raw).unwrap();
    gz.finish().unwrap()
}

fn entries(dir: &Path) -> usize {
    std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0)
}

#[test]
fn unpack_on_hostile_tarballs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/nodes/roce-dualport");
    let real = real_entries(&root);
    assert!(real.len() > 100, "{} entries", real.len());
    let work = Arc::new(tempfile::tempdir().unwrap());
    let outside: PathBuf = work.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let made = work.clone();
    let out2 = outside.clone();
    let unpacked = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let seen = unpacked.clone();
    let o = campaign(
        "tarballs",
        move |rng| {
            let bytes = tarball(rng, &real, &out2);
            let path = made.path().join(format!("t{}.tar.gz", rng.below(4)));
            std::fs::write(&path, &bytes).unwrap();
            (path, bytes)
        },
        move |path: &PathBuf| {
            if let Ok(u) = fabrik_probe::snapshot::unpack(path) {
                seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let _ = fabrik_probe::probe(&u.root);
            }
            assert_eq!(entries(&outside), 0, "a file was written through a link");
            assert!(!Path::new("/tmp/fabrik-fuzz-abs").exists());
        },
    );
    eprintln!(
        "fuzz tarballs: {} of {} unpacked (the others refused)",
        unpacked.load(std::sync::atomic::Ordering::Relaxed),
        o.executions
    );
    check(&o);
    assert!(unpacked.load(std::sync::atomic::Ordering::Relaxed) > 0);
}
