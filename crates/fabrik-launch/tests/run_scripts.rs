#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The rendered scripts really run: `torchrun`, `docker`, `srun`, `scontrol` and `mpirun` are
//! replaced by stubs on PATH that record their arguments and the NCCL environment they see,
//! so quoting, rank expansion and exports are checked end to end, not only parsed.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use fabrik_launch::{render, JobShape, K8sKind, Kind};
use fabrik_nccl::{generate, Profile, Request};

/// A stub that writes one argument per line, then the NCCL_*/MASTER_* environment, to $OUT.
const RECORDER: &str = r#"#!/bin/bash
{
  echo "argv0=$(basename "$0")"
  for a in "$@"; do echo "arg=$a"; done
  env | grep -E '^(NCCL_|MASTER_|NODE_RANK=)' | sort | sed 's/^/env=/'
} >> "$OUT"
"#;

/// srun: runs its `bash -c SCRIPT` once per node with SLURM_NODEID set, as Slurm does.
const SRUN: &str = r#"#!/bin/bash
while [ "$1" != "bash" ]; do shift; done
shift; shift
for id in 0 1; do SLURM_NODEID=$id bash -c "$1"; done
"#;

const SCONTROL: &str = "#!/bin/bash\nprintf 'gpu-a\\ngpu-b\\n'\n";

fn stubs(dir: &Path) {
    for (name, body) in [
        ("torchrun", RECORDER),
        ("docker", RECORDER),
        ("mpirun", RECORDER),
        ("srun", SRUN),
        ("scontrol", SCONTROL),
    ] {
        let p = dir.join(name);
        std::fs::write(&p, body).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

fn shape() -> JobShape {
    JobShape {
        name: "train".into(),
        nodes: 2,
        gpus_per_node: 4,
        image: Some("img:1".into()),
        command: "train.py --data '/data/my set' --note \"it's\"".into(),
        master_port: 29501,
        master_addr: None,
        hosts: vec!["node-a".into(), "node-b".into()],
        k8s_kind: K8sKind::Job,
        rdma_resource: None,
        instance_type: None,
    }
}

/// Runs the script with the stubs first on PATH and returns what they recorded.
fn run(kind: Kind, profile: Profile, node_rank: &str) -> String {
    let env = generate(&Request {
        profile,
        node: None,
        existing: &BTreeMap::new(),
        keep_env: false,
    })
    .unwrap();
    let text = render(kind, &env, &shape()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    stubs(dir.path());
    let script = dir.path().join("job.sh");
    std::fs::write(&script, &text).unwrap();
    let out = dir.path().join("out.txt");
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new("bash");
    cmd.arg(&script)
        .current_dir(dir.path())
        .env("PATH", path)
        .env("OUT", &out)
        .env("NODE_RANK", node_rank)
        .env("SLURM_JOB_NODELIST", "gpu-[a-b]");
    for (k, _) in std::env::vars() {
        if k.starts_with("NCCL_") || k.starts_with("MASTER_") {
            cmd.env_remove(k);
        }
    }
    let status = cmd.status().unwrap();
    assert!(status.success(), "{kind} script failed:\n{text}");
    if kind == Kind::Hostfile {
        let hf = std::fs::read_to_string(dir.path().join("hostfile")).unwrap();
        assert_eq!(hf, "node-a slots=4\nnode-b slots=4\n");
    }
    std::fs::read_to_string(out).unwrap_or_default()
}

fn args(rec: &str) -> Vec<&str> {
    rec.lines().filter_map(|l| l.strip_prefix("arg=")).collect()
}

#[test]
fn torchrun_script_passes_rank_and_command_words_intact() {
    let rec = run(Kind::Torchrun, Profile::GcpA3Tcpx, "1");
    let a = args(&rec);
    assert_eq!(
        a,
        vec![
            "--nnodes=2",
            "--nproc_per_node=4",
            "--node_rank=1",
            "--master_addr=node-a",
            "--master_port=29501",
            "train.py",
            "--data",
            "/data/my set",
            "--note",
            "it's"
        ]
    );
    assert!(rec.contains("env=NCCL_GPUDIRECTTCPX_SOCKET_IFNAME=eth1,eth2,eth3,eth4\n"));
}

#[test]
fn docker_script_passes_every_variable_by_name() {
    let rec = run(Kind::Docker, Profile::AlibabaAcsRdmaType2, "0");
    let a = args(&rec);
    assert_eq!(a[0], "run");
    let i = a.iter().position(|x| *x == "img:1").unwrap();
    assert_eq!(a[i + 1], "torchrun");
    assert!(a.contains(&"--node_rank=0"));
    // `-e NCCL_IB_HCA` passes the exported (empty) value through.
    assert!(a.windows(2).any(|w| w == ["-e", "NCCL_IB_HCA"]));
    assert!(rec.contains("env=NCCL_IB_HCA=\n"));
    assert!(rec.contains("env=NCCL_IB_DISABLE=1\n"));
}

#[test]
fn slurm_script_gives_each_task_its_own_rank() {
    let rec = run(Kind::Slurm, Profile::OciRoce, "");
    let ranks: Vec<&str> = args(&rec)
        .into_iter()
        .filter(|a| a.starts_with("--node_rank="))
        .collect();
    assert_eq!(ranks, vec!["--node_rank=0", "--node_rank=1"]);
    assert!(rec.contains("arg=--master_addr=gpu-a\n"));
    assert!(rec.contains("env=NCCL_IB_TC=41\n"));
}

#[test]
fn mpirun_gets_x_for_every_variable() {
    let rec = run(Kind::Hostfile, Profile::AzureNdIb, "");
    let a = args(&rec);
    assert!(a
        .windows(2)
        .any(|w| w == ["-x", "NCCL_TOPO_FILE=/opt/microsoft/ndv5-topo.xml"]));
    assert!(a.windows(2).any(|w| w == ["-np", "8"]));
    assert_eq!(
        &a[a.len() - 5..],
        &["train.py", "--data", "/data/my set", "--note", "it's"]
    );
}

#[test]
fn tcpx_docker_and_slurm_start_the_receive_datapath_manager() {
    for (profile, name, image) in [
        (
            Profile::GcpA3Tcpx,
            "tcpx-daemon",
            "gpudirect-tcpx/tcpgpudmarxd",
        ),
        (
            Profile::GcpA3MegaTcpxo,
            "tcpxo-daemon",
            "gpudirect-tcpxo/tcpgpudmarxd",
        ),
    ] {
        for (kind, rank) in [(Kind::Docker, "0"), (Kind::Slurm, "")] {
            let rec = run(kind, profile, rank);
            let calls: Vec<&str> = rec.split("argv0=").filter(|c| !c.is_empty()).collect();
            // The daemon first, detached on the host network, then the trainer, then its stop.
            let daemon = calls
                .iter()
                .position(|c| c.contains("arg=--detach\n") && c.contains(&format!("arg={name}\n")))
                .unwrap_or_else(|| panic!("{kind} {profile:?}: no daemon start in\n{rec}"));
            assert!(calls[daemon].contains(image), "{}", calls[daemon]);
            assert!(calls[daemon].contains("arg=NET_ADMIN\n"));
            let trainer = calls
                .iter()
                .position(|c| c.contains("arg=--nnodes=2\n"))
                .unwrap();
            assert!(daemon < trainer, "{kind}: daemon after trainer");
            let stop = calls
                .iter()
                .position(|c| c.contains("arg=stop\n") && c.contains(&format!("arg={name}\n")))
                .unwrap_or_else(|| panic!("{kind}: no stop in\n{rec}"));
            assert!(stop > trainer);
        }
    }
}
