//! What NCCL's RAS says: the report `ncclras` prints (text or JSON), the `NCCL DIAG` reports of
//! RAS and active diagnostics, and the events of its monitor mode (`ncclras -m`) with the table
//! of peers they leave. `fabrik_parse::ras` reads the text into these.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Most peers tracked; the RAS network of the largest jobs stays well below.
const MAX_PEERS: usize = 1 << 17;

/// A rank (or a process) as RAS names it: `Rank 12 -- GPU 4 managed by process 323032 on node
/// 10.137.190.124`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct RasRank {
    /// The rank, when RAS names one.
    pub rank: Option<u64>,
    /// The GPU (`4`).
    pub gpu: Option<String>,
    /// The process id.
    pub pid: Option<u64>,
    /// The node's address or name.
    pub node: Option<String>,
    /// `has status RUNNING`, `reported ncclRemoteError`...
    pub status: Option<String>,
    /// `has launched up to operation 641` (0: none launched).
    pub launched: Option<u64>,
}

/// A row of the communicators table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RasGroup {
    /// The group's number in the table.
    pub group: u64,
    /// Communicators in the group.
    pub comms: u64,
    /// Nodes per communicator.
    pub nodes_per_comm: u64,
    /// Ranks per node, as printed (a number or a range).
    pub ranks_per_node: String,
    /// Ranks per communicator.
    pub ranks_per_comm: u64,
    /// Ranks in the whole group.
    pub ranks_in_group: u64,
    /// The status column.
    pub status: String,
    /// The errors column, split into its entries.
    pub errors: Vec<String>,
}

/// One group of ranks of a mismatch: `30 ranks have launched up to operation 640`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RasCount {
    /// How many ranks share the value.
    pub count: u64,
    /// The operation count, or the status / error text.
    pub value: String,
    /// The ranks RAS listed for this value (it lists the minority only).
    pub ranks: Vec<RasRank>,
}

/// A `#G-C (hash) KIND` entry of the Errors or Warnings section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RasCommIssue {
    /// `#0-0`.
    pub id: String,
    /// The communicator's hash.
    pub hash: String,
    /// INCOMPLETE, ERROR or MISMATCH.
    pub kind: String,
    /// `Communicator ranks have different AllGather operation counts` and the like.
    pub what: Vec<String>,
    /// The collective whose counts differ (`AllGather`), when named.
    pub op: Option<String>,
    /// The ranks of each value of a mismatch.
    pub counts: Vec<RasCount>,
    /// Ranks named without a count group (missing ranks, error ranks).
    pub ranks: Vec<RasRank>,
}

/// A node that runs a different number of processes than most nodes (RAS's outliers).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RasOutlier {
    /// The node's address or name.
    pub node: String,
    /// The processes on it.
    pub pids: Vec<u64>,
}

/// What one RAS report says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct RasReport {
    /// `text` or `json`.
    pub format: String,
    /// The NCCL version of the report's header.
    pub nccl_version: Option<String>,
    /// Nodes in the job.
    pub nodes: Option<u64>,
    /// Processes in the job.
    pub processes: Option<u64>,
    /// GPUs in the job.
    pub gpus: Option<u64>,
    /// Nodes whose process counts differ from the rest.
    pub outlier_nodes: Vec<RasOutlier>,
    /// The communicators table.
    pub groups: Vec<RasGroup>,
    /// Job processes whose communicator data is missing (`INCOMPLETE` of the Errors section).
    pub missing_processes: Vec<RasRank>,
    /// How many processes are missing, as the summary counts them.
    pub missing_process_count: Option<u64>,
    /// Processes considered dead (`DEAD`, unreachable over the RAS network).
    pub dead_processes: Vec<RasRank>,
    /// How many processes are dead, as the summary counts them.
    pub dead_process_count: Option<u64>,
    /// Communicators named in the Errors and Warnings sections.
    pub comm_issues: Vec<RasCommIssue>,
    /// `Encountered N communication timeouts while gathering communicator data`.
    pub timeouts: Option<u64>,
}

/// One sentence for the summary of an input that is only a RAS report.
pub fn summary_text(r: &RasReport, errors: u32) -> String {
    let n = |v: Option<u64>| v.map_or_else(|| "?".to_string(), |x| x.to_string());
    let mut s = format!(
        "NCCL RAS report{}: {} node(s), {} process(es), {} GPU(s)",
        r.nccl_version
            .as_deref()
            .map(|v| format!(" (NCCL {v})"))
            .unwrap_or_default(),
        n(r.nodes),
        n(r.processes),
        n(r.gpus)
    );
    if !r.groups.is_empty() {
        let groups: Vec<String> = r
            .groups
            .iter()
            .map(|g| format!("group {} {} {}", g.group, g.status, g.errors.join(",")))
            .collect();
        s.push_str(&format!("; {}", groups.join("; ")));
    }
    s.push_str(&format!("; {errors} error(s)"));
    s
}

/// One result line of a diagnostics report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiagLine {
    /// `OK`, `INFO`, or empty for an untagged line.
    pub tag: String,
    /// The check (`GPU inventory`, `CUDA driver version`, `ECC`, `NVLink`, `NCCL environment`,
    /// `p2p`, `net bw`, `IOMMU mode`, `Xid/SXid`, ...).
    pub check: String,
    /// The rest of the line after `<check>: `.
    pub text: String,
    /// The communicator (`0x1234`), when the line names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comm: Option<String>,
    /// Ranks the line names as affected (`rank(s) {..}`, `srcRank=`, `rank R (host)`).
    pub ranks: Vec<u64>,
    /// The rank the others were compared with (`differ from rank R (value)`) and its value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference: Option<(u64, String)>,
    /// A host the line names (`on host H`, `rank R (H)`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// One diagnostics report: a header, its lines, the completion line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct DiagReport {
    /// `ras` (RAS diagnostics) or `active` (NCCL_RUN_DIAGNOSTICS).
    pub kind: String,
    /// The host of the process that printed the report.
    pub host: Option<String>,
    /// Its pid.
    pub pid: Option<u64>,
    /// The result lines.
    pub lines: Vec<DiagLine>,
    /// `completed in X ms`.
    pub completed_ms: Option<f64>,
    /// `across N ranks|RAS peers`.
    pub across: Option<u64>,
}

