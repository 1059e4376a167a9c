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

/// Most entries kept per list (hostile input cannot grow memory without bound).
pub(crate) const MAX_ITEMS: usize = 4096;
/// Largest JSON document buffered (about 60 000 ranks of `ncclras -f json`).
pub const MAX_JSON: usize = 32 << 20;
/// What a RAS report holds is a model type: every renderer reads it.
pub use fabrik_model::ras::{RasCommIssue, RasCount, RasGroup, RasOutlier, RasRank, RasReport};
