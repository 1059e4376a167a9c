//! Results of cluster-wide runs: the all-pairs bandwidth matrix and what its robust statistics
//! say about links and nodes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One direction of one pair, measured in one round of the tournament.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LinkMeasurement {
    pub src: u32,
    pub dst: u32,
    /// Gb/s (1e9 bits per second) from `src` to `dst`.
    pub gbps: f64,
    /// Half the round-trip time of a small message, in microseconds.
    pub latency_us: Option<f64>,
    /// The tournament round it was measured in.
    pub round: u32,
}

/// A link well below the others.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SlowLink {
    pub src: u32,
    pub dst: u32,
    pub src_host: String,
    pub dst_host: String,
    pub gbps: f64,
    /// This link's bandwidth over the median link's.
    pub ratio_to_median: f64,
    /// How many robust standard deviations (1.4826 × MAD of the natural log of Gb/s) below
    /// the median; `None` when the MAD is zero (all other links identical).
    pub robust_z: Option<f64>,
}

/// A node whose links are, as a whole, well below the other nodes'.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SlowNode {
    pub rank: u32,
    pub host: String,
    /// Median over every link to or from this node.
    pub median_gbps: f64,
    pub ratio_to_median: f64,
    /// As for [`SlowLink::robust_z`].
    pub robust_z: Option<f64>,
}

/// Robust statistics over the matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MatrixAnalysis {
    pub links: u32,
    pub median_gbps: f64,
    /// Median absolute deviation from the median (Gb/s).
    pub mad_gbps: f64,
    /// Links below this are reported slow.
    pub link_threshold_gbps: f64,
    pub node_median_gbps: f64,
    pub node_threshold_gbps: f64,
    pub slow_links: Vec<SlowLink>,
    pub slow_nodes: Vec<SlowNode>,
    /// Why there is no verdict (too few links), when there is none.
    pub note: Option<String>,
}

/// `fabrik cluster matrix`: bandwidth (and latency) between every pair of ranks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PairMatrix {
    pub schema_version: u32,
    /// `tcp` or `rdma`.
    pub transport: String,
    /// Bytes per timed transfer.
    pub size: u64,
    pub iterations: u32,
    pub ranks: u32,
    /// Host of each rank, indexed by rank.
    pub hosts: Vec<String>,
    pub rounds: u32,
    pub links: Vec<LinkMeasurement>,
    pub analysis: MatrixAnalysis,
}

/// One rank's node inventory in a cluster-wide doctor run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RankNode {
    pub rank: u32,
    pub host: String,
    pub node: crate::Node,
}

/// `fabrik cluster doctor`: every rank's inventory and the findings over all of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClusterDoctorReport {
    pub schema_version: u32,
    pub ranks: u32,
    pub nodes: Vec<RankNode>,
    pub findings: Vec<crate::Finding>,
    /// What could not be checked, and why.
    pub notes: Vec<String>,
}
