//! Output of NCCL's Inspector profiler plugin (plugins/profiler/inspector, `NCCL_INSPECTOR_ENABLE=1`):
//! one file per process (`<NCCL_INSPECTOR_DUMP_DIR>/<host>-pid<pid>.log`) holding a stream of JSON
//! objects, one per completed collective (or point-to-point operation) per communicator:
//! `{"header": {"id", "comm_name", "rank", "n_ranks", "nnodes"}, "metadata": {"hostname", "pid",
//! ...}, "coll_perf": {"coll", "coll_sn", "coll_msg_size_bytes", "coll_exec_time_us",
//! "coll_timing_source", "coll_algobw_gbs", "coll_busbw_gbs", "event_trace_ts"?}}` (format v4.0,
//! src inspector_json.cc).
//!
//! A collective ends at the same time on every rank; the rank that launched it last spent the
//! least time in it, since the others waited for it inside their kernels. So per collective
//! (communicator id and sequence number) the straggler is the rank with the latest kernel start
//! when the verbose trace gives start times (`event_trace_ts`), else the rank with the shortest
//! execution time; its lag is how far it is from the median of the others.

use std::collections::BTreeMap;
use std::io::Read;

use fabrik_model::{Evidence, Finding, Severity};
use serde::{Deserialize, Serialize};

/// Most records kept in memory (8 ranks x 1M collectives would be 8M; past this the rest is
/// counted, not analysed).
pub const MAX_RECORDS: usize = 4 << 20;
/// A lag below this is kernel-timing noise, not a straggler (the plugin times in whole µs and
/// a collective's launch jitter on a healthy node is tens of µs).
pub const MIN_LAG_US: f64 = 100.0;
/// A lag below this share of the collective's median time is not reported either.
pub const MIN_LAG_SHARE: f64 = 0.10;

/// One rank's record of one operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The communicator (`header.id`).
    pub comm: String,
    /// `header.comm_name`, when the program named the communicator.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comm_name: Option<String>,
    /// The collective (`AllReduce`) or point-to-point operation (`Send`).
    pub op: String,
    /// Its sequence number in the communicator.
    pub sn: u64,
    /// The rank.
    pub rank: u64,
    /// Ranks in the communicator.
    pub n_ranks: Option<u64>,
    /// `metadata.hostname`.
    pub host: Option<String>,
    /// `metadata.pid`.
    pub pid: Option<u64>,
    /// Message size.
    pub bytes: Option<u64>,
    /// Execution time.
    pub exec_us: f64,
    /// Bus bandwidth.
    pub busbw_gbs: Option<f64>,
    /// Earliest kernel start (µs since the epoch, verbose dumps only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_us: Option<u64>,
}

/// One record from one JSON object; None when it is not an Inspector record.
pub fn record(v: &serde_json::Value) -> Option<Record> {
    let h = v.get("header")?;
    let m = v.get("metadata");
    let (perf, p2p) = match (v.get("coll_perf"), v.get("p2p_perf")) {
        (Some(c), _) => (c, false),
        (None, Some(p)) => (p, true),
        _ => return None,
    };
    let k = |s: &str| {
        if p2p {
            format!("p2p_{s}")
        } else {
            format!("coll_{s}")
        }
    };
    let s =
        |x: &serde_json::Value, key: &str| x.get(key).and_then(|y| y.as_str()).map(str::to_string);
    let u = |x: &serde_json::Value, key: &str| x.get(key).and_then(serde_json::Value::as_u64);
    let f = |x: &serde_json::Value, key: &str| x.get(key).and_then(serde_json::Value::as_f64);
    let start_us = perf
        .get("event_trace_ts")
        .and_then(|t| t.get("kernel_events"))
        .and_then(|k| k.as_array())
        .and_then(|a| a.iter().filter_map(|e| u(e, "kernel_start_ts")).min());
    Some(Record {
        comm: s(h, "id")?,
        comm_name: s(h, "comm_name").filter(|n| !n.is_empty()),
        op: s(perf, if p2p { "p2p" } else { "coll" })?,
        sn: u(perf, &k("sn"))?,
        rank: u(h, "rank")?,
        n_ranks: u(h, "n_ranks"),
        host: m.and_then(|m| s(m, "hostname")),
        pid: m.and_then(|m| u(m, "pid")),
        bytes: u(perf, &k("msg_size_bytes")),
        exec_us: f(perf, &k("exec_time_us"))?,
        busbw_gbs: f(perf, &k("busbw_gbs")),
        start_us,
    })
}

/// Everything read from one or more Inspector files.
#[derive(Debug, Default)]
pub struct Inspector {
    records: Vec<Record>,
    /// Records beyond [`MAX_RECORDS`].
    pub dropped: u64,
    /// JSON values that were not Inspector records.
    pub skipped: u64,
}

