//! One module per subcommand: its clap arguments and a `run` that wires library calls to output.

pub mod bench;
pub mod check;
pub mod cluster;
pub mod collective;
pub mod diff;
pub mod doctor;
pub mod env;
pub mod expect;
pub mod explain;
pub mod exporter;
pub mod fix;
pub mod inventory;
pub mod launch;
pub mod logs;
pub mod parse;
pub mod ras;
pub mod rdma;
pub mod report;
pub mod rules;
pub mod snapshot;
pub mod top;
