//! NCCL RAS reports: what `ncclras` prints (NCCL 2.24 and later: text; 2.28.7 and later also
//! `ncclras -f json`). The shapes follow NCCL's src/ras/client_support.cc at v2.24.3, v2.26.2,
//! v2.28.9 and v2.30.7: a job summary (nodes, processes, GPUs, the outlier nodes), a table of
//! communicator groups with their status (RUNNING, INIT, FINALIZE, ABORT, NOCOMM) and errors
//! (INCOMPLETE, MISMATCH, ERROR), then the `Errors` and `Warnings` sections that name ranks,
//! GPUs, processes and nodes. RAS is the best evidence of a straggler or a dead node: the ranks
//! whose operation counts lag are the ones the rest of the job waits for.

use fabrik_model::{Evidence, Finding, Severity};
use serde::{Deserialize, Serialize};

/// Most entries kept per list (hostile input cannot grow memory without bound).
const MAX_ITEMS: usize = 4096;
/// Largest JSON document buffered (about 60 000 ranks of `ncclras -f json`).
pub const MAX_JSON: usize = 32 << 20;
/// Most report lines read after the `Job summary` title: every stored item comes from one line,
/// so this bounds the report's memory whatever the input.
const MAX_REPORT_LINES: u64 = 1 << 17;

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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    Top,
    Summary,
    Comms,
    Errors,
    Warnings,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    None,
    MissingProcesses,
    DeadProcesses,
    Comm,
}

/// Reads a RAS text report line by line (inside any other text: a job log, a quoted paste).
#[derive(Debug)]
pub struct RasTextParser {
    report: RasReport,
    seen: bool,
    section: Section,
    block: Block,
    prev: String,
    report_lines: u64,
}

impl Default for RasTextParser {
    fn default() -> Self {
        Self::new()
    }
}

fn num(s: &str) -> Option<u64> {
    s.trim().parse().ok()
}

fn words(s: &str) -> Vec<&str> {
    s.split_whitespace().collect()
}

/// The text after `prefix` up to the next space.
fn word_after<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let p = s.find(prefix)?;
    s[p + prefix.len()..].split_whitespace().next()
}

/// `GPU 4 managed by process 323032 on node 10.137.190.124` (and `GPUs 0,1`), or
/// `[process information not found]`.
fn rank_tail(rank: &mut RasRank, tail: &str) {
    if let Some(g) = word_after(tail, "GPU ").or_else(|| word_after(tail, "GPUs ")) {
        rank.gpu = Some(g.to_string());
    }
    rank.pid = word_after(tail, "process ").and_then(num);
    rank.node = word_after(tail, "on node ").map(str::to_string);
}

/// Strips what pastes put in front of a report line: `> ` quotes, backticks, launcher labels.
fn clean(line: &str) -> &str {
    let mut t = line.trim_end();
    loop {
        let s = t.trim_start();
        if let Some(r) = s.strip_prefix('>') {
            t = r;
        } else if let Some(r) = s.strip_prefix('`') {
            t = r;
        } else {
            break;
        }
    }
    t.trim_end_matches('`')
}

impl RasTextParser {
    /// A parser with nothing read yet.
    pub fn new() -> Self {
        RasTextParser {
            report: RasReport {
                format: "text".into(),
                ..RasReport::default()
            },
            seen: false,
            section: Section::Top,
            block: Block::None,
            prev: String::new(),
            report_lines: 0,
        }
    }

