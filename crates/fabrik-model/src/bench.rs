//! Benchmark results: what `fabrik bench` measures and what `fabrik parse` reads from perftest
//! and nccl-tests output, in one set of types so that runs of either can stand side by side.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which tool produced a result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResultSource {
    /// fabrik's own benchmarks.
    Fabrik,
    /// perftest (`ib_write_bw`, `ib_send_lat`...).
    Perftest,
    /// NVIDIA's nccl-tests.
    NcclTests,
    /// AMD's rccl-tests (nccl-tests' output format).
    RcclTests,
    /// Another tool, by name.
    Other(String),
}

/// One bandwidth row, as perftest's `ib_write_bw` prints it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BwRow {
    /// Message size in bytes.
    pub bytes: u64,
    /// Iterations timed at this size.
    pub iterations: u64,
    /// Peak bandwidth, Gb/s (1e9 bits per second).
    pub bw_peak_gbps: f64,
    /// Average bandwidth, Gb/s (1e9 bits per second).
    pub bw_avg_gbps: f64,
    /// Message rate, millions of messages per second.
    pub msg_rate_mpps: f64,
}

/// One latency row, as perftest's `ib_send_lat` prints it (microseconds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LatRow {
    /// Message size in bytes.
    pub bytes: u64,
    /// Iterations timed at this size.
    pub iterations: u64,
    /// Fastest iteration.
    pub t_min_us: f64,
    /// Median iteration (perftest's `t_typical`).
    pub t_typical_us: f64,
    /// Mean iteration.
    pub t_avg_us: f64,
    /// Slowest iteration.
    pub t_max_us: f64,
    /// Standard deviation, where the tool printed it.
    pub t_stdev_us: Option<f64>,
    /// 99th percentile, where the tool printed it.
    pub p99_us: Option<f64>,
    /// 99.9th percentile, where the tool printed it.
    pub p999_us: Option<f64>,
}

/// Which kind of point-to-point test a run was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum P2pTest {
    /// Bandwidth: rows are [`BwRow`]s.
    Bw,
    /// Latency: rows are [`LatRow`]s.
    Lat,
}

/// Rows of a point-to-point run: all bandwidth or all latency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum P2pRows {
    /// Bandwidth rows, one per size.
    Bw(Vec<BwRow>),
    /// Latency rows, one per size.
    Lat(Vec<LatRow>),
}

/// A point-to-point run (fabrik's own, or a parsed perftest report).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct P2pReport {
    /// [`crate::SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// The tool that produced the run.
    pub source: ResultSource,
    /// Bandwidth or latency; matches the variant of `results`.
    pub test: P2pTest,
    /// `tcp`, `rdma`; for perftest the transport type it printed (`IB`).
    pub transport: String,
    /// RDMA operation: `write`, `read`, `send`; `None` for TCP streams.
    pub op: Option<String>,
    /// Parallel streams (TCP connections or queue pairs).
    pub streams: u32,
    /// Local interfaces or RDMA devices used.
    pub interfaces: Vec<String>,
    /// The RDMA device, where one was used.
    pub device: Option<String>,
    /// `IB` or `Ethernet` where reported.
    pub link_type: Option<String>,
    /// Path MTU in bytes, where reported.
    pub mtu: Option<u32>,
    /// The GID table index used (RoCE), where reported.
    pub gid_index: Option<u32>,
    /// One row per message size.
    pub results: P2pRows,
    /// Per-stream or per-interface breakdown when striping.
    pub per_stream: Vec<StreamResult>,
    /// Free-form facts worth keeping (perftest header lines, memory type, access flags).
    pub notes: Vec<String>,
    /// RDMA runs: where the registered buffer lived and how it was registered; absent for TCP
    /// and parsed perftest reports (and then left out of the JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<P2pMemory>,
}

/// The memory an RDMA benchmark registered, and for GPU memory how it compared with host
/// memory on the same link (the GPUDirect RDMA question).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct P2pMemory {
    /// `host`, `cuda` (cuMemAlloc) or `managed` (cuMemAllocManaged).
    pub kind: String,
    /// `dma_buf` (ibv_reg_dmabuf_mr), `peer_mem` (ibv_reg_mr of GPU memory through
    /// nvidia_peermem) or `host` (ibv_reg_mr of a host or managed range).
    pub registration: String,
    /// Access flags of the memory region (`LOCAL_WRITE`, `REMOTE_WRITE`, `REMOTE_READ`,
    /// `RELAXED_ORDERING`).
    pub access_flags: Vec<String>,
    /// Whether the region was registered with relaxed PCIe ordering.
    pub relaxed_ordering: bool,
    /// Bandwidth of the same test with host memory on this end, same QPs and sizes; empty when
    /// not run (host memory, latency tests, or opted out).
    #[serde(default)]
    pub host_reference: Vec<BwRow>,
    /// Lowest BW average of this memory over the host reference's, across the sizes.
    pub ratio_to_host: Option<f64>,
    /// The ratio below which the run warns.
    pub warn_below: Option<f64>,
    /// Set when this memory ran far below host memory: the ratio and the likely causes.
    pub warning: Option<String>,
}

/// One stream's share of a striped point-to-point run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StreamResult {
    /// The stream's number.
    pub stream: u32,
    /// The local interface the stream used, where known.
    pub interface: Option<String>,
    /// The local address the stream was bound to, where known.
    pub local_addr: Option<String>,
    /// Bytes this stream moved.
    pub bytes: u64,
    /// This stream's average bandwidth, Gb/s (1e9 bits per second).
    pub bw_avg_gbps: f64,
}

