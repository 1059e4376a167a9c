//! NCCL_DEBUG=INFO log analysis: streaming, one line at a time, any number of interleaved
//! processes, every NCCL 2.x format (2.4 `Ring 00 : 0[0] -> 1[0] via ...` to 2.2x
//! `Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA`).

mod chains;
mod diagnose;
pub mod follow;
mod merge;
mod messages;
mod prefix;
mod report;
mod settle;
mod summary;

use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;

pub use diagnose::{diagnose_program_line, diagnose_warn, result_code, result_name, Diagnosis};
pub use merge::rank_hosts;
pub use prefix::{Level, NcclLine, Splitter};
pub use report::*;

use chains::*;
use merge::*;

use fabrik_model::Severity;

use crate::error::ParseError;
use crate::input::{for_each_line, open_input};

/// Most distinct issues kept per process; more are counted in the last slot, never stored.
const MAX_ISSUES: usize = 64;
/// Most distinct channel kinds, env settings, ranks kept per process (all bounded by NCCL itself;
/// the caps only guard memory against hostile input).
const MAX_KEYS: usize = 128;
/// Most processes tracked; lines of further processes are counted under the last one.
const MAX_PROCESSES: usize = 1 << 16;

/// Accumulates what a set of log files says. Feed it lines (or files), then call [`finish`].
///
/// [`finish`]: LogAnalyzer::finish
pub struct LogAnalyzer {
    splitter: Splitter,
    processes: Vec<ProcState>,
    index: HashMap<Vec<u8>, usize, foldhash::fast::RandomState>,
    /// Process of the previous NCCL line of the current input (for unprefixed lines).
    current: Option<usize>,
    inputs: Vec<String>,
    input_name: String,
    line_no: u64,
    lines_read: u64,
    nccl_lines: u64,
    /// Versions from unprefixed `NCCL version` lines, which only rank 0 prints.
    bare_versions: Vec<String>,
    /// The previous non-NCCL line said `Last error:`; the next one is the detail.
    last_error_pending: bool,
    /// The previous non-NCCL line was PyTorch's `ncclUnhandledCudaError: Call to CUDA function
    /// failed.`; when its `Last error:` line is missing, NCCL's WARN text follows directly.
    detail_pending: bool,
    gate: ProgramGate,
    ras: crate::ras::RasTextParser,
    /// A RAS JSON document being collected (from a line `{` to a line `}`).
    ras_json: Option<String>,
    ras_json_report: Option<crate::ras::RasReport>,
    diag: crate::ras::diag::DiagParser,
    monitor: crate::ras::monitor::MonitorParser,
    /// `NCCL DIAG `, searched on every line that is not an NCCL INFO/WARN line.
    diag_marker: memchr::memmem::Finder<'static>,
    /// A WARN head without its message, waiting for the lines an excerpt wrapped it onto.
    wrapped: Option<Wrapped>,
}

/// A WARN whose message was wrapped onto the lines after its head (a paste or a document that
/// broke a long line): the head's process, source and position, and the text gathered so far.
struct Wrapped {
    idx: usize,
    source: Option<Vec<u8>>,
    cuda_dev: Option<u32>,
    line: u64,
    seq: u64,
    text: Vec<u8>,
    parts: u8,
}

/// Most lines a wrapped WARN message is gathered from, and its longest text.
const WRAPPED_LINES: u8 = 3;
const WRAPPED_BYTES: usize = 4096;

