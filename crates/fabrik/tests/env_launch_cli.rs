#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `fabrik env` and `fabrik launch` end to end.

mod support;

use std::io::Write;
use std::process::{Command, Stdio};

use assert_cmd::Command as Cmd;
use predicates::prelude::*;

fn fabrik() -> Cmd {
    let mut c = Cmd::cargo_bin("fabrik").unwrap();
    // The caller's NCCL settings must not leak into what is asserted.
    for (k, _) in std::env::vars() {
        if k.starts_with("NCCL_") || k.starts_with("FI_") || k.starts_with("UCX_") {
            c.env_remove(k);
        }
    }
    c
}

fn bash_n(text: &str) -> bool {
    let mut child = Command::new("bash")
        .arg("-n")
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    child.wait().unwrap().success()
}

#[test]
fn live_machine_without_rdma_says_sockets_only_and_names_the_interface() {
    let has_rdma = std::fs::read_dir("/sys/class/infiniband")
        .map(|mut d| d.next().is_some())
        .unwrap_or(false);
    let out = fabrik().arg("env").output().unwrap();
    support::assert_ok(&out);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(bash_n(&text), "{text}");
    if has_rdma {
        fabrik_testbed::not_applicable("the sockets-only message", "this machine has RDMA devices");
        return;
    }
    assert!(text.contains("only sockets are available"), "{text}");
    assert!(text.contains("export NCCL_IB_DISABLE=1"), "{text}");
    // The interface named in the summary is the one exported.
    let line = text
        .lines()
        .find(|l| l.starts_with("export NCCL_SOCKET_IFNAME="))
        .unwrap_or("");
    let name = line.trim_start_matches("export NCCL_SOCKET_IFNAME==");
    if !name.is_empty() {
        assert!(
            text.contains(&format!("NCCL sends data over {name}.")),
            "{text}"
        );
    }
}

#[test]
fn env_json_has_schema_version_and_reasons() {
    let out = fabrik()
        .args(["env", "--profile", "gcp-a3-tcpx", "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["profile"], "gcp-a3-tcpx");
    let vars = v["vars"].as_array().unwrap();
    assert!(vars
        .iter()
        .any(|x| x["name"] == "NCCL_GPUDIRECTTCPX_SOCKET_IFNAME"));
    assert!(vars
        .iter()
        .all(|x| x["source"].as_str().unwrap().starts_with("https://")));
}

#[test]
fn keep_env_keeps_the_callers_value_and_says_so() {
    let out = fabrik()
        .args(["env", "--profile", "oci-roce", "--keep-env"])
        .env("NCCL_IB_TC", "106")
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("export NCCL_IB_TC=106\n"), "{text}");
    assert!(text.contains("kept from the environment"), "{text}");
    let out = fabrik()
        .args(["env", "--profile", "oci-roce"])
        .env("NCCL_IB_TC", "106")
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("export NCCL_IB_TC=41\n"), "{text}");
    assert!(
        text.contains("# warning: NCCL_IB_TC=\"106\" is set in the environment"),
        "{text}"
    );
}

#[test]
fn unknown_profile_is_a_clear_error() {
    fabrik()
        .args(["env", "--profile", "gcp"])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("unknown profile")
                .and(predicate::str::contains("gcp-a3-tcpx")),
        );
}

#[test]
fn launch_renders_runnable_files() {
    for kind in ["torchrun", "docker", "slurm", "hostfile"] {
        let out = fabrik()
            .args([
                "launch",
                kind,
                "--profile",
                "generic-ib",
                "--nodes",
                "2",
                "--gpus-per-node",
                "4",
                "--image",
                "img:1",
                "--command",
                "train.py --epochs 3",
                "--hosts",
                "a,b",
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{kind}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(bash_n(&text), "{kind}:\n{text}");
    }
    let out = fabrik()
        .args([
            "launch",
            "k8s",
            "--k8s-kind",
            "jobset",
            "--profile",
            "alibaba-acs-rdma",
            "--nodes",
            "4",
            "--image",
            "img:1",
            "--command",
            "train.py",
            "--name",
            "llm",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let v = support::json_ok(&out);
    assert_eq!(v["kind"], "k8s");
    assert_eq!(v["k8s_kind"], "jobset");
    assert!(v["text"]
        .as_str()
        .unwrap()
        .contains("alibabacloud.com/hpn-type: rdma"));
}

#[test]
fn launch_without_what_it_needs_fails_with_the_flag_named() {
    fabrik()
        .args([
            "launch",
            "docker",
            "--profile",
            "socket",
            "--command",
            "t.py",
            "--master-addr",
            "h",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--image"));
}

#[test]
fn launch_output_file_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("job.sbatch");
    fabrik()
        .args([
            "launch",
            "slurm",
            "--profile",
            "socket",
            "--nodes",
            "3",
            "--command",
            "t.py",
            "-o",
        ])
        .arg(&path)
        .assert()
        .success();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("#SBATCH --nodes=3"));
}

#[test]
fn launch_takes_gpus_per_node_from_the_probed_node() {
    let root =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/nodes/roce-dualport");
    let out = fabrik()
        .args([
            "launch",
            "hostfile",
            "--hosts",
            "a,b",
            "--nodes",
            "2",
            "--command",
            "x",
            "--root",
        ])
        .arg(&root)
        .output()
        .unwrap();
    support::assert_ok(&out);
    let text = String::from_utf8(out.stdout).unwrap();
    // The fixture has one A100.
    assert!(text.contains("a slots=1\nb slots=1\n"), "{text}");
    assert!(text.contains("-x NCCL_IB_GID_INDEX=3"), "{text}");
}
