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

pub const JOBSET_API_VERSION: &str = "jobset.x-k8s.io/v1alpha2";
pub const PYTORCHJOB_API_VERSION: &str = "kubeflow.org/v1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JobSet {
    pub api_version: String,
    pub kind: String,
    pub metadata: ObjectMeta,
    pub spec: JobSetSpec,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JobSetSpec {
    pub replicated_jobs: Vec<ReplicatedJob>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<JobSetNetwork>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_policy: Option<JobSetFailurePolicy>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplicatedJob {
    pub name: String,
    pub replicas: i32,
    pub template: JobTemplateSpec,
}

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
    pub enable_dns_hostnames: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subdomain: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JobSetFailurePolicy {
    pub max_restarts: i32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PyTorchJob {
    pub api_version: String,
    pub kind: String,
    pub metadata: ObjectMeta,
    pub spec: PyTorchJobSpec,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PyTorchJobSpec {
    /// `Master` and `Worker`.
    pub pytorch_replica_specs: BTreeMap<String, ReplicaSpec>,
    /// A string in kubeflow.org/v1 (`"8"`, `"auto"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nproc_per_node: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_policy: Option<RunPolicy>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplicaSpec {
    pub replicas: i32,
    pub restart_policy: String,
    pub template: PodTemplateSpec,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunPolicy {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clean_pod_policy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_limit: Option<i32>,
}