/// Substrings without which a program line cannot report an NCCL failure; searched with
/// prebuilt finders so that ordinary program output costs little.
struct ProgramGate {
    upper: memchr::memmem::Finder<'static>,
    lower: memchr::memmem::Finder<'static>,
    others: [memchr::memmem::Finder<'static>; 6],
    /// Searched on the lines the gate lets through.
    version: memchr::memmem::Finder<'static>,
    last_error: memchr::memmem::Finder<'static>,
}

/// Index of `RCCL version ` in [`ProgramGate::others`].
const RCCL_VERSION: usize = 3;

impl ProgramGate {
    fn new() -> Self {
        ProgramGate {
            upper: memchr::memmem::Finder::new(b"NCCL"),
            lower: memchr::memmem::Finder::new(b"nccl"),
            others: [
                memchr::memmem::Finder::new(b"nhandled"),
                memchr::memmem::Finder::new(b"remote process"),
                memchr::memmem::Finder::new(b"Last error"),
                // RCCL (ROCm) prints its version as `RCCL version 2.18.3+hip6.0 <git hash>`.
                memchr::memmem::Finder::new(b"RCCL version "),
                // nccl-tests' own CUDA check: `Test CUDA failure common.cu:297 '...'`.
                memchr::memmem::Finder::new(b"Test CUDA failure"),
                // UCX's `Caught signal 11 (...)`, Open MPI's `*** Process received signal ***`.
                memchr::memmem::Finder::new(b" signal "),
            ],
            version: memchr::memmem::Finder::new(b"NCCL version "),
            last_error: memchr::memmem::Finder::new(b"Last error:"),
        }
    }
}

#[derive(Default)]
struct ProcState {
    report: ProcessReport,
    /// Channel kinds and counts; a short list scanned linearly (a handful of kinds per process).
    channels: Vec<(String, u64)>,
    issues: Vec<LogIssue>,
    hints: Hints,
    /// The previous NCCL line of this process was a `-> N` trace line.
    in_chain: bool,
    /// The issue of the WARN this process printed last, while no other INFO line followed it:
    /// the `-> N` chain after it carries that WARN's result code.
    warn_issue: Option<usize>,
    /// A chain not explained by a WARN: (first site line, code, location, order), waiting to
    /// reach a caller that shows the error propagated (init, group, enqueue, proxy).
    pending_chain: Option<(String, u32, String, u64)>,
}

/// Facts that decide the transport when NCCL did not print `Using network`.
#[derive(Default, Clone, Copy)]
struct Hints {
    ofi: bool,
    tcpx: bool,
    fastrak: bool,
    /// An IB-specific warning about a device: NCCL had an RDMA device and tried to use it.
    ib_attempt: bool,
    /// `Initialized NET plugin X` of an external plugin (NCCL >= 2.27): it reported devices.
    plugin_devices: bool,
    /// `Failed to open libibverbs`.
    no_verbs: bool,
    /// A `NET/Socket` warning or a trace through net_socket.cc.
    socket_net: bool,
    /// A plugin said it turned GPUDirect RDMA off.
    gdr_off: bool,
    /// The network a `NET/<name> : GPU Direct RDMA ...` line names: NCCL prints it with the name
    /// of the network it picked for the communicator (2.4 transport/net.cu `ncclNetName()`,
    /// 2.19+ graph/topo.cc `comm->ncclNet->name`), or net_ib.cc for its own devices.
    gdr_net: Option<Transport>,
}

/// PyTorch's line naming an ncclResult: `ncclUnhandledCudaError: Call to CUDA function failed.`
/// (NCCLUtils.cpp's interpretation of the code, which NCCL's last error follows).
fn names_result(line: &[u8]) -> bool {
    let t = strip_launcher_prefix(line).trim_ascii_start();
    let word = t.split(|b| *b == b' ').next().unwrap_or(b"");
    word.starts_with(b"nccl") && word.ends_with(b"Error:")
}

impl Default for LogAnalyzer {
    fn default() -> Self {
        Self::new()
    }
}

impl LogAnalyzer {
    /// An analyzer with nothing read yet.
    pub fn new() -> Self {
        LogAnalyzer {
            splitter: Splitter::default(),
            processes: Vec::new(),
            index: HashMap::default(),
            current: None,
            inputs: Vec::new(),
            input_name: String::new(),
            line_no: 0,
            lines_read: 0,
            nccl_lines: 0,
            bare_versions: Vec::new(),
            last_error_pending: false,
            detail_pending: false,
            gate: ProgramGate::new(),
            ras: crate::ras::RasTextParser::new(),
            ras_json: None,
            ras_json_report: None,
            diag: crate::ras::diag::DiagParser::new(),
            monitor: crate::ras::monitor::MonitorParser::new(),
            diag_marker: memchr::memmem::Finder::new(crate::ras::diag::MARKER.as_bytes()),
            wrapped: None,
        }
    }

    /// Reads a whole input (`-` for stdin; gzip detected) into the analysis.
    pub fn read_path(&mut self, path: &Path) -> Result<(), ParseError> {
        let mut reader = open_input(path).map_err(|e| ParseError::io(path, e))?;
        let name = path.display().to_string();
        self.read(&name, &mut reader)
            .map_err(|e| ParseError::io(path, e))
    }

    /// Reads every line of `reader`, naming the input `name` in the report.
    pub fn read<R: BufRead + ?Sized>(&mut self, name: &str, reader: &mut R) -> std::io::Result<()> {
        self.begin_input(name);
        for_each_line(reader, |line| self.line(line))?;
        Ok(())
    }

    /// Starts a new input: unprefixed lines no longer belong to the previous file's process.
    pub fn begin_input(&mut self, name: &str) {
        self.flush_wrapped();
        self.inputs.push(name.to_string());
        self.input_name = name.to_string();
        self.line_no = 0;
        self.current = None;
        self.last_error_pending = false;
        self.detail_pending = false;
    }

