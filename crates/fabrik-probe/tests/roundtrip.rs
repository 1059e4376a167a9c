//! A snapshot of this machine reads back as the machine itself.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use fabrik_model::Node;
use fabrik_probe::snapshot::{capture, unpack, SnapshotOptions};

/// Counters and statistics move between two reads; everything else must not.
fn steady(mut n: Node) -> Node {
    n.root.clear();
    for d in &mut n.rdma_devices {
        for p in &mut d.ports {
            p.counters.clear();
            p.hw_counters.clear();
        }
    }
    for i in &mut n.net_interfaces {
        i.statistics.clear();
    }
    // The kernel may log between two reads; that both hold a log is checked below.
    n.kernel_log = None;
    n.not_read.retain(|x| x.fact != "kernel_log");
    n
}

#[test]
fn live_root_equals_its_snapshot() {
    let live = fabrik_probe::probe(Path::new("/")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("snap");
    let mut opts = SnapshotOptions::new(out.clone());
    opts.run_commands = false;
    let summary = capture(&opts).unwrap();
    assert!(summary.files > 0);
    let back = fabrik_probe::probe(&out).unwrap();
    // A snapshot of the live machine keeps its kernel log even without commands, when this
    // process may read it.
    if std::fs::File::open("/dev/kmsg").is_ok() {
        assert!(back.kernel_log.is_some());
    }
    assert_eq!(steady(back), steady(live));
    // Nothing from the environment is copied.
    let environ = out.join("proc/self/environ");
    assert!(!environ.exists());
}

#[test]
fn tarball_snapshot_reads_back_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain");
    let mut opts = SnapshotOptions::new(plain.clone());
    opts.run_commands = false;
    capture(&opts).unwrap();
    let tgz = dir.path().join("snap.tar.gz");
    let mut opts = SnapshotOptions::new(tgz.clone());
    opts.source_root = plain.clone();
    capture(&opts).unwrap();
    let unpacked = unpack(&tgz).unwrap();
    let a = fabrik_probe::probe(&plain).unwrap();
    let b = fabrik_probe::probe(&unpacked.root).unwrap();
    assert_eq!(steady(a), steady(b));
}

#[test]
fn an_existing_output_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let opts = SnapshotOptions::new(dir.path().to_path_buf());
    assert!(matches!(
        capture(&opts),
        Err(fabrik_probe::snapshot::SnapshotError::OutputExists(_))
    ));
}

#[test]
fn a_missing_root_is_a_typed_error() {
    let err = fabrik_probe::probe(Path::new("/nonexistent/fabrik-root")).unwrap_err();
    assert!(matches!(err, fabrik_probe::ProbeError::RootMissing(_)));
}

#[test]
fn a_finished_snapshot_is_marked_complete_and_nothing_temporary_is_left() {
    use fabrik_probe::root::{check, RootKind, COMPLETE_MARKER, PARTIAL_MARKER};
    let dir = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/nodes/roce-dualport");
    let out = dir.path().join("snap");
    let mut opts = SnapshotOptions::new(out.clone());
    opts.source_root = fixture.clone();
    capture(&opts).unwrap();
    assert!(out.join(COMPLETE_MARKER).is_file());
    assert!(!out.join(PARTIAL_MARKER).exists());
    assert_eq!(check(&out).unwrap(), RootKind::Snapshot);
    let tgz = dir.path().join("snap.tar.gz");
    let mut opts = SnapshotOptions::new(tgz.clone());
    opts.source_root = fixture;
    capture(&opts).unwrap();
    let unpacked = unpack(&tgz).unwrap();
    assert!(unpacked.root.join(COMPLETE_MARKER).is_file());
    assert!(!unpacked.root.join(PARTIAL_MARKER).exists());
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["snap", "snap.tar.gz"],
        "no temporary left beside them"
    );
}

#[test]
fn a_source_that_is_not_a_node_writes_no_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = dir.path().join("snap");
    let mut opts = SnapshotOptions::new(out.clone());
    opts.source_root = empty;
    assert!(capture(&opts).is_err());
    assert!(!out.exists());
}
