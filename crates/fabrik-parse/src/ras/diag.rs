//! `NCCL DIAG` lines: the reports of NCCL's RAS diagnostics (`ncclras -D`, the RAS protocol's
//! `DIAGNOSTICS` command, or `NCCL_RUN_RAS_DIAGNOSTICS=1` at every communicator's creation) and of
//! its active diagnostics (`NCCL_RUN_DIAGNOSTICS=1`), NCCL 2.31 and later.
//!
//! Every line is `<host>:<pid> NCCL DIAG ` and then a header (`=== RAS Diagnostics ===`,
//! `=== NCCL Diagnostics ===`), a result (`[OK]   <check>: ...`, `[INFO] <check>: ...`) or the
//! completion line (`RAS diagnostics completed in 12.3 ms across 8 RAS peers`). The checks and
//! their sentences are those of NCCL's src/ras/diagnostics*.cc and src/diagnostics/ (the format
//! strings of the 2.31.2 and 2.32.3 releases): GPU inventory (model, count), CUDA driver version,
//! volatile ECC errors, NVLink links, the `NCCL_*` environment, IOMMU and ATS state, Xid/SXid
//! events, the GPU-to-GPU P2P check (`srcRank=.. dstRank=..` per failed edge) and the network
//! bandwidth check (`net bw: <kind> rank R (host): X Gbit/s, >30% off median`). Rank lists are
//! printed `{0,1,2}`, or `{0,1,2,...} (N=12)` when cut.

use std::collections::BTreeMap;

use fabrik_model::{Evidence, Finding, Severity};

/// Most reports and lines kept (hostile input cannot grow memory without bound).
const MAX_REPORTS: usize = 256;
const MAX_LINES: usize = 4096;

/// The marker every DIAG line carries.
pub const MARKER: &str = "NCCL DIAG ";

/// The DIAG reports are model types: every renderer reads them.
pub use fabrik_model::ras::{DiagLine, DiagReport};

/// Collects DIAG reports from lines of any text (a job's standard output, `ncclras -D`).
#[derive(Debug, Default)]
pub struct DiagParser {
    reports: Vec<DiagReport>,
    /// A report is open between its header and its completion line.
    open: bool,
}

/// `host:pid` in front of the marker (launcher prefixes before it are left out).
fn head(before: &str) -> (Option<String>, Option<u64>) {
    let tok = before.split_whitespace().last().unwrap_or("");
    let tok = tok.rsplit(['>', ']']).next().unwrap_or(tok);
    let tok = tok.trim_start_matches(':');
    match tok.rsplit_once(':') {
        Some((h, p)) if !h.is_empty() => match p.parse() {
            Ok(pid) => (Some(h.to_string()), Some(pid)),
            Err(_) => (None, None),
        },
        _ => (None, None),
    }
}

/// The numbers of a `{0,1,2,...}` list.
fn rank_list(s: &str) -> Vec<u64> {
    let Some(open) = s.find('{') else {
        return Vec::new();
    };
    let Some(close) = s[open..].find('}') else {
        return Vec::new();
    };
    s[open + 1..open + close]
        .split(',')
        .filter_map(|x| x.trim().parse().ok())
        .take(MAX_LINES)
        .collect()
}

fn word_after<'a>(s: &'a str, key: &str) -> Option<&'a str> {
    let p = s.find(key)?;
    s[p + key.len()..]
        .split(|c: char| c.is_whitespace() || c == ';' || c == ',')
        .next()
}

fn parse_result(tag: &str, body: &str) -> DiagLine {
    let (check, text) = match body.split_once(": ") {
        Some((c, t)) if c.len() <= 40 => (c.trim().to_string(), t.trim().to_string()),
        _ => (String::new(), body.trim().to_string()),
    };
    let comm = word_after(&text, "in comm ").map(|c| c.split('/').next().unwrap_or(c).to_string());
    let mut ranks = rank_list(&text);
    if let Some(r) = word_after(&text, "srcRank=").and_then(|r| r.parse().ok()) {
        ranks.push(r);
    }
    if let Some(r) = word_after(&text, "dstRank=").and_then(|r| r.parse().ok()) {
        ranks.push(r);
    }
    let mut host = word_after(&text, "on host ").map(|h| h.trim_end_matches('.').to_string());
    // `net bw: same-nic rank 2 (host2): 150.0 Gbit/s, >30% off median ...`
    if let Some(p) = text.find(" rank ") {
        let rest = &text[p + 6..];
        if let Some((num, tail)) = rest.split_once(" (") {
            if let (Ok(r), Some((h, _))) = (num.parse(), tail.split_once("):")) {
                ranks.push(r);
                host = Some(h.to_string());
            }
        }
    }
    let reference = text.find("differ from rank ").and_then(|p| {
        let rest = &text[p + 17..];
        let (num, tail) = rest.split_once(" (")?;
        let value = tail.rsplit_once(')').map_or(tail, |(v, _)| v);
        Some((num.parse().ok()?, value.to_string()))
    });
    DiagLine {
        tag: tag.to_string(),
        check,
        text,
        comm,
        ranks,
        reference,
        host,
    }
}

