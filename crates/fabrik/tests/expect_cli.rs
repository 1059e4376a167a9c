//! Expectations and waivers end to end: `doctor`/`check --expect` on the node fixtures against
//! the shipped files in deploy/expect/, a node made to lose a GPU and a rail, `--ignore` and
//! `[[waive]]`, and `fabrik expect --from-root` read back.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use serde_json::Value;

mod support;

use support::{fabrik, repo};

fn node(name: &str) -> String {
    repo()
        .join("fixtures/nodes")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

fn expect_file(name: &str) -> String {
    repo()
        .join("deploy/expect")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

fn doctor_json(args: &[&str]) -> (i32, Value) {
    support::json_of(&[&["doctor"], args].concat())
}

/// (rule, severity, subject) of every FAB-EXP finding.
fn exp(report: &Value) -> BTreeSet<(String, String, String)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"].as_str().unwrap().starts_with("FAB-EXP"))
        .map(|f| {
            (
                f["rule"].as_str().unwrap().to_string(),
                f["severity"].as_str().unwrap().to_string(),
                f["subject"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn set(items: &[(&str, &str, &str)]) -> BTreeSet<(String, String, String)> {
    items
        .iter()
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
        .collect()
}

/// A copy of a node fixture, symlinks kept (sysfs is made of them).
fn copy_node(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let status = std::process::Command::new("cp")
        .args(["-a", &format!("{}/.", node(name))])
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    dir
}

/// Takes a GPU off the bus and a rail down, as a node after an Xid 79 and a dead cable.
fn broken_hgx() -> tempfile::TempDir {
    let dir = copy_node("ib-ndr-8gpu");
    let root = dir.path();
    std::fs::remove_file(root.join("sys/bus/pci/devices/0000:c0:00.0")).unwrap();
    std::fs::write(
        root.join("sys/class/infiniband/mlx5_3/ports/1/state"),
        "1: DOWN\n",
    )
    .unwrap();
    std::fs::write(
        root.join("sys/class/infiniband/mlx5_3/ports/1/phys_state"),
        "2: Polling\n",
    )
    .unwrap();
    dir
}

#[test]
fn the_hgx_fixture_meets_the_dgx_h100_and_nd_h100_v5_files() {
    for file in ["dgx-h100.toml", "azure-nd-h100-v5.toml"] {
        let (code, r) = doctor_json(&[
            "--root",
            &node("ib-ndr-8gpu"),
            "--expect",
            &expect_file(file),
        ]);
        assert_eq!(exp(&r), BTreeSet::new(), "{file}: {r:#}");
        assert_eq!(code, 0, "{file}");
    }
}

#[test]
fn a_lost_gpu_and_a_lost_rail_are_errors_against_the_dgx_file() {
    let broken = broken_hgx();
    let root = broken.path().to_string_lossy().into_owned();
    let (code, r) = doctor_json(&["--root", &root, "--expect", &expect_file("dgx-h100.toml")]);
    assert_eq!(code, 1);
    assert_eq!(
        exp(&r),
        set(&[
            ("FAB-EXP-001", "error", "node"),
            ("FAB-EXP-002", "error", "node"),
        ]),
        "{r:#}"
    );
    let rail = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "FAB-EXP-002")
        .unwrap();
    assert!(rail["message"]
        .as_str()
        .unwrap()
        .starts_with("7 ACTIVE InfiniBand port(s)"));
    assert!(rail.to_string().contains("mlx5_3:1 DOWN"), "{rail:#}");
    let gpu = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "FAB-EXP-001")
        .unwrap();
    assert!(gpu["message"]
        .as_str()
        .unwrap()
        .starts_with("7 GPU(s) found where 8"));

    // Without expectations the lost GPU is invisible to the node rules: that is the point.
    let (_, plain) = doctor_json(&["--root", &root]);
    assert!(plain.to_string().contains("FAB-PORT") || plain.to_string().contains("mlx5_3"));
    assert!(!plain.to_string().contains("GPU(s) found"));

    // The health check with the common flags gives the drain reason on its first line.
    let out = fabrik()
        .args([
            "check",
            "--root",
            &root,
            "--expect-gpus",
            "8",
            "--expect-rdma-ports",
            "8",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.lines()
            .any(|l| l.starts_with("ERROR: fabrik: FAB-EXP-001 node: 7 GPU(s)")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("ERROR: fabrik: FAB-EXP-002 node: 7 ACTIVE port(s)")),
        "{text}"
    );
}

#[test]
fn the_p5_like_fixture_lacks_the_real_p5s_efa_devices() {
    // fixtures/nodes/aws-p5 keeps 8 of a real p5.48xlarge's 32 EFA devices.
    let (code, r) = doctor_json(&[
        "--root",
        &node("aws-p5"),
        "--expect",
        &expect_file("aws-p5.48xlarge.toml"),
    ]);
    assert_eq!(exp(&r), set(&[("FAB-EXP-002", "error", "node")]), "{r:#}");
    assert_eq!(code, 1);
    let f = &r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "FAB-EXP-002")
        .unwrap();
    assert!(f["message"]
        .as_str()
        .unwrap()
        .starts_with("8 hardware RDMA device(s) found where at least 32"));
    // And it is not a p4d or an H200 machine.
    let (_, r) = doctor_json(&[
        "--root",
        &node("aws-p5"),
        "--expect",
        &expect_file("aws-p5en.48xlarge.toml"),
    ]);
    assert_eq!(
        exp(&r)
            .iter()
            .filter(|(rule, _, s)| rule == "FAB-EXP-001" && s.starts_with("gpu "))
            .count(),
        8
    );
}

/// The RoCE fixture (one A100, a dual-port ConnectX-6 Dx with the RoCE v2 IPv4 GID at index 3,
/// memlock 64 KiB) against OCI's BM.GPU.H100.8: the GID index is what OCI configures, so no
/// finding for it; the GPUs, the sixteen rails and the memlock limit are not.
#[test]
fn the_roce_fixture_is_not_an_oci_h100_node_but_has_its_gid_index() {
    let file = expect_file("oci-bm-gpu-h100-8.toml");
    let (code, r) = doctor_json(&["--root", &node("roce-dualport"), "--expect", &file]);
    assert_eq!(
        exp(&r),
        set(&[
            ("FAB-EXP-001", "error", "gpu 0000:18:00.0"),
            ("FAB-EXP-001", "error", "node"),
            ("FAB-EXP-002", "error", "node"),
            ("FAB-EXP-006", "warning", "node"),
            ("FAB-EXP-009", "info", "env"),
        ]),
        "{r:#}"
    );
    assert_eq!(code, 1);
    let messages: Vec<&str> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "FAB-EXP-002")
        .map(|f| f["message"].as_str().unwrap())
        .collect();
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("3 hardware RDMA device(s) found where at least 16")),
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("2 ACTIVE Ethernet port(s) where at least 16")),
        "{messages:?}"
    );
    // The same file with another GID index turns the fixture's index 3 into a finding.
    let dir = tempfile::tempdir().unwrap();
    let moved = dir.path().join("oci.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&moved, text.replace("gid_index = 3", "gid_index = 1")).unwrap();
    let (_, r) = doctor_json(&[
        "--root",
        &node("roce-dualport"),
        "--expect",
        &moved.to_string_lossy(),
    ]);
    let extra: Vec<_> = exp(&r)
        .into_iter()
        .filter(|(rule, _, _)| {
            !["FAB-EXP-001", "FAB-EXP-002", "FAB-EXP-006", "FAB-EXP-009"].contains(&rule.as_str())
        })
        .collect();
    assert!(!extra.is_empty(), "{r:#}");
}

#[test]
fn waivers_hide_with_a_reason_and_refuse_without_one() {
    let broken = broken_hgx();
    let root = broken.path().to_string_lossy().into_owned();
    let (code, r) = doctor_json(&[
        "--root",
        &root,
        "--expect",
        &expect_file("dgx-h100.toml"),
        "--ignore",
        "FAB-EXP-002=rail 3 cable replaced on Friday",
        "--ignore",
        "FAB-EXP-001:node=GPU 7 RMA open",
    ]);
    let waived: BTreeSet<String> = r["waived"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            format!(
                "{} {} {}",
                w["rule"].as_str().unwrap(),
                w["subject"].as_str().unwrap(),
                w["reason"].as_str().unwrap()
            )
        })
        .collect();
    assert!(
        waived.contains("FAB-EXP-002 node rail 3 cable replaced on Friday"),
        "{waived:?}"
    );
    assert!(
        waived.contains("FAB-EXP-001 node GPU 7 RMA open"),
        "{waived:?}"
    );
    assert!(exp(&r).is_empty(), "{r:#}");
    // Only the rules named are waived: the dead rail of this GPU node is still an error of
    // its own (FAB-PORT-*), so the node fails until that is waived too.
    assert!(r["findings"].as_array().unwrap().iter().any(|f| {
        f["rule"].as_str().unwrap().starts_with("FAB-PORT") && f["severity"] == "error"
    }));
    assert_eq!(code, 1);
    let (code, _) = doctor_json(&[
        "--root",
        &root,
        "--expect",
        &expect_file("dgx-h100.toml"),
        "--ignore",
        "FAB-EXP-002=rail 3 cable replaced on Friday",
        "--ignore",
        "FAB-EXP-001:node=GPU 7 RMA open",
        "--ignore",
        "FAB-PORT-001:mlx5_3:1=rail 3 cable replaced on Friday",
        "--ignore",
        "FAB-PORT-002:mlx5_3:1=rail 3 cable replaced on Friday",
    ]);
    assert_eq!(code, 0);

    // The table lists what was waived and why.
    let out = fabrik()
        .args([
            "doctor",
            "--root",
            &root,
            "--expect-gpus",
            "8",
            "--ignore",
            "FAB-EXP-001=GPU 7 RMA open",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("waived: FAB-EXP-001 node [error waived]: GPU 7 RMA open"),
        "{text}"
    );

    // A rule id that does not exist (a typo, a glob) is refused, naming the nearest known ids.
    for (bad, nearest) in [
        ("FAB-PCI-02=typo", "FAB-PCI-002"),
        ("FAB-PORT-*:mlx5_3:1=same cable", "FAB-PORT-00"),
        ("fab-exp-0001=x", "FAB-EXP-001"),
    ] {
        let out = fabrik()
            .args(["check", "--root", &root, "--ignore", bad])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("unknown rule id"), "{bad}: {err}");
        assert!(
            err.split("nearest known: ")
                .nth(1)
                .is_some_and(|n| n.starts_with(nearest)),
            "{bad}: {err}"
        );
    }
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        file.path(),
        "[[waive]]\nrule = \"FAB-RDMA-0003\"\nreason = \"typo\"\n",
    )
    .unwrap();
    let out = fabrik()
        .args(["doctor", "--root", &root, "--expect"])
        .arg(file.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nearest known: FAB-RDMA-003"));

    for bad in ["FAB-EXP-001", "FAB-EXP-001=", "FAB-EXP-001:node=  "] {
        let out = fabrik()
            .args(["check", "--root", &root, "--ignore", bad])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("--ignore"),
            "{bad}"
        );
    }
}