/// Why an Inspector file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum InspectorError {
    /// Not JSON where a record should start.
    #[error("{name}: not NCCL Inspector JSON after {records} record(s): {source}")]
    Json {
        /// The input.
        name: String,
        /// Records read before.
        records: u64,
        /// The parser's error.
        source: serde_json::Error,
    },
    /// The dump directory could not be listed.
    #[error("listing {}", path.display())]
    List {
        /// The directory.
        path: std::path::PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The dump directory holds no Inspector file.
    #[error("{}: no Inspector file (<host>-pid<pid>.log)", path.display())]
    NoFiles {
        /// The directory.
        path: std::path::PathBuf,
    },
    /// An Inspector file could not be opened.
    #[error("opening {}", path.display())]
    Open {
        /// The file.
        path: std::path::PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The files hold no Inspector record.
    #[error("{}: no NCCL Inspector record found", path.display())]
    NoRecords {
        /// The dump directory or file.
        path: std::path::PathBuf,
    },
    /// The NCCL logs given beside the dump could not be read.
    #[error("reading NCCL logs")]
    Logs(#[source] crate::ParseError),
}

/// Reads the Inspector's dump at `path` (a directory or one file) and analyses it, each
/// straggler rank joined with its process's NICs from the NCCL logs at `logs`.
pub fn read_dump(
    path: &std::path::Path,
    logs: &[std::path::PathBuf],
) -> Result<InspectorReport, InspectorError> {
    let mut insp = Inspector::new();
    for f in dump_files(path)? {
        let r = crate::input::open_input(&f).map_err(|source| InspectorError::Open {
            path: f.clone(),
            source,
        })?;
        insp.read(&f.display().to_string(), r)?;
    }
    if insp.records().is_empty() {
        return Err(InspectorError::NoRecords {
            path: path.to_path_buf(),
        });
    }
    let nics = if logs.is_empty() {
        BTreeMap::new()
    } else {
        let log = crate::nccl_log::analyze_paths(logs).map_err(InspectorError::Logs)?;
        nics_by_process(&log)
    };
    Ok(insp.finish(&nics))
}

/// The Inspector's files under a dump directory (its own layout: one level, `*.log`, or `*.json`),
/// sorted; a path that is not a directory is the one file.
pub fn dump_files(path: &std::path::Path) -> Result<Vec<std::path::PathBuf>, InspectorError> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut v: Vec<std::path::PathBuf> = std::fs::read_dir(path)
        .map_err(|source| InspectorError::List {
            path: path.to_path_buf(),
            source,
        })?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "log" || x == "json"))
        .collect();
    v.sort();
    if v.is_empty() {
        return Err(InspectorError::NoFiles {
            path: path.to_path_buf(),
        });
    }
    Ok(v)
}

/// The NICs each process of an NCCL log used (its IB devices, then its socket interfaces), by
/// `host:pid`: the key [`Inspector::finish`] joins stragglers on.
pub fn nics_by_process(log: &crate::nccl_log::LogReport) -> BTreeMap<String, Vec<String>> {
    let mut nics = BTreeMap::new();
    for p in &log.processes {
        if let (Some(h), Some(pid)) = (&p.host, p.pid) {
            let mut n: Vec<String> = p
                .ib_nics
                .iter()
                .map(|x| x.device.clone())
                .chain(p.socket_interfaces.iter().map(|e| e.interface.clone()))
                .collect();
            n.dedup();
            nics.insert(format!("{h}:{pid}"), n);
        }
    }
    nics
}

impl Inspector {
    /// Nothing read yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads one file's stream of JSON objects.
    pub fn read<R: Read>(&mut self, name: &str, reader: R) -> Result<u64, InspectorError> {
        let mut n = 0u64;
        let stream = serde_json::Deserializer::from_reader(std::io::BufReader::new(reader))
            .into_iter::<serde_json::Value>();
        for v in stream {
            let v = v.map_err(|source| InspectorError::Json {
                name: name.to_string(),
                records: n,
                source,
            })?;
            match record(&v) {
                Some(r) if self.records.len() < MAX_RECORDS => {
                    self.records.push(r);
                    n += 1;
                }
                Some(_) => self.dropped += 1,
                None => self.skipped += 1,
            }
        }
        Ok(n)
    }

    /// The records read.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// The analysis.
    pub fn finish(self, nics: &BTreeMap<String, Vec<String>>) -> InspectorReport {
        analyze(self.records, self.dropped, nics)
    }
}

