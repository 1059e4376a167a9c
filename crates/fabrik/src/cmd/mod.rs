//! One module per subcommand: its clap arguments and a `run` that wires library calls to output.

pub mod diff;
pub mod doctor;
pub mod exporter;
pub mod inventory;
pub mod snapshot;
pub mod top;
