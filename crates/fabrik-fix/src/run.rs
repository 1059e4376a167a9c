//! `fabrik fix` as library calls: the roots diagnosed and planned for, the plan made on this
//! machine with an undo record and the checks run again ([`apply_here`]), and an undo from a
//! record file ([`undo_file`]).

use std::io::{self, Read as _};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use fabrik_doctor::{diagnose, name_nodes, Expectations, NamedNode};
use fabrik_model::{Finding, SCHEMA_VERSION};
use fabrik_probe::open::OpenError;
use serde::Serialize;

use crate::apply::{self, Live, Outcome, Record, Undone, Verdict, Verdicts, RECORD_KIND};
use crate::Plan;

/// Why `fabrik fix` could not plan, apply or undo.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A root could not be read.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// `--apply` without exactly one live root among the roots.
    #[error("--apply changes this machine: give --root / once (and the peers' snapshots as further --root)")]
    NoLiveRoot,
    /// The undo record's directory could not be made.
    #[error("creating {} for the undo record", .0.display())]
    RecordDir(PathBuf, #[source] io::Error),
    /// `/` could not be opened to change it.
    #[error("opening / to {0}")]
    OpenLive(&'static str, #[source] io::Error),
    /// The undo record could not be written.
    #[error("writing the undo record {}", .0.display())]
    SaveRecord(PathBuf, #[source] io::Error),
    /// The undo record could not be opened.
    #[error("opening {}", .0.display())]
    OpenRecord(PathBuf, #[source] io::Error),
    /// The undo record could not be read.
    #[error("reading {}", .0.display())]
    ReadRecord(PathBuf, #[source] io::Error),
    /// Larger than an undo record can be.
    #[error("{} is larger than an undo record can be", .0.display())]
    RecordTooLarge(PathBuf),
    /// Not JSON of an undo record.
    #[error("{} is not a fabrik fix undo record", .0.display())]
    NotARecord(PathBuf, #[source] serde_json::Error),
    /// JSON of another kind of document.
    #[error("{} is not a fabrik fix undo record (kind `{kind}`)", path.display())]
    WrongKind {
        /// The file.
        path: PathBuf,
        /// Its `kind`.
        kind: String,
    },
}

/// The nodes under the roots and the doctor's findings on them (with the expectations').
#[derive(Debug, Clone)]
pub struct Diagnosed {
    /// The nodes, as the doctor names them.
    pub nodes: Vec<NamedNode>,
    /// The findings.
    pub findings: Vec<Finding>,
}

/// Probes every root and runs the doctor (and the expectations, when given) on them.
pub fn diagnose_roots(
    roots: &[PathBuf],
    expect: Option<&Expectations>,
) -> Result<Diagnosed, OpenError> {
    let nodes = roots
        .iter()
        .map(|r| fabrik_probe::open::load_node(r))
        .collect::<Result<Vec<_>, _>>()?;
    let named = name_nodes(nodes);
    let mut report = diagnose(&named, None);
    if let Some(e) = expect {
        fabrik_doctor::expect::apply(&mut report, &named, e, None, now_unix());
    }
    Ok(Diagnosed {
        nodes: named,
        findings: report.findings,
    })
}

/// The roots diagnosed, and the plan for their findings (of `rules` only, when given).
#[derive(Debug, Clone)]
pub struct Planned {
    /// What the doctor found before any change.
    pub before: Diagnosed,
    /// The plan.
    pub plan: Plan,
    /// The findings the plan covers: those of `rules`, or all.
    pub covered: Vec<Finding>,
}

/// Diagnoses `roots` and plans for the findings.
pub fn plan_roots(
    roots: &[PathBuf],
    expect: Option<&Expectations>,
    rules: &[String],
) -> Result<Planned, OpenError> {
    let before = diagnose_roots(roots, expect)?;
    let plan = crate::plan(&before.findings, &before.nodes, expect, rules);
    let covered = before
        .findings
        .iter()
        .filter(|f| rules.is_empty() || rules.iter().any(|r| r.eq_ignore_ascii_case(&f.rule)))
        .cloned()
        .collect();
    Ok(Planned {
        before,
        plan,
        covered,
    })
}

/// What `fabrik fix --apply` did (its JSON; keys in the order they have always been written).
#[derive(Debug, Clone, Serialize)]
pub struct Applied {
    /// The node changed.
    pub node: String,
    /// The changes made, skipped and not reached.
    pub outcome: Outcome,
    /// The plan.
    pub plan: Plan,
    /// Where the undo record is.
    pub record_path: PathBuf,
    /// [`fabrik_model::SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// What the checks say now, per finding of the plan on the node.
    pub verdicts: Vec<Verdict>,
}

impl Applied {
    /// Whether a change failed part way (the tool failed).
    pub fn failed(&self) -> bool {
        self.outcome.failed().is_some()
    }

    /// Whether a finding the plan addressed is still there.
    pub fn still_present(&self) -> bool {
        self.verdicts
            .iter()
            .any(|v| v.outcome == Verdicts::StillPresent)
    }
}

/// The options of `fabrik fix --apply`.
#[derive(Debug, Clone)]
pub struct ApplyOptions<'a> {
    /// Every root planned for: `/` once, the peers as snapshots.
    pub roots: &'a [PathBuf],
    /// The expectations the plan was made with.
    pub expect: Option<&'a Expectations>,
    /// Also the changes that need a drained node.
    pub drained: bool,
    /// Where to write the undo record (default `/var/lib/fabrik/fix/undo-<time>.json`).
    pub record: Option<PathBuf>,
}

/// Makes `planned`'s changes on this machine (the root `/` among `opts.roots`), writing the
/// undo record through `write` (an atomic writer) before and after every change, then runs
/// the checks again beside the same peers.
pub fn apply_here(
    planned: Planned,
    opts: &ApplyOptions<'_>,
    write: &mut dyn FnMut(&Path, &[u8]) -> io::Result<()>,
) -> Result<Applied, RunError> {
    let lives: Vec<usize> = opts
        .roots
        .iter()
        .enumerate()
        .filter(|(_, r)| is_live(r))
        .map(|(i, _)| i)
        .collect();
    let [live] = lives.as_slice() else {
        return Err(RunError::NoLiveRoot);
    };
    let node = planned.before.nodes[*live].name.clone();
    let record_path = opts
        .record
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("/var/lib/fabrik/fix/undo-{}.json", now_unix())));
    if let Some(dir) = record_path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| RunError::RecordDir(dir.to_path_buf(), e))?;
    }
    let mut sys = Live::new(Path::new("/")).map_err(|e| RunError::OpenLive("apply", e))?;
    let mut save = |r: &Record| -> io::Result<()> {
        let bytes = serde_json::to_vec_pretty(r).map_err(io::Error::other)?;
        write(&record_path, &bytes)
    };
    let plan = planned.plan;
    let outcome = apply::apply(&plan, &node, opts.drained, now_unix(), &mut sys, &mut save)
        .map_err(|e| RunError::SaveRecord(record_path.clone(), e))?;
    // The checks again, on this machine as it is now, beside the same peers.
    let after = diagnose_roots(opts.roots, opts.expect)?;
    let many = planned.before.nodes.len() > 1;
    let verdicts = apply::verdicts(&plan, &node, &outcome, &after.findings, many);
    Ok(Applied {
        node,
        outcome,
        plan,
        record_path,
        schema_version: SCHEMA_VERSION,
        verdicts,
    })
}

