//! Whatever bytes a sysfs or procfs file holds, probing neither panics nor invents a value.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use proptest::prelude::*;

const TARGETS: &[&str] = &[
    "sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/infiniband/mlx5_0/ports/1/rate",
    "sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/infiniband/mlx5_0/ports/1/state",
    "sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/infiniband/mlx5_0/ports/1/gids/3",
    "sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/infiniband/mlx5_0/ports/1/gid_attrs/types/3",
    "sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/numa_node",
    "sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/current_link_speed",
    "sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/net/ens1f0np0/mtu",
    "sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/net/ens1f0np0/type",
    "sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/net/ens1f0np0/ecn/roce_np/enable/3",
    "proc/self/limits",
    "proc/self/net/route",
    "proc/self/net/fib_trie",
    "proc/self/net/if_inet6",
    "proc/modules",
    "proc/cmdline",
    "proc/driver/nvidia/version",
    "proc/driver/nvidia/gpus/0000:18:00.0/information",
    "fabrik/cmd/mlnx_qos-ens1f0np0.txt",
    "fabrik/cmd/lspci-bridges.txt",
];

/// One copy of the fixture for all cases; each case garbles some files and puts them back.
fn shared_root() -> &'static Path {
    static ROOT: OnceLock<tempfile::TempDir> = OnceLock::new();
    ROOT.get_or_init(|| {
        let src =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/nodes/roce-dualport");
        let dir = tempfile::tempdir().unwrap();
        fabrik_testbed::fixtures::copy_tree(&src, &dir.path().join("root")).unwrap();
        dir
    })
    .path()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn garbage_files_never_panic(
        picks in proptest::collection::vec((0..TARGETS.len(), proptest::collection::vec(any::<u8>(), 0..64)), 1..6)
    ) {
        let root = shared_root().join("root");
        let originals: Vec<(PathBuf, Vec<u8>)> = TARGETS
            .iter()
            .map(|t| (root.join(t), std::fs::read(root.join(t)).unwrap()))
            .collect();
        for (i, bytes) in &picks {
            std::fs::write(root.join(TARGETS[*i]), bytes).unwrap();
        }
        let node = fabrik_probe::probe(&root);
        for (p, bytes) in &originals {
            std::fs::write(p, bytes).unwrap();
        }
        let node = node.unwrap();
        prop_assert_eq!(node.rdma_devices.len(), 3);
        // A rate that is not a number is never reported as one.
        let rate_garbled = picks.iter().any(|(i, b)| *i == 0 && !String::from_utf8_lossy(b).contains("Gb/sec"));
        if rate_garbled {
            let r = node.rdma_device("mlx5_0").unwrap().ports[0].rate.as_ref();
            prop_assert!(r.is_none_or(|r| r.gbps.is_none()));
        }
    }
}

#[test]
fn a_dangling_device_link_is_only_a_missing_pci_function() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("sys/class/infiniband/mlx5_9/ports/1")).unwrap();
    std::os::unix::fs::symlink(
        "/sys/devices/pci0000:00/0000:00:09.0",
        root.join("sys/class/infiniband/mlx5_9/device"),
    )
    .unwrap();
    std::fs::write(
        root.join("sys/class/infiniband/mlx5_9/ports/1/state"),
        "4: ACTIVE\n",
    )
    .unwrap();
    let node = fabrik_probe::probe(root).unwrap();
    let d = node.rdma_device("mlx5_9").unwrap();
    assert!(d.pci.is_none());
    assert_eq!(d.ports.len(), 1);
    assert!(d.ports[0].rate.is_none());
    assert!(node
        .warnings
        .iter()
        .any(|w| w.path.ends_with("ports/1/rate")));
    assert!(node
        .warnings
        .iter()
        .any(|w| w.path.ends_with("mlx5_9/node_guid")));
}
