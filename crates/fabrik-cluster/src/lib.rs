//! Ranks, rendezvous, collectives and all-pairs scheduling.
//!
//! A cluster run is one `fabrik` process per rank, started by whatever launcher the user has
//! (torchrun, mpirun, srun, Kubernetes, or `--local N`). [`ranks`] reads who we are from the
//! environment, [`rendezvous`] joins the ranks through rank 0 over fabrik's authenticated control
//! channel, and the collectives and the pair matrix run over data connections between ranks.
#![warn(missing_docs)]

pub mod backend;
pub mod bench;
pub mod collective;
pub mod diagnose;
pub mod doctor;
pub mod dtype;
mod error;
pub mod hostlist;
pub mod launch;
pub mod link;
pub mod matrix;
pub mod matrix_job;
pub mod matrix_options;
pub mod nccl_sweep;
mod pair_test;
pub mod pairs;
mod path_mtu;
pub mod ranks;
pub mod rdma_link;
pub mod rendezvous;
mod ring;
mod sockinfo;
mod step;
pub mod sweep;
mod tcp_link;
pub mod transport;

pub use error::ClusterError;
pub use link::{mem_pair, Link, MemLink};
pub use tcp_link::TcpLink;
