//! `fabrik inventory` and `fabrik snapshot` end to end, as a user runs them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use assert_cmd::Command;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/nodes")
}

fn fabrik() -> Command {
    Command::cargo_bin("fabrik").unwrap()
}

#[test]
fn missing_root_exits_2_with_a_clear_message() {
    let out = fabrik()
        .args(["inventory", "--root", "/nonexistent/fabrik-root"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("does not exist"), "{err}");
}

#[test]
fn json_output_has_schema_version_and_the_devices() {
    let out = fabrik()
        .args(["inventory", "--format", "json", "--root"])
        .arg(fixtures().join("ib-ndr-8gpu"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["rdma_devices"].as_array().unwrap().len(), 8);
    assert_eq!(v["rdma_devices"][0]["ports"][0]["rate"]["gbps"], 400.0);
    assert_eq!(v["gpu_nic_paths"][0]["path_type"], "PIX");
}

#[test]
fn table_output_shows_topology_and_warnings() {
    let out = fabrik()
        .args(["inventory", "--root"])
        .arg(fixtures().join("roce-dualport"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("RDMA devices: 3"), "{text}");
    assert!(text.contains("RoCE v2"), "{text}");
    assert!(text.contains("100 Gb/sec (4X EDR)  Ethernet"), "{text}");
    assert!(text.contains("pfc [3] trust dscp"), "{text}");
    assert!(text.contains("(SR-IOV VF)"), "{text}");
    assert!(text.contains("Warnings: 2"), "{text}");
    assert!(text.contains("GPU/NIC topology"), "{text}");
}

#[test]
fn snapshot_tarball_reads_back_like_the_live_machine() {
    let dir = tempfile::tempdir().unwrap();
    let tgz = dir.path().join("snap.tar.gz");
    fabrik()
        .args(["snapshot", "--no-commands", "-o"])
        .arg(&tgz)
        .assert()
        .success();
    let from_tgz = fabrik()
        .args(["inventory", "--format", "json", "--root"])
        .arg(&tgz)
        .output()
        .unwrap();
    assert!(from_tgz.status.success());
    let live = fabrik()
        .args(["inventory", "--format", "json"])
        .output()
        .unwrap();
    let mut a: serde_json::Value = serde_json::from_slice(&from_tgz.stdout).unwrap();
    let mut b: serde_json::Value = serde_json::from_slice(&live.stdout).unwrap();
    for v in [&mut a, &mut b] {
        v["root"] = serde_json::Value::Null;
        // The kernel may log between the two reads.
        v["kernel_log"] = serde_json::Value::Null;
        for nif in v["net_interfaces"].as_array_mut().unwrap() {
            nif["statistics"] = serde_json::Value::Null;
        }
        for d in v["rdma_devices"].as_array_mut().unwrap() {
            for p in d["ports"].as_array_mut().unwrap() {
                p["counters"] = serde_json::Value::Null;
                p["hw_counters"] = serde_json::Value::Null;
            }
        }
    }
    assert_eq!(a, b);
    // Writing over an existing snapshot is refused.
    let again = fabrik()
        .args(["snapshot", "--no-commands", "-o"])
        .arg(&tgz)
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2));
}

/// With helper commands, the snapshot may know more addresses than `/proc/net` tells (an
/// `ip -o addr` capture names the interface of a /32), never fewer; all else is equal.
#[test]
fn snapshot_with_commands_reads_back_like_the_live_machine() {
    let dir = tempfile::tempdir().unwrap();
    let snap = dir.path().join("snap");
    fabrik()
        .args(["snapshot", "--timeout", "10", "-o"])
        .arg(&snap)
        .assert()
        .success();
    let json = |args: &[&str]| -> serde_json::Value {
        let out = fabrik().args(args).output().unwrap();
        assert!(out.status.success());
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let mut a = json(&[
        "inventory",
        "--format",
        "json",
        "--root",
        snap.to_str().unwrap(),
    ]);
    let mut b = json(&["inventory", "--format", "json"]);
    let addrs = |v: &serde_json::Value| -> Vec<String> {
        let mut out = Vec::new();
        for nif in v["net_interfaces"].as_array().unwrap() {
            for fam in ["ipv4", "ipv6"] {
                for a in nif[fam].as_array().unwrap() {
                    out.push(format!("{} {}", nif["name"], a));
                }
            }
        }
        out
    };
    let (snap_addrs, live_addrs) = (addrs(&a), addrs(&b));
    for a in &live_addrs {
        assert!(snap_addrs.contains(a), "{a} missing from the snapshot");
    }
    for v in [&mut a, &mut b] {
        v["root"] = serde_json::Value::Null;
        v["kernel_log"] = serde_json::Value::Null;
        v["command_captures"] = serde_json::Value::Null;
        for nif in v["net_interfaces"].as_array_mut().unwrap() {
            for k in ["statistics", "ipv4", "ipv6"] {
                nif[k] = serde_json::Value::Null;
            }
        }
        for d in v["rdma_devices"].as_array_mut().unwrap() {
            for p in d["ports"].as_array_mut().unwrap() {
                p["counters"] = serde_json::Value::Null;
                p["hw_counters"] = serde_json::Value::Null;
            }
        }
    }
    // Captures may add facts sysfs lacks (MTU, PFC, ACS, OFED); compare the rest.
    for v in [&mut a, &mut b] {
        v["versions"]["ofed"] = serde_json::Value::Null;
        v["pci_bridges"] = serde_json::Value::Null;
        for nif in v["net_interfaces"].as_array_mut().unwrap() {
            nif["pfc"] = serde_json::Value::Null;
        }
        for d in v["rdma_devices"].as_array_mut().unwrap() {
            for p in d["ports"].as_array_mut().unwrap() {
                p["active_mtu"] = serde_json::Value::Null;
                p["max_mtu"] = serde_json::Value::Null;
            }
        }
    }
    assert_eq!(a, b);
}