impl DiagParser {
    /// A parser with nothing read yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one line; true when it was a DIAG line.
    pub fn line(&mut self, raw: &str) -> bool {
        let Some(pos) = raw.find(MARKER) else {
            return false;
        };
        let (host, pid) = head(&raw[..pos]);
        let body = raw[pos + MARKER.len()..].trim();
        if body.starts_with("===") {
            let kind = if body.contains("RAS") {
                "ras"
            } else {
                "active"
            };
            if self.reports.len() < MAX_REPORTS {
                self.reports.push(DiagReport {
                    kind: kind.into(),
                    host,
                    pid,
                    ..DiagReport::default()
                });
                self.open = true;
            }
            return true;
        }
        if let Some(p) = body.find(" completed in ") {
            let rest = &body[p + 14..];
            let ms = rest.split_whitespace().next().and_then(|v| v.parse().ok());
            let across = word_after(rest, "across ").and_then(|v| v.parse().ok());
            let kind = if body.starts_with("RAS") {
                "ras"
            } else {
                "active"
            };
            let r = self.current(kind, host, pid);
            if let Some(r) = r {
                r.completed_ms = ms;
                r.across = across;
            }
            self.open = false;
            return true;
        }
        let (tag, rest) = if let Some(r) = body.strip_prefix("[OK]") {
            ("OK", r)
        } else if let Some(r) = body.strip_prefix("[INFO]") {
            ("INFO", r)
        } else if let Some(r) = body.strip_prefix("INFO ") {
            ("INFO", r)
        } else {
            ("", body)
        };
        let line = parse_result(tag, rest.trim());
        // A check line before any header (a paste that starts mid-report) opens a report.
        let kind = if matches!(line.check.as_str(), "p2p" | "net bw") {
            "active"
        } else {
            "ras"
        };
        if let Some(r) = self.current(kind, host, pid) {
            if r.lines.len() < MAX_LINES {
                r.lines.push(line);
            }
        }
        true
    }

    fn current(
        &mut self,
        kind: &str,
        host: Option<String>,
        pid: Option<u64>,
    ) -> Option<&mut DiagReport> {
        if !self.open || self.reports.is_empty() {
            if self.reports.len() >= MAX_REPORTS {
                return self.reports.last_mut();
            }
            self.reports.push(DiagReport {
                kind: kind.into(),
                host,
                pid,
                ..DiagReport::default()
            });
            self.open = true;
        }
        self.reports.last_mut()
    }

    /// Whether no DIAG line was read.
    pub fn is_empty(&self) -> bool {
        self.reports.is_empty()
    }

    /// The reports read.
    pub fn finish(self) -> Vec<DiagReport> {
        self.reports
    }
}

/// Reads every DIAG report in a text.
pub fn parse(text: &str) -> Vec<DiagReport> {
    let mut p = DiagParser::new();
    for l in text.lines() {
        p.line(l);
    }
    p.finish()
}

/// Where each rank ran, as a log of the same job tells (empty when unknown).
pub type RankHosts = BTreeMap<u64, String>;

fn ranks_text(ranks: &[u64], hosts: &RankHosts) -> String {
    let mut by_host: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    let mut unknown = Vec::new();
    for r in ranks {
        match hosts.get(r) {
            Some(h) => by_host.entry(h.as_str()).or_default().push(*r),
            None => unknown.push(*r),
        }
    }
    let list = |v: &[u64]| {
        v.iter()
            .take(16)
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(",")
    };
    let mut parts: Vec<String> = by_host
        .iter()
        .map(|(h, rs)| format!("rank(s) {} on {h}", list(rs)))
        .collect();
    if !unknown.is_empty() {
        parts.push(format!("rank(s) {}", list(&unknown)));
    }
    parts.join("; ")
}

fn subject(line: &DiagLine, hosts: &RankHosts, report: &DiagReport) -> String {
    let mut hs: Vec<&str> = line
        .ranks
        .iter()
        .filter_map(|r| hosts.get(r).map(String::as_str))
        .collect();
    if let Some(h) = &line.host {
        hs.push(h);
    }
    hs.sort_unstable();
    hs.dedup();
    if !hs.is_empty() {
        return hs.join(",");
    }
    match (&line.comm, line.ranks.is_empty()) {
        (Some(c), false) => format!("comm {c} {}", ranks_text(&line.ranks, hosts)),
        (Some(c), true) => format!("comm {c}"),
        (None, _) => report.host.clone().unwrap_or_else(|| "job".into()),
    }
}

