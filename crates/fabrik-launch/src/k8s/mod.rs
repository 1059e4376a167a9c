//! Kubernetes manifests from typed API objects: k8s-openapi for core and batch, [`crd`] for
//! JobSet and PyTorchJob.

pub mod crd;
mod pod;

use std::collections::BTreeMap;

use fabrik_nccl::Env;
use k8s_openapi::api::batch::v1::{Job, JobSpec, JobTemplateSpec};
use k8s_openapi::api::core::v1::{ContainerPort, Service, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;

use crate::torchrun::torchrun_words;
use crate::words::Word;
use crate::{JobShape, K8sKind, LaunchError};

use pod::{env_value, node_rank_from_index, pod_template, Rendezvous};

fn meta(name: &str) -> ObjectMeta {
    let mut labels = BTreeMap::new();
    labels.insert("app.kubernetes.io/name".to_string(), name.to_string());
    labels.insert(
        "app.kubernetes.io/managed-by".to_string(),
        "fabrik".to_string(),
    );
    ObjectMeta {
        name: Some(name.into()),
        labels: Some(labels),
        ..ObjectMeta::default()
    }
}

fn yaml<T: Serialize>(v: &T) -> Result<String, LaunchError> {
    // YAML 1.1 readers (kubectl, PyYAML) must read what YAML 1.2 readers read: `on` quoted.
    fabrik_nccl::yaml::to_string(v).map_err(|e| LaunchError::Yaml(e.to_string()))
}

fn indexed_rendezvous(shape: &JobShape, master: &str) -> Result<Rendezvous, LaunchError> {
    Ok(Rendezvous {
        env: vec![
            node_rank_from_index(),
            env_value("MASTER_ADDR", master),
            env_value("MASTER_PORT", &shape.master_port.to_string()),
        ],
        command: torchrun_words(
            shape,
            Word::var("", "NODE_RANK"),
            Word::var("", "MASTER_ADDR"),
            Word::var("", "MASTER_PORT"),
        )?,
    })
}

fn indexed_job_spec(
    env: &Env,
    shape: &JobShape,
    rdv: Rendezvous,
    subdomain: Option<&str>,
) -> JobSpec {
    let mut template = pod_template(env, shape, rdv, Some("Never"));
    if let (Some(spec), Some(sub)) = (template.spec.as_mut(), subdomain) {
        spec.subdomain = Some(sub.into());
    }
    let n = i32::try_from(shape.nodes).unwrap_or(i32::MAX);
    JobSpec {
        completions: Some(n),
        parallelism: Some(n),
        completion_mode: Some("Indexed".into()),
        backoff_limit: Some(0),
        template,
        ..JobSpec::default()
    }
}

/// The manifest's head comment; every line goes through YAML's comment quoting whole, since
/// profile notes carry node facts (device and interface names, kept values).
fn header(env: &Env, shape: &JobShape) -> String {
    let launcher = format!("k8s ({})", shape.k8s_kind);
    let mut lines = vec![
        format!(
            "{}, profile {}",
            crate::torchrun::job_line(&launcher, shape),
            env.profile
        ),
        env.summary.clone(),
    ];
    if pod::uses_dev_infiniband_host_path(&env.runtime, shape) {
        lines.push("RDMA: /dev/infiniband from the host (privileged); pass --rdma-resource NAME to use a device plugin instead".into());
    }
    lines.extend(env.notes.iter().map(|n| n.message.clone()));
    lines
        .iter()
        .map(|l| format!("# {}\n", fabrik_quote::yaml::comment(l)))
        .collect()
}

/// The manifests for `shape.k8s_kind`, as multi-document YAML.
pub(crate) fn render(env: &Env, shape: &JobShape) -> Result<String, LaunchError> {
    // Refuse before writing anything: an EFA job without its EFA request runs on sockets.
    pod::rdma_requests(env, shape)?;
    let mut out = header(env, shape);
    let name = shape.name.as_str();
    match shape.k8s_kind {
        K8sKind::Job => {
            // Indexed Job pods are named NAME-INDEX; with the headless Service as their
            // subdomain, rank 0 resolves as NAME-0.NAME.
            let master = shape
                .master_addr
                .clone()
                .unwrap_or_else(|| format!("{name}-0.{name}"));
            let svc = Service {
                metadata: meta(name),
                spec: Some(ServiceSpec {
                    cluster_ip: Some("None".into()),
                    publish_not_ready_addresses: Some(true),
                    selector: Some(
                        [("app.kubernetes.io/name".to_string(), name.to_string())]
                            .into_iter()
                            .collect(),
                    ),
                    ..ServiceSpec::default()
                }),
                status: None,
            };
            let job = Job {
                metadata: meta(name),
                spec: Some(indexed_job_spec(
                    env,
                    shape,
                    indexed_rendezvous(shape, &master)?,
                    Some(name),
                )),
                status: None,
            };
            out.push_str(&yaml(&svc)?);
            out.push_str("---\n");
            out.push_str(&yaml(&job)?);
        }
        K8sKind::JobSet => {
            // JobSet names pods JOBSET-REPLICATEDJOB-JOBINDEX-PODINDEX under the subdomain JOBSET.
            let master = shape
                .master_addr
                .clone()
                .unwrap_or_else(|| format!("{name}-node-0-0.{name}"));
            let js = crd::JobSet {
                api_version: crd::JOBSET_API_VERSION.into(),
                kind: "JobSet".into(),
                metadata: meta(name),
                spec: crd::JobSetSpec {
                    replicated_jobs: vec![crd::ReplicatedJob {
                        name: "node".into(),
                        replicas: 1,
                        template: JobTemplateSpec {
                            metadata: None,
                            spec: Some(indexed_job_spec(
                                env,
                                shape,
                                indexed_rendezvous(shape, &master)?,
                                None,
                            )),
                        },
                    }],
                    network: Some(crd::JobSetNetwork {
                        enable_dns_hostnames: Some(true),
                        subdomain: None,
                    }),
                    failure_policy: Some(crd::JobSetFailurePolicy { max_restarts: 0 }),
                },
            };
            out.push_str(&yaml(&js)?);
        }
        K8sKind::PyTorchJob => {
            // The training operator injects MASTER_ADDR, MASTER_PORT and RANK (the replica's
            // node rank) into the container named `pytorch`, listening on its
            // `pytorchjob-port`.
            let rdv = || -> Result<Rendezvous, LaunchError> {
                Ok(Rendezvous {
                    env: vec![],
                    command: torchrun_words(
                        shape,
                        Word::var("", "RANK"),
                        Word::var("", "MASTER_ADDR"),
                        Word::var("", "MASTER_PORT"),
                    )?,
                })
            };
            let template = || -> Result<_, LaunchError> {
                let mut t = pod_template(env, shape, rdv()?, None);
                if let Some(c) = t.spec.as_mut().and_then(|s| s.containers.first_mut()) {
                    c.name = "pytorch".into();
                    c.ports = Some(vec![ContainerPort {
                        name: Some("pytorchjob-port".into()),
                        container_port: i32::from(shape.master_port),
                        ..ContainerPort::default()
                    }]);
                }
                Ok(t)
            };
            let mut specs = BTreeMap::new();
            specs.insert(
                "Master".to_string(),
                crd::ReplicaSpec {
                    replicas: 1,
                    restart_policy: "OnFailure".into(),
                    template: template()?,
                },
            );
            if shape.nodes > 1 {
                specs.insert(
                    "Worker".to_string(),
                    crd::ReplicaSpec {
                        replicas: i32::try_from(shape.nodes - 1).unwrap_or(i32::MAX),
                        restart_policy: "OnFailure".into(),
                        template: template()?,
                    },
                );
            }
            let pj = crd::PyTorchJob {
                api_version: crd::PYTORCHJOB_API_VERSION.into(),
                kind: "PyTorchJob".into(),
                metadata: meta(name),
                spec: crd::PyTorchJobSpec {
                    pytorch_replica_specs: specs,
                    nproc_per_node: Some(shape.gpus_per_node.to_string()),
                    run_policy: Some(crd::RunPolicy {
                        clean_pod_policy: Some("Running".into()),
                        backoff_limit: Some(0),
                    }),
                },
            };
            out.push_str(&yaml(&pj)?);
        }
    }
    Ok(out)
}
