//! Results of cluster-wide runs: the all-pairs bandwidth matrix and what its robust statistics
//! say about links and nodes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One direction of one pair, measured in one round of the tournament.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LinkMeasurement {
    /// The sending rank.
    pub src: u32,
    /// The receiving rank.
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
    /// The sending rank.
    pub src: u32,
    /// The receiving rank.
    pub dst: u32,
    /// Host of `src`.
    pub src_host: String,
    /// Host of `dst`.
    pub dst_host: String,
    /// Gb/s (1e9 bits per second) from `src` to `dst`.
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
    /// The node's rank.
    pub rank: u32,
    /// The node's host name.
    pub host: String,
    /// Median over every link to or from this node.
    pub median_gbps: f64,
    /// This node's median over the median node's.
    pub ratio_to_median: f64,
    /// As for [`SlowLink::robust_z`].
    pub robust_z: Option<f64>,
}

/// Robust statistics over the matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MatrixAnalysis {
    /// Links measured.
    pub links: u32,
    /// Median link bandwidth, Gb/s.
    pub median_gbps: f64,
    /// Median absolute deviation from the median (Gb/s).
    pub mad_gbps: f64,
    /// Links below this are reported slow.
    pub link_threshold_gbps: f64,
    /// Median of the per-node medians, Gb/s.
    pub node_median_gbps: f64,
    /// Nodes whose median is below this are reported slow (Gb/s).
    pub node_threshold_gbps: f64,
    /// Links below `link_threshold_gbps`, slowest first.
    pub slow_links: Vec<SlowLink>,
    /// Nodes below `node_threshold_gbps`, slowest first.
    pub slow_nodes: Vec<SlowNode>,
    /// Why there is no verdict (too few links), when there is none.
    pub note: Option<String>,
}

/// `fabrik cluster matrix`: bandwidth (and latency) between every pair of ranks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PairMatrix {
    /// [`crate::SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// `tcp` or `rdma`.
    pub transport: String,
    /// Bytes per timed transfer.
    pub size: u64,
    /// Timed transfers per link.
    pub iterations: u32,
    /// Number of ranks.
    pub ranks: u32,
    /// Host of each rank, indexed by rank.
    pub hosts: Vec<String>,
    /// Rounds of disjoint pairs the matrix took.
    pub rounds: u32,
    /// Every directed link measured.
    pub links: Vec<LinkMeasurement>,
    /// The robust statistics over `links`.
    pub analysis: MatrixAnalysis,
    /// The rail this matrix ran on (`--per-rail`): every rank's `rail`-th data address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rail: Option<u32>,
    /// The second pass, when the first flagged something: each suspect measured again against
    /// nodes whose every pair passed, to tell a bad node from a bad link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<Isolation>,
    /// What each directed link showed beyond its bandwidth (retransmissions, the spread of its
    /// transfer and round-trip times), first pass and second.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<LinkEvidence>,
    /// The path MTU each rank found towards each partner, probed with don't-fragment set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub path_mtu: Vec<PathMtu>,
    /// The settings each rank ran with that bound every TCP flow to or from it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub settings: Vec<RankSettings>,
    /// Pairs that could not be measured (no connection, a transfer that stalled); the matrix
    /// goes on without them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<PairFailure>,
    /// The verdict: every host or link blamed, once each, with every cause found and why.
    /// Empty when nothing was found (or the run was too small to judge).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub culprits: Vec<Culprit>,
    /// Seconds from the first round to the verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_s: Option<f64>,
}

/// Minimum, median, 90th percentile and maximum of a set of times, in microseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Spread {
    /// How many times were taken.
    pub count: u32,
    /// The shortest.
    pub min_us: f64,
    /// The median.
    pub median_us: f64,
    /// The 90th percentile (nearest rank).
    pub p90_us: f64,
    /// The longest.
    pub max_us: f64,
}

/// Packets a sender had to send again while one direction of a pair was measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Retransmits {
    /// Where the counts come from: `tcp_info` (the sending socket's `tcpi_data_segs_out` and
    /// `tcpi_total_retrans`) or `rdma` (the device port's retry and sequence-error counters).
    pub source: String,
    /// Segments (or packets) sent; `None` when the source does not count them.
    pub sent: Option<u64>,
    /// Segments (or packets) retransmitted, or RDMA retry and sequence-error events.
    pub retransmitted: u64,
    /// Of those, segments the receiver said it already had (TCP's D-SACK, `tcpi_dsack_dups`):
    /// retransmissions a late acknowledgement caused, not packets lost. `None` when the kernel
    /// does not count them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicates: Option<u64>,
    /// The RDMA counters that moved, by name (empty for TCP).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub counters: std::collections::BTreeMap<String, u64>,
}

/// What one directed link showed besides its bandwidth.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LinkEvidence {
    /// The sending rank.
    pub src: u32,
    /// The receiving rank.
    pub dst: u32,
    /// `matrix` (the first pass) or `second`.
    pub pass: String,
    /// Time of each timed transfer as the receiver saw it complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transfers: Option<Spread>,
    /// Half round trips of the one-byte ping-pong (measured by the lower rank, the same on both
    /// directions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<Spread>,
    /// Retransmissions while `src` sent to `dst`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<Retransmits>,
    /// The transfer was cut short at the pair's time budget: the bandwidth is what arrived by
    /// then.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut_short: bool,
}

