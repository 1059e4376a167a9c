//! Files named by options in the mutation campaign (docs/benchmarks/fuzz.md): `--expect`,
//! `--node`, `--env-file`, `report` inputs and pasted command outputs, each made from a real
//! file by the byte mutator, or replaced by what no option should read (a FIFO, a link to
//! `/dev/zero`, a directory, a sparse file past the format's cap, a file grown to the cap).
//! The command runs under a 1 GiB address-space limit and must end (a hang fails) with exit 0,
//! 1 or 2, never a panic or a signal. `FABRIK_FUZZ_SECS` sets the budget.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../fabrik-parse/tests/fuzz_support/mod.rs"]
mod fuzz_support;
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fuzz_support::{campaign, check, mutated};
use support::repo;

/// The option, its corpus of real files, and the command around the file.
struct Target {
    what: &'static str,
    corpus: Vec<Vec<u8>>,
    args: fn(&str) -> Vec<String>,
}

fn json_of(args: &[&str]) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_fabrik"))
        .args(args)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(
        !out.stdout.is_empty(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn files(dir: &str, ext: &str) -> Vec<Vec<u8>> {
    let mut v: Vec<_> = std::fs::read_dir(repo().join(dir))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    v.sort();
    v.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

fn targets() -> Vec<Target> {
    let fx = |p: &str| repo().join("fixtures").join(p).display().to_string();
    let node = |n: &str| json_of(&["inventory", "--root", &fx(&format!("nodes/{n}"))]);
    let nodes = vec![
        node("roce-dualport"),
        node("ib-ndr-8gpu"),
        node("sandbox-vm"),
    ];
    let results = vec![
        json_of(&["doctor", "--root", &fx("doctor/nodes/port-001-init")]),
        json_of(&[
            "parse",
            "perftest",
            &fx("perftest/01-ib_write_bw-post-list-gbits-roce.txt"),
        ]),
        json_of(&[
            "logs",
            &fx("nccl-logs/02-nccl-ib-gdrdma-a100-completion-error.log"),
        ]),
        nodes[0].clone(),
    ];
    vec![
        Target {
            what: "--expect",
            corpus: files("deploy/expect", "toml"),
            args: |f| {
                let r = repo()
                    .join("fixtures/nodes/ib-ndr-8gpu")
                    .display()
                    .to_string();
                ["check", "--root", &r, "--expect", f]
                    .map(String::from)
                    .to_vec()
            },
        },
        Target {
            what: "--node",
            corpus: nodes,
            args: |f| {
                [
                    "launch",
                    "k8s",
                    "--node",
                    f,
                    "--image",
                    "img:1",
                    "--command",
                    "train.py",
                ]
                .map(String::from)
                .to_vec()
            },
        },
        Target {
            what: "--env-file",
            corpus: files("fixtures/doctor/env", "env"),
            args: |f| {
                let r = repo()
                    .join("fixtures/nodes/ib-ndr-8gpu")
                    .display()
                    .to_string();
                ["doctor", "--root", &r, "--env-file", f]
                    .map(String::from)
                    .to_vec()
            },
        },
        Target {
            what: "report",
            corpus: results,
            args: |f| ["report", f, "-o", "/dev/null"].map(String::from).to_vec(),
        },
        Target {
            what: "parse ibstat",
            corpus: files("fixtures/commands/ibstat", "txt"),
            args: |f| ["parse", "ibstat", f].map(String::from).to_vec(),
        },
    ]
}

/// What replaces the file: mutated real content (most inputs) or something no option reads.
fn make_file(rng: &mut fuzz_support::Rng, corpus: &[Vec<u8>], path: &Path) -> Vec<u8> {
    let _ = std::fs::remove_file(path);
    let _ = std::fs::remove_dir(path);
    match rng.below(10) {
        0 => {
            assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
            b"(a FIFO)".to_vec()
        }
        1 => {
            std::os::unix::fs::symlink("/dev/zero", path).unwrap();
            b"(a link to /dev/zero)".to_vec()
        }
        2 => {
            std::fs::create_dir(path).unwrap();
            b"(a directory)".to_vec()
        }
        3 => {
            let f = std::fs::File::create(path).unwrap();
            f.set_len(64 << 20 << rng.below(6)).unwrap();
            b"(a sparse file of 64 MiB to 2 GiB)".to_vec()
        }
        _ => {
            let d = mutated(rng, corpus);
            std::fs::write(path, &d).unwrap();
            d
        }
    }
}

#[test]
fn option_files_under_mutation() {
    let targets = Arc::new(targets());
    let work = Arc::new(tempfile::tempdir().unwrap());
    let dir = work.clone();
    let t2 = targets.clone();
    let o = campaign(
        "option-files",
        move |rng| {
            let t = rng.below(t2.len());
            let path = dir.path().join(format!("input-{t}"));
            let shown = make_file(rng, &t2[t].corpus, &path);
            ((t, path), shown)
        },
        move |(t, path): &(usize, PathBuf)| {
            let target = &targets[*t];
            let args = (target.args)(path.to_str().unwrap());
            let mut child = Command::new("bash")
                .arg("-c")
                .arg("ulimit -v 1048576; exec \"$@\"")
                .arg("fabrik")
                .arg(env!("CARGO_BIN_EXE_fabrik"))
                .args(&args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let start = Instant::now();
            let status = loop {
                if let Some(s) = child.try_wait().unwrap() {
                    break s;
                }
                if start.elapsed() > Duration::from_secs(8) {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("{}: no answer within 8 s", target.what);
                }
                std::thread::sleep(Duration::from_millis(2));
            };
            assert!(
                matches!(status.code(), Some(0..=2)),
                "{}: {status} (a panic is 101, a signal has no code)",
                target.what
            );
        },
    );
    check(&o);
}
