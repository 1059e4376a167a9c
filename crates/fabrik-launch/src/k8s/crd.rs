//! Typed, minimal mirrors of the two CRDs fabrik writes. No maintained Rust crate publishes
//! JobSet or Kubeflow training types, so these follow the upstream Go schemas
//! (sigs.k8s.io/jobset api/jobset/v1alpha2, kubeflow/training-operator pkg/apis/kubeflow.org/v1)
//! for the fields fabrik sets; `deny_unknown_fields` makes the round-trip tests catch a field
//! written under the wrong name.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::JobTemplateSpec;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

/// The JobSet API version fabrik writes.
pub const JOBSET_API_VERSION: &str = "jobset.x-k8s.io/v1alpha2";
/// The Kubeflow training-operator API version fabrik writes.
pub const PYTORCHJOB_API_VERSION: &str = "kubeflow.org/v1";

/// A `jobset.x-k8s.io` JobSet object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JobSet {
    /// `jobset.x-k8s.io/v1alpha2`.
    pub api_version: String,
    /// `JobSet`.
    pub kind: String,
    /// Name, namespace and labels.
    pub metadata: ObjectMeta,
    /// The jobs it runs.
    pub spec: JobSetSpec,
}

/// What a JobSet runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JobSetSpec {
    /// The jobs, each replicated `replicas` times.
    pub replicated_jobs: Vec<ReplicatedJob>,
    /// Pod DNS names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<JobSetNetwork>,
    /// How often the whole set restarts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_policy: Option<JobSetFailurePolicy>,
}

/// One Job template, replicated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplicatedJob {
    /// The job's name inside the set.
    pub name: String,
    /// How many copies of the Job run.
    pub replicas: i32,
    /// The Job each copy runs.
    pub template: JobTemplateSpec,
}

/// A JobSet's network settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JobSetNetwork {
    // jobset_types.go: `json:"enableDNSHostnames,omitempty"`; camelCase would write
    // `enableDnsHostnames`, which the API server drops (and strict validation rejects), leaving
    // pods without the DNS names the rendezvous uses.
    #[serde(
        default,
        rename = "enableDNSHostnames",
        skip_serializing_if = "Option::is_none"
    )]
    /// Gives every pod a stable DNS name (`<jobset>-<job>-<index>-<pod>.<subdomain>`).
    pub enable_dns_hostnames: Option<bool>,
    /// The headless Service's name, the pods' DNS subdomain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subdomain: Option<String>,
}

/// When a JobSet is restarted after a failed Job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JobSetFailurePolicy {
    /// How many times the whole set is restarted before it fails.
    pub max_restarts: i32,
}

/// A Kubeflow `kubeflow.org/v1` PyTorchJob object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PyTorchJob {
    /// `kubeflow.org/v1`.
    pub api_version: String,
    /// `PyTorchJob`.
    pub kind: String,
    /// Name, namespace and labels.
    pub metadata: ObjectMeta,
    /// The replicas it runs.
    pub spec: PyTorchJobSpec,
}

/// What a PyTorchJob runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PyTorchJobSpec {
    /// `Master` and `Worker`.
    pub pytorch_replica_specs: BTreeMap<String, ReplicaSpec>,
    /// A string in kubeflow.org/v1 (`"8"`, `"auto"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nproc_per_node: Option<String>,
    /// Pod clean-up and retries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_policy: Option<RunPolicy>,
}

/// One replica type (`Master` or `Worker`) of a PyTorchJob.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplicaSpec {
    /// How many pods of this type run.
    pub replicas: i32,
    /// The pods' restart policy (`OnFailure`, `Never`).
    pub restart_policy: String,
    /// The pod each replica runs.
    pub template: PodTemplateSpec,
}

/// A PyTorchJob's run policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunPolicy {
    /// Which pods are deleted when the job ends (`None`, `Running`, `All`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clean_pod_policy: Option<String>,
    /// How many retries before the job is marked failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_limit: Option<i32>,
}
