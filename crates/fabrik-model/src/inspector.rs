//! What the files of NCCL's Inspector profiler plugin say: the straggler of each collective
//! and every rank's record. `fabrik_parse::inspector` reads the files into these.

use serde::{Deserialize, Serialize};

use crate::Finding;

/// The straggler of one collective.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Straggler {
    /// The communicator.
    pub comm: String,
    /// Its name, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comm_name: Option<String>,
    /// The operation.
    pub op: String,
    /// Its sequence number.
    pub sn: u64,
    /// Message size.
    pub bytes: Option<u64>,
    /// The rank the others waited for.
    pub rank: u64,
    /// Its host.
    pub host: Option<String>,
    /// How late it was, in µs.
    pub lag_us: f64,
    /// The median execution time of the collective's ranks.
    pub median_us: f64,
    /// Ranks compared.
    pub ranks: u64,
    /// `start` (latest kernel start) or `exec` (shortest execution time).
    pub by: String,
}

/// A rank's record over all collectives compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankLag {
    /// The communicator.
    pub comm: String,
    /// The rank.
    pub rank: u64,
    /// Its host.
    pub host: Option<String>,
    /// Its process.
    pub pid: Option<u64>,
    /// The NICs its process listed in the NCCL log given with it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nics: Vec<String>,
    /// Collectives of its communicator compared.
    pub compared: u64,
    /// In how many it was the straggler.
    pub straggler: u64,
    /// Mean lag when it was.
    pub mean_lag_us: f64,
    /// Largest lag.
    pub max_lag_us: f64,
}

/// What the Inspector files say.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct InspectorReport {
    /// The JSON schema version of this document.
    pub schema_version: u32,
    /// Records read.
    pub records: u64,
    /// Records not analysed (over the memory bound).
    pub dropped: u64,
    /// Collectives seen by at least two ranks.
    pub compared: u64,
    /// The stragglers, largest lag first (at most 64).
    pub stragglers: Vec<Straggler>,
    /// Per communicator and rank, ranks that were stragglers first.
    pub ranks: Vec<RankLag>,
    /// The findings.
    pub findings: Vec<Finding>,
}
