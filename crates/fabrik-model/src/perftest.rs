//! What a perftest output holds (ib_write_bw, ib_send_lat, ...): its reports, and the failure
//! messages it printed with their classes. `fabrik_parse::perftest` reads the text into these.

use serde::{Deserialize, Serialize};

use crate::P2pReport;

/// The cause classes of perftest failures, each with its rule id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    /// No RDMA device, the named one missing, or its context cannot be opened.
    Device,
    /// The port is not ACTIVE, or its attributes cannot be read.
    Port,
    /// GID types of the two sides differ (RoCE v1/v2, IPv4/IPv6).
    Gid,
    /// An MTU that the port or the transport does not allow.
    Mtu,
    /// The TCP connection perftest uses to exchange QP keys could not be made.
    Connect,
    /// The key exchange over that connection broke (peer gone, or different options).
    Exchange,
    /// The two sides run with different parameters.
    OptionsMismatch,
    /// A QP state change (INIT, RTR, RTS) was refused: the path to the peer is wrong.
    QpState,
    /// Memory registration or buffer allocation failed.
    Memory,
    /// CQ, QP, PD or SRQ creation failed.
    Resources,
    /// GPU memory (CUDA, ROCm, other accelerators) could not be set up.
    Gpu,
    /// RDMA CM (`-R`) address resolution or connection failed.
    RdmaCm,
    /// A work completion came back with an error status during the run.
    Completion,
    /// The peer stopped sending.
    Timeout,
    /// perftest refused its command line.
    Usage,
    /// The result was below the limit given with `--bw_limit`/`--msg_rate_limit`.
    BelowLimit,
}

impl FailureClass {
    /// Every class, in the order of their rule pages.
    pub const ALL: [FailureClass; 16] = [
        FailureClass::Device,
        FailureClass::Port,
        FailureClass::Gid,
        FailureClass::Mtu,
        FailureClass::Connect,
        FailureClass::Exchange,
        FailureClass::OptionsMismatch,
        FailureClass::QpState,
        FailureClass::Memory,
        FailureClass::Resources,
        FailureClass::Gpu,
        FailureClass::RdmaCm,
        FailureClass::Completion,
        FailureClass::Timeout,
        FailureClass::Usage,
        FailureClass::BelowLimit,
    ];

    /// The rule id of the class (`FAB-BENCH-PT-...`).
    pub fn rule(self) -> &'static str {
        match self {
            FailureClass::Device => "FAB-BENCH-PT-DEVICE",
            FailureClass::Port => "FAB-BENCH-PT-PORT",
            FailureClass::Gid => "FAB-BENCH-PT-GID",
            FailureClass::Mtu => "FAB-BENCH-PT-MTU",
            FailureClass::Connect => "FAB-BENCH-PT-CONNECT",
            FailureClass::Exchange => "FAB-BENCH-PT-EXCHANGE",
            FailureClass::OptionsMismatch => "FAB-BENCH-PT-MISMATCH",
            FailureClass::QpState => "FAB-BENCH-PT-QP",
            FailureClass::Memory => "FAB-BENCH-PT-MEMORY",
            FailureClass::Resources => "FAB-BENCH-PT-RESOURCES",
            FailureClass::Gpu => "FAB-BENCH-PT-GPU",
            FailureClass::RdmaCm => "FAB-BENCH-PT-RDMACM",
            FailureClass::Completion => "FAB-BENCH-PT-COMPLETION",
            FailureClass::Timeout => "FAB-BENCH-PT-TIMEOUT",
            FailureClass::Usage => "FAB-BENCH-PT-USAGE",
            FailureClass::BelowLimit => "FAB-BENCH-PT-LIMIT",
        }
    }
}

/// One kind of failure line seen in the input: the first line of that kind, and how often.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PerftestFailure {
    /// What kind of failure it is.
    pub class: FailureClass,
    /// The first line of this kind, as printed.
    pub line: String,
    /// `ibv_wc_status` of a failed completion (`Failed status 12: ...`), with its name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wc_status: Option<String>,
    /// How many lines of this kind the input held.
    pub count: u64,
}

/// Everything read from a perftest output: the reports, the failure lines, and what the caps left
/// out.
#[derive(Debug, Default)]
pub struct PerftestOutput {
    /// One report per test printed.
    pub reports: Vec<P2pReport>,
    /// The failure lines, one per kind, with counts.
    pub failures: Vec<PerftestFailure>,
    /// Distinct failure lines beyond the cap.
    pub failures_dropped: u64,
    /// Rows beyond the parser's cap per report, and the rows of reports beyond its cap on reports.
    pub rows_dropped: u64,
    /// Reports beyond the parser's cap on reports.
    pub reports_dropped: u64,
}
