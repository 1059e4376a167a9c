//! What a remedy works on and what it gives: a finding on one node ([`Target`]) and the plan
//! entries for it ([`Planned`]), with the helpers every remedy family shares.

use std::collections::BTreeMap;

use fabrik_model::Finding;
use serde::Serialize;

use super::Change;
use crate::cluster::NamedNode;
use crate::expect::Expectations;

/// A finding on one node, with what the plan may consult.
pub struct Target<'a> {
    /// The finding.
    pub finding: &'a Finding,
    /// Its subject without the node prefix a report of several nodes adds (`mlx5_0:1`).
    pub subject: &'a str,
    /// The node it is about.
    pub node: &'a NamedNode,
    /// Every node of the report (the peers of a cross-node finding).
    pub nodes: &'a [NamedNode],
    /// The expectations file, when one was given.
    pub expect: Option<&'a Expectations>,
}

/// One entry of a plan for a finding.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Planned {
    /// A change, with the value the node showed.
    Change {
        /// The change.
        change: Change,
        /// The value before, as probed (`None` when the node's data does not hold it).
        previous: Option<String>,
    },
    /// What a person must do.
    Manual {
        /// The sentence.
        what: String,
    },
}

/// NVIDIA's (Mellanox's) PCI vendor id: `mstconfig` drives only its NICs.
pub(super) const MELLANOX_VENDOR: &str = "0x15b3";

/// The value most entries of `count` hold, with how many hold it; `None` with no single
/// majority.
pub(super) fn majority<T: Clone>(count: BTreeMap<T, usize>) -> Option<(T, usize)> {
    let best = *count.values().max()?;
    let mut leaders = count.into_iter().filter(|(_, c)| *c == best);
    let first = leaders.next()?;
    if leaders.next().is_some() {
        return None;
    }
    Some(first)
}
