//! fabrik's data contracts.
//!
//! Every type here is plain data: produced by probing, parsing or benchmarking, consumed by the
//! doctor, the generators and the renderers. JSON field names are stable snake_case; documents
//! that stand on their own carry [`SCHEMA_VERSION`] so readers can refuse what they do not know.
#![warn(missing_docs)]

pub mod bench;
pub mod cluster;
pub mod counters;
pub mod facts;
pub mod finding;
pub mod gid;
pub mod health;
pub mod inspector;
pub mod logs;
pub mod nccl;
pub mod node;
pub mod passline;
pub mod perftest;
pub mod ras;
pub mod report;
pub mod rule;
pub mod size;
pub mod snapshot;
pub mod text;
pub mod units;

pub use bench::*;
pub use cluster::*;
pub use facts::{Fact, FactTable};
pub use finding::*;
pub use health::*;
pub use node::*;
pub use rule::{Rule, Scope, Source};

/// Version of every top-level JSON document fabrik writes. Bump on an incompatible change.
pub const SCHEMA_VERSION: u32 = 1;
