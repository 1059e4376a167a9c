//! `cluster matrix --local 4` with one rank killed or stopped (SIGSTOP) mid-run, as real
//! processes: every rank exits non-zero, the stopped rank is named silent, and `--output`
//! keeps the rows finished before the failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

struct Run {
    parent: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Run {
    /// Four local ranks with rounds long enough (hundreds of MB per pair) to act inside one.
    fn start(output: &std::path::Path) -> Run {
        let mut parent = Command::new(assert_cmd::cargo::cargo_bin("fabrik"))
            .args([
                "cluster", "matrix", "--local", "4", "--size", "128M", "--iters", "4",
            ])
            .args(["--timeout", "3", "--output"])
            .arg(output)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let err = parent.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(err).lines().map_while(Result::ok) {
                let _ = tx.send(l);
            }
        });
        Run {
            parent,
            lines,
            seen: Vec::new(),
        }
    }

    fn wait_for_line(&mut self, prefix: &str) {
        let until = Instant::now() + Duration::from_secs(60);
        while Instant::now() < until {
            if let Ok(l) = self.lines.recv_timeout(Duration::from_millis(100)) {
                let hit = l.starts_with(prefix);
                self.seen.push(l);
                if hit {
                    return;
                }
            }
        }
        self.kill_all();
        panic!("no {prefix:?} in 60 s: {:?}", self.seen);
    }

    /// Rank → pid of the parent's children (the ranks `--local` started).
    fn ranks(&self) -> Vec<(u32, u32)> {
        let ppid = self.parent.id();
        let kids = std::fs::read_to_string(format!("/proc/{ppid}/task/{ppid}/children")).unwrap();
        let mut out: Vec<(u32, u32)> = kids
            .split_whitespace()
            .map(|p| {
                let pid: u32 = p.parse().unwrap();
                let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
                let rank = env
                    .split(|b| *b == 0)
                    .find_map(|kv| kv.strip_prefix(b"RANK="))
                    .map(|r| String::from_utf8_lossy(r).parse().unwrap())
                    .unwrap();
                (rank, pid)
            })
            .collect();
        out.sort();
        assert_eq!(out.len(), 4, "{out:?}");
        out
    }

    fn kill_all(&mut self) {
        for (_, pid) in self.ranks_or_none() {
            signal("KILL", pid);
        }
        let _ = self.parent.kill();
    }

    fn ranks_or_none(&self) -> Vec<(u32, u32)> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.ranks())).unwrap_or_default()
    }

    /// Waits (at most 60 s) for the parent; returns its exit code and everything on stderr.
    fn finish(mut self) -> (Option<i32>, String) {
        let until = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(st) = self.parent.try_wait().unwrap() {
                break st;
            }
            if Instant::now() > until {
                self.kill_all();
                panic!("the run did not end in 60 s: {:?}", self.seen);
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        while let Ok(l) = self.lines.recv_timeout(Duration::from_millis(500)) {
            self.seen.push(l);
        }
        (status.code(), self.seen.join("\n"))
    }
}

fn signal(name: &str, pid: u32) {
    let _ = Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status();
}

/// Whether `pid` has exited (gone, or a zombie its parent has not reaped yet).
fn exited(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// The `local ranks that failed` line names every rank.
fn assert_every_rank_failed(code: Option<i32>, err: &str) {
    assert!(code.is_some_and(|c| c != 0), "exit {code:?}: {err}");
    let line = err
        .lines()
        .find(|l| l.contains("local ranks that failed:"))
        .unwrap_or_else(|| panic!("no failed-ranks line: {err}"));
    for r in 0..4 {
        assert!(line.contains(&format!("rank {r} (")), "rank {r}: {line}");
    }
}

fn assert_rows_kept(path: &std::path::Path) {
    let m: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    // Round 0 (two pairs, both directions) finished before the failure.
    assert!(m["links"].as_array().unwrap().len() >= 4, "{m}");
    let note = m["analysis"]["note"].as_str().unwrap();
    assert!(note.starts_with("aborted: "), "{note}");
    assert!(note.contains("rounds done"), "{note}");
}

#[test]
fn a_killed_rank_fails_every_rank_and_the_finished_rows_stay() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m.json");
    let mut run = Run::start(&out);
    run.wait_for_line("# progress: matrix 1/3 rounds done");
    let ranks = run.ranks();
    signal("KILL", ranks[2].1);
    let (code, err) = run.finish();
    assert_every_rank_failed(code, &err);
    assert!(err.contains("rank 2 (") && err.contains("died"), "{err}");
    assert_rows_kept(&out);
}

#[test]
fn a_stopped_rank_is_named_silent_and_every_rank_fails() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m.json");
    let mut run = Run::start(&out);
    run.wait_for_line("# progress: matrix 1/3 rounds done");
    let ranks = run.ranks();
    let t0 = Instant::now();
    signal("STOP", ranks[2].1);
    // The others must give up on their own; only then is the stopped one killed (the parent
    // waits for every rank).
    let until = Instant::now() + Duration::from_secs(60);
    while [0, 1, 3].iter().any(|&r| !exited(ranks[r].1)) {
        if Instant::now() > until {
            run.kill_all();
            panic!("the other ranks did not exit within 60 s of SIGSTOP");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!(
        "the ranks beside a stopped one exited {:?} after SIGSTOP (--timeout 3)",
        t0.elapsed()
    );
    signal("KILL", ranks[2].1);
    let (code, err) = run.finish();
    assert_every_rank_failed(code, &err);
    assert!(err.contains("is silent"), "{err}");
    let silent = err
        .split("; ")
        .find(|p| p.contains("is silent"))
        .unwrap_or_default();
    assert!(silent.contains("rank 2 ("), "{err}");
    assert_rows_kept(&out);
}
