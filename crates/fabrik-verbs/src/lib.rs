//! RDMA verbs loaded at run time (dlopen libibverbs.so.1) and the RDMA transport
