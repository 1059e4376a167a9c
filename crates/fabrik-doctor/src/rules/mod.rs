//! Single-node rules, one module per area.

pub mod cloud;
pub mod counters;
pub mod gdr;
pub mod pci;
pub mod ports;
pub mod rdma;
pub mod roce;
pub mod sockets;
pub mod unchecked;