/// Undo records are small; a larger file is not one.
const MAX_RECORD: u64 = 16 << 20;

/// Puts back the values the undo record at `path` holds, and writes the record back through
/// `write` with each step's new status.
pub fn undo_file(
    path: &Path,
    write: &mut dyn FnMut(&Path, &[u8]) -> io::Result<()>,
) -> Result<Undone, RunError> {
    let file =
        std::fs::File::open(path).map_err(|e| RunError::OpenRecord(path.to_path_buf(), e))?;
    let read_err = |e| RunError::ReadRecord(path.to_path_buf(), e);
    let mut text = String::new();
    file.take(MAX_RECORD + 1)
        .read_to_string(&mut text)
        .map_err(read_err)?;
    if text.len() as u64 > MAX_RECORD {
        return Err(RunError::RecordTooLarge(path.to_path_buf()));
    }
    let record: Record =
        serde_json::from_str(&text).map_err(|e| RunError::NotARecord(path.to_path_buf(), e))?;
    if record.kind != RECORD_KIND {
        return Err(RunError::WrongKind {
            path: path.to_path_buf(),
            kind: record.kind,
        });
    }
    let mut sys = Live::new(Path::new("/")).map_err(|e| RunError::OpenLive("undo", e))?;
    let undone = apply::undo(record, &mut sys);
    let bytes = serde_json::to_vec_pretty(&undone.record).map_err(io::Error::other);
    bytes
        .and_then(|b| write(path, &b))
        .map_err(|e| RunError::SaveRecord(path.to_path_buf(), e))?;
    Ok(undone)
}

fn is_live(root: &Path) -> bool {
    std::fs::canonicalize(root).is_ok_and(|p| p == Path::new("/"))
}

fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