    /// Feeds one line (without its newline).
    pub fn line(&mut self, line: &[u8]) {
        self.line_no += 1;
        self.lines_read += 1;
        let Some(first) = self.splitter.first_marker(line) else {
            self.record(line);
            return;
        };
        let Some(next) = self.splitter.record_after(line, first) else {
            // One marker, the common case: split there rather than search the line again.
            let nl = self.splitter.at_marker(line, first);
            self.record_split(line, nl);
            return;
        };
        if self.is_collector_copy(line, next) {
            self.record(line);
            return;
        }
        // A paste whose newlines were lost: each record is a line of its own.
        let mut start = 0;
        let mut end = Some(next);
        loop {
            self.record(&line[start..end.unwrap_or(line.len())]);
            let Some(e) = end else { break };
            start = e;
            end = self.splitter.next_record(line, start);
        }
    }

    /// Collectors that print a line twice (`ts | prefix msg | prefix msg`) hold two records
    /// with one message: the line is one record (the splitter keeps the cleaner, last copy).
    fn is_collector_copy(&self, line: &[u8], next: usize) -> bool {
        if self.splitter.next_record(line, next).is_some() {
            return false;
        }
        match (
            self.splitter.split(&line[..next]),
            self.splitter.split(&line[next..]),
        ) {
            (Some(a), Some(b)) => {
                a.message.starts_with(b.message) || b.message.starts_with(a.message)
            }
            _ => true,
        }
    }

    fn record(&mut self, line: &[u8]) {
        let nl = self.splitter.split(line);
        self.record_split(line, nl);
    }

    fn record_split(&mut self, line: &[u8], nl: Option<NcclLine<'_>>) {
        if self.wrapped.is_some() {
            if nl.is_none() && bare_or_blank(line).is_none() {
                self.continue_wrapped(line);
                return;
            }
            self.flush_wrapped();
        }
        match nl {
            Some(nl) => {
                self.nccl_lines += 1;
                self.last_error_pending = false;
                self.detail_pending = false;
                let idx = self.process_for(&nl);
                self.current = Some(idx);
                self.nccl_line(idx, &nl);
            }
            None => match prefix::bare_head(line) {
                Some(head) => {
                    let idx = self.process_for(&head);
                    self.current = Some(idx);
                }
                None => self.other_line(line),
            },
        }
    }

    fn process_for(&mut self, nl: &NcclLine<'_>) -> usize {
        // Lines without `host:pid` (stripped prefixes) all go to one unknown process.
        let key: &[u8] = nl.key.unwrap_or(b"");
        if let Some(&i) = self.index.get(key) {
            return i;
        }
        if self.processes.len() >= MAX_PROCESSES {
            return self.processes.len() - 1;
        }
        let mut st = ProcState::default();
        st.report.host = nl.host.map(|h| String::from_utf8_lossy(h).into_owned());
        st.report.pid = nl.pid;
        self.processes.push(st);
        let i = self.processes.len() - 1;
        self.index.insert(key.to_vec(), i);
        i
    }

    fn nccl_line(&mut self, idx: usize, nl: &NcclLine<'_>) {
        let location = Location {
            input: &self.input_name,
            line: self.line_no,
        };
        let seq = self.lines_read;
        let st = &mut self.processes[idx];
        st.report.lines += 1;
        if let Some(dev) = nl.cuda_dev {
            if !st.report.cuda_devices.contains(&dev) && st.report.cuda_devices.len() < MAX_KEYS {
                st.report.cuda_devices.push(dev);
            }
        }
        match nl.level {
            Level::Info => {
                if let Some((site, code)) = diagnose::chain_site(nl.message) {
                    chain_line(st, site, code, nl.message, &location, seq);
                    return;
                }
                st.in_chain = false;
                st.warn_issue = None;
                messages::info(st, nl.message, nl.cuda_dev);
                if let Some(d) = diagnose::diagnose_info(nl.message) {
                    let i = add_issue(&mut st.issues, d, nl.message, &location, seq);
                    set_dev(&mut st.issues, i, nl.cuda_dev);
                }
            }
            Level::Warn if nl.message.is_empty() => {
                st.in_chain = false;
                self.wrapped = Some(Wrapped {
                    idx,
                    source: nl.source.map(<[u8]>::to_vec),
                    cuda_dev: nl.cuda_dev,
                    line: self.line_no,
                    seq,
                    text: Vec::new(),
                    parts: 0,
                });
            }
            Level::Warn => {
                let line = self.line_no;
                self.warn_line(idx, nl.message, nl.source, nl.cuda_dev, line, seq);
            }
        }
    }

