//! Benchmarks: TCP point-to-point bandwidth and latency with multi-NIC striping