    /// Feeds one line.
    pub fn line(&mut self, raw: &str) {
        if self.seen {
            self.report_lines += 1;
            if self.report_lines > MAX_REPORT_LINES {
                return;
            }
        }
        let line = clean(raw);
        let t = line.trim();
        if t.is_empty() {
            if self.section == Section::Errors || self.section == Section::Warnings {
                self.block = Block::None;
            }
            return;
        }
        // Section titles are underlined with `=`; the title is the previous line.
        if t.chars().all(|c| c == '=') {
            match self.prev.as_str() {
                "Job summary" => {
                    self.seen = true;
                    self.section = Section::Summary;
                }
                "Errors" if self.seen => self.section = Section::Errors,
                "Warnings" if self.seen => self.section = Section::Warnings,
                p if p.starts_with("Communicators") && self.seen => self.section = Section::Comms,
                _ => {}
            }
            self.block = Block::None;
            return;
        }
        if let Some(rest) = t.strip_prefix("NCCL version ") {
            if t.contains("compiled with CUDA") || self.report.nccl_version.is_none() {
                self.report.nccl_version = rest.split_whitespace().next().map(str::to_string);
            }
        }
        // `Communicators... (0.00s)` has its `=` line under a longer title.
        if t.starts_with("Communicators...")
            || t.starts_with("Gathering data about the NCCL communicators")
        {
            self.prev.clear();
            self.prev.push_str("Communicators");
            return;
        }
        match self.section {
            Section::Top => {}
            Section::Summary => self.summary_line(t),
            Section::Comms => self.comms_line(t),
            Section::Errors | Section::Warnings => self.issue_line(t),
        }
        // Reuse the buffer: this runs on every program line of a log.
        self.prev.clear();
        self.prev.push_str(t);
    }

    fn summary_line(&mut self, t: &str) {
        if let Some(rest) = t.strip_prefix("Node ") {
            // `Node 10.4.109.13 running processes 60004,60035`
            let node = rest.split_whitespace().next().unwrap_or("").to_string();
            let pids = rest
                .rsplit(' ')
                .next()
                .unwrap_or("")
                .split(',')
                .filter_map(num)
                .take(MAX_ITEMS)
                .collect();
            if self.report.outlier_nodes.len() < MAX_ITEMS {
                self.report.outlier_nodes.push(RasOutlier { node, pids });
            }
            return;
        }
        let w = words(t);
        let nums: Vec<u64> = w.iter().filter_map(|x| num(x)).collect();
        if nums.len() != w.len() {
            return;
        }
        let totals = self.prev.matches("(total)").count();
        match (nums.len(), totals) {
            // `Nodes Processes GPUs Processes GPUs` / `(total) per node per process (total) (total)`
            (5, _) => {
                self.report.nodes = Some(nums[0]);
                self.report.processes = Some(nums[3]);
                self.report.gpus = Some(nums[4]);
            }
            // The totals after per-node rows of different shapes (an outlier node).
            (3, t) if t >= 3 => {
                self.report.nodes = Some(nums[0]);
                self.report.processes = Some(nums[1]);
                self.report.gpus = Some(nums[2]);
            }
            (2, t) if t >= 2 => {
                self.report.nodes = Some(nums[0]);
                self.report.processes = Some(nums[1]);
            }
            // A per-node row (`1 8 1`): the header above has no `(total)`; keep the line as
            // `prev` only if it is a header, so that consecutive rows still see the header.
            _ => {}
        }
    }

    fn comms_line(&mut self, t: &str) {
        let w = words(t);
        if w.len() < 8 {
            return;
        }
        let (Some(group), Some(comms), Some(nodes), Some(per_comm), Some(in_group)) =
            (num(w[0]), num(w[1]), num(w[2]), num(w[4]), num(w[5]))
        else {
            return;
        };
        if self.report.groups.len() < MAX_ITEMS {
            self.report.groups.push(RasGroup {
                group,
                comms,
                nodes_per_comm: nodes,
                ranks_per_node: w[3].to_string(),
                ranks_per_comm: per_comm,
                ranks_in_group: in_group,
                status: w[6].to_string(),
                errors: w[7].split(',').map(str::to_string).collect(),
            });
        }
    }

