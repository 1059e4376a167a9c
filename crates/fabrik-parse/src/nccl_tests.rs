//! nccl-tests output (`all_reduce_perf` and the other collectives) into [`CollectiveReport`]:
//! the text tables of every version (with or without `redop`/`root`, `error` or `#wrong`,
//! per-iteration columns) and the JSON file nccl-tests >= 2.17 writes with `-J`.

use std::collections::HashSet;
use std::io::{BufRead, Read};
use std::path::Path;

use fabrik_model::{
    CollTiming, CollectiveReport, CollectiveRow, RankDevice, ResultSource, SCHEMA_VERSION,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ParseError;
use crate::input::{for_each_line, open_input};
use crate::text::{parse_f64, strip_launcher_prefix, strip_quotes_and_labels};

/// Rows kept per run. nccl-tests prints one row per size (about 32 for 8 B..16 GiB with `-f 2`);
/// the cap keeps memory flat on endless or concatenated input, and the excess is counted.
pub const MAX_ROWS: usize = 8192;
/// Runs kept per input; later runs are counted, not kept.
pub const MAX_RUNS: usize = 512;
/// Device lines kept per run (one per rank; the largest published jobs have tens of thousands).
pub const MAX_DEVICES: usize = 65_536;
/// Notes kept per run.
pub const MAX_NOTES: usize = 64;
/// The JSON of `-J` is read whole; a real one is a few hundred kB.
pub const MAX_JSON_BYTES: u64 = 64 << 20;

/// One nccl-tests run, and what the text says beside the table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NcclTestsRun {
    /// The table as a collective report.
    pub report: CollectiveReport,
    /// `# Out of bounds values : N`.
    pub out_of_bounds: Option<u64>,
    /// Largest value of the `error` column of old nccl-tests (a numeric deviation, not a count).
    pub max_error: Option<f64>,
    /// Rows and device lines beyond [`MAX_ROWS`] and [`MAX_DEVICES`], counted and not kept.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rows_dropped: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

#[derive(Default)]
struct Layout {
    prefix: Vec<String>,
    group: usize,
    /// The 4th column of a group is `error` (old float deviation) rather than `#wrong`.
    error_column: bool,
}

struct Builder {
    runs: Vec<NcclTestsRun>,
    cur: NcclTestsRun,
    layout: Option<Layout>,
    /// Hosts of the current run, for a constant-time membership test.
    hosts: HashSet<String>,
    /// Runs beyond [`MAX_RUNS`], counted and not kept.
    runs_dropped: u64,
    /// The op was named by the text itself (command line, banner), not guessed from the header.
    op_named: bool,
    /// Finds `NCCL ` (then `INFO`/`WARN`) in lines mixed into the table.
    nccl: memchr::memmem::Finder<'static>,
}

fn empty_run() -> NcclTestsRun {
    NcclTestsRun {
        report: CollectiveReport {
            schema_version: SCHEMA_VERSION,
            source: ResultSource::NcclTests,
            op: "unknown".to_string(),
            backend: None,
            ranks: None,
            hosts: Vec::new(),
            devices: Vec::new(),
            rows: Vec::new(),
            avg_busbw: None,
            notes: Vec::new(),
        },
        out_of_bounds: None,
        max_error: None,
        rows_dropped: 0,
    }
}

/// `all_reduce_perf`, `./build/all_gather_perf_mpi` → `all_reduce`, `all_gather`.
pub fn op_from_program(name: &str) -> Option<String> {
    let base = name.rsplit('/').next().unwrap_or(name);
    let base = base.strip_suffix("_mpi").unwrap_or(base);
    let op = base.strip_suffix("_perf")?;
    (!op.is_empty() && op.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
        .then(|| op.to_string())
}

/// The operand of `# Collective test starting:`: nccl-tests names its program
/// (`all_reduce_perf`), fabrik its operation followed by `(fabrik)`.
fn op_from_test_start(rest: &str) -> Option<String> {
    let mut words = rest.split_whitespace();
    let first = words.next()?;
    if let Some(op) = op_from_program(first) {
        return Some(op);
    }
    let is_op = !first.is_empty() && first.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
    (is_op && words.next() == Some("(fabrik)")).then(|| first.to_string())
}

impl Builder {
    fn new() -> Self {
        Builder {
            runs: Vec::new(),
            cur: empty_run(),
            layout: None,
            hosts: HashSet::new(),
            runs_dropped: 0,
            op_named: false,
            nccl: memchr::memmem::Finder::new(b"NCCL "),
        }
    }

    fn start_new_run(&mut self) {
        let done = std::mem::replace(&mut self.cur, empty_run());
        if self.runs.len() < MAX_RUNS {
            self.runs.push(done);
        } else if is_run(&done) {
            self.runs_dropped += 1;
        }
        self.layout = None;
        self.hosts.clear();
        self.op_named = false;
    }

    fn note(&mut self, note: String) {
        if self.cur.report.notes.len() < MAX_NOTES && !self.cur.report.notes.contains(&note) {
            self.cur.report.notes.push(note);
        }
    }

    fn set_op(&mut self, op: String) {
        self.cur.report.op = op;
        self.op_named = true;
    }

    fn has_data(&self) -> bool {
        !self.cur.report.rows.is_empty() || self.cur.report.avg_busbw.is_some()
    }

    fn line(&mut self, raw: &[u8]) {
        let raw = strip_quotes_and_labels(raw);
        let (line, tag) = match rank_tag(raw) {
            Some((tag, rest)) => (rest, Some(tag)),
            None => (strip_launcher_prefix(raw), None),
        };
        // One prebuilt searcher: building one per line (memmem::find) dominated the time on
        // long tables.
        if self
            .nccl
            .find_iter(line)
            .any(|i| matches!(line.get(i + 5..i + 9), Some(b"INFO") | Some(b"WARN")))
        {
            return;
        }
        let Ok(text) = std::str::from_utf8(line) else {
            return;
        };
        // MPI launchers that tag output (`mpirun -prepend-rank`, `--tag-output`) tag every
        // write, and nccl-tests writes a row in several pieces: `... -1[0]  1626.5 ... 0[0] ...`.
        let untagged;
        let text = match tag.and_then(|tag| std::str::from_utf8(tag).ok()) {
            Some(tag) if text.contains(tag) => {
                untagged = text.replace(tag, " ");
                untagged.as_str()
            }
            _ => text,
        };
        let t = text.trim();
        if let Some(body) = t.strip_prefix('#') {
            self.comment(body.trim());
        } else if t.starts_with("Out of bounds values") || t.starts_with("Avg bus bandwidth") {
            self.comment(t);
        } else if t.starts_with("nThread ") {
            // nccl-tests 1.x printed its parameters without `#`.
            self.comment(t);
        } else if t.as_bytes().first().is_some_and(u8::is_ascii_digit) {
            self.row(t);
        } else if [
            "RCCL version",
            "NCCL version",
            "rccl-tests: Version",
            "HIP version",
            "ROCm version",
        ]
        .iter()
        .any(|p| t.starts_with(p))
        {
            // The library under test: rccl-tests prints a `RCCL version : 2.22.3-...` block,
            // and NCCL itself a bare `NCCL version 2.18.5+cuda12.2` line with NCCL_DEBUG=VERSION.
            let note = t.split_whitespace().collect::<Vec<_>>().join(" ");
            self.note(note);
        } else if t.starts_with("Rank ") || is_header(t) {
            // Device lines and the column header with their `#` lost: nccl-tests 1.x printed
            // some without it, and Markdown renders `# ...` lines as headings when pasted.
            self.comment(t);
        } else if let Some(op) = t.split_whitespace().find_map(op_from_program) {
            if self.has_data() {
                self.start_new_run();
            }
            self.set_op(op);
        }
    }

    fn comment(&mut self, body: &str) {
        if body.starts_with("nThread ") {
            if self.has_data() {
                self.start_new_run();
            }
            self.note(body.to_string());
        } else if let Some(rest) = body.strip_prefix("Collective test starting:") {
            // nccl-tests >= 2.19 prints this before `# nThread`: it opens the next run.
            if self.has_data() {
                self.start_new_run();
            }
            if let Some(op) = op_from_test_start(rest) {
                self.set_op(op);
            }
        } else if let Some(rest) = body.strip_prefix("Collective test concluded:") {
            // nccl-tests >= 2.19 names its program again below the footer
            // (`writeResultFooter`): the op of a run whose opening lines were cut off.
            if !self.op_named {
                if let Some(op) = op_from_test_start(rest) {
                    self.set_op(op);
                }
            }
        } else if body.starts_with("nccl-tests version") {
            if self.has_data() {
                self.start_new_run();
            }
            self.note(body.to_string());
        } else if body.starts_with("Rank ") {
            if let Some(d) = device_line(body) {
                if self.cur.report.devices.len() >= MAX_DEVICES {
                    self.cur.rows_dropped += 1;
                    return;
                }
                if !self.hosts.contains(&d.host) {
                    self.hosts.insert(d.host.clone());
                    self.cur.report.hosts.push(d.host.clone());
                }
                self.cur.report.devices.push(d);
            }
        } else if let Some(rest) = body.strip_prefix("Avg bus bandwidth") {
            let v = rest
                .trim_start_matches([' ', ':'])
                .split_whitespace()
                .next();
            self.cur.report.avg_busbw = v.and_then(parse_f64);
        } else if let Some(rest) = body.strip_prefix("Out of bounds values") {
            let v = rest
                .trim_start_matches([' ', ':'])
                .split_whitespace()
                .next();
            self.cur.out_of_bounds = v.and_then(|v| v.parse().ok());
        } else {
            let toks: Vec<&str> = body.split_whitespace().collect();
            let v1 = toks.first() == Some(&"bytes") && toks.get(1) == Some(&"N");
            if v1 || (toks.contains(&"size") && toks.contains(&"count")) {
                self.layout = layout_from_header(&toks);
                if !self.op_named {
                    if let Some(op) = self.layout.as_ref().and_then(op_from_layout) {
                        self.cur.report.op = op.to_string();
                    }
                }
            }
        }
    }

    fn row(&mut self, t: &str) {
        let toks: Vec<&str> = t.split_whitespace().collect();
        let inferred;
        let layout = match &self.layout {
            Some(l) => l,
            None => {
                inferred = infer_layout(&toks);
                match &inferred {
                    Some(l) => l,
                    None => return,
                }
            }
        };
        if let Some((row, err)) = parse_row(&toks, layout) {
            if let Some(e) = err {
                self.cur.max_error = Some(self.cur.max_error.map_or(e, |m: f64| m.max(e)));
            }
            if self.cur.report.rows.len() < MAX_ROWS {
                self.cur.report.rows.push(row);
            } else {
                self.cur.rows_dropped += 1;
            }
        }
    }

    fn finish(mut self) -> Vec<NcclTestsRun> {
        self.start_new_run();
        let dropped = self.runs_dropped;
        let mut runs: Vec<NcclTestsRun> = self.runs.into_iter().filter(is_run).collect();
        for r in &mut runs {
            finish_run(r);
        }
        if let (Some(last), true) = (runs.last_mut(), dropped > 0) {
            last.report.notes.push(format!(
                "{dropped} further runs not kept (at most {MAX_RUNS} per input)"
            ));
        }
        runs
    }
}

fn is_run(r: &NcclTestsRun) -> bool {
    !r.report.rows.is_empty() || !r.report.devices.is_empty() || r.report.avg_busbw.is_some()
}

/// The op a table header implies, where only one op printed that header. Before nccl-tests 2.13
/// each op printed its own columns (`src/<op>.cu` `print_header`), so `redop root` with the old
/// `error` column was `reduce` alone; nccl-tests 1.x (`bytes N type ...`, `res` column) also
/// told `all_gather` (no op, no root) and `broadcast` (root only) apart. From 2.13 on every op
/// prints the same header and it says nothing.
fn op_from_layout(l: &Layout) -> Option<&'static str> {
    let p: Vec<&str> = l.prefix.iter().map(String::as_str).collect();
    let v1 = p.first() == Some(&"bytes");
    match p.as_slice() {
        [_, _, "type", "redop" | "op", "root"] if l.error_column => Some("reduce"),
        [_, _, "type", "root"] if v1 => Some("broadcast"),
        [_, _, "type"] if v1 => Some("all_gather"),
        _ => None,
    }
}

fn finish_run(r: &mut NcclTestsRun) {
    let mut ranks: Vec<u32> = r.report.devices.iter().map(|d| d.rank).collect();
    ranks.sort_unstable();
    ranks.dedup();
    if !ranks.is_empty() {
        r.report.ranks = u32::try_from(ranks.len()).ok();
    }
    if let Some(n) = r.out_of_bounds {
        r.report.notes.push(format!("out of bounds values: {n}"));
    }
    if r.rows_dropped > 0 {
        r.report.notes.push(format!(
            "{} rows or device lines beyond the caps ({MAX_ROWS} rows, {MAX_DEVICES} devices) counted, not kept",
            r.rows_dropped
        ));
    }
    if let Some(e) = r.max_error {
        r.report
            .notes
            .push(format!("max error column value: {e:e}"));
    }
}

fn layout_from_header(toks: &[&str]) -> Option<Layout> {
    let is_time = |t: &&str| *t == "time" || *t == "cputime";
    let first = toks.iter().position(is_time)?;
    let second = toks[first + 1..]
        .iter()
        .position(is_time)
        .map(|p| p + first + 1);
    let group = match second {
        Some(s) => s - first,
        None => toks.len() - first,
    };
    if group < 4 {
        return None;
    }
    Some(Layout {
        prefix: toks[..first].iter().map(|s| s.to_string()).collect(),
        group,
        error_column: matches!(toks.get(first + 3), Some(&"error") | Some(&"res")),
    })
}

/// Without a header: `size count type [redop] [root] (time algbw busbw wrong){1,2}`.
fn infer_layout(toks: &[&str]) -> Option<Layout> {
    if toks.len() < 7 {
        return None;
    }
    let alpha = |t: &str| t.bytes().next().is_some_and(|b| b.is_ascii_alphabetic());
    if !alpha(toks[2]) {
        return None;
    }
    let mut prefix = vec!["size".to_string(), "count".to_string(), "type".to_string()];
    if alpha(toks[3]) {
        prefix.push("redop".to_string());
    }
    let rest = toks.len() - prefix.len();
    // Groups are 4 wide; one column more means a root column.
    if rest % 4 == 1 && toks[prefix.len()].parse::<i64>().is_ok() {
        prefix.push("root".to_string());
    }
    let wrong_tok = toks.get(prefix.len() + 3).copied().unwrap_or("");
    Some(Layout {
        prefix,
        group: 4,
        error_column: wrong_tok.contains('e') || wrong_tok.contains('.'),
    })
}

fn parse_row(toks: &[&str], layout: &Layout) -> Option<(CollectiveRow, Option<f64>)> {
    let np = layout.prefix.len();
    if toks.len() < np + 4 {
        return None;
    }
    let mut row = CollectiveRow {
        size: 0,
        count: 0,
        dtype: String::new(),
        redop: None,
        root: None,
        out_of_place: None,
        in_place: None,
    };
    let mut have_size = false;
    for (name, tok) in layout.prefix.iter().zip(toks) {
        match name.as_str() {
            "size" | "bytes" => {
                row.size = tok.parse().ok()?;
                have_size = true;
            }
            "count" | "N" => row.count = tok.parse().ok()?,
            "type" => {
                if parse_f64(tok).is_some() {
                    return None;
                }
                row.dtype = tok.to_string();
            }
            "redop" | "op" => row.redop = Some(tok.to_string()),
            "root" => row.root = tok.parse().ok(),
            _ => {}
        }
    }
    if !have_size {
        return None;
    }
    let mut max_err: Option<f64> = None;
    let mut timings = Vec::new();
    for g in 0..2 {
        let start = np + g * layout.group;
        let Some(cols) = toks.get(start..start + 4) else {
            break;
        };
        let (Some(time_us), Some(algbw), Some(busbw)) =
            (parse_f64(cols[0]), parse_f64(cols[1]), parse_f64(cols[2]))
        else {
            break;
        };
        let wrong = if cols[3] == "N/A" {
            None
        } else if layout.error_column {
            let e = parse_f64(cols[3])?;
            max_err = Some(max_err.map_or(e, |m| m.max(e)));
            None
        } else {
            let v = parse_f64(cols[3])?;
            if v < 0.0 {
                return None;
            }
            // nccl-tests prints the count with %g: large counts come as 1.2e+06.
            Some(v as u64)
        };
        timings.push(CollTiming {
            time_us,
            algbw,
            busbw,
            wrong,
        });
    }
    let mut it = timings.into_iter();
    row.out_of_place = it.next();
    row.out_of_place.as_ref()?;
    row.in_place = it.next();
    Some((row, max_err))
}

/// The column header line: `size count type redop root time algbw busbw #wrong ...`.
fn is_header(t: &str) -> bool {
    let mut toks = t.split_whitespace();
    matches!(
        (toks.next(), toks.next()),
        (Some("size"), Some("count")) | (Some("bytes"), Some("N"))
    )
}

/// A leading MPI rank tag, `[0]` or `[1,0]<stdout>:`, and the text after it. Only tags of
/// digits and commas, so a line that merely starts with a bracket is left alone.
fn rank_tag(raw: &[u8]) -> Option<(&[u8], &[u8])> {
    let t = raw.trim_ascii_start();
    if t.first() != Some(&b'[') {
        return None;
    }
    let close = memchr::memchr(b']', t)?;
    let inner = &t[1..close];
    if inner.is_empty() || !inner.iter().all(|b| b.is_ascii_digit() || *b == b',') {
        return None;
    }
    let mut end = close + 1;
    for stream in [&b"<stdout>"[..], b"<stderr>"] {
        if t[end..].starts_with(stream) {
            end += stream.len();
        }
    }
    if t[end..].starts_with(b":") {
        end += 1;
    }
    Some((&t[..end], &t[end..]))
}

/// `Rank  0 Group  0 Pid  28307 on      gpu59 device  0 [0x16] NVIDIA GeForce RTX 4090`, and the
/// older forms without `Group` and without `Pid`, and the newer `[0002:00:01]` bus id.
fn device_line(body: &str) -> Option<RankDevice> {
    let toks: Vec<&str> = body.split_whitespace().collect();
    let mut d = RankDevice {
        rank: 0,
        group: None,
        pid: None,
        host: String::new(),
        device: None,
        bus_id: None,
        name: None,
    };
    let mut i = 0;
    let mut have_rank = false;
    while i < toks.len() {
        match toks[i] {
            "Rank" => {
                d.rank = toks.get(i + 1)?.parse().ok()?;
                have_rank = true;
                i += 2;
            }
            "Group" => {
                d.group = toks.get(i + 1).and_then(|v| v.parse().ok());
                i += 2;
            }
            "Pid" => {
                d.pid = toks.get(i + 1).and_then(|v| v.parse().ok());
                i += 2;
            }
            "on" => {
                d.host = toks.get(i + 1)?.to_string();
                i += 2;
            }
            "device" => {
                d.device = toks.get(i + 1).and_then(|v| v.parse().ok());
                i += 2;
                if let Some(b) = toks.get(i).filter(|b| b.starts_with('[')) {
                    d.bus_id = Some(b.trim_matches(['[', ']']).to_string());
                    i += 1;
                }
                let name = toks[i.min(toks.len())..].join(" ");
                if !name.is_empty() {
                    d.name = Some(name);
                }
                break;
            }
            _ => i += 1,
        }
    }
    (have_rank && !d.host.is_empty()).then_some(d)
}

/// Parses nccl-tests output (text or JSON, detected by content) from a reader.
pub fn parse_reader<R: BufRead + ?Sized>(reader: &mut R) -> std::io::Result<Vec<NcclTestsRun>> {
    let head = reader.fill_buf()?;
    let first = head.iter().find(|b| !b.is_ascii_whitespace()).copied();
    if first == Some(b'{') {
        let mut buf = Vec::new();
        Read::take(&mut *reader, MAX_JSON_BYTES + 1).read_to_end(&mut buf)?;
        if buf.len() as u64 > MAX_JSON_BYTES {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("nccl-tests JSON larger than {MAX_JSON_BYTES} bytes"),
            ));
        }
        let v: Value = serde_json::from_slice(&buf)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        return Ok(parse_json_value(&v).into_iter().collect());
    }
    let mut b = Builder::new();
    for_each_line(reader, |l| b.line(l))?;
    Ok(b.finish())
}

