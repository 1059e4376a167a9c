//! The pod every Kubernetes kind runs: the trainer container with the environment, GPUs, RDMA
//! access, and the platform's sidecar.

use std::collections::BTreeMap;

use fabrik_nccl::{Env, Runtime, Transport};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, EmptyDirVolumeSource, EnvVar, EnvVarSource, HostPathVolumeSource,
    ObjectFieldSelector, PodSpec, PodTemplateSpec, ResourceRequirements, SecurityContext, Volume,
    VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::words::Word;
use crate::{JobShape, LaunchError};

/// How the trainer learns its node rank and the rendezvous address.
pub(crate) struct Rendezvous {
    /// Extra env entries (NODE_RANK from the completion index, MASTER_ADDR...).
    pub env: Vec<EnvVar>,
    pub command: Vec<Word>,
}

/// An env entry with a literal value: the kubelet expands `$(VAR)` in env values, so every
/// `$` is doubled ([`fabrik_quote::kube::literal`]).
pub(crate) fn env_value(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: Some(fabrik_quote::kube::literal(value).into_owned()),
        ..EnvVar::default()
    }
}

/// NODE_RANK from the Indexed Job's completion-index annotation, which every Kubernetes
/// version with Indexed Jobs sets.
pub(crate) fn node_rank_from_index() -> EnvVar {
    EnvVar {
        name: "NODE_RANK".into(),
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: "metadata.annotations['batch.kubernetes.io/job-completion-index']"
                    .into(),
                ..ObjectFieldSelector::default()
            }),
            ..EnvVarSource::default()
        }),
        ..EnvVar::default()
    }
}

fn host_path_volume(name: &str, path: &str) -> Volume {
    Volume {
        name: name.into(),
        host_path: Some(HostPathVolumeSource {
            path: path.into(),
            ..HostPathVolumeSource::default()
        }),
        ..Volume::default()
    }
}

fn mount(name: &str, path: &str) -> VolumeMount {
    VolumeMount {
        name: name.into(),
        mount_path: path.into(),
        ..VolumeMount::default()
    }
}

/// Whether RDMA devices come from a privileged `/dev/infiniband` host path (no device plugin
/// named).
pub(crate) fn uses_dev_infiniband_host_path(rt: &Runtime, shape: &JobShape) -> bool {
    rt.needs_rdma_devices && !rt.k8s_rdma_injected && shape.rdma_resource.is_none()
}

pub(crate) const EFA_RESOURCE: &str = "vpc.amazonaws.com/efa";

/// EFA interfaces (network cards) per EFA instance type, from AWS's instance type
/// specifications (https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html, "Network
/// cards") and its multi-card EFA guide
/// (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html: P5 and P5e up
/// to 32 network cards, G6e up to 4). The EKS EFA device plugin advertises one
/// `vpc.amazonaws.com/efa` per interface.
pub const EFA_INTERFACES: &[(&str, u32)] = &[
    ("p4d.24xlarge", 4),
    ("p4de.24xlarge", 4),
    ("p5.48xlarge", 32),
    ("p5e.48xlarge", 32),
    ("p5en.48xlarge", 16),
    ("g6e.48xlarge", 4),
];

/// `NAME` or `NAME=COUNT`.
fn parse_resource(r: &str) -> (String, String) {
    match r.split_once('=') {
        Some((n, c)) => (n.trim().to_string(), c.trim().to_string()),
        None => (r.trim().to_string(), "1".to_string()),
    }
}

/// The device resources the trainer requests: the profile's (EFA counted on a probed node),
/// for EFA without a node the instance type's count, and `--rdma-resource` whenever given (it
/// overrides a profile's count for the same resource). EFA with none of them is an error: a
/// pod without `vpc.amazonaws.com/efa` gets no EFA device and NCCL falls back to sockets.
pub(crate) fn rdma_requests(
    env: &Env,
    shape: &JobShape,
) -> Result<BTreeMap<String, String>, LaunchError> {
    let mut out: BTreeMap<String, String> = env.runtime.k8s_resources.clone();
    if env.transport == Transport::Efa && !out.contains_key(EFA_RESOURCE) {
        if let Some(t) = &shape.instance_type {
            match EFA_INTERFACES.iter().find(|(name, _)| name == t) {
                Some((_, n)) => {
                    out.insert(EFA_RESOURCE.into(), n.to_string());
                }
                None if shape.rdma_resource.is_none() => {
                    return Err(LaunchError::Shape(format!(
                        "instance type {t:?} has no known EFA count (known: {}); pass --rdma-resource {EFA_RESOURCE}=N",
                        known_efa()
                    )))
                }
                None => {}
            }
        }
    }
    if let Some(r) = &shape.rdma_resource {
        let (name, count) = parse_resource(r);
        if name.is_empty() || count.parse::<u32>().map_or(true, |c| c == 0) {
            return Err(LaunchError::Shape(format!(
                "--rdma-resource {r:?} is not NAME or NAME=COUNT with COUNT ≥ 1"
            )));
        }
        out.insert(name, count);
    }
    if env.transport == Transport::Efa && !out.contains_key(EFA_RESOURCE) {
        return Err(LaunchError::Shape(format!(
            "--profile aws-efa needs the number of EFA interfaces to request {EFA_RESOURCE}: pass --instance-type ({}), --rdma-resource {EFA_RESOURCE}=N, or probe the node (--root)",
            known_efa()
        )));
    }
    Ok(out)
}

