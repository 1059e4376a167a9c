#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Renderer tests on environments of every profile; shell output is checked with `bash -n`.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};

use fabrik_nccl::{generate, Env, Profile, Request};

use super::*;

pub(crate) fn env_for(profile: Profile) -> Env {
    let empty = BTreeMap::new();
    generate(&Request {
        profile,
        node: None,
        existing: &empty,
        keep_env: false,
    })
    .unwrap()
}

pub(crate) fn shape(k8s_kind: K8sKind) -> JobShape {
    JobShape {
        name: "train".into(),
        nodes: 2,
        gpus_per_node: 8,
        image: Some("nvcr.io/nvidia/pytorch:24.04-py3".into()),
        command: "train.py --data '/data/my set' --lr 3e-4".into(),
        master_port: 29500,
        master_addr: None,
        hosts: vec!["node-0".into(), "node-1".into()],
        k8s_kind,
        rdma_resource: None,
        instance_type: Some("p5.48xlarge".into()),
    }
}

/// `bash -n` on the text: syntax only, nothing runs.
pub(crate) fn bash_syntax_ok(text: &str) -> Result<(), String> {
    let mut child = Command::new("bash")
        .arg("-n")
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("bash: {e}"))?;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn every_profile_renders_every_shell_kind_and_bash_accepts_it() {
    for p in Profile::named() {
        let env = env_for(p);
        for kind in [Kind::Torchrun, Kind::Docker, Kind::Slurm, Kind::Hostfile] {
            let text = render(kind, &env, &shape(K8sKind::Job)).unwrap();
            if let Err(e) = bash_syntax_ok(&text) {
                panic!("{p} {kind}: bash -n failed: {e}\n{text}");
            }
        }
    }
}

#[test]
fn bash_n_rejects_broken_text() {
    // The checker itself must be able to fail.
    let e = bash_syntax_ok("if then fi (").unwrap_err();
    assert!(e.contains("syntax error"), "{e}");
}

#[test]
fn torchrun_lines_carry_rank_master_and_quoted_command() {
    let env = env_for(Profile::Socket);
    let text = render(Kind::Torchrun, &env, &shape(K8sKind::Job)).unwrap();
    assert!(text.contains("torchrun --nnodes=2 --nproc_per_node=8 --node_rank=0 --master_addr=node-0 --master_port=29500 train.py --data '/data/my set' --lr 3e-4"), "{text}");
    assert!(text.contains("--node_rank=1 "));
    assert!(text.contains("export NCCL_IB_DISABLE=1"));
}

#[test]
fn docker_has_the_documented_flags_and_rdma_devices() {
    let env = env_for(Profile::GenericIb);
    let text = render(Kind::Docker, &env, &shape(K8sKind::Job)).unwrap();
    for flag in [
        "--network host",
        "--gpus all",
        "--ipc host",
        "--ulimit memlock=-1",
        "--shm-size 16g",
        "--device /dev/infiniband",
        "--cap-add IPC_LOCK",
    ] {
        assert!(text.contains(flag), "missing {flag}:\n{text}");
    }
    assert!(text.contains("--node_rank=\"${NODE_RANK}\""), "{text}");
    let sock = render(
        Kind::Docker,
        &env_for(Profile::Socket),
        &shape(K8sKind::Job),
    )
    .unwrap();
    assert!(!sock.contains("/dev/infiniband"));
}

#[test]
fn tcpx_docker_uses_device_nodes_and_google_mounts() {
    let env = env_for(Profile::GcpA3Tcpx);
    let text = render(Kind::Docker, &env, &shape(K8sKind::Job)).unwrap();
    assert!(!text.contains("--gpus all"));
    assert!(text.contains("--device /dev/nvidia7:/dev/nvidia7"));
    assert!(text.contains("--volume /run/tcpx:/tmp"));
    assert!(text.contains("--volume /var/lib/tcpx:/usr/local/tcpx"));
    assert!(text.contains("--userns=host"));
}

#[test]
fn slurm_script_has_sbatch_headers_and_srun() {
    let env = env_for(Profile::GenericRoce);
    let text = render(Kind::Slurm, &env, &shape(K8sKind::Job)).unwrap();
    for h in [
        "#SBATCH --nodes=2\n",
        "#SBATCH --ntasks-per-node=1\n",
        "#SBATCH --gpus-per-node=8\n",
    ] {
        assert!(text.contains(h), "missing {h}:\n{text}");
    }
    assert!(text.contains("srun --nodes=2"));
    // SLURM_NODEID must expand inside each task.
    assert!(
        text.contains("'torchrun --nnodes=2 --nproc_per_node=8 --node_rank=\"${SLURM_NODEID}\""),
        "{text}"
    );
}

