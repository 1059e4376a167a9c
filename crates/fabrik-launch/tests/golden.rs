#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Golden files: every profile's environment and every launch kind, compared byte for byte
//! with fixtures/golden/. `FABRIK_BLESS=1 cargo test -p fabrik-launch --test golden`
//! rewrites them; review the diff before committing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use fabrik_launch::{render, JobShape, K8sKind, Kind};
use fabrik_nccl::env::render as env_render;
use fabrik_nccl::{generate, Env, Profile, Request};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/golden")
}

fn shape(k8s_kind: K8sKind) -> JobShape {
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
        rdma_resource: None,
        instance_type: Some("p5.48xlarge".into()),
    }
}

/// Every file of one environment: its renderings and every launch kind.
pub fn files_for(env: &Env) -> BTreeMap<String, String> {
    let mut f = BTreeMap::new();
    f.insert("env.sh".into(), env_render::shell(env).unwrap());
    f.insert("env.json".into(), env_render::json(env).unwrap());
    f.insert("env.k8s.yaml".into(), env_render::k8s_env(env).unwrap());
    f.insert(
        "launch-torchrun.sh".into(),
        render(Kind::Torchrun, env, &shape(K8sKind::Job)).unwrap(),
    );
    f.insert(
        "launch-docker.sh".into(),
        render(Kind::Docker, env, &shape(K8sKind::Job)).unwrap(),
    );
    f.insert(
        "launch-slurm.sbatch".into(),
        render(Kind::Slurm, env, &shape(K8sKind::Job)).unwrap(),
    );
    f.insert(
        "launch-hostfile.sh".into(),
        render(Kind::Hostfile, env, &shape(K8sKind::Job)).unwrap(),
    );
    for k in K8sKind::ALL {
        f.insert(
            format!("launch-k8s-{k}.yaml"),
            render(Kind::K8s, env, &shape(k)).unwrap(),
        );
    }
    f
}

/// Compares (or with FABRIK_BLESS=1 rewrites) a directory of golden files, including
/// that no stale file lingers there.
pub fn check_dir(dir: &Path, files: &BTreeMap<String, String>) -> Vec<String> {
    let update = std::env::var_os("FABRIK_BLESS").is_some_and(|v| v == "1");
    if update {
        std::fs::create_dir_all(dir).unwrap();
        if let Ok(rd) = std::fs::read_dir(dir) {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if !files.contains_key(&name) {
                    std::fs::remove_file(e.path()).unwrap();
                }
            }
        }
        for (name, text) in files {
            std::fs::write(dir.join(name), text).unwrap();
        }
        return vec![];
    }
    let mut problems = Vec::new();
    let present: BTreeSet<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    for stale in present.iter().filter(|n| !files.contains_key(*n)) {
        problems.push(format!("{}: stale golden file", dir.join(stale).display()));
    }
    for (name, text) in files {
        let path = dir.join(name);
        match std::fs::read_to_string(&path) {
            Ok(old) if &old == text => {}
            Ok(old) => {
                let line = old
                    .lines()
                    .zip(text.lines())
                    .position(|(a, b)| a != b)
                    .map_or(old.lines().count().min(text.lines().count()) + 1, |i| i + 1);
                problems.push(format!(
                    "{}: differs from the rendering at line {line}",
                    path.display()
                ));
            }
            Err(_) => problems.push(format!("{}: missing", path.display())),
        }
    }
    problems
}

#[test]
fn every_named_profile_matches_its_golden_files() {
    let empty = BTreeMap::new();
    let mut problems = Vec::new();
    for p in Profile::named() {
        let env = generate(&Request {
            profile: p,
            node: None,
            existing: &empty,
            keep_env: false,
        })
        .unwrap();
        problems.extend(check_dir(
            &golden_dir().join("profiles").join(p.as_str()),
            &files_for(&env),
        ));
    }
    assert!(
        problems.is_empty(),
        "golden mismatches (FABRIK_BLESS=1 regenerates):\n{}",
        problems.join("\n")
    );
}

/// `--profile auto` on every probe fixture: the decisions taken from real sysfs trees.
#[test]
fn auto_on_every_node_fixture_matches_its_golden_files() {
    let nodes = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/nodes");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&nodes)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(
        dirs.len() >= 4,
        "expected the probe fixtures under {}",
        nodes.display()
    );
    let empty = BTreeMap::new();
    let mut problems = Vec::new();
    for dir in &dirs {
        let node = fabrik_probe::probe(dir).unwrap();
        let env = generate(&Request {
            profile: Profile::Auto,
            node: Some(&node),
            existing: &empty,
            keep_env: false,
        })
        .unwrap();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        problems.extend(check_dir(
            &golden_dir().join("auto").join(&name),
            &files_for(&env),
        ));
    }
    assert!(
        problems.is_empty(),
        "golden mismatches (FABRIK_BLESS=1 regenerates):\n{}",
        problems.join("\n")
    );
}

#[test]
fn a_changed_golden_file_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = BTreeMap::new();
    files.insert("a.sh".to_string(), "export A=1\n".to_string());
    std::fs::write(dir.path().join("a.sh"), "export A=2\n").unwrap();
    std::fs::write(dir.path().join("old.sh"), "x").unwrap();
    if std::env::var_os("FABRIK_BLESS").is_some() {
        return;
    }
    let p = check_dir(dir.path(), &files);
    assert_eq!(p.len(), 2, "{p:?}");
}