#[test]
fn a_waive_table_changes_severity_and_expires() {
    let broken = broken_hgx();
    let root = broken.path().to_string_lossy().into_owned();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cluster.toml");
    let base = std::fs::read_to_string(expect_file("dgx-h100.toml")).unwrap();
    std::fs::write(
        &file,
        format!(
            "{base}\n[[waive]]\nrule = \"FAB-EXP-001\"\nreason = \"GPU 7 RMA open\"\nseverity = \"warning\"\nexpires = 2999-12-31\n\n[[waive]]\nrule = \"FAB-EXP-002\"\nreason = \"old ticket\"\nexpires = 2000-01-01\n"
        ),
    )
    .unwrap();
    let (code, r) = doctor_json(&["--root", &root, "--expect", &file.to_string_lossy()]);
    assert_eq!(
        exp(&r),
        set(&[
            ("FAB-EXP-001", "warning", "node"),
            ("FAB-EXP-002", "error", "node"),
            ("FAB-EXP-010", "warning", "waiver FAB-EXP-002"),
        ]),
        "{r:#}"
    );
    assert_eq!(code, 1);
    let w = &r["waived"][0];
    assert_eq!(w["new_severity"], "warning");
    assert_eq!(w["expires"], "2999-12-31");

    std::fs::write(
        &file,
        format!("{base}\n[[waive]]\nrule = \"FAB-EXP-001\"\n"),
    )
    .unwrap();
    let out = fabrik()
        .args([
            "doctor",
            "--root",
            &root,
            "--expect",
            &file.to_string_lossy(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("reason"));
}

#[test]
fn a_file_written_from_a_node_is_met_by_that_node_and_catches_a_lost_rail() {
    let dir = tempfile::tempdir().unwrap();
    for fixture in ["ib-ndr-8gpu", "roce-dualport", "aws-p5"] {
        let file = dir.path().join(format!("{fixture}.toml"));
        fabrik()
            .args(["expect", "--from-root", &node(fixture), "-o"])
            .arg(&file)
            .assert()
            .success();
        let (_, r) = doctor_json(&[
            "--root",
            &node(fixture),
            "--expect",
            &file.to_string_lossy(),
        ]);
        assert!(
            exp(&r)
                .iter()
                .all(|(rule, sev, _)| rule == "FAB-EXP-009" && sev == "info"),
            "{fixture}: {r:#}"
        );
    }
    let text = std::fs::read_to_string(dir.path().join("roce-dualport.toml")).unwrap();
    assert!(text.contains("link_layer = \"Ethernet\""), "{text}");
    assert!(text.contains("pfc_priorities = [3]"), "{text}");
    let broken = broken_hgx();
    let (code, r) = doctor_json(&[
        "--root",
        &broken.path().to_string_lossy(),
        "--expect",
        &dir.path().join("ib-ndr-8gpu.toml").to_string_lossy(),
    ]);
    assert_eq!(code, 1);
    let rules: BTreeSet<String> = exp(&r).into_iter().map(|(rule, _, _)| rule).collect();
    assert!(
        rules.contains("FAB-EXP-001") && rules.contains("FAB-EXP-002"),
        "{rules:?}"
    );
}

/// Every value in a shipped file has a public source: each `key = value` line follows a comment
/// holding a URL in its section, or the file's header (before any section) names one source for
/// all of it.
#[test]
fn every_shipped_number_cites_its_source() {
    let mut files = 0;
    for entry in std::fs::read_dir(repo().join("deploy/expect")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        files += 1;
        let text = std::fs::read_to_string(&path).unwrap();
        let (mut url_in_header, mut in_header, mut url_in_section) = (false, true, false);
        for line in text.lines() {
            let line = line.trim();
            if line.starts_with('[') {
                in_header = false;
                url_in_section = false;
            } else if line.starts_with('#') {
                url_in_section |= line.contains("https://");
                url_in_header |= in_header && line.contains("https://");
            } else if line.contains('=') && !line.starts_with("name") {
                assert!(
                    url_in_section || url_in_header,
                    "{}: `{line}` has no source above it",
                    path.display()
                );
            }
        }
        fabrik()
            .args(["doctor", "--root", &node("sandbox-vm"), "--expect"])
            .arg(&path)
            .assert()
            .code(predicates::ord::lt(2));
    }
    assert!(files >= 7, "{files} files");
}

#[test]
fn gcp_nccl_settings_are_checked_against_the_planned_environment() {
    let file = expect_file("gcp-a3-highgpu-8g.toml");
    // The A3-like fixture has its 8 GPUs; without an environment the settings are unverified.
    let (_, r) = doctor_json(&["--root", &node("gcp-a3"), "--expect", &file]);
    assert_eq!(exp(&r), set(&[("FAB-EXP-009", "info", "env")]), "{r:#}");
    let dir = tempfile::tempdir().unwrap();
    let env = dir.path().join("job.env");
    std::fs::write(
        &env,
        "NCCL_NET=GPUDirectTCPX_v7\nNCCL_SOCKET_IFNAME=eth0\nNCCL_GPUDIRECTTCPX_CTRL_DEV=enp0s12\nNCCL_GPUDIRECTTCPX_SOCKET_IFNAME=enp6s0,enp12s0,enp134s0,enp140s0\n",
    )
    .unwrap();
    let (_, r) = doctor_json(&[
        "--root",
        &node("gcp-a3"),
        "--expect",
        &file,
        "--env-file",
        &env.to_string_lossy(),
    ]);
    assert_eq!(
        exp(&r),
        set(&[("FAB-EXP-008", "warning", "env NCCL_SOCKET_IFNAME")]),
        "{r:#}"
    );
}

/// The RoCE fixture against a file that differs from it in every other respect: each
/// difference is its own rule, with the capture it was read from.
#[test]
fn roce_fixture_differences_fire_the_link_mtu_qos_gdr_and_version_rules() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cluster.toml");
    std::fs::write(
        &file,
        "[rdma]\nlink_layer = \"Ethernet\"\nrate_gbps = 200\nnetdev_mtu = 4200\n\
         [roce]\ngid_index = 3\npfc_priorities = [4]\ntrust = \"pcp\"\n\
         [host]\npeer_memory = \"nvidia_peermem\"\n\
         [versions]\nnvidia_driver = \"550\"\n",
    )
    .unwrap();
    let (code, r) = doctor_json(&[
        "--root",
        &node("roce-dualport"),
        "--expect",
        &file.to_string_lossy(),
    ]);
    assert_eq!(code, 1);
    let rules: BTreeSet<(String, String)> = exp(&r)
        .into_iter()
        .map(|(rule, sev, _)| (rule, sev))
        .collect();
    let want: BTreeSet<(String, String)> = [
        ("FAB-EXP-003", "error"),
        ("FAB-EXP-004", "warning"),
        ("FAB-EXP-005", "warning"),
        ("FAB-EXP-006", "error"),
        ("FAB-EXP-007", "warning"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(rules, want, "{r:#}");
    let text = r.to_string();
    assert!(
        text.contains("fabrik/cmd/mlnx_qos-"),
        "PFC evidence is the mlnx_qos capture"
    );
    assert!(text.contains("/proc/modules"), "{text}");
}