    fn warn_line(
        &mut self,
        idx: usize,
        message: &[u8],
        source: Option<&[u8]>,
        cuda_dev: Option<u32>,
        line: u64,
        seq: u64,
    ) {
        let location = Location {
            input: &self.input_name,
            line,
        };
        let st = &mut self.processes[idx];
        st.in_chain = false;
        messages::warn_facts(st, message, source);
        let d = diagnose::diagnose_warn(message, source);
        let ifname = st.report.env.contains_key("NCCL_SOCKET_IFNAME");
        let d = diagnose::refine(d, message, ifname);
        st.warn_issue = add_issue(&mut st.issues, d, message, &location, seq);
        set_dev(&mut st.issues, st.warn_issue, cuda_dev);
    }

    /// One more line of a wrapped WARN message.
    fn continue_wrapped(&mut self, line: &[u8]) {
        let Some(w) = self.wrapped.as_mut() else {
            return;
        };
        let part = strip_launcher_prefix(line);
        if w.text.len() + part.len() < WRAPPED_BYTES {
            if !w.text.is_empty() {
                w.text.push(b' ');
            }
            w.text.extend_from_slice(part);
        }
        w.parts += 1;
        if w.parts >= WRAPPED_LINES {
            self.flush_wrapped();
        }
    }

    /// Diagnoses a wrapped WARN with the text gathered (none when nothing followed its head).
    fn flush_wrapped(&mut self) {
        if let Some(w) = self.wrapped.take() {
            self.warn_line(
                w.idx,
                &w.text,
                w.source.as_deref(),
                w.cuda_dev,
                w.line,
                w.seq,
            );
        }
    }

    /// RAS reports are program output: text (`ncclras`) or a JSON document (`ncclras -f json`).
    fn ras_line(&mut self, line: &[u8]) {
        let text = String::from_utf8_lossy(line);
        if self.diag_marker.find(line).is_some() {
            self.diag.line(&text);
            return;
        }
        self.monitor.line(&text);
        self.ras.line(&text);
        let t = text.trim_end();
        if let Some(buf) = self.ras_json.as_mut() {
            // jsonWriteHeader's first key follows the `{` line: any other document is not
            // RAS's, and is not kept.
            if buf.len() == 2 && !t.trim_start().starts_with("\"nccl_version\"") {
                self.ras_json = None;
                return;
            }
            if buf.len() + t.len() < crate::ras::MAX_JSON {
                buf.push_str(t);
                buf.push('\n');
            } else {
                self.ras_json = None;
                return;
            }
            if t == "}" {
                if let Some(doc) = self.ras_json.take() {
                    if let Some(r) = crate::ras::parse_json(&doc) {
                        self.ras_json_report = Some(r);
                    }
                }
            }
        } else if t == "{" && self.ras_json_report.is_none() {
            self.ras_json = Some(String::from("{\n"));
        }
    }

    fn other_line(&mut self, line: &[u8]) {
        self.ras_line(line);
        let has_upper = self.gate.upper.find(line).is_some();
        let interesting = has_upper
            || self.gate.lower.find(line).is_some()
            || self.gate.others.iter().any(|f| f.find(line).is_some());
        if !interesting && !self.last_error_pending && !self.detail_pending {
            return;
        }
        // Rank 0 of NCCL < 2.9 prints its version without any prefix.
        let bare = has_upper
            .then(|| self.gate.version.find(line))
            .flatten()
            .or_else(|| self.gate.others[RCCL_VERSION].find(line));
        if let Some(pos) = bare {
            let rest = line[pos + 13..].trim_ascii_start();
            let rest = rest.strip_prefix(b":").unwrap_or(rest).trim_ascii_start();
            let tok = rest.split(u8::is_ascii_whitespace).next().unwrap_or(b"");
            let tok = match tok.iter().position(|b| *b == b'-') {
                Some(p) => &tok[..p],
                None => tok,
            };
            if tok.first().is_some_and(u8::is_ascii_digit) {
                let v = String::from_utf8_lossy(tok);
                let v = v.trim_end_matches(',');
                let (ver, cuda) = messages::split_version(v);
                if !self.bare_versions.contains(&ver) && self.bare_versions.len() < MAX_KEYS {
                    self.bare_versions.push(ver.clone());
                }
                if let Some(cur) = self.current {
                    let r = &mut self.processes[cur].report;
                    if r.nccl_version.is_none() {
                        r.nccl_version = Some(ver);
                        r.cuda_runtime = cuda;
                    }
                }
            }
        }
        let pending = std::mem::replace(&mut self.last_error_pending, false);
        let detail = std::mem::replace(&mut self.detail_pending, false);
        if self.gate.last_error.find(line).is_some() {
            self.last_error_pending = true;
        } else if names_result(line) {
            self.detail_pending = true;
        }
        let diagnosis = diagnose::diagnose_program_line(line).or_else(|| {
            if pending {
                // The detail line after `Last error:` is an NCCL WARN text without its prefix.
                let text = strip_launcher_prefix(line);
                let ifname = self
                    .current
                    .and_then(|i| self.processes.get(i))
                    .is_some_and(|p| p.report.env.contains_key("NCCL_SOCKET_IFNAME"));
                let d = diagnose::refine(diagnose::diagnose_warn(text, None), text, ifname);
                (d.rule != "FAB-NCCL-WARN").then_some(d)
            } else if detail {
                // Without `Last error:` the next line may be anything: only a WARN the catalog
                // knows by its format string counts, never the word keys.
                diagnose::catalog_diagnosis(strip_launcher_prefix(line))
            } else {
                None
            }
        });
        if let Some(d) = diagnosis {
            let location = format!("{}:{}", self.input_name, self.line_no);
            let idx = match self.current {
                Some(i) => i,
                None => self.unknown_process(),
            };
            let seq = self.lines_read;
            if pending {
                // The WARN text after `Last error:` names the plugin as a WARN line would.
                messages::warn_facts(&mut self.processes[idx], strip_launcher_prefix(line), None);
            }
            add_issue(
                &mut self.processes[idx].issues,
                d,
                strip_launcher_prefix(line),
                &location,
                seq,
            );
        }
    }

