//! RDMA verbs loaded at run time (dlopen `libibverbs.so.1`, as NCCL does) and an RDMA transport
//! for fabrik's point-to-point benchmarks: RC queue pairs, RDMA write/read and send, bandwidth
//! and latency tests measured as perftest measures them, host or GPU memory.
#![warn(missing_docs)]

pub mod bench;
pub mod clock;
pub mod device;
pub mod error;
pub mod ffi;
pub mod gid;
pub mod gpuref;
pub mod loader;
pub mod mem;
pub mod options;
pub mod p2p;
pub mod pipe;
pub mod port_spec;
pub mod proto;
pub mod stats;
pub mod watch;

/// The control channel the set-up messages travel on.
pub use fabrik_wire as wire;

pub use bench::{run_client, serve, usable_device, LocalOptions};
pub use error::VerbsError;
pub use loader::{Verbs, LIBIBVERBS};
pub use mem::MemKind;
pub use pipe::{PipeConfig, PipeDevice, VerbsPipe};
pub use port_spec::{device_port, PortSpec};
pub use proto::{Op, TestParams};
