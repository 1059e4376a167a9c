//! The counter reader (`diff`, `top --root`, `exporter --root`, `doctor --watch`) on a hostile
//! snapshot: the real sysfs of `fixtures/nodes/real-procfs` with links out of the root, FIFOs and
//! huge sparse files planted where counters, `operstate`, `captured_at` and the ethtool capture
//! live. Each attack worked before the reader went through `fabrik_probe::confined`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::symlink;
use std::path::Path;
use std::time::Duration;

use fabrik_monitor::sample::{Reading, Sample};
use fabrik_monitor::{sample_with, EthtoolMode, SampleOptions};
use fabrik_testbed::hostile::{huge as huge_file, peak_rss_kib, planted as planted_tree, within};

/// The shared hostile tree as this file's tests take it apart.
fn planted() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let p = planted_tree().unwrap();
    (p.dir, p.root, p.secret)
}

fn opts() -> SampleOptions {
    SampleOptions {
        all_netdevs: true,
        ethtool: EthtoolMode::Snapshot,
    }
}

/// Samples on a thread so that a regression (a read that blocks) fails the test instead of
/// hanging it.
fn sample_within(root: &Path, limit: Duration) -> (Sample, Duration) {
    let r = root.to_path_buf();
    within(limit, move || sample_with(&r, &opts()))
        .unwrap_or_else(|| panic!("sampling {} blocked for {limit:?}", root.display()))
}

fn counter<'a>(s: &'a Sample, dev: &str, name: &str) -> &'a Reading {
    s.port(dev, 1)
        .unwrap_or_else(|| panic!("{dev} port 1"))
        .counters
        .get(name)
        .unwrap_or_else(|| panic!("{dev} counter {name}"))
}

#[test]
fn links_out_of_the_snapshot_are_not_followed() {
    let (_dir, root, secret) = planted();
    let counters = root.join("sys/class/infiniband/mlx4_0/ports/1/counters");
    std::fs::remove_file(counters.join("symbol_error")).unwrap();
    symlink(&secret, counters.join("symbol_error")).unwrap();
    std::fs::remove_file(counters.join("link_downed")).unwrap();
    symlink(
        "../../../../../../../../../../../shadow",
        counters.join("link_downed"),
    )
    .unwrap();
    let eth0 = root.join("sys/class/net/eth0");
    std::fs::remove_file(eth0.join("operstate")).unwrap();
    symlink(&secret, eth0.join("operstate")).unwrap();
    std::fs::create_dir_all(root.join("fabrik/cmd")).unwrap();
    symlink(&secret, root.join("fabrik/cmd/ethtool-S-eth0.txt")).unwrap();
    symlink(&secret, root.join("fabrik/captured_at")).unwrap();

    let (s, _) = sample_within(&root, Duration::from_secs(20));
    let all = format!("{s:?}");
    assert!(!all.contains("outside-the-snapshot"), "{all}");
    for name in ["symbol_error", "link_downed"] {
        assert!(
            matches!(counter(&s, "mlx4_0", name), Reading::Unreadable(m) if m.contains("symbolic link")),
            "{name}: {:?}",
            counter(&s, "mlx4_0", name)
        );
    }
    let nd = s.netdevs.iter().find(|n| n.name == "eth0").unwrap();
    assert_eq!(nd.operstate, None);
    // The absolute link is taken inside the root, where there is no such file.
    assert!(nd.ethtool.is_empty(), "{:?}", nd.ethtool);
    assert_eq!(s.taken_at_unix_s, None);
    // The rest of the real tree still reads.
    assert!(counter(&s, "mlx4_0", "port_xmit_data").value().is_some());
}

#[test]
fn fifos_are_refused_without_blocking() {
    let (_dir, root, _) = planted();
    let fifo = |p: &Path| {
        let _ = std::fs::remove_file(p);
        mkfifo(p);
    };
    let counters = root.join("sys/class/infiniband/mlx4_0/ports/1/counters");
    fifo(&counters.join("symbol_error"));
    fifo(&root.join("sys/class/net/eth0/operstate"));
    std::fs::create_dir_all(root.join("sys/class/net/eth0/statistics")).unwrap();
    fifo(&root.join("sys/class/net/eth0/statistics/rx_bytes"));
    std::fs::create_dir_all(root.join("fabrik/cmd")).unwrap();
    fifo(&root.join("fabrik/cmd/ethtool-S-eth0.txt"));
    fifo(&root.join("fabrik/captured_at"));

    let (s, took) = sample_within(&root, Duration::from_secs(20));
    eprintln!("FIFO tree sampled in {took:?}");
    assert!(
        matches!(counter(&s, "mlx4_0", "symbol_error"), Reading::Unreadable(m) if m.contains("not a regular file")),
        "{:?}",
        counter(&s, "mlx4_0", "symbol_error")
    );
    let nd = s.netdevs.iter().find(|n| n.name == "eth0").unwrap();
    assert_eq!(nd.operstate, None);
    assert!(matches!(
        nd.statistics.get("rx_bytes"),
        Some(Reading::Unreadable(_))
    ));
    assert!(nd.problems.iter().any(|p| p.contains("not a regular file")));
}

#[test]
fn huge_sparse_files_are_refused_without_reading_them() {
    let (_dir, root, _) = planted();
    let huge = |p: &Path| huge_file(p, 1 << 30).unwrap();
    let counters = root.join("sys/class/infiniband/mlx4_0/ports/1/counters");
    huge(&counters.join("symbol_error"));
    huge(&root.join("sys/class/net/eth0/operstate"));
    std::fs::create_dir_all(root.join("fabrik/cmd")).unwrap();
    huge(&root.join("fabrik/cmd/ethtool-S-eth0.txt"));
    huge(&root.join("fabrik/captured_at"));

    let before = peak_rss_kib().unwrap();
    let (s, took) = sample_within(&root, Duration::from_secs(20));
    let grew = peak_rss_kib().unwrap().saturating_sub(before);
    eprintln!("1 GiB sparse files: sampled in {took:?}, peak RSS grew {grew} KiB");
    // A read of any one of them would have taken 1 GiB.
    assert!(grew < 64 * 1024, "peak RSS grew {grew} KiB");
    assert!(
        matches!(counter(&s, "mlx4_0", "symbol_error"), Reading::Unreadable(m) if m.contains("more than")),
        "{:?}",
        counter(&s, "mlx4_0", "symbol_error")
    );
    let nd = s.netdevs.iter().find(|n| n.name == "eth0").unwrap();
    assert_eq!(nd.operstate, None);
    assert!(nd.problems.iter().any(|p| p.contains("ethtool-S-eth0.txt")));
    assert_eq!(s.taken_at_unix_s, None);
}

fn mkfifo(p: &Path) {
    fabrik_testbed::hostile::mkfifo(p).unwrap();
}
