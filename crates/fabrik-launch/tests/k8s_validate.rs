#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Every Kubernetes output fabrik writes, for every named profile and for `--profile auto` on
//! every probe fixture, validated by real schema validators reading YAML 1.1 (as kubectl
//! does): `kubernetes-validate --strict` for the built-in kinds (Service, Job, and a Pod that
//! holds `fabrik env --format k8s`'s `env:` list), and crd_validate.py (jsonschema, unknown
//! fields rejected) against the JobSet and PyTorchJob CustomResourceDefinitions kept in
//! tests/crds/ for the CRD kinds.
//!
//! The validator is `$FABRIK_K8S_VALIDATE`, else /opt/fabrik-test/venv/bin/kubernetes-validate,
//! else `kubernetes-validate` on PATH (scripts/pip/test.txt installs it). Without one the test
//! fails when `CI` is set and otherwise skips with a message.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use fabrik_launch::{render, JobShape, K8sKind, Kind};
use fabrik_nccl::env::render as env_render;
use fabrik_nccl::{generate, Env, Profile, Request};

fn validator() -> Option<PathBuf> {
    std::env::var_os("FABRIK_K8S_VALIDATE")
        .map(PathBuf::from)
        .or_else(|| {
            fabrik_testbed::tools::require("kubernetes-validate", "scripts/setup.sh --tests")
        })
}

/// The Python beside the validator (its venv holds jsonschema and PyYAML), else python3.
fn python_for(validator: &Path) -> PathBuf {
    let beside = validator.with_file_name("python3");
    if beside.is_file() {
        beside
    } else {
        PathBuf::from("python3")
    }
}

fn shape(k8s_kind: K8sKind, rdma_resource: Option<&str>) -> JobShape {
    JobShape {
        name: "train".into(),
        nodes: 2,
        gpus_per_node: 8,
        image: Some("nvcr.io/nvidia/pytorch:24.04-py3".into()),
        command: "train.py --config /workspace/config.yaml".into(),
        master_port: 29500,
        master_addr: None,
        hosts: vec!["node-0".into(), "node-1".into()],
        k8s_kind,
        rdma_resource: rdma_resource.map(Into::into),
        instance_type: Some("p5.48xlarge".into()),
    }
}

fn envs() -> Vec<(String, Env)> {
    let empty = BTreeMap::new();
    let mut out = vec![];
    for p in Profile::named() {
        let env = generate(&Request {
            profile: p,
            node: None,
            existing: &empty,
            keep_env: false,
        })
        .unwrap();
        out.push((format!("profile-{}", p.as_str()), env));
    }
    let nodes = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/nodes");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&nodes)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        let node = fabrik_probe::probe(&dir).unwrap();
        let env = generate(&Request {
            profile: Profile::Auto,
            node: Some(&node),
            existing: &empty,
            keep_env: false,
        })
        .unwrap();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        out.push((format!("auto-{name}"), env));
    }
    out
}

/// `fabrik env --format k8s` is a container's `env:` list: indented, byte for byte, into a Pod.
fn env_in_pod(fragment: &str) -> String {
    let mut out = String::from(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: fabrik-env\nspec:\n  containers:\n  - name: c\n    image: busybox\n",
    );
    for line in fragment.lines() {
        if line.is_empty() {
            out.push('\n');
        } else {
            out.push_str("    ");
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[test]
fn every_k8s_output_passes_strict_schema_validation() {
    let Some(validator) = validator() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut builtin = vec![];
    let mut custom = vec![];
    for (name, env) in envs() {
        let path = dir.path().join(format!("{name}-env.yaml"));
        std::fs::write(&path, env_in_pod(&env_render::k8s_env(&env).unwrap())).unwrap();
        builtin.push(path);
        for rdma in [None, Some("rdma/hca_shared_devices_a")] {
            for k in K8sKind::ALL {
                let text = render(Kind::K8s, &env, &shape(k, rdma)).unwrap();
                let tag = if rdma.is_some() { "-rdma" } else { "" };
                let path = dir.path().join(format!("{name}-{k}{tag}.yaml"));
                std::fs::write(&path, text).unwrap();
                match k {
                    K8sKind::Job => builtin.push(path),
                    _ => custom.push(path),
                }
            }
        }
    }
    let out = Command::new(&validator)
        .arg("--strict")
        .arg("--quiet")
        .args(&builtin)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", validator.display()));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && !text.contains("ERROR"),
        "kubernetes-validate --strict rejected fabrik's output:\n{text}"
    );
    // Every built-in file was validated against a schema, none skipped as unknown.
    assert!(!text.contains("Couldn't find schema"), "{text}");

    let crds = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/crds");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/crd_validate.py");
    let out = Command::new(python_for(&validator))
        .arg(&script)
        .arg(crds.join("jobset.x-k8s.io_jobsets.yaml"))
        .arg(crds.join("kubeflow.org_pytorchjobs.yaml"))
        .arg("--")
        .args(&custom)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the JobSet/PyTorchJob CRD schemas rejected fabrik's output:\n{text}"
    );
    assert!(
        text.contains(&format!(
            "checked {} custom resources, 0 problems",
            custom.len()
        )),
        "{text}"
    );
}

#[test]
fn the_validators_catch_a_yaml11_boolean() {
    // The check itself can fail: `value: on` is what fabrik wrote for
    // UCX_IB_PCI_RELAXED_ORDERING before its YAML writer quoted YAML 1.1 words.
    let Some(validator) = validator() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        env_in_pod("env:\n- name: UCX_IB_PCI_RELAXED_ORDERING\n  value: on\n"),
    )
    .unwrap();
    let out = Command::new(&validator)
        .arg("--strict")
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("is not of type 'string'"));
}
