//! The findings a RAS report supports, and the sentence that sums it up.

use fabrik_model::{Evidence, Finding, Severity};

use super::text::num;
use super::{RasCommIssue, RasCount, RasRank, RasReport};

/// The sentence is the report's own: a model function, here where its readers look for it.
pub use fabrik_model::ras::summary_text;

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
