//! The GPU side of fabrik, loaded at run time: the CUDA driver API (`libcuda.so.1`) and NCCL
//! (`libnccl.so.2`), each opened with dlopen as NCCL itself opens libibverbs, so that a binary
//! built on a machine without GPUs runs on any GPU node, and a node without them gets an error
//! naming the missing library instead of a loader failure at start-up.
#![warn(missing_docs)]

pub mod cuda;
pub mod dl;
mod error;
pub mod nccl;
pub mod wait;

pub use cuda::{Cuda, DeviceBuffer, Stream, LIBCUDA};
pub use error::GpuError;
pub use nccl::{Nccl, NcclComm, NcclDataType, NcclRedOp, NcclVersion, UniqueId, LIBNCCL};
pub use wait::{wait_stream, Watchdog};