/// Parses a file (`-` is stdin; gzip detected).
pub fn parse_path(path: &Path) -> Result<Vec<NcclTestsRun>, ParseError> {
    let mut r = open_input(path).map_err(|e| ParseError::io(path, e))?;
    parse_reader(&mut r).map_err(|e| {
        if e.kind() == std::io::ErrorKind::InvalidData {
            match e
                .into_inner()
                .map(|inner| inner.downcast::<serde_json::Error>())
            {
                Some(Ok(j)) => ParseError::Json {
                    path: path.to_path_buf(),
                    source: *j,
                },
                Some(Err(other)) => ParseError::io(path, std::io::Error::other(other)),
                None => ParseError::io(path, std::io::Error::other("invalid data")),
            }
        } else {
            ParseError::io(path, e)
        }
    })
}

/// Parses text held in memory.
pub fn parse_str(text: &str) -> Vec<NcclTestsRun> {
    let mut reader = text.as_bytes();
    parse_reader(&mut reader).unwrap_or_default()
}

fn num(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => parse_f64(s.trim()),
        _ => None,
    }
}

fn timing(v: &Value) -> Option<CollTiming> {
    let o = v.as_object()?;
    let time_us = num(o.get("time").or_else(|| o.get("cpu_time"))?)?;
    Some(CollTiming {
        time_us,
        algbw: o.get("alg_bw").and_then(num)?,
        busbw: o.get("bus_bw").and_then(num)?,
        wrong: o
            .get("nwrong")
            .and_then(num)
            .filter(|w| *w >= 0.0)
            .map(|w| w as u64),
    })
}

