//! One module per subcommand: its clap arguments and a `run` that wires library calls to output.

pub mod doctor;
pub mod inventory;
pub mod rdma;
pub mod snapshot;