#[test]
fn hostfile_has_slots_and_x_for_every_var() {
    let env = env_for(Profile::GcpA3Tcpx);
    let text = render(Kind::Hostfile, &env, &shape(K8sKind::Job)).unwrap();
    assert!(text.contains("node-0 slots=8\nnode-1 slots=8\n"));
    for v in &env.vars {
        assert!(
            text.contains(&format!("-x {}=", v.name)),
            "no -x for {}",
            v.name
        );
    }
    assert!(text.contains("-np 16"));
}

#[test]
fn shape_errors_are_clear() {
    let env = env_for(Profile::Socket);
    let mut s = shape(K8sKind::Job);
    s.hosts.clear();
    let e = render(Kind::Hostfile, &env, &s).unwrap_err().to_string();
    assert!(e.contains("--hosts"), "{e}");
    let e = render(Kind::Torchrun, &env, &s).unwrap_err().to_string();
    assert!(e.contains("--master-addr"), "{e}");
    let mut s = shape(K8sKind::Job);
    s.image = None;
    assert!(render(Kind::K8s, &env, &s)
        .unwrap_err()
        .to_string()
        .contains("--image"));
    let mut s = shape(K8sKind::Job);
    s.command = "train.py 'unbalanced".into();
    assert!(matches!(
        render(Kind::Torchrun, &env, &s),
        Err(LaunchError::Command(_))
    ));
    let mut s = shape(K8sKind::Job);
    s.name = "Bad_Name".into();
    assert!(render(Kind::K8s, &env, &s).is_err());
}

mod k8s_tests {
    use super::*;
    use k8s_openapi::api::batch::v1::Job;
    use k8s_openapi::api::core::v1::{PodTemplateSpec, Service};
    use serde::de::DeserializeOwned;
    use serde::Serialize;

    fn docs(text: &str) -> Vec<serde_yaml_ng::Value> {
        serde_yaml_ng::Deserializer::from_str(text)
            .map(|d| serde_yaml_ng::Value::deserialize(d).unwrap())
            .collect()
    }
    use serde::Deserialize;

    /// Parses `v` into `T` and checks that writing `T` back gives the same document, so no field
    /// was dropped or misspelt.
    fn round_trip<T: DeserializeOwned + Serialize>(v: &serde_yaml_ng::Value) -> T {
        let typed: T = serde_yaml_ng::from_value(v.clone()).unwrap();
        let back = serde_yaml_ng::to_value(&typed).unwrap();
        assert_eq!(&back, v, "round trip changed the document");
        typed
    }

    fn trainer_pod(t: &PodTemplateSpec) -> &k8s_openapi::api::core::v1::Container {
        t.spec.as_ref().unwrap().containers.first().unwrap()
    }

    #[test]
    fn every_profile_and_k8s_kind_parses_back_into_its_types() {
        for p in Profile::named() {
            let env = env_for(p);
            for kind in K8sKind::ALL {
                let text = render(Kind::K8s, &env, &shape(kind)).unwrap();
                let d = docs(&text);
                match kind {
                    K8sKind::Job => {
                        assert_eq!(d.len(), 2, "{p}");
                        let svc: Service = round_trip(&d[0]);
                        assert_eq!(svc.spec.unwrap().cluster_ip.as_deref(), Some("None"));
                        let job: Job = round_trip(&d[1]);
                        let spec = job.spec.unwrap();
                        assert_eq!(spec.completions, Some(2));
                        assert_eq!(spec.completion_mode.as_deref(), Some("Indexed"));
                        let c = trainer_pod(&spec.template);
                        let envs = c.env.as_ref().unwrap();
                        for v in &env.vars {
                            assert!(
                                envs.iter().any(|e| e.name == v.name
                                    && e.value.as_deref() == Some(v.value.as_str())),
                                "{p}: {} missing",
                                v.name
                            );
                        }
                        let gpus = &c.resources.as_ref().unwrap().limits.as_ref().unwrap()
                            ["nvidia.com/gpu"];
                        assert_eq!(gpus.0, "8");
                    }
                    K8sKind::JobSet => {
                        assert_eq!(d.len(), 1);
                        let js: crate::k8s::crd::JobSet = round_trip(&d[0]);
                        assert_eq!(
                            js.spec.replicated_jobs[0]
                                .template
                                .spec
                                .as_ref()
                                .unwrap()
                                .parallelism,
                            Some(2)
                        );
                    }
                    K8sKind::PyTorchJob => {
                        let pj: crate::k8s::crd::PyTorchJob = round_trip(&d[0]);
                        let w = &pj.spec.pytorch_replica_specs["Worker"];
                        assert_eq!(w.replicas, 1);
                        assert_eq!(trainer_pod(&w.template).name, "pytorch");
                    }
                }
            }
        }
    }

