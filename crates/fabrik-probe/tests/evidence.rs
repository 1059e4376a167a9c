//! The evidence below the link state (kernel log, AER, NIC tool captures) reaches the node from a
//! snapshot tree, a snapshot of that tree reads back the same, and a live snapshot keeps what the
//! live probe read. Real tool outputs come from fixtures/commands (ground truth in its README),
//! copied into a node fixture's capture directory.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use fabrik_model::{KernelEventKind, Node};
use fabrik_probe::snapshot::{capture, SnapshotOptions};

use fabrik_testbed::fixtures::repo;

/// A copy of node fixture `name` (symlinks kept) to add captures to.
fn tree(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let dst = dir.path().join(name);
    let ok = std::process::Command::new("cp")
        .arg("-a")
        .arg(repo().join("fixtures/nodes").join(name))
        .arg(&dst)
        .status()
        .unwrap()
        .success();
    assert!(ok);
    (dir, dst)
}

/// Copies the real paste `fixtures/commands/<file>` into the tree as capture `name`.
fn add_capture(root: &Path, name: &str, file: &str) {
    let cmd = root.join("fabrik/cmd");
    std::fs::create_dir_all(&cmd).unwrap();
    std::fs::copy(
        repo().join("fixtures/commands").join(file),
        cmd.join(format!("{name}.txt")),
    )
    .unwrap();
}

/// Snapshot of `root` (not the live machine), probed back.
fn through_snapshot(root: &Path) -> Node {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("snap");
    let mut opts = SnapshotOptions::new(out.clone());
    opts.source_root = root.to_path_buf();
    capture(&opts).unwrap();
    fabrik_probe::probe(&out).unwrap()
}

fn same(mut a: Node, mut b: Node) {
    a.root.clear();
    b.root.clear();
    assert_eq!(a, b);
}

#[test]
fn a_captured_kernel_log_becomes_the_nodes_and_travels_in_a_snapshot() {
    let (_d, root) = tree("roce-dualport");
    let before = fabrik_probe::probe(&root).unwrap();
    assert_eq!(before.kernel_log, None, "no log in the fixture");
    assert!(!before.not_read.iter().any(|n| n.fact == "kernel_log"));
    add_capture(
        &root,
        "dmesg",
        "dmesg/02-mlx5-vdpa-firmware-health-compromised-six-functions-email.txt",
    );
    let n = fabrik_probe::probe(&root).unwrap();
    let log = n.kernel_log.as_ref().unwrap();
    let health: Vec<_> = log
        .events
        .iter()
        .filter(|e| e.kind == KernelEventKind::Mlx5Health)
        .collect();
    assert_eq!(health.len(), 12, "{:?}", log.events);
    assert_eq!(health[0].device.as_deref(), Some("0000:0d:00.0"));
    same(n, through_snapshot(&root));
}

#[test]
fn a_kmsg_record_file_wins_over_a_dmesg_capture() {
    let (_d, root) = tree("roce-dualport");
    add_capture(
        &root,
        "dmesg",
        "dmesg/05-r8169-link-up-repeating-lowercase-forum.txt",
    );
    // Records as /dev/kmsg gives them (Documentation/ABI/testing/dev-kmsg), with dictionaries.
    std::fs::write(
        root.join("fabrik/kmsg.txt"),
        "6,339,5140900,-;NET: Registered protocol family 10\n3,901,8123456789,-;mlx5_core 0000:3b:00.0 ens1f0np0: Link down\n SUBSYSTEM=pci\n DEVICE=+pci:0000:3b:00.0\n",
    )
    .unwrap();
    let n = fabrik_probe::probe(&root).unwrap();
    let log = n.kernel_log.as_ref().unwrap();
    assert_eq!(log.lines, 2);
    assert_eq!(log.events.len(), 1);
    assert_eq!(log.events[0].kind, KernelEventKind::LinkDown);
    assert_eq!(log.events[0].time.as_deref(), Some("[8123.456789]"));
    same(n, through_snapshot(&root));
}

#[test]
fn a_log_the_snapshot_could_not_read_is_said() {
    let (_d, root) = tree("roce-dualport");
    std::fs::write(
        root.join("fabrik/kmsg-not-read.txt"),
        "/dev/kmsg: permission denied\n",
    )
    .unwrap();
    let n = fabrik_probe::probe(&root).unwrap();
    assert_eq!(n.kernel_log, None);
    let nr: Vec<_> = n
        .not_read
        .iter()
        .filter(|x| x.fact == "kernel_log")
        .collect();
    assert_eq!(nr.len(), 1);
    assert!(nr[0].reason.contains("permission denied"), "{:?}", nr[0]);
    same(n, through_snapshot(&root));
}