/// What the Inspector files say is a model type: every renderer reads it.
pub use fabrik_model::inspector::{InspectorReport, RankLag, Straggler};

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Stragglers per collective and per rank. `nics` maps `host:pid` to the NICs a log of the same
/// job shows for that process.
pub fn analyze(
    mut records: Vec<Record>,
    dropped: u64,
    nics: &BTreeMap<String, Vec<String>>,
) -> InspectorReport {
    let total = records.len() as u64;
    records.sort_by(|a, b| (&a.comm, a.sn, &a.op, a.rank).cmp(&(&b.comm, b.sn, &b.op, b.rank)));
    let mut stragglers = Vec::new();
    let mut per_rank: BTreeMap<(String, u64), RankLag> = BTreeMap::new();
    let mut compared = 0u64;
    let mut i = 0;
    while i < records.len() {
        let j = i + records[i..]
            .iter()
            .take_while(|r| {
                r.comm == records[i].comm && r.sn == records[i].sn && r.op == records[i].op
            })
            .count();
        let group = &records[i..j];
        i = j;
        for r in group {
            let e = per_rank
                .entry((r.comm.clone(), r.rank))
                .or_insert_with(|| RankLag {
                    comm: r.comm.clone(),
                    rank: r.rank,
                    host: r.host.clone(),
                    pid: r.pid,
                    nics: match (&r.host, r.pid) {
                        (Some(h), Some(p)) => {
                            nics.get(&format!("{h}:{p}")).cloned().unwrap_or_default()
                        }
                        _ => Vec::new(),
                    },
                    compared: 0,
                    straggler: 0,
                    mean_lag_us: 0.0,
                    max_lag_us: 0.0,
                });
            e.compared += 1;
        }
        if group.len() < 2 {
            continue;
        }
        compared += 1;
        let mut exec: Vec<f64> = group.iter().map(|r| r.exec_us).collect();
        let med = median(&mut exec);
        let (idx, lag, by) = if group.iter().all(|r| r.start_us.is_some()) {
            let mut starts: Vec<f64> = group
                .iter()
                .filter_map(|r| r.start_us)
                .map(|s| s as f64)
                .collect();
            let m = median(&mut starts);
            let (k, last) = group
                .iter()
                .enumerate()
                .map(|(k, r)| (k, r.start_us.unwrap_or(0) as f64))
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .unwrap_or((0, m));
            (k, last - m, "start")
        } else {
            let (k, least) = group
                .iter()
                .enumerate()
                .map(|(k, r)| (k, r.exec_us))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .unwrap_or((0, med));
            (k, med - least, "exec")
        };
        if lag < MIN_LAG_US || lag < MIN_LAG_SHARE * med {
            continue;
        }
        let r = &group[idx];
        if let Some(e) = per_rank.get_mut(&(r.comm.clone(), r.rank)) {
            e.mean_lag_us = (e.mean_lag_us * e.straggler as f64 + lag) / (e.straggler + 1) as f64;
            e.straggler += 1;
            e.max_lag_us = e.max_lag_us.max(lag);
        }
        stragglers.push(Straggler {
            comm: r.comm.clone(),
            comm_name: r.comm_name.clone(),
            op: r.op.clone(),
            sn: r.sn,
            bytes: r.bytes,
            rank: r.rank,
            host: r.host.clone(),
            lag_us: lag,
            median_us: med,
            ranks: group.len() as u64,
            by: by.into(),
        });
    }
    stragglers.sort_by(|a, b| b.lag_us.total_cmp(&a.lag_us));
    let mut ranks: Vec<RankLag> = per_rank.into_values().collect();
    ranks.sort_by(|a, b| b.straggler.cmp(&a.straggler).then(a.rank.cmp(&b.rank)));
    let findings = findings(&ranks);
    stragglers.truncate(64);
    InspectorReport {
        schema_version: fabrik_model::SCHEMA_VERSION,
        records: total,
        dropped,
        compared,
        stragglers,
        ranks,
        findings,
    }
}

/// A rank that held up at least a quarter of its communicator's compared collectives (and three
/// of them) is a straggler worth a look: one slow launch is noise, a pattern is a node.
fn findings(ranks: &[RankLag]) -> Vec<Finding> {
    ranks
        .iter()
        .filter(|r| r.straggler >= 3 && r.straggler * 4 >= r.compared)
        .map(|r| {
            let mut where_ = r.host.clone().unwrap_or_else(|| "an unknown host".into());
            if !r.nics.is_empty() {
                where_.push_str(&format!(", NIC(s) {}", r.nics.join(",")));
            }
            Finding {
                rule: "FAB-NCCL-INSPECTOR-STRAGGLER".into(),
                severity: Severity::Warning,
                subject: r.host.clone().unwrap_or_else(|| format!("rank {}", r.rank)),
                message: format!(
                    "Rank {} of communicator {} ({where_}) was the last to start {} of {} collectives, {:.0} µs late on average (at most {:.0} µs): the other ranks waited for it",
                    r.rank, r.comm, r.straggler, r.compared, r.mean_lag_us, r.max_lag_us
                ),
                evidence: vec![Evidence::new(
                    "inspector",
                    format!("rank {} pid {}", r.rank, r.pid.map_or_else(|| "?".into(), |p| p.to_string())),
                )],
                fix: "Look at what delays this rank: its host's CPU and GPU load (data loading, another job, thermal throttling), its NIC (`fabrik doctor`, port counters) and its place in the pipeline; compare with NCCL RAS's operation counts".into(),
            }
        })
        .collect()
}