    fn unknown_process(&mut self) -> usize {
        if let Some(&i) = self.index.get(&b""[..]) {
            return i;
        }
        self.processes.push(ProcState::default());
        let i = self.processes.len() - 1;
        self.index.insert(Vec::new(), i);
        i
    }

    /// Builds the report.
    pub fn finish(mut self) -> LogReport {
        self.flush_wrapped();
        merge_unknown_process(&mut self.processes);
        let processes: Vec<ProcessReport> = self
            .processes
            .into_iter()
            .map(|mut st| {
                for (k, n) in st.channels {
                    st.report.channels.insert(k, n);
                }
                st.report.issues = st.issues;
                st.report.ranks.sort();
                st.report.cuda_devices.sort_unstable();
                settle::settle(&mut st.report, st.hints);
                st.report
            })
            .collect();
        let ras = self.ras.finish().or(self.ras_json_report);
        let other_reports = !self.diag.is_empty() || self.monitor.table().events > 0;
        let mut report = summary::build(
            self.inputs,
            processes,
            self.bare_versions,
            self.lines_read,
            self.nccl_lines,
            ras.is_some() || other_reports,
        );
        if let Some(r) = &ras {
            let mut extra = crate::ras::findings(r);
            report.summary.errors += extra
                .iter()
                .filter(|f| f.severity == fabrik_model::Severity::Error)
                .count() as u32;
            report.summary.warnings += extra
                .iter()
                .filter(|f| f.severity == fabrik_model::Severity::Warning)
                .count() as u32;
            if report.nccl_lines == 0 || report.processes.is_empty() {
                report.summary.hosts = r.nodes.map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX));
                report.summary.processes = r
                    .processes
                    .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX));
            }
            if report.summary.nccl_version.is_none() {
                report.summary.nccl_version = r.nccl_version.clone();
            }
            if report.nccl_lines == 0 {
                // The transport sentence would say nothing: say what RAS saw instead.
                report.summary.text = crate::ras::summary_text(r, report.summary.errors);
            }
            extra.append(&mut report.findings);
            report.findings = extra;
            fabrik_model::sort_findings(&mut report.findings);
        }
        report.ras = ras;
        add_diag_and_monitor(self.diag, self.monitor, &mut report);
        report
    }
}

/// Analyses the given inputs (`-` is stdin) into one report.
pub fn analyze_paths<P: AsRef<Path>>(paths: &[P]) -> Result<LogReport, ParseError> {
    let mut a = LogAnalyzer::new();
    for p in paths {
        a.read_path(p.as_ref())?;
    }
    Ok(a.finish())
}

/// Analyses a text held in memory (tests, small inputs).
pub fn analyze_str(name: &str, text: &str) -> LogReport {
    let mut a = LogAnalyzer::new();
    a.begin_input(name);
    let mut reader = text.as_bytes();
    // Reading from a byte slice cannot fail.
    let _ = for_each_line(&mut reader, |l| a.line(l));
    a.finish()
}