/// The peer an event is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Peer {
    /// The node (name or address).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The process.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u64>,
    /// Its GPUs as RAS prints them (`0,1`, `0 (NVML 2)`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpus: Option<String>,
    /// Its RAS socket address (`10.0.0.2<28028>`), when only that is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub addr: Option<String>,
}

/// One monitor event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MonitorEvent {
    /// The local time RAS printed (`%F %T`).
    pub time: String,
    /// `LIFECYCLE` or `TRACE` (JSON only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// `PEER_DEAD` and the like.
    pub event: String,
    /// The peer, when the event names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer: Option<Peer>,
    /// The details text.
    pub details: String,
}

/// What the events say of a peer now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum PeerState {
    /// Joined, connected or recovered.
    Alive,
    /// Not answering, stuck, disconnected or timed out: may come back.
    Unreachable,
    /// Declared dead by RAS.
    Dead,
}

/// A row of the peer table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerRow {
    /// The peer.
    pub peer: Peer,
    /// Its state after the last event.
    pub state: PeerState,
    /// The event that set it.
    pub event: String,
    /// When.
    pub since: String,
    /// Its details.
    pub details: String,
    /// Events seen about this peer.
    pub events: u64,
}

/// Every peer seen, by host and process (or RAS address), with its last state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerTable {
    rows: BTreeMap<String, PeerRow>,
    /// Events read.
    pub events: u64,
}

impl PeerTable {
    fn key(p: &Peer) -> String {
        match (&p.host, p.pid, &p.addr) {
            (Some(h), Some(pid), _) => format!("{h}:{pid}"),
            (_, _, Some(a)) => a.clone(),
            (Some(h), None, None) => h.clone(),
            (None, Some(pid), None) => format!("?:{pid}"),
            (None, None, None) => String::new(),
        }
    }

    /// Applies one event, which leaves its peer in `state` (what the event means is RAS's
    /// protocol, the reader's to say; `None` for an event that says nothing of the peer's state).
    pub fn apply(&mut self, e: &MonitorEvent, state: Option<PeerState>) {
        self.events += 1;
        let (Some(peer), Some(state)) = (&e.peer, state) else {
            return;
        };
        let mut key = Self::key(peer);
        // An address-only event about the one process known on that host is that process's.
        if peer.pid.is_none() {
            if let Some(h) = &peer.host {
                let mine: Vec<&String> = self
                    .rows
                    .iter()
                    .filter(|(_, r)| r.peer.pid.is_some() && r.peer.host.as_ref() == Some(h))
                    .map(|(k, _)| k)
                    .collect();
                if let [one] = mine.as_slice() {
                    key = (*one).clone();
                }
            }
        }
        if !self.rows.contains_key(&key) && self.rows.len() >= MAX_PEERS {
            return;
        }
        let row = self.rows.entry(key).or_insert_with(|| PeerRow {
            peer: peer.clone(),
            state,
            event: e.event.clone(),
            since: e.time.clone(),
            details: e.details.clone(),
            events: 0,
        });
        row.events += 1;
        if row.peer.gpus.is_none() {
            row.peer.gpus = peer.gpus.clone();
        }
        if row.peer.pid.is_none() && peer.pid.is_some() {
            row.peer.pid = peer.pid;
        }
        // A dead peer stays dead: RAS never takes it back (peers.cc keeps the dead list).
        if row.state == PeerState::Dead && state != PeerState::Dead {
            return;
        }
        if row.state != state || row.event != e.event {
            row.state = state;
            row.event = e.event.clone();
            row.since = e.time.clone();
            row.details = e.details.clone();
        }
    }

    /// Every peer seen.
    pub fn rows(&self) -> impl Iterator<Item = &PeerRow> {
        self.rows.values()
    }

    /// Peers that are dead or unreachable now, dead first.
    pub fn troubled(&self) -> Vec<&PeerRow> {
        let mut v: Vec<&PeerRow> = self
            .rows
            .values()
            .filter(|r| r.state != PeerState::Alive)
            .collect();
        v.sort_by_key(|r| std::cmp::Reverse(r.state));
        v
    }

    /// How many peers are in each state: (alive, unreachable, dead).
    pub fn counts(&self) -> (usize, usize, usize) {
        let n = |s| self.rows.values().filter(|r| r.state == s).count();
        (
            n(PeerState::Alive),
            n(PeerState::Unreachable),
            n(PeerState::Dead),
        )
    }
}

/// `process 1234 on node-3 (GPU 0)` or `10.0.0.2<28028>`.
pub fn describe(p: &Peer) -> String {
    let mut s = match (&p.pid, &p.host, &p.addr) {
        (Some(pid), Some(h), _) => format!("process {pid} on {h}"),
        (_, _, Some(a)) => a.clone(),
        (None, Some(h), None) => h.clone(),
        _ => "an unknown peer".into(),
    };
    if let Some(g) = &p.gpus {
        s.push_str(&format!(" (GPU {g})"));
    }
    s
}