fn known_efa() -> String {
    EFA_INTERFACES
        .iter()
        .map(|(t, n)| format!("{t} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Words the kubelet must not expand (see [`env_value`]).
fn literals(words: &[String]) -> Vec<String> {
    words
        .iter()
        .map(|w| fabrik_quote::kube::literal(w).into_owned())
        .collect()
}

pub(crate) fn pod_template(
    env: &Env,
    shape: &JobShape,
    rdv: Rendezvous,
    restart_policy: Option<&str>,
) -> PodTemplateSpec {
    let rt = &env.runtime;
    let mut labels = BTreeMap::new();
    labels.insert("app.kubernetes.io/name".to_string(), shape.name.clone());
    labels.insert(
        "app.kubernetes.io/managed-by".to_string(),
        "fabrik".to_string(),
    );
    labels.extend(rt.k8s_labels.clone());

    let mut volumes = vec![Volume {
        name: "dshm".into(),
        empty_dir: Some(EmptyDirVolumeSource {
            medium: Some("Memory".into()),
            size_limit: Some(Quantity(rt.shm_size.clone())),
            ..EmptyDirVolumeSource::default()
        }),
        ..Volume::default()
    }];
    let mut mounts = vec![mount("dshm", "/dev/shm")];
    let dev_ib = uses_dev_infiniband_host_path(rt, shape);
    if dev_ib {
        volumes.push(host_path_volume("dev-infiniband", "/dev/infiniband"));
        mounts.push(mount("dev-infiniband", "/dev/infiniband"));
    }
    let add_volume = |volumes: &mut Vec<Volume>, m: &fabrik_nccl::env::Mount| {
        if !volumes.iter().any(|v| v.name == m.name) {
            volumes.push(host_path_volume(
                &m.name,
                m.k8s_host_path.as_deref().unwrap_or(&m.host_path),
            ));
        }
    };
    for m in rt.mounts.iter().filter(|m| !m.docker_only) {
        add_volume(&mut volumes, m);
        mounts.push(mount(&m.name, &m.container_path));
    }

    let mut limits = BTreeMap::new();
    limits.insert(
        "nvidia.com/gpu".to_string(),
        Quantity(shape.gpus_per_node.to_string()),
    );
    for (k, v) in rdma_requests(env, shape).unwrap_or_default() {
        limits.insert(k, Quantity(v));
    }

    let mut env_list: Vec<EnvVar> = env
        .vars
        .iter()
        .map(|v| env_value(&v.name, &v.value))
        .collect();
    env_list.extend(rdv.env);

    let mut caps = Vec::new();
    if rt.ipc_lock {
        caps.push("IPC_LOCK".to_string());
    }
    let security = SecurityContext {
        capabilities: (!caps.is_empty()).then(|| Capabilities {
            add: Some(caps),
            ..Capabilities::default()
        }),
        // Opening /dev/infiniband through a host path needs the device cgroup opened too.
        privileged: dev_ib.then_some(true),
        ..SecurityContext::default()
    };

    let trainer = Container {
        name: "trainer".into(),
        image: shape.image.clone(),
        command: Some(rdv.command.iter().map(Word::k8s).collect()),
        env: Some(env_list),
        resources: Some(ResourceRequirements {
            limits: Some(limits),
            ..ResourceRequirements::default()
        }),
        security_context: Some(security),
        volume_mounts: Some(mounts),
        ..Container::default()
    };

    // A native sidecar (init container that keeps running) lets the Job finish when the
    // trainer does, which a plain second container would not.
    let init_containers = rt.k8s_sidecar.as_ref().map(|s| {
        for m in &s.mounts {
            add_volume(&mut volumes, m);
        }
        vec![Container {
            name: s.name.clone(),
            image: Some(s.image.clone()),
            command: Some(literals(&s.command)),
            args: Some(literals(&s.args)),
            restart_policy: Some("Always".into()),
            env: Some(s.env.iter().map(|(k, v)| env_value(k, v)).collect()),
            security_context: Some(SecurityContext {
                capabilities: Some(Capabilities {
                    add: Some(s.capabilities.clone()),
                    ..Capabilities::default()
                }),
                ..SecurityContext::default()
            }),
            volume_mounts: Some(
                s.mounts
                    .iter()
                    .map(|m| mount(&m.name, &m.container_path))
                    .collect(),
            ),
            ..Container::default()
        }]
    });

    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(labels),
            annotations: (!rt.k8s_annotations.is_empty()).then(|| rt.k8s_annotations.clone()),
            ..ObjectMeta::default()
        }),
        spec: Some(PodSpec {
            host_network: rt.host_network.then_some(true),
            dns_policy: rt
                .host_network
                .then(|| "ClusterFirstWithHostNet".to_string()),
            restart_policy: restart_policy.map(Into::into),
            init_containers,
            containers: vec![trainer],
            volumes: Some(volumes),
            ..PodSpec::default()
        }),
    }
}
