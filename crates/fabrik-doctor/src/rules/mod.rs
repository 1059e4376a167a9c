//! Single-node rules, one module per area.

pub mod cloud;
pub mod counters;
pub mod firmware;
pub mod gdr;
pub mod klog;
pub mod link;
pub mod pci;
pub mod ports;
pub mod rdma;
pub mod roce;
pub mod sockets;
pub mod unchecked;