    fn issue_line(&mut self, t: &str) {
        match t {
            "INCOMPLETE" => {
                self.block = Block::MissingProcesses;
                return;
            }
            "DEAD" => {
                self.block = Block::DeadProcesses;
                return;
            }
            "TIMEOUT" => return,
            _ => {}
        }
        if let Some(rest) = t.strip_prefix('#') {
            // `#0-0 (fa93daea854b060b) MISMATCH`
            let w = words(rest);
            if w.len() >= 3 && self.report.comm_issues.len() < MAX_ITEMS {
                self.report.comm_issues.push(RasCommIssue {
                    id: format!("#{}", w[0]),
                    hash: w[1].trim_matches(|c| c == '(' || c == ')').to_string(),
                    kind: w[2].to_string(),
                    what: Vec::new(),
                    op: None,
                    counts: Vec::new(),
                    ranks: Vec::new(),
                });
                self.block = Block::Comm;
            }
            return;
        }
        if let Some(rest) = t.strip_prefix("Encountered ") {
            self.report.timeouts = rest.split_whitespace().next().and_then(num);
            return;
        }
        match self.block {
            Block::MissingProcesses | Block::DeadProcesses => self.process_line(t),
            Block::Comm => self.comm_issue_line(t),
            Block::None => {}
        }
    }

    /// `Missing communicator data from 1 job process`, `2 job processes are considered dead`,
    /// `Process 60004 on node 10.4.109.13 managing GPU 0`.
    fn process_line(&mut self, t: &str) {
        let dead = self.block == Block::DeadProcesses;
        if let Some(rest) = t.strip_prefix("Process ") {
            let mut r = RasRank {
                pid: rest.split_whitespace().next().and_then(num),
                ..RasRank::default()
            };
            r.node = word_after(t, "on node ").map(str::to_string);
            r.gpu = word_after(t, "managing GPU ")
                .or_else(|| word_after(t, "managing GPUs "))
                .map(str::to_string);
            let list = if dead {
                &mut self.report.dead_processes
            } else {
                &mut self.report.missing_processes
            };
            if list.len() < MAX_ITEMS {
                list.push(r);
            }
        } else if let Some(rest) = t.strip_prefix("Missing communicator data from ") {
            self.report.missing_process_count = rest.split_whitespace().next().and_then(num);
        } else if dead && t.contains("considered dead") {
            self.report.dead_process_count = t.split_whitespace().next().and_then(num);
        }
    }

    fn comm_issue_line(&mut self, t: &str) {
        let Some(issue) = self.report.comm_issues.last_mut() else {
            return;
        };
        if let Some(rest) = t.strip_prefix("Rank ") {
            let (head, tail) = match t.find(" -- ") {
                Some(p) => (&rest[..p.saturating_sub(5)], &t[p + 4..]),
                None => (rest, ""),
            };
            let mut r = RasRank {
                rank: head.split_whitespace().next().and_then(num),
                ..RasRank::default()
            };
            rank_tail(&mut r, tail);
            // `Rank 12 has launched up to operation 641 -- ...`: a group of one.
            if let Some(v) = word_after(head, "launched up to operation ").and_then(num) {
                r.launched = Some(v);
                push_count(issue, 1, v.to_string(), r);
            } else if head.contains("has not launched any operations") {
                r.launched = Some(0);
                push_count(issue, 1, "0".into(), r);
            } else if let Some(s) =
                word_after(head, "has status ").or_else(|| word_after(head, "reported "))
            {
                r.status = Some(s.to_string());
                push_count(issue, 1, s.to_string(), r);
            } else if let Some(last) = issue.counts.last_mut() {
                // Listed under the `N ranks have ...` line before it.
                if last.ranks.len() < MAX_ITEMS {
                    if let Some(v) = num(&last.value) {
                        r.launched = Some(v);
                    } else {
                        r.status = Some(last.value.clone());
                    }
                    last.ranks.push(r);
                }
            } else if issue.ranks.len() < MAX_ITEMS {
                issue.ranks.push(r);
            }
            return;
        }
        let w = words(t);
        if w.len() >= 4 && num(w[0]).is_some() && w[1] == "ranks" {
            let count = num(w[0]).unwrap_or(0);
            let value = if let Some(v) = word_after(t, "launched up to operation ") {
                v.to_string()
            } else if t.contains("have not launched any operations") {
                "0".to_string()
            } else if let Some(v) = word_after(t, "have status ") {
                v.to_string()
            } else if let Some(p) = t.find(" reported ") {
                t[p + 10..].to_string()
            } else {
                return;
            };
            if issue.counts.len() < MAX_ITEMS {
                issue.counts.push(RasCount {
                    count,
                    value,
                    ranks: Vec::new(),
                });
            }
            return;
        }
        if let Some(rest) = t.strip_prefix("Communicator ranks have different ") {
            let op = rest.trim_end_matches(" operation counts");
            if op != rest && op != "collective" {
                issue.op = Some(op.to_string());
            }
        }
        if issue.what.len() < 16 {
            issue.what.push(t.to_string());
        }
    }