    #[test]
    fn rdma_profiles_get_ipc_lock_and_dev_infiniband_or_a_resource() {
        let env = env_for(Profile::GenericIb);
        let text = render(Kind::K8s, &env, &shape(K8sKind::Job)).unwrap();
        let job: Job = round_trip(&docs(&text)[1]);
        let pod = job.spec.unwrap().template.spec.unwrap();
        assert_eq!(pod.host_network, Some(true));
        let c = &pod.containers[0];
        let sc = c.security_context.as_ref().unwrap();
        assert_eq!(
            sc.capabilities.as_ref().unwrap().add.as_ref().unwrap(),
            &vec!["IPC_LOCK".to_string()]
        );
        assert!(pod.volumes.unwrap().iter().any(|v| v
            .host_path
            .as_ref()
            .is_some_and(|h| h.path == "/dev/infiniband")));

        let mut s = shape(K8sKind::Job);
        s.rdma_resource = Some("rdma/hca_shared_devices_a".into());
        let text = render(Kind::K8s, &env, &s).unwrap();
        let job: Job = round_trip(&docs(&text)[1]);
        let pod = job.spec.unwrap().template.spec.unwrap();
        assert!(!pod
            .volumes
            .unwrap()
            .iter()
            .any(|v| v.name == "dev-infiniband"));
        assert_eq!(
            pod.containers[0]
                .resources
                .as_ref()
                .unwrap()
                .limits
                .as_ref()
                .unwrap()["rdma/hca_shared_devices_a"]
                .0,
            "1"
        );
    }

    #[test]
    fn acs_label_and_no_host_path() {
        let env = env_for(Profile::AlibabaAcsRdma);
        let text = render(Kind::K8s, &env, &shape(K8sKind::Job)).unwrap();
        let job: Job = round_trip(&docs(&text)[1]);
        let t = job.spec.unwrap().template;
        assert_eq!(
            t.metadata.unwrap().labels.unwrap()["alibabacloud.com/hpn-type"],
            "rdma"
        );
        let pod = t.spec.unwrap();
        assert!(!pod
            .volumes
            .unwrap()
            .iter()
            .any(|v| v.name == "dev-infiniband"));
        assert_eq!(pod.host_network, None);
    }

    #[test]
    fn tcpx_pod_has_native_sidecar_and_gke_annotations() {
        let env = env_for(Profile::GcpA3Tcpx);
        let text = render(Kind::K8s, &env, &shape(K8sKind::JobSet)).unwrap();
        let js: crate::k8s::crd::JobSet = round_trip(&docs(&text)[0]);
        let t = js.spec.replicated_jobs[0]
            .template
            .spec
            .clone()
            .unwrap()
            .template;
        let ann = t.metadata.unwrap().annotations.unwrap();
        assert!(ann["networking.gke.io/interfaces"].contains("\"eth4\""));
        let pod = t.spec.unwrap();
        let side = &pod.init_containers.unwrap()[0];
        assert_eq!(side.name, "tcpx-daemon");
        assert_eq!(side.restart_policy.as_deref(), Some("Always"));
        let vols = pod.volumes.unwrap();
        let lib = vols.iter().find(|v| v.name == "libraries").unwrap();
        assert_eq!(
            lib.host_path.as_ref().unwrap().path,
            "/home/kubernetes/bin/nvidia/lib64"
        );
        assert!(vols.iter().any(|v| v.name == "sys"));
        assert!(
            !vols.iter().any(|v| v.name == "tcpx-lib"),
            "docker-only mount leaked into k8s"
        );
    }

    #[test]
    fn job_rank_comes_from_completion_index_and_master_from_service() {
        let env = env_for(Profile::Socket);
        let text = render(Kind::K8s, &env, &shape(K8sKind::Job)).unwrap();
        let job: Job = round_trip(&docs(&text)[1]);
        let c = trainer_pod(&job.spec.unwrap().template).clone();
        let envs = c.env.unwrap();
        let rank = envs.iter().find(|e| e.name == "NODE_RANK").unwrap();
        assert!(rank
            .value_from
            .as_ref()
            .unwrap()
            .field_ref
            .as_ref()
            .unwrap()
            .field_path
            .contains("job-completion-index"));
        let master = envs.iter().find(|e| e.name == "MASTER_ADDR").unwrap();
        assert_eq!(master.value.as_deref(), Some("train-0.train"));
        assert!(c
            .command
            .unwrap()
            .contains(&"--node_rank=$(NODE_RANK)".to_string()));
    }
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever the command and image, rendered shell parses and k8s YAML round-trips.
        #[test]
        fn arbitrary_commands_stay_valid(cmd in "[a-zA-Z0-9 ./=$()'\"-]{1,40}", image in "[a-z0-9./:-]{1,20}") {
            let env = env_for(Profile::GenericIb);
            let mut s = shape(K8sKind::Job);
            s.command = cmd;
            s.image = Some(image);
            match render(Kind::Torchrun, &env, &s) {
                Ok(text) => prop_assert!(bash_syntax_ok(&text).is_ok(), "{}", text),
                Err(LaunchError::Command(_) | LaunchError::Shape(_) | LaunchError::Name { .. }) => {}
                Err(e) => prop_assert!(false, "unexpected {e}"),
            }
            if let Ok(text) = render(Kind::K8s, &env, &s) {
                for d in serde_yaml_ng::Deserializer::from_str(&text) {
                    let v = <serde_yaml_ng::Value as serde::Deserialize>::deserialize(d);
                    prop_assert!(v.is_ok());
                }
            }
        }
    }
}