/// Timing of one collective at one size, in one placement (out-of-place or in-place).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CollTiming {
    /// Time per operation, microseconds.
    pub time_us: f64,
    /// GB/s (1e9 bytes per second), as nccl-tests prints it.
    pub algbw: f64,
    /// Bus bandwidth, GB/s: algbw times the operation's factor ([`busbw_factor`]).
    pub busbw: f64,
    /// `#wrong`; `None` when the check was off (`N/A`).
    pub wrong: Option<u64>,
}

/// One size of a collective sweep, as a row of nccl-tests' table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CollectiveRow {
    /// Bytes.
    pub size: u64,
    /// Elements.
    pub count: u64,
    /// Element type, as nccl-tests names it (`float`, `half`, `int32`...).
    #[serde(rename = "type")]
    pub dtype: String,
    /// `sum`, `prod`, `max`, `min`, `avg`, or `none` for data movement ops.
    pub redop: Option<String>,
    /// Root rank (`-1` in nccl-tests for rootless ops).
    pub root: Option<i64>,
    /// Timing with separate send and receive buffers; `None` when not run.
    pub out_of_place: Option<CollTiming>,
    /// Timing with the result written over the input; `None` when not run.
    pub in_place: Option<CollTiming>,
}

/// The run parameters nccl-tests prints in its first lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunParams<'a> {
    /// nccl-tests' name of the operation.
    pub op: &'a str,
    /// Smallest size in bytes.
    pub min_bytes: u64,
    /// Largest size in bytes.
    pub max_bytes: u64,
    /// `2(factor)` or `1048576(bytes)`.
    pub step: String,
    /// Untimed iterations per size.
    pub warmup: u32,
    /// Timed iterations per size.
    pub iters: u32,
    /// Whether results are checked.
    pub check: bool,
}

/// A device line of the nccl-tests header:
/// `#  Rank  0 Group  0 Pid  12345 on node1 device  0 [0x07] NVIDIA A100-SXM4-80GB`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RankDevice {
    /// Global rank.
    pub rank: u32,
    /// nccl-tests' thread group, where printed.
    pub group: Option<u32>,
    /// Process id, where printed.
    pub pid: Option<u64>,
    /// Host name.
    pub host: String,
    /// CUDA device ordinal, where printed.
    pub device: Option<u32>,
    /// PCI bus id, e.g. `0x07`, where printed.
    pub bus_id: Option<String>,
    /// Device model, e.g. `NVIDIA A100-SXM4-80GB`, where printed.
    pub name: Option<String>,
}

/// A collective sweep (fabrik's own, or a parsed nccl-tests run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CollectiveReport {
    /// [`crate::SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// The tool that produced the run.
    pub source: ResultSource,
    /// `all_reduce`, `all_gather`, `reduce_scatter`, `broadcast`, `reduce`, `alltoall`,
    /// `sendrecv`, `gather`, `scatter`, `hypercube`.
    pub op: String,
    /// `tcp`, `rdma`, `nccl`; `None` for parsed runs.
    pub backend: Option<String>,
    /// Number of ranks, where known.
    pub ranks: Option<u32>,
    /// Hosts taking part.
    pub hosts: Vec<String>,
    /// The device line of each rank.
    pub devices: Vec<RankDevice>,
    /// One row per size.
    pub rows: Vec<CollectiveRow>,
    /// `# Avg bus bandwidth` line (GB/s).
    pub avg_busbw: Option<f64>,
    /// Free-form facts worth keeping (header lines, skipped sizes).
    pub notes: Vec<String>,
}

/// Sums the per-stream results by interface (or local address), in first-seen order.
pub fn per_interface(streams: &[StreamResult]) -> Vec<(String, u32, u64, f64)> {
    let mut out: Vec<(String, u32, u64, f64)> = Vec::new();
    for s in streams {
        let key = s
            .interface
            .clone()
            .or_else(|| s.local_addr.clone())
            .unwrap_or_else(|| "default route".into());
        match out.iter_mut().find(|(k, ..)| *k == key) {
            Some(e) => {
                e.1 += 1;
                e.2 += s.bytes;
                e.3 += s.bw_avg_gbps;
            }
            None => out.push((key, 1, s.bytes, s.bw_avg_gbps)),
        }
    }
    out
}

/// The bus-bandwidth factor nccl-tests applies to algbw for an operation on `ranks` ranks.
pub fn busbw_factor(op: &str, ranks: u32) -> Option<f64> {
    let n = f64::from(ranks.max(1));
    match op {
        "all_reduce" => Some(2.0 * (n - 1.0) / n),
        "all_gather" | "reduce_scatter" | "alltoall" => Some((n - 1.0) / n),
        "broadcast" | "reduce" | "sendrecv" => Some(1.0),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busbw_factors_follow_nccl_tests() {
        assert_eq!(busbw_factor("all_reduce", 8), Some(1.75));
        assert_eq!(busbw_factor("all_gather", 4), Some(0.75));
        assert_eq!(busbw_factor("broadcast", 16), Some(1.0));
        assert_eq!(busbw_factor("bogus", 2), None);
    }

    #[test]
    fn p2p_rows_round_trip_untagged() {
        let bw = P2pRows::Bw(vec![BwRow {
            bytes: 65536,
            iterations: 5000,
            bw_peak_gbps: 97.1,
            bw_avg_gbps: 96.8,
            msg_rate_mpps: 0.18,
        }]);
        let text = serde_json::to_string(&bw).unwrap_or_default();
        let back: P2pRows = serde_json::from_str(&text).unwrap_or(P2pRows::Lat(vec![]));
        assert_eq!(back, bw);
    }
}
