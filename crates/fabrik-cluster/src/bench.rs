//! `bench collective` as one library call: opens the backend on every rank, runs the sweep and,
//! on rank 0, builds the report (the average bus bandwidth over every timed run, the count of
//! wrong elements, the first wrong element of each size). The caller prints what it is told as
//! it happens ([`Observer`]) and renders the [`Outcome`].

use fabrik_model::{CollectiveReport, CollectiveRow, RankDevice, ResultSource, SCHEMA_VERSION};

use crate::backend::{self, BackendOptions};
use crate::rendezvous::Group;
use crate::sweep::{SweepConfig, WrongElement};
use crate::ClusterError;

/// What rank 0 is told while a sweep runs (the other ranks are told nothing).
pub trait Observer {
    /// The backend is up: the line to print above the table and every rank's device.
    fn started(&mut self, banner: Option<&str>, devices: &[RankDevice]);
    /// A size finished (`done` of them so far).
    fn row(&mut self, row: &CollectiveRow, done: usize);
}

/// What rank 0 gets back from a sweep that started, whether or not it finished.
#[derive(Debug)]
pub struct Outcome {
    /// The report: every finished row, the average bus bandwidth, and notes that include each
    /// first wrong element and, when the run failed, `aborted: why`.
    pub report: CollectiveReport,
    /// Wrong elements over every checked run.
    pub wrong_total: u64,
    /// The first wrong element of each size that had one.
    pub first_wrong: Vec<WrongElement>,
    /// Why the sweep stopped before its last size.
    pub error: Option<ClusterError>,
}

/// Runs `cfg` on this rank with the backend of `opts`. Rank 0 returns the [`Outcome`] once the
/// sweep ends or fails; the other ranks return `None`, or the error that stopped them. Errors
/// before the sweep starts (a transport or GPU that cannot start) are errors on every rank.
pub fn run_collective(
    group: &mut Group,
    cfg: &SweepConfig,
    opts: &BackendOptions,
    observer: &mut dyn Observer,
) -> Result<Option<Outcome>, ClusterError> {
    let mut backend = backend::open(group, opts, cfg)?;
    let devices = group.gather(backend.device(group))?;
    backend.connect(group, cfg)?;
    let is_root = group.rank() == 0;
    let devices = devices.unwrap_or_default();
    if is_root {
        observer.started(backend.banner().as_deref(), &devices);
    }
    let mut rows: Vec<CollectiveRow> = Vec::new();
    let mut first_wrong: Vec<WrongElement> = Vec::new();
    let result = backend.run_sweep(group, cfg, &mut |r, first| {
        if let Some(f) = first {
            first_wrong.push(f.clone());
        }
        rows.push(r.clone());
        observer.row(r, rows.len());
    });
    if !is_root {
        let rank = group.rank();
        return result
            .map(|()| None)
            .map_err(|e| e.context(format!("rank {rank}")));
    }
    let mut report = CollectiveReport {
        schema_version: SCHEMA_VERSION,
        source: ResultSource::Fabrik,
        op: cfg.op.name().to_string(),
        backend: Some(backend.name().to_string()),
        ranks: Some(group.size()),
        hosts: group.hosts(),
        devices,
        rows,
        avg_busbw: None,
        notes: backend.notes(cfg),
    };
    let (avg, wrong_total) = summary(&report.rows);
    report.avg_busbw = Some(avg);
    for w in &first_wrong {
        report.notes.push(format!("first wrong element: {w}"));
    }
    let error = result.err();
    if let Some(e) = &error {
        report.notes.push(format!("aborted: {e}"));
    }
    Ok(Some(Outcome {
        report,
        wrong_total,
        first_wrong,
        error,
    }))
}

/// nccl-tests' closing numbers: the bus bandwidth averaged over every timed run (out of place
/// and in place, every size; 0 with none) and the wrong elements over every checked run.
pub fn summary(rows: &[CollectiveRow]) -> (f64, u64) {
    let timings = || {
        rows.iter()
            .flat_map(|r| [&r.out_of_place, &r.in_place])
            .flatten()
    };
    let n = timings().count();
    let avg = if n > 0 {
        timings().map(|t| t.busbw).sum::<f64>() / n as f64
    } else {
        0.0
    };
    (avg, timings().filter_map(|t| t.wrong).sum())
}