/// `fabrik snapshot` of this machine keeps the kernel log it read (from /dev/kmsg where this
/// process may read it), and the snapshot reads back as exactly that log.
#[test]
fn a_live_snapshot_keeps_the_kernel_log_it_read() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("snap");
    let mut opts = SnapshotOptions::new(out.clone());
    opts.command_timeout = std::time::Duration::from_secs(20);
    capture(&opts).unwrap();
    let n = fabrik_probe::probe(&out).unwrap();
    let kmsg = out.join("fabrik/kmsg.txt");
    let journal = out.join("fabrik/cmd/journalctl-k.txt");
    let unread = out.join("fabrik/kmsg-not-read.txt");
    let readable = std::fs::File::open("/dev/kmsg").is_ok();
    if readable {
        let text = std::fs::read_to_string(&kmsg).unwrap();
        assert_eq!(
            n.kernel_log,
            Some(fabrik_parse::formats::dmesg::read_log(&text))
        );
        assert!(
            n.kernel_log.as_ref().unwrap().lines > 0,
            "a booted kernel has logged"
        );
    } else if journal.exists() {
        assert!(n.kernel_log.is_some());
    } else {
        assert!(unread.exists());
        assert!(n.not_read.iter().any(|x| x.fact == "kernel_log"));
    }
    // Read twice, the snapshot answers the same.
    same(n, fabrik_probe::probe(&out).unwrap());
}

/// `mstconfig q`, `mstlink -c`, `ethtool IF` and `ethtool -S IF` captures (real pastes) reach
/// the node through the parsers a paste goes through, each named by what it was asked about,
/// and a snapshot of the tree reads back the same.
#[test]
fn nic_tool_captures_become_firmware_link_quality_and_netdev_facts() {
    let (_d, root) = tree("roce-dualport");
    add_capture(
        &root,
        "mstconfig-0000:3b:00.0",
        "mstconfig/01-cx4lx-full-query-next-boot-fenced.txt",
    );
    add_capture(
        &root,
        "mstlink-0000:3b:00.0",
        "mstlink/03-cx4-riser-forum-blank-line-after-every-line-counters-then-eye.txt",
    );
    add_capture(
        &root,
        "ethtool-ens1f0np0",
        "ethtool/05-100g-nic-email-quoted-partner-not-reported.txt",
    );
    add_capture(
        &root,
        "ethtool-S-ens1f0np0",
        "ethtool_stats/01-cx-xdp-benchmark-mlx5-full-stats-email-banners.txt",
    );
    let n = fabrik_probe::probe(&root).unwrap();
    assert_eq!(n.nic_firmware.len(), 1);
    let fw = &n.nic_firmware[0];
    // The paste names /dev/mst/mt4117_pciconf0; the capture's name gives the PCI address.
    assert_eq!(fw.pci.as_deref(), Some("0000:3b:00.0"));
    assert_eq!(fw.settings["PCI_WR_ORDERING"].next_boot, "per_mkey(0)");
    assert_eq!(fw.settings["SRIOV_EN"].next_boot, "True(1)");
    // The paste holds two runs (`-c`, then `-e` without counters).
    assert_eq!(n.link_quality.len(), 2);
    let l = &n.link_quality[0];
    assert_eq!(
        l.device, "/dev/mst/mt4115_pciconf0",
        "as the paste's command names it"
    );
    assert_eq!(l.minutes_since_clear, Some(1715.4));
    assert_eq!(l.raw_ber, Some(3e-12));
    assert_eq!(l.effective_errors, Some(0));
    let eth = n.net_interface("ens1f0np0").unwrap();
    assert_eq!(
        eth.link_settings.as_ref().and_then(|s| s.speed_mbps),
        Some(100_000)
    );
    assert_eq!(eth.nic_stats["rx_packets_phy"], 97_052_087_562);
    let other = n.net_interface("ens1f1np1").unwrap();
    assert!(other.link_settings.is_none() && other.nic_stats.is_empty());
    same(n, through_snapshot(&root));
}