/// The rule, severity and fix of a flagged line; None for a notice (data unavailable, a check
/// skipped, an informational note on a healthy system).
fn classify(line: &DiagLine) -> Option<(&'static str, Severity, &'static str)> {
    let t = line.text.as_str();
    let benign = [
        "unavailable",
        "skipped",
        "temporarily enabled",
        "require root",
        "consistent across",
        "No user action",
        "no events requiring",
        "only the first device is tested",
        "are shared across ranks",
    ];
    if line.tag != "INFO" || benign.iter().any(|b| t.contains(b)) {
        return None;
    }
    Some(match line.check.as_str() {
        "GPU inventory" => ("FAB-NCCL-DIAG-GPU", Severity::Warning, "Run the job on nodes of one GPU model and one GPU count (the scheduler's node features or constraint); a mixed job runs at the pace of its slowest GPU and may choose different algorithms per node"),
        "CUDA driver version" => ("FAB-NCCL-DIAG-DRIVER", Severity::Warning, "Install one driver version on every node of the job (compare `nvidia-smi` on the nodes named); mixed drivers give different CUDA and NVLink behaviour per rank"),
        "ECC" if t.contains("uncorrected") => ("FAB-NCCL-DIAG-ECC", Severity::Error, "Drain the GPU named: uncorrected ECC errors corrupt data or crash kernels (check `nvidia-smi -q -d ECC` and the kernel log for Xid 48/63/64/94/95; reset or replace the GPU)"),
        "ECC" => ("FAB-NCCL-DIAG-ECC", Severity::Warning, "Watch the GPU named: its corrected ECC errors are above NCCL_DIAGNOSTICS_ECC_THRESHOLD (`nvidia-smi -q -d ECC`, pending page retirements)"),
        "NVLink" if t.contains("inactive") => ("FAB-NCCL-DIAG-NVLINK", Severity::Error, "An NVLink is down on the GPU named: traffic that should use it falls back to slower paths or fails; check `nvidia-smi nvlink -s`, Fabric Manager, and reset or service the node"),
        "NVLink" => ("FAB-NCCL-DIAG-NVLINK", Severity::Warning, "Compare `nvidia-smi nvlink -s` on the ranks named: different link counts or speeds mean a degraded or different node"),
        "NCCL environment" => ("FAB-NCCL-DIAG-ENV", Severity::Warning, "Give every rank the same NCCL_* settings (launcher `-x`, the container's environment, a job-wide env file); ranks that disagree choose different transports or algorithms"),
        "p2p" => ("FAB-NCCL-DIAG-P2P", Severity::Error, "GPU peer-to-peer between the GPUs named failed its data check: check `nvidia-smi topo -p2p n`, ACS and IOMMU settings on PCIe switches, CUDA IPC in the container (--ipc=host), and the GPU's health; until fixed, NCCL_P2P_DISABLE=1 avoids the path"),
        "net bw" if t.contains("off median") => ("FAB-NCCL-DIAG-NETBW", Severity::Warning, "The rank named measured network bandwidth far from the others: check its NIC (link rate, errors, PCIe width, `fabrik doctor`) and its switch port"),
        "net bw" => ("FAB-NCCL-DIAG-NETBW", Severity::Info, "The network bandwidth check could not run to the end; read the DIAG subsystem's INFO lines (NCCL_DEBUG_SUBSYS=DIAG) for the step that failed"),
        "Xid/SXid" | "" if t.contains("Xid") => ("FAB-NCCL-DIAG-XID", Severity::Error, "Follow the Xid's documented response on the host named (restart the application, reset the GPU, or drain the node)"),
        _ => ("FAB-NCCL-DIAG-INFO", Severity::Warning, "Read the line: NCCL's diagnostics flagged a difference between ranks or an unusual state of the node"),
    })
}

/// The findings the DIAG reports support: one per flagged line, naming the ranks and, with a log
/// of the same job, their hosts; a P2P summary that counts failed edges is folded into its edges.
pub fn findings(reports: &[DiagReport], hosts: &RankHosts) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::new();
    for r in reports {
        let edges = r
            .lines
            .iter()
            .any(|l| l.check == "p2p" && (l.text.contains("srcRank=") || !l.ranks.is_empty()));
        for l in &r.lines {
            let Some((rule, severity, fix)) = classify(l) else {
                continue;
            };
            // `p2p: only 52/56 ... passed` beside the edge lines says the same thing.
            if rule == "FAB-NCCL-DIAG-P2P" && edges && l.ranks.is_empty() {
                continue;
            }
            let mut message = format!("NCCL diagnostics ({}): {}: {}", r.kind, l.check, l.text);
            if !l.ranks.is_empty() && !hosts.is_empty() {
                message.push_str(&format!(" [{}]", ranks_text(&l.ranks, hosts)));
            }
            if let Some((rank, value)) = &l.reference {
                if let Some(h) = hosts.get(rank) {
                    message.push_str(&format!(" (reference rank {rank} on {h}: {value})"));
                }
            }
            let subject = subject(l, hosts, r);
            if let Some(f) = out
                .iter_mut()
                .find(|f| f.rule == rule && f.subject == subject)
            {
                if f.evidence.len() < 8 {
                    f.evidence.push(Evidence::new("diag", &l.text));
                }
                continue;
            }
            out.push(Finding {
                rule: rule.into(),
                severity,
                subject,
                message,
                evidence: vec![Evidence::new("diag", &l.text)],
                fix: fix.into(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_lists_and_heads() {
        assert_eq!(rank_list("on rank(s) {0,1,2,...} (N=12)"), vec![0, 1, 2]);
        assert_eq!(
            head("[1,0]<stdout>:node042:12345 "),
            (Some("node042".into()), Some(12345))
        );
        assert_eq!(head(""), (None, None));
    }
}
