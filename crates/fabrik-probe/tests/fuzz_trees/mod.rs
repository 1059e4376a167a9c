//! Hostile changes to real node trees for the mutation campaign, shared by the probe's fuzz test
//! and the counter reader's (crates/fabrik-monitor/tests/fuzz.rs includes this file by path).
//! Each input changes 1 to 4 entries of a copy of a real tree, as a hostile snapshot would, and
//! the next input first puts them back.
#![allow(dead_code)]

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use crate::fuzz_support::{mutate, Outcome, Rng};

/// The text of the file planted outside every root: no reader may ever show it.
pub const SECRET: &str = "outside-the-root-7f3a9c";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
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
    /// A huge sparse file an earlier change of the same input made: never read back.
    Sparse(u64),
    Link(PathBuf),
    Nothing,
}

fn save(path: &Path) -> Saved {
    match path.symlink_metadata() {
        Ok(m) if m.file_type().is_symlink() => Saved::Link(std::fs::read_link(path).unwrap()),
        Ok(m) if m.is_file() && m.len() > 64 << 20 => Saved::Sparse(m.len()),
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
        Saved::Sparse(len) => std::fs::File::create(path).unwrap().set_len(*len).unwrap(),
        Saved::Link(t) => symlink(t, path).unwrap(),
        Saved::Nothing => {}
    }
}

pub struct Tree {
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
        // A second new link in the same directory in one input takes the next name.
        let at = (0..)
            .map(|i| dir.join(format!("fuzz-link{i}")))
            .find(|p| p.symlink_metadata().is_err())
            .unwrap();
        let to: PathBuf = match rng.below(4) {
            0 => ".".into(),
            1 => "..".into(),
            2 => "/".into(),
            _ => at.file_name().unwrap().into(),
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

/// Runs `run` on copies of the fixture trees `names` (relative to fixtures/), changed
/// by [`hostile_change`] before each input.
pub fn campaign<R>(target: &str, names: &[&str], run: R) -> Outcome
where
    R: Fn(&Path) + Send + Sync + 'static,
{
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret");
    std::fs::write(&secret, format!("{SECRET}\n")).unwrap();
    let mut trees = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let root = dir.path().join(format!("tree{i}"));
        fabrik_testbed::fixtures::copy_tree(&fixtures().join(name), &root).unwrap();
        let (mut files, mut dirs) = (Vec::new(), Vec::new());
        entries(&root, &mut files, &mut dirs);
        trees.push(Tree { root, files, dirs });
    }
    let mut undo: Vec<(PathBuf, Saved)> = Vec::new();
    let o = crate::fuzz_support::campaign(
        target,
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
        move |root: &PathBuf| run(root),
    );
    drop(dir);
    o
}