/// What a rank's own network namespace allows every TCP connection it opens, read by the rank
/// as the matrix starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RankSettings {
    /// The rank.
    pub rank: u32,
    /// `net.ipv4.tcp_rmem` and `tcp_wmem`; `None` where the rank could not read them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_buffers: Option<crate::TcpBuffers>,
}

/// The path MTU `src` found towards `dst`: UDP datagrams sent with don't-fragment set, the
/// largest that `dst` echoed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PathMtu {
    /// The probing rank.
    pub src: u32,
    /// The echoing rank.
    pub dst: u32,
    /// The MTU of `src`'s route to `dst` (its interface's, unless the kernel learnt less).
    pub local_mtu: u32,
    /// `src`'s interface towards `dst`, when it could be named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    /// The largest packet (IP header included) that reached `dst` and came back; `None` when
    /// no probe came back at all.
    pub path_mtu: Option<u32>,
    /// Probe datagrams sent.
    pub probes: u32,
}

/// A pair the matrix could not measure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PairFailure {
    /// The lower rank.
    pub a: u32,
    /// The higher rank.
    pub b: u32,
    /// `matrix` or `second`.
    pub pass: String,
    /// The round it failed in.
    pub round: u32,
    /// What was being done: `connecting`, `path MTU`, `a -> b`, `b -> a`, `latency`.
    pub stage: String,
    /// The error, as each end saw it (the lower rank's first).
    pub errors: Vec<String>,
}

/// The second pass over the suspects of a pair matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Isolation {
    /// Ranks whose every link passed the first pass: the partners of the second.
    pub good: Vec<u32>,
    /// Ranks flagged by the first pass (a slow node, or an end of a slow link).
    pub suspects: Vec<u32>,
    /// A second-pass link below this is slow: the first pass's slow-link rule drawn over the
    /// links among good nodes (the whole matrix's line with fewer than 4 of them).
    pub threshold_gbps: f64,
    /// Rounds of disjoint pairs the second pass took.
    pub rounds: u32,
    /// Every link measured in the second pass (`round` counts its own rounds).
    pub links: Vec<LinkMeasurement>,
    /// One per culprit found (or one `undecided`).
    pub verdicts: Vec<Culprit>,
}

/// What the second pass blames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CulpritKind {
    /// The node is slow with nodes that passed everything: its NIC, port, cable or host.
    Node,
    /// Both ends are at pace with good nodes but slow with each other: the path between them.
    Link,
    /// The link was slow in the matrix and at pace when measured again.
    NotReproduced,
    /// No node passed every pair, so there was no good partner to compare with.
    Undecided,
}

/// What a culprit did wrong.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// Its bandwidth is far below its peers'.
    Bandwidth,
    /// Its packets are lost: retransmissions (or RDMA retries) well above its peers'.
    Loss,
    /// Its round trips take far longer than its peers'.
    Latency,
    /// Its MTU differs from its peers', or a path drops packets its interfaces allow (a black
    /// hole).
    Mtu,
    /// Pairs with it could not be measured at all (no connection, or a transfer that stalled).
    Unreachable,
    /// Its TCP buffer limits (`net.ipv4.tcp_rmem` / `tcp_wmem` max) are below its peers': no
    /// TCP flow to or from it can keep more than that in flight.
    TcpBuffers,
}

/// One verdict of the second pass, with the measurements it rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Culprit {
    /// What is blamed.
    pub kind: CulpritKind,
    /// The node (one rank), or the pair's two ranks (lower first).
    pub ranks: Vec<u32>,
    /// Host of each of `ranks`.
    pub hosts: Vec<String>,
    /// The verdict in words.
    pub why: String,
    /// The directed measurements the verdict rests on, first pass then second.
    pub evidence: Vec<PairEvidence>,
    /// What it did wrong (several when one host shows several faults); empty in a second
    /// pass's own verdicts, which judge bandwidth alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<Cause>,
}

/// One directed measurement a verdict rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PairEvidence {
    /// The sending rank.
    pub src: u32,
    /// The receiving rank.
    pub dst: u32,
    /// Gb/s from `src` to `dst`.
    pub gbps: f64,
    /// `matrix` (the first pass) or `second` (the second pass).
    pub pass: String,
    /// Below the slow-link line.
    pub slow: bool,
}

/// One rank's node inventory in a cluster-wide doctor run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RankNode {
    /// The rank that probed `node`.
    pub rank: u32,
    /// That rank's host name.
    pub host: String,
    /// What probing found on that host.
    pub node: crate::Node,
}

/// `fabrik cluster doctor`: every rank's inventory and the findings over all of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClusterDoctorReport {
    /// [`crate::SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// Number of ranks.
    pub ranks: u32,
    /// Each rank's inventory, by rank.
    pub nodes: Vec<RankNode>,
    /// Findings over all nodes, sorted by [`crate::sort_findings`].
    pub findings: Vec<crate::Finding>,
    /// What could not be checked, and why.
    pub notes: Vec<String>,
}
