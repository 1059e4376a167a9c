//! One module per subcommand: its clap arguments and a `run` that wires library calls to output.

pub mod cluster;
pub mod collective;
pub mod doctor;
pub mod inventory;
pub mod report;
pub mod snapshot;
