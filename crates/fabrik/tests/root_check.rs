//! Every command that takes a root refuses one that is not a node (exit 2, saying why) instead
//! of diagnosing an empty node; a snapshot cut short is refused the same way.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use assert_cmd::Command;

fn fixture(p: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(p)
}

fn fabrik(args: &[&str], root: &Path) -> std::process::Output {
    Command::cargo_bin("fabrik")
        .unwrap()
        .args(args)
        .arg(root)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap()
}

/// Each command given `root` exits 2 and says `why` on stderr, with nothing on stdout that a
/// script could take for a result.
fn assert_refused(root: &Path, why: &str) {
    let cases: [&[&str]; 7] = [
        &["doctor", "--root"],
        &["doctor", "--format", "json", "--root"],
        &["inventory", "--root"],
        &["env", "--root"],
        &["top", "--once", "--root"],
        &["snapshot", "-o", "/nonexistent-dir/never-written", "--root"],
        &["launch", "torchrun", "--command", "train.py", "--root"],
    ];
    for args in cases {
        let out = fabrik(args, root);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?} {}: {stderr}",
            root.display()
        );
        assert!(stderr.contains(why), "{args:?}: {stderr}");
        assert!(!stderr.contains("FAB-"), "{args:?}: {stderr}");
        assert!(
            out.stdout.is_empty(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    let out = Command::cargo_bin("fabrik")
        .unwrap()
        .arg("diff")
        .arg(root)
        .arg(fixture("counters/rxe/after"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains(why));
}

#[test]
fn an_empty_directory_and_the_repository_are_not_nodes() {
    let dir = tempfile::tempdir().unwrap();
    assert_refused(dir.path(), "neither a live root nor a snapshot");
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    assert_refused(&repo, "neither a live root nor a snapshot");
    assert_refused(Path::new("/nonexistent/fabrik-root"), "does not exist");
}

#[test]
fn a_tarball_of_something_else_is_not_a_node() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("notes");
    std::fs::create_dir_all(src.join("doc")).unwrap();
    std::fs::write(src.join("doc/readme.txt"), "hello\n").unwrap();
    let tgz = dir.path().join("notes.tar.gz");
    let status = std::process::Command::new("tar")
        .arg("-czf")
        .arg(&tgz)
        .arg("-C")
        .arg(dir.path())
        .arg("notes")
        .status()
        .unwrap();
    assert!(status.success());
    for args in [["doctor", "--root"], ["inventory", "--root"]] {
        let out = fabrik(&args, &tgz);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("neither a live root nor a snapshot"),
            "{stderr}"
        );
        assert!(
            stderr.contains("notes.tar.gz"),
            "names what was given: {stderr}"
        );
    }
}

#[test]
fn a_snapshot_cut_short_is_refused_and_a_finished_one_read() {
    let dir = tempfile::tempdir().unwrap();
    let snap = dir.path().join("snap");
    let out = Command::cargo_bin("fabrik")
        .unwrap()
        .args(["snapshot", "--format", "json", "-o"])
        .arg(&snap)
        .arg("--root")
        .arg(fixture("nodes/roce-dualport"))
        .output()
        .unwrap();
    support::assert_ok(&out);
    assert!(snap.join("fabrik/complete").is_file());
    let out = fabrik(&["doctor", "--root"], &snap);
    assert_ne!(out.status.code(), Some(2));
    // What a killed `snapshot -o` leaves: the tree with its partial marker.
    std::fs::write(snap.join("fabrik/partial"), "").unwrap();
    std::fs::remove_file(snap.join("fabrik/complete")).unwrap();
    assert_refused(&snap, "cut short");
}

#[test]
fn old_snapshots_in_fixtures_are_still_read() {
    for root in [
        "nodes/aws-p5",
        "counters/rxe/before",
        "doctor/nodes/roce-healthy",
    ] {
        let out = fabrik(&["inventory", "--format", "json", "--root"], &fixture(root));
        assert_eq!(out.status.code(), Some(0), "{root}");
    }
}

fn get(addr: &str, path: &str) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, text)
}

#[test]
fn the_exporter_refuses_a_non_node_and_its_healthz_fails_when_the_root_goes() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("fabrik")
        .unwrap()
        .args(["exporter", "--listen", "127.0.0.1:0", "--root"])
        .arg(dir.path())
        .timeout(Duration::from_secs(20))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("neither a live root nor a snapshot"));

    let root = dir.path().join("node");
    support::copy_tree(&fixture("counters/rxe/before"), &root);
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("fabrik"))
        .args([
            "exporter",
            "--doctor-every",
            "0s",
            // /healthz answers what the latest sample found: sample often, so the root going
            // away shows within the poll below.
            "--sample-every",
            "200ms",
            "--listen",
            "127.0.0.1:0",
            "--root",
        ])
        .arg(&root)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    let addr = loop {
        let mut buf = [0u8; 256];
        let n = stderr.read(&mut buf).unwrap();
        seen.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&seen);
        if let Some(rest) = text.split("http://").nth(1) {
            if let Some(a) = rest
                .split("/metrics")
                .next()
                .filter(|_| rest.contains("/metrics"))
            {
                break a.to_string();
            }
        }
        assert!(n > 0 && Instant::now() < deadline, "no address in {text}");
    };
    let (code, _) = get(&addr, "/healthz");
    assert_eq!(code, 200);
    std::fs::rename(root.join("sys"), dir.path().join("gone")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let (code, body) = loop {
        let (code, body) = get(&addr, "/healthz");
        if code != 200 || Instant::now() > deadline {
            break (code, body);
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(code, 503, "{body}");
    assert!(
        body.contains("neither a live root nor a snapshot"),
        "{body}"
    );
}