    /// The report, when a RAS report was seen.
    pub fn finish(self) -> Option<RasReport> {
        self.seen.then_some(self.report)
    }
}

fn push_count(issue: &mut RasCommIssue, count: u64, value: String, r: RasRank) {
    if let Some(c) = issue.counts.iter_mut().find(|c| c.value == value) {
        if c.ranks.len() < MAX_ITEMS {
            c.ranks.push(r);
        }
    } else if issue.counts.len() < MAX_ITEMS {
        issue.counts.push(RasCount {
            count,
            value,
            ranks: vec![r],
        });
    }
}

/// Reads a RAS JSON document (`ncclras -f json`, NCCL 2.28.7+).
pub fn parse_json(text: &str) -> Option<RasReport> {
    if text.len() > MAX_JSON {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    let comms = v.get("communicators")?.as_array()?;
    let mut report = RasReport {
        format: "json".into(),
        nccl_version: v
            .get("nccl_version")
            .and_then(|x| x.as_str())
            .map(str::to_string),
        timeouts: v
            .get("ras")
            .and_then(|r| r.get("timeouts_count"))
            .and_then(serde_json::Value::as_u64),
        ..RasReport::default()
    };
    let mut nodes: Vec<(String, u64)> = Vec::new();
    let mut procs: Vec<(String, u64)> = Vec::new();
    let str_of =
        |x: &serde_json::Value, k: &str| x.get(k).and_then(|s| s.as_str()).map(str::to_string);
    let u_of = |x: &serde_json::Value, k: &str| x.get(k).and_then(serde_json::Value::as_u64);
    for (ci, c) in comms.iter().enumerate().take(MAX_ITEMS) {
        let hash = str_of(c, "hash").unwrap_or_default();
        let rank_of = |r: &serde_json::Value| RasRank {
            rank: u_of(r, "rank"),
            gpu: u_of(r, "cuda_dev").map(|d| d.to_string()),
            pid: u_of(r, "pid"),
            node: str_of(r, "host"),
            status: None,
            launched: None,
        };
        let ranks: Vec<&serde_json::Value> = c
            .get("ranks")
            .and_then(|r| r.as_array())
            .map(|a| a.iter().take(1 << 20).collect())
            .unwrap_or_default();
        for r in &ranks {
            if let (Some(h), Some(p)) = (str_of(r, "host"), u_of(r, "pid")) {
                if !procs.iter().any(|(h2, p2)| *h2 == h && *p2 == p) && procs.len() < (1 << 20) {
                    procs.push((h.clone(), p));
                    match nodes.iter_mut().find(|(n, _)| *n == h) {
                        Some(e) => e.1 += 1,
                        None => nodes.push((h, 1)),
                    }
                }
            }
        }
        let issue = |kind: &str| RasCommIssue {
            id: format!("#{ci}"),
            hash: hash.clone(),
            kind: kind.to_string(),
            what: Vec::new(),
            op: None,
            counts: Vec::new(),
            ranks: Vec::new(),
        };
        // Missing and dead ranks.
        let missing: Vec<&serde_json::Value> = c
            .get("missing_ranks")
            .and_then(|r| r.as_array())
            .map(|a| a.iter().take(MAX_ITEMS).collect())
            .unwrap_or_default();
        if !missing.is_empty() {
            let mut inc = issue("INCOMPLETE");
            inc.what.push(format!(
                "Missing communicator data from {} rank(s)",
                missing.len()
            ));
            for m in &missing {
                let mut r = rank_of(m);
                let st = m.get("status");
                let dead = st
                    .and_then(|s| s.get("considered_dead"))
                    .and_then(serde_json::Value::as_bool)
                    == Some(true);
                let unresp = st
                    .and_then(|s| s.get("unresponsive"))
                    .and_then(serde_json::Value::as_bool)
                    == Some(true);
                r.status = Some(
                    if dead {
                        "dead"
                    } else if unresp {
                        "unresponsive"
                    } else {
                        "missing"
                    }
                    .into(),
                );
                if dead && report.dead_processes.len() < MAX_ITEMS {
                    report.dead_processes.push(r.clone());
                }
                inc.ranks.push(r);
            }
            report.comm_issues.push(inc);
        }
        // Asynchronous errors and aborts.
        let mut err = issue("ERROR");
        for r in &ranks {
            let st = r.get("status");
            let async_err = st
                .and_then(|s| s.get("async_error"))
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0);
            let abort = st
                .and_then(|s| s.get("abort_flag"))
                .and_then(serde_json::Value::as_bool)
                == Some(true);
            if async_err != 0 || abort {
                let mut x = rank_of(r);
                x.status = Some(if async_err != 0 {
                    crate::nccl_log::result_name(u32::try_from(async_err).unwrap_or(u32::MAX))
                        .map_or_else(|| format!("error {async_err}"), str::to_string)
                } else {
                    "aborted".into()
                });
                if err.ranks.len() < MAX_ITEMS {
                    err.ranks.push(x);
                }
            }
        }
        if !err.ranks.is_empty() {
            err.what.push(format!(
                "Asynchronous errors or aborts on {} rank(s)",
                err.ranks.len()
            ));
            report.comm_issues.push(err);
        }
        // Operation counts per collective.
        let mut ops: Vec<String> = Vec::new();
        for r in &ranks {
            if let Some(cc) = r.get("collective_counts").and_then(|x| x.as_object()) {
                for k in cc.keys() {
                    if !ops.contains(k) && ops.len() < 64 {
                        ops.push(k.clone());
                    }
                }
            }
        }
        for op in ops {
            let mut by_value: Vec<(u64, Vec<RasRank>)> = Vec::new();
            for r in &ranks {
                let n = r
                    .get("collective_counts")
                    .and_then(|cc| cc.get(&op))
                    .and_then(serde_json::Value::as_u64)
                    .unwrap_or(0);
                let mut x = rank_of(r);
                x.launched = Some(n);
                match by_value.iter_mut().find(|(v, _)| *v == n) {
                    Some(e) => {
                        if e.1.len() < MAX_ITEMS {
                            e.1.push(x);
                        }
                    }
                    None => by_value.push((n, vec![x])),
                }
            }
            if by_value.len() > 1 {
                let mut m = issue("MISMATCH");
                m.what.push(format!(
                    "Communicator ranks have different {op} operation counts"
                ));
                m.op = Some(op.clone());
                by_value.sort_by_key(|b| std::cmp::Reverse(b.1.len()));
                for (v, rs) in by_value {
                    m.counts.push(RasCount {
                        count: rs.len() as u64,
                        value: v.to_string(),
                        ranks: rs,
                    });
                }
                report.comm_issues.push(m);
            }
        }
    }
    report.nodes = Some(nodes.len() as u64);
    report.processes = Some(procs.len() as u64);
    // Nodes running a different number of processes than most: RAS's own outlier notion.
    let mut per: Vec<u64> = nodes.iter().map(|(_, n)| *n).collect();
    per.sort_unstable();
    let mode = mode_of(&per);
    for (n, c) in &nodes {
        if Some(*c) != mode && nodes.len() > 2 {
            report.outlier_nodes.push(RasOutlier {
                node: n.clone(),
                pids: procs
                    .iter()
                    .filter(|(h, _)| h == n)
                    .map(|(_, p)| *p)
                    .collect(),
            });
        }
    }
    Some(report)
}