/// The JSON document of `nccl-tests -J FILE` (writer: nccl-tests src/util.cu).
pub fn parse_json_value(v: &Value) -> Option<NcclTestsRun> {
    let o = v.as_object()?;
    let mut run = empty_run();
    if let Some(prog) = o
        .get("args")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_str)
    {
        if let Some(op) = op_from_program(prog) {
            run.report.op = op;
        }
    }
    if let Some(n) = o.get("nccl_version").and_then(Value::as_i64) {
        run.report.notes.push(format!("nccl version code {n}"));
    }
    let devices = o
        .get("devices")
        .or_else(|| o.get("config").and_then(|c| c.get("devices")))
        .and_then(Value::as_array);
    for d in devices.into_iter().flatten() {
        let Some(rank) = d.get("rank").and_then(Value::as_u64) else {
            continue;
        };
        let host = d
            .get("hostname")
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim()
            .to_string();
        if !host.is_empty() && !run.report.hosts.contains(&host) {
            run.report.hosts.push(host.clone());
        }
        run.report.devices.push(RankDevice {
            rank: u32::try_from(rank).unwrap_or(u32::MAX),
            group: d
                .get("group")
                .and_then(Value::as_u64)
                .and_then(|g| u32::try_from(g).ok()),
            pid: d.get("pid").and_then(Value::as_u64),
            host,
            device: d
                .get("device")
                .and_then(Value::as_u64)
                .and_then(|g| u32::try_from(g).ok()),
            bus_id: d
                .get("device_hex")
                .and_then(Value::as_str)
                .map(str::to_string),
            name: d
                .get("device_info")
                .and_then(Value::as_str)
                .map(str::to_string),
        });
    }
    for r in o
        .get("results")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(size) = r.get("size").and_then(Value::as_u64) else {
            continue;
        };
        run.report.rows.push(CollectiveRow {
            size,
            count: r.get("count").and_then(Value::as_u64).unwrap_or(0),
            dtype: r
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("")
                .trim()
                .to_string(),
            redop: r
                .get("redop")
                .and_then(Value::as_str)
                .map(|s| s.trim().to_string()),
            root: r.get("root").and_then(num).map(|v| v as i64),
            out_of_place: r.get("out_of_place").and_then(timing),
            in_place: r.get("in_place").and_then(timing),
        });
    }
    run.report.avg_busbw = o
        .get("average_bus_bandwidth")
        .and_then(|a| a.get("bandwidth"))
        .and_then(num);
    run.out_of_bounds = o
        .get("out_of_bounds")
        .and_then(|a| a.get("count"))
        .and_then(Value::as_u64);
    finish_run(&mut run);
    Some(run)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;
