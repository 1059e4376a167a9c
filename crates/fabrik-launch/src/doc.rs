//! A rendered launch file with what it was made from, as `fabrik launch --format json` writes
//! it, and the job-shape defaults a probed node gives.

use fabrik_model::{Node, SCHEMA_VERSION};
use fabrik_nccl::Env;
use serde::Serialize;

use crate::{JobShape, Kind};

/// A launch file and the environment it carries.
#[derive(Debug, Serialize)]
pub struct LaunchDoc<'a> {
    /// The document's schema version.
    pub schema_version: u32,
    /// The target rendered.
    pub kind: &'static str,
    /// The Kubernetes object, for the `k8s` target.
    pub k8s_kind: Option<&'static str>,
    /// The environment's profile.
    pub profile: &'a str,
    /// The launch file.
    pub text: &'a str,
    /// The environment it carries.
    pub env: &'a Env,
}

impl<'a> LaunchDoc<'a> {
    /// The document of `text`, rendered as `kind` for `shape` with `env`.
    pub fn new(kind: Kind, shape: &JobShape, env: &'a Env, text: &'a str) -> Self {
        LaunchDoc {
            schema_version: SCHEMA_VERSION,
            kind: kind.as_str(),
            k8s_kind: (kind == Kind::K8s).then(|| shape.k8s_kind.as_str()),
            profile: &env.profile,
            text,
            env,
        }
    }
}

/// GPUs (ranks) per node: as given, else the GPUs found on the probed node, else 8.
pub fn gpus_per_node(given: Option<u32>, node: Option<&Node>) -> u32 {
    let found = node
        .map(|n| n.gpus.len())
        .and_then(|g| u32::try_from(g).ok())
        .filter(|g| *g > 0);
    given.or(found).unwrap_or(8)
}
