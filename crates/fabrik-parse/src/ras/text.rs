//! The text report of `ncclras` (NCCL 2.24+), read line by line inside any other text.

use super::{RasCommIssue, RasCount, RasGroup, RasOutlier, RasRank, RasReport, MAX_ITEMS};

/// so this bounds the report's memory whatever the input.
const MAX_REPORT_LINES: u64 = 1 << 17;

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

pub(super) fn num(s: &str) -> Option<u64> {
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
pub(super) fn clean(line: &str) -> &str {
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
}