fn mode_of(sorted: &[u64]) -> Option<u64> {
    let mut best: Option<(u64, usize)> = None;
    let mut i = 0;
    while i < sorted.len() {
        let j = sorted[i..].iter().take_while(|v| **v == sorted[i]).count();
        if best.is_none_or(|(_, n)| j > n) {
            best = Some((sorted[i], j));
        }
        i += j;
    }
    best.map(|(v, _)| v)
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

fn describe(r: &RasRank) -> String {
    let mut s = match r.rank {
        Some(n) => format!("rank {n}"),
        None => "process".to_string(),
    };
    if let Some(g) = &r.gpu {
        s.push_str(&format!(" (GPU {g}"));
        if let Some(p) = r.pid {
            s.push_str(&format!(", process {p}"));
        }
        if let Some(n) = &r.node {
            s.push_str(&format!(", node {n}"));
        }
        s.push(')');
    } else if let (Some(p), Some(n)) = (r.pid, &r.node) {
        s.push_str(&format!(" (process {p}, node {n})"));
    } else if r.rank.is_some() {
        s.push_str(" (process information not found)");
    }
    s
}

fn list(ranks: &[RasRank]) -> String {
    let mut out: Vec<String> = ranks.iter().take(16).map(describe).collect();
    if ranks.len() > 16 {
        out.push(format!("and {} more", ranks.len() - 16));
    }
    out.join("; ")
}

fn nodes_of(ranks: &[RasRank]) -> Vec<String> {
    let mut n: Vec<String> = ranks.iter().filter_map(|r| r.node.clone()).collect();
    n.sort();
    n.dedup();
    n
}

/// NCCL before 2.29.2 could miscount missing ranks (NVIDIA/nccl#1762: `Rank 1057455228`,
/// `Missing communicator data from 255 ranks` of a 2-rank communicator): a rank number or a
/// missing count beyond the largest communicator in the table means the report is wrong.
fn miscounted(r: &RasReport) -> bool {
    let Some(largest) = r.groups.iter().map(|g| g.ranks_per_comm).max() else {
        return false;
    };
    let too_big = |n: u64| n >= largest.max(1) && n > 0;
    r.comm_issues.iter().any(|i| {
        i.ranks
            .iter()
            .chain(i.counts.iter().flat_map(|c| c.ranks.iter()))
            .any(|x| x.rank.is_some_and(too_big))
            || i.what.iter().any(|w| {
                w.strip_prefix("Missing communicator data from ")
                    .and_then(|x| x.split_whitespace().next())
                    .and_then(num)
                    .is_some_and(|n| n > largest)
            })
    })
}

/// The findings a RAS report supports.
pub fn findings(r: &RasReport) -> Vec<Finding> {
    let mut out = raw_findings(r);
    if miscounted(r) {
        for f in &mut out {
            if matches!(
                f.rule.as_str(),
                "FAB-NCCL-RAS-INCOMPLETE" | "FAB-NCCL-RAS-MISMATCH"
            ) {
                f.severity = Severity::Warning;
                f.message.push_str(". This report names a rank or a missing count beyond the largest communicator: RAS miscounted (NVIDIA/nccl#1762, fixed in NCCL 2.29.2), so these errors are not the job's");
            }
        }
    }
    out
}

fn raw_findings(r: &RasReport) -> Vec<Finding> {
    let mut out = Vec::new();
    let subject = |i: &RasCommIssue| format!("communicator {} ({})", i.id, i.hash);
    for i in &r.comm_issues {
        match i.kind.as_str() {
            "MISMATCH" => out.push(mismatch(i, subject(i))),
            "INCOMPLETE" => {
                let all: Vec<RasRank> = i
                    .ranks
                    .iter()
                    .chain(i.counts.iter().flat_map(|c| c.ranks.iter()))
                    .cloned()
                    .collect();
                out.push(Finding {
                    rule: "FAB-NCCL-RAS-INCOMPLETE".into(),
                    severity: Severity::Error,
                    subject: subject(i),
                    message: format!(
                        "RAS got no data from some ranks of this communicator ({}){}{}",
                        i.what.first().map_or("missing ranks", String::as_str),
                        if all.is_empty() { "" } else { ": " },
                        list(&all)
                    ),
                    evidence: all
                        .iter()
                        .take(8)
                        .map(|x| Evidence::new("ras", describe(x)))
                        .collect(),
                    fix: "Check the processes named (alive? `ps`/`dmesg` on the node, OOM kills, Xid errors); a rank that never joined or left the communicator hangs every collective of the others. NCCL 2.27 miscounted missing ranks in some reports (fixed in 2.29.2): an absurd rank number is RAS's error, not the job's".into(),
                });
            }
            "ERROR" => out.push(Finding {
                rule: "FAB-NCCL-RAS-ERROR".into(),
                severity: Severity::Error,
                subject: subject(i),
                message: format!(
                    "RAS reports errors on ranks of this communicator ({}): {}",
                    i.what.join("; "),
                    list(&i.ranks.iter().chain(i.counts.iter().flat_map(|c| c.ranks.iter())).cloned().collect::<Vec<_>>())
                ),
                evidence: Vec::new(),
                fix: "Read the NCCL_DEBUG=INFO log of the ranks named (`fabrik logs`): their first WARN is the cause".into(),
            }),
            _ => {}
        }
    }
    if r.missing_process_count.is_some() || !r.missing_processes.is_empty() {
        let n = r
            .missing_process_count
            .unwrap_or(r.missing_processes.len() as u64);
        out.push(Finding {
            rule: "FAB-NCCL-RAS-INCOMPLETE".into(),
            severity: Severity::Error,
            subject: "job".into(),
            message: format!(
                "RAS got no communicator data from {n} job process(es){}{}",
                if r.missing_processes.is_empty() { "" } else { ": " },
                list(&r.missing_processes)
            ),
            evidence: r
                .missing_processes
                .iter()
                .take(8)
                .map(|x| Evidence::new("ras", describe(x)))
                .collect(),
            fix: "Check that the processes named are alive and responsive (a hung or dead process cannot answer RAS); look at their node's logs".into(),
        });
    }
    if r.dead_process_count.is_some() || !r.dead_processes.is_empty() {
        let n = r
            .dead_process_count
            .unwrap_or(r.dead_processes.len() as u64);
        let nodes = nodes_of(&r.dead_processes);
        out.push(Finding {
            rule: "FAB-NCCL-RAS-DEAD".into(),
            severity: Severity::Error,
            subject: if nodes.is_empty() { "job".into() } else { nodes.join(",") },
            message: format!(
                "{n} job process(es) considered dead (unreachable over the RAS network){}{}",
                if r.dead_processes.is_empty() { "" } else { ": " },
                list(&r.dead_processes)
            ),
            evidence: r
                .dead_processes
                .iter()
                .take(8)
                .map(|x| Evidence::new("ras", describe(x)))
                .collect(),
            fix: "The node or process is gone: check the node (power, kernel log, OOM killer, GPU Xid) and drain it before restarting the job".into(),
        });
    }
    if !r.outlier_nodes.is_empty() {
        out.push(Finding {
            rule: "FAB-NCCL-RAS-OUTLIER".into(),
            severity: Severity::Warning,
            subject: r
                .outlier_nodes
                .iter()
                .map(|o| o.node.clone())
                .collect::<Vec<_>>()
                .join(","),
            message: format!(
                "Node(s) running a different number of processes than the others: {}",
                r.outlier_nodes
                    .iter()
                    .map(|o| format!(
                        "{} (processes {})",
                        o.node,
                        o.pids.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
                    ))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            evidence: Vec::new(),
            fix: "Check the launcher's placement (ranks per node) and whether processes on this node died or never started".into(),
        });
    }
    if let Some(n) = r.timeouts.filter(|n| *n > 0) {
        out.push(Finding {
            rule: "FAB-NCCL-RAS-TIMEOUT".into(),
            severity: Severity::Warning,
            subject: "job".into(),
            message: format!("RAS hit {n} communication timeout(s) while gathering data: some processes answered late or not at all, so the report may be partial"),
            evidence: Vec::new(),
            fix: "Rerun `ncclras` with a longer `-t` timeout; persistent timeouts point at an overloaded or hung node".into(),
        });
    }
    out
}

/// Operation-count mismatch: the ranks behind are those the others wait for.
fn mismatch(i: &RasCommIssue, subject: String) -> Finding {
    let op = i.op.as_deref().unwrap_or("collective");
    let numeric: Vec<(u64, &RasCount)> = i
        .counts
        .iter()
        .filter_map(|c| num(&c.value).map(|v| (v, c)))
        .collect();
    let groups = i
        .counts
        .iter()
        .map(|c| match num(&c.value) {
            Some(0) => format!("{} rank(s) launched no {op} operation", c.count),
            Some(v) => format!("{} rank(s) launched up to {op} {v}", c.count),
            None => format!("{} rank(s) {}", c.count, c.value),
        })
        .collect::<Vec<_>>()
        .join(", ");
    let mut message = format!(
        "Ranks of this communicator disagree ({}): {groups}",
        i.what.join("; ")
    );
    if let (Some(min), Some(max)) = (
        numeric.iter().map(|(v, _)| *v).min(),
        numeric.iter().map(|(v, _)| *v).max(),
    ) {
        let behind: Vec<RasRank> = numeric
            .iter()
            .filter(|(v, _)| *v < max)
            .flat_map(|(_, c)| c.ranks.iter().cloned())
            .collect();
        let behind_count: u64 = numeric
            .iter()
            .filter(|(v, _)| *v < max)
            .map(|(_, c)| c.count)
            .sum();
        let ahead: Vec<RasRank> = numeric
            .iter()
            .filter(|(v, _)| *v == max)
            .flat_map(|(_, c)| c.ranks.iter().cloned())
            .collect();
        if min < max {
            message.push_str(&format!(
                ". The lagging ranks are the {behind_count} that have not reached {op} {max}; the others wait for them"
            ));
            if !behind.is_empty() {
                let nodes = nodes_of(&behind);
                message.push_str(&format!(": {}", list(&behind)));
                if !nodes.is_empty() {
                    message.push_str(&format!(" (node(s) {})", nodes.join(", ")));
                }
            } else if !ahead.is_empty() {
                message.push_str(&format!(
                    " (RAS listed only the ranks ahead: {})",
                    list(&ahead)
                ));
            }
        }
    } else {
        let named: Vec<RasRank> = i
            .counts
            .iter()
            .flat_map(|c| c.ranks.iter().cloned())
            .collect();
        if !named.is_empty() {
            message.push_str(&format!(". Ranks named: {}", list(&named)));
        }
    }
    Finding {
        rule: "FAB-NCCL-RAS-MISMATCH".into(),
        severity: Severity::Warning,
        subject,
        message,
        evidence: i
            .counts
            .iter()
            .flat_map(|c| c.ranks.iter())
            .take(8)
            .map(|x| Evidence::new("ras", describe(x)))
            .collect(),
        fix: "A straggler or a rank on another code path: look at what the lagging ranks (and their nodes) are doing (py-spy dump, GPU utilisation, Xid errors, a slow or failing node); a count that stays behind for long is a hang".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_strips_quotes_and_backticks() {
        assert_eq!(clean("> `Job summary`"), "Job summary");
        assert_eq!(
            clean(">>   #0-0 (ab) MISMATCH").trim(),
            "#0-0 (ab) MISMATCH"
        );
    }

    #[test]
    fn mode_of_counts() {
        assert_eq!(mode_of(&[1, 8, 8, 8]), Some(8));
        assert_eq!(mode_of(&[]), None);
    }
}
