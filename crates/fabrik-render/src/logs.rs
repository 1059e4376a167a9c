//! `fabrik logs`: what NCCL did, per process, as text and Markdown. Cells and findings quote
//! the log, so every line passes through [`visible_lines`] on its way to a terminal.

use std::fmt::Write as _;

use fabrik_model::logs::{LogReport, ProcessReport, Transport};
use fabrik_model::text::visible_lines;

use crate::dash as opt;

fn flag(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "yes",
        Some(false) => "no",
        None => "-",
    }
}

fn proc_name(p: &ProcessReport) -> String {
    match (&p.host, p.pid) {
        (Some(h), Some(pid)) => format!("{h}:{pid}"),
        (Some(h), None) => h.clone(),
        (None, Some(pid)) => format!("pid {pid}"),
        (None, None) => "?".to_string(),
    }
}

fn ranks(p: &ProcessReport) -> String {
    if p.ranks.is_empty() {
        return "-".into();
    }
    p.ranks
        .iter()
        .map(|r| match r.nranks {
            Some(n) => format!("{}/{n}", r.rank),
            None => r.rank.to_string(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn nics(p: &ProcessReport) -> String {
    if !p.ib_nics.is_empty() {
        let mut s = p
            .ib_nics
            .iter()
            .map(|n| {
                let sharp = if n.sharp { "/SHARP" } else { "" };
                format!("{}/{}{sharp}", n.device, n.link.as_deref().unwrap_or("?"))
            })
            .collect::<Vec<_>>()
            .join(" ");
        if p.relaxed_ordering {
            s.push_str(" [RO]");
        }
        return s;
    }
    if !p.socket_interfaces.is_empty() {
        return p
            .socket_interfaces
            .iter()
            .map(|e| e.interface.clone())
            .collect::<Vec<_>>()
            .join(" ");
    }
    "-".into()
}

fn channels(p: &ProcessReport) -> String {
    if p.channels.is_empty() {
        return "-".into();
    }
    p.channels
        .iter()
        .map(|(k, n)| format!("{k}={n}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn transport(p: &ProcessReport) -> String {
    p.transport.map_or("-", Transport::as_str).to_string()
}

fn rows(report: &LogReport) -> Vec<[String; 9]> {
    report
        .processes
        .iter()
        .map(|p| {
            [
                proc_name(p),
                p.cuda_devices
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
                ranks(p),
                opt(&p.nccl_version),
                transport(p),
                flag(p.gdr).to_string(),
                nics(p),
                channels(p),
                p.issues.len().to_string(),
            ]
        })
        .collect()
}

const HEADERS: [&str; 9] = [
    "process",
    "gpu",
    "rank",
    "nccl",
    "transport",
    "gdr",
    "nics",
    "channels",
    "issues",
];

/// The analysis as text: the summary, one row per process (host:pid, GPUs, ranks, NCCL
/// version, transport, GPUDirect RDMA, NICs, channels, issues), then the findings.
pub fn text(report: &LogReport) -> String {
    let mut out = String::new();
    let s = &report.summary;
    let _ = writeln!(out, "summary: {}", s.text);
    let _ = writeln!(
        out,
        "nccl {}  nvls {}  collnet {}  lines {} (nccl {})",
        opt(&s.nccl_version),
        flag(s.nvls),
        flag(s.collnet),
        report.lines_read,
        report.nccl_lines
    );
    let rows = rows(report);
    let mut widths: Vec<usize> = HEADERS.iter().map(|h| h.len()).collect();
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r.iter()) {
            *w = (*w).max(c.chars().count()).min(60);
        }
    }
    out.push('\n');
    let line = |cells: &[String]| {
        let mut l = String::new();
        for (c, w) in cells.iter().zip(&widths) {
            let _ = write!(l, "{c:<w$}  ");
        }
        l.trim_end().to_string()
    };
    let _ = writeln!(out, "{}", line(&HEADERS.map(String::from)));
    for r in &rows {
        let _ = writeln!(out, "{}", line(r));
    }
    if !report.findings.is_empty() {
        let _ = writeln!(out, "\nfindings:");
        out.push_str(&crate::findings::text(&report.findings));
    }
    // Cells and findings quote the log: no escape sequence in it reaches the terminal.
    visible_lines(&out).into_owned()
}

/// The analysis as Markdown: the summary, the process table, then the findings.
pub fn markdown(report: &LogReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "**Summary:** {}\n", report.summary.text);
    let _ = writeln!(out, "| {} |", HEADERS.join(" | "));
    let _ = writeln!(out, "|{}", " --- |".repeat(HEADERS.len()));
    for r in rows(report) {
        let cells: Vec<String> = r.iter().map(|c| c.replace('|', "\\|")).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    if !report.findings.is_empty() {
        out.push('\n');
        out.push_str(&crate::findings::markdown(&report.findings));
    }
    visible_lines(&out).into_owned()
}
