//! NCCL RAS reports: what `ncclras` prints (NCCL 2.24 and later: text; 2.28.7 and later also
//! `ncclras -f json`). The shapes follow NCCL's src/ras/client_support.cc at v2.24.3, v2.26.2,
//! v2.28.9 and v2.30.7: a job summary (nodes, processes, GPUs, the outlier nodes), a table of
//! communicator groups with their status (RUNNING, INIT, FINALIZE, ABORT, NOCOMM) and errors
//! (INCOMPLETE, MISMATCH, ERROR), then the `Errors` and `Warnings` sections that name ranks,
//! GPUs, processes and nodes. RAS is the best evidence of a straggler or a dead node: the ranks
//! whose operation counts lag are the ones the rest of the job waits for.
//!
//! The module reads each form in its own file: [`text`] (the report `ncclras` prints), [`json`]
//! (`ncclras -f json`), [`findings`] (what a report supports), [`diag`] (the `NCCL DIAG` lines of
//! RAS and active diagnostics, NCCL 2.31+), [`monitor`] (the event stream of `ncclras -m`) and
//! [`protocol`] (the RAS client protocol, as bytes); [`client`] holds the session with a job's
//! RAS port over TCP.

pub mod client;
pub mod diag;
pub mod findings;
pub mod json;
pub mod monitor;
pub mod protocol;
pub mod text;

pub use findings::{findings, summary_text};
pub use json::parse_json;
pub use text::RasTextParser;

use serde::{Deserialize, Serialize};

/// Most entries kept per list (hostile input cannot grow memory without bound).
pub(crate) const MAX_ITEMS: usize = 4096;
/// Largest JSON document buffered (about 60 000 ranks of `ncclras -f json`).
pub const MAX_JSON: usize = 32 << 20;
/// Most report lines read after the `Job summary` title: every stored item comes from one line,
/// A rank (or a process) as RAS names it: `Rank 12 -- GPU 4 managed by process 323032 on node
/// 10.137.190.124`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct RasRank {
    /// The rank, when RAS names one.
    pub rank: Option<u64>,
    /// The GPU (`4`).
    pub gpu: Option<String>,
    /// The process id.
    pub pid: Option<u64>,
    /// The node's address or name.
    pub node: Option<String>,
    /// `has status RUNNING`, `reported ncclRemoteError`...
    pub status: Option<String>,
    /// `has launched up to operation 641` (0: none launched).
    pub launched: Option<u64>,
}

/// A row of the communicators table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RasGroup {
    /// The group's number in the table.
    pub group: u64,
    /// Communicators in the group.
    pub comms: u64,
    /// Nodes per communicator.
    pub nodes_per_comm: u64,
    /// Ranks per node, as printed (a number or a range).
    pub ranks_per_node: String,
    /// Ranks per communicator.
    pub ranks_per_comm: u64,
    /// Ranks in the whole group.
    pub ranks_in_group: u64,
    /// The status column.
    pub status: String,
    /// The errors column, split into its entries.
    pub errors: Vec<String>,
}

/// One group of ranks of a mismatch: `30 ranks have launched up to operation 640`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RasCount {
    /// How many ranks share the value.
    pub count: u64,
    /// The operation count, or the status / error text.
    pub value: String,
    /// The ranks RAS listed for this value (it lists the minority only).
    pub ranks: Vec<RasRank>,
}

/// A `#G-C (hash) KIND` entry of the Errors or Warnings section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RasCommIssue {
    /// `#0-0`.
    pub id: String,
    /// The communicator's hash.
    pub hash: String,
    /// INCOMPLETE, ERROR or MISMATCH.
    pub kind: String,
    /// `Communicator ranks have different AllGather operation counts` and the like.
    pub what: Vec<String>,
    /// The collective whose counts differ (`AllGather`), when named.
    pub op: Option<String>,
    /// The ranks of each value of a mismatch.
    pub counts: Vec<RasCount>,
    /// Ranks named without a count group (missing ranks, error ranks).
    pub ranks: Vec<RasRank>,
}

/// A node that runs a different number of processes than most nodes (RAS's outliers).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RasOutlier {
    /// The node's address or name.
    pub node: String,
    /// The processes on it.
    pub pids: Vec<u64>,
}

/// What one RAS report says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct RasReport {
    /// `text` or `json`.
    pub format: String,
    /// The NCCL version of the report's header.
    pub nccl_version: Option<String>,
    /// Nodes in the job.
    pub nodes: Option<u64>,
    /// Processes in the job.
    pub processes: Option<u64>,
    /// GPUs in the job.
    pub gpus: Option<u64>,
    /// Nodes whose process counts differ from the rest.
    pub outlier_nodes: Vec<RasOutlier>,
    /// The communicators table.
    pub groups: Vec<RasGroup>,
    /// Job processes whose communicator data is missing (`INCOMPLETE` of the Errors section).
    pub missing_processes: Vec<RasRank>,
    /// How many processes are missing, as the summary counts them.
    pub missing_process_count: Option<u64>,
    /// Processes considered dead (`DEAD`, unreachable over the RAS network).
    pub dead_processes: Vec<RasRank>,
    /// How many processes are dead, as the summary counts them.
    pub dead_process_count: Option<u64>,
    /// Communicators named in the Errors and Warnings sections.
    pub comm_issues: Vec<RasCommIssue>,
    /// `Encountered N communication timeouts while gathering communicator data`.
    pub timeouts: Option<u64>,
}