#[test]
fn efa_pods_get_devices_from_the_efa_resource_not_a_privileged_host_path() {
    use fabrik_model::{Node, Port, RdmaDevice, StateValue};
    let node = Node {
        rdma_devices: (0..2)
            .map(|i| RdmaDevice {
                name: format!("efa_{i}"),
                ports: vec![Port {
                    number: 1,
                    state: Some(StateValue::parse("4: ACTIVE")),
                    ..Port::default()
                }],
                ..RdmaDevice::default()
            })
            .collect(),
        ..Node::default()
    };
    let empty = BTreeMap::new();
    let env = generate(&Request {
        profile: Profile::Auto,
        node: Some(&node),
        existing: &empty,
        keep_env: false,
    })
    .unwrap();
    let text = render(Kind::K8s, &env, &shape(K8sKind::Job)).unwrap();
    assert!(text.contains("vpc.amazonaws.com/efa: '2'"), "{text}");
    assert!(!text.contains("privileged"), "{text}");
    assert!(!text.contains("dev-infiniband"), "{text}");
    let docker = render(Kind::Docker, &env, &shape(K8sKind::Job)).unwrap();
    assert!(docker.contains("--device /dev/infiniband"));
}

#[test]
fn aws_efa_always_requests_efa_and_rdma_resource_is_honoured() {
    let env = env_for(Profile::AwsEfa);
    let efa = |text: &str| {
        text.lines()
            .find(|l| l.contains("vpc.amazonaws.com/efa:"))
            .map(|l| l.trim().to_string())
    };
    // No node: the instance type's count.
    for (t, n) in [
        ("p4d.24xlarge", "4"),
        ("p5.48xlarge", "32"),
        ("p5en.48xlarge", "16"),
    ] {
        let mut s = shape(K8sKind::JobSet);
        s.instance_type = Some(t.into());
        let text = render(Kind::K8s, &env, &s).unwrap();
        assert_eq!(
            efa(&text),
            Some(format!("vpc.amazonaws.com/efa: '{n}'")),
            "{t}"
        );
    }
    // Neither an instance type nor a resource: refused, not a manifest without EFA.
    let mut s = shape(K8sKind::Job);
    s.instance_type = None;
    let e = render(Kind::K8s, &env, &s).unwrap_err().to_string();
    assert!(
        e.contains("--instance-type") && e.contains("p5.48xlarge 32"),
        "{e}"
    );
    s.instance_type = Some("m5.large".into());
    assert!(render(Kind::K8s, &env, &s).is_err());
    // --rdma-resource NAME=COUNT wins, with or without an instance type.
    s.rdma_resource = Some("vpc.amazonaws.com/efa=8".into());
    let text = render(Kind::K8s, &env, &s).unwrap();
    assert_eq!(efa(&text).as_deref(), Some("vpc.amazonaws.com/efa: '8'"));
    s.rdma_resource = Some("vpc.amazonaws.com/efa=0".into());
    assert!(render(Kind::K8s, &env, &s).is_err());
    // On a profile without verbs, --rdma-resource is still requested, not dropped.
    let mut s = shape(K8sKind::Job);
    s.rdma_resource = Some("rdma/hca_shared_devices_a".into());
    let text = render(Kind::K8s, &env_for(Profile::Socket), &s).unwrap();
    assert!(text.contains("rdma/hca_shared_devices_a: '1'"), "{text}");
}

#[test]
fn every_kind_parses_from_its_name_and_an_unknown_one_lists_them() {
    for k in Kind::ALL {
        assert_eq!(k.as_str().parse::<Kind>().unwrap(), k);
    }
    assert_eq!(
        "mpi".parse::<Kind>().unwrap_err().to_string(),
        "unknown launch kind \"mpi\"; known: torchrun, docker, k8s, slurm, hostfile"
    );
}
