//! `bench collective` as one library call: opens the backend on every rank, runs the sweep and,
//! on rank 0, builds the report (the average bus bandwidth over every timed run, the count of
//! wrong elements, the first wrong element of each size). The caller prints what it is told as
//! it happens ([`Observer`]) and renders the [`Outcome`].

use fabrik_model::{
    CollectiveReport, CollectiveRow, RankDevice, ResultSource, RunParams, SCHEMA_VERSION,
};

use fabrik_model::size::parse_bytes;

use crate::backend::{self, BackendChoice, BackendOptions};
use crate::collective::{AlgoChoice, CollOp};
use crate::dtype::{DType, RedOp};
use crate::rendezvous::Group;
use crate::sweep::{sizes, SweepConfig, WrongElement};
use crate::transport::RdmaSettings;
use crate::ClusterError;

/// What `bench collective` is asked to run, nccl-tests' flags and fabrik's backend choice,
/// as given; [`CollectiveArgs::plan`] checks and reads them.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct CollectiveArgs {
    /// all_reduce, all_gather, reduce_scatter, broadcast, reduce or alltoall.
    pub op: String,
    /// Smallest size (bytes; K, M, G, T suffixes).
    #[cfg_attr(
        feature = "clap",
        arg(short = 'b', long = "minbytes", default_value = "8")
    )]
    pub min_bytes: String,
    /// Largest size.
    #[cfg_attr(
        feature = "clap",
        arg(short = 'e', long = "maxbytes", default_value = "32M")
    )]
    pub max_bytes: String,
    /// Multiply the size by this each step.
    #[cfg_attr(
        feature = "clap",
        arg(short = 'f', long = "stepfactor", default_value_t = 2)
    )]
    pub step_factor: u64,
    /// Add this many bytes each step instead of multiplying.
    #[cfg_attr(feature = "clap", arg(short = 'i', long = "stepbytes"))]
    pub step_bytes: Option<String>,
    /// Timed iterations per size.
    #[cfg_attr(
        feature = "clap",
        arg(short = 'n', long = "iters", default_value_t = 20)
    )]
    pub iters: u32,
    /// Warm-up iterations per size.
    #[cfg_attr(
        feature = "clap",
        arg(short = 'w', long = "warmup_iters", default_value_t = 5)
    )]
    pub warmup: u32,
    /// Verify every result (1) or not (0).
    #[cfg_attr(
        feature = "clap",
        arg(short = 'c', long = "check", default_value_t = 1)
    )]
    pub check: u8,
    /// Element type: float, double, half, bfloat16, int8, uint8, int32, uint32, int64, uint64.
    #[cfg_attr(
        feature = "clap",
        arg(short = 'd', long = "datatype", default_value = "float")
    )]
    pub dtype: String,
    /// Reduction: sum, prod, max, min, avg.
    #[cfg_attr(feature = "clap", arg(short = 'o', long = "op", default_value = "sum"))]
    pub redop: String,
    /// Root rank of broadcast and reduce.
    #[cfg_attr(feature = "clap", arg(short = 'r', long = "root", default_value_t = 0))]
    pub root: u32,
    /// Where the data moves: tcp or rdma (verbs RC queue pairs), both in host memory; auto (rdma
    /// when every rank has a usable RDMA device, else tcp); or nccl (GPU memory, libnccl.so.2 and
    /// the CUDA driver loaded at run time; one GPU per local rank).
    #[cfg_attr(feature = "clap", arg(long, default_value = "tcp"))]
    pub backend: String,
    /// Parallel connections per ring neighbour (spread over --data-ip addresses).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 2))]
    pub channels: usize,
    /// Algorithm: ring, rd (recursive doubling; Bruck for all_gather, binomial trees for
    /// broadcast and reduce), tree (binomial trees; all_reduce as reduce then broadcast), or
    /// auto (by size and rank count). Host-memory backends only.
    #[cfg_attr(feature = "clap", arg(long, default_value = "auto"))]
    pub algo: String,
    /// Pipelining chunk size [default: 64K over tcp, 1M over rdma].
    #[cfg_attr(feature = "clap", arg(long = "chunk-size"))]
    pub chunk: Option<String>,
}

/// A checked [`CollectiveArgs`]: the sweep, the backend, and the sizes as given.
#[derive(Debug, Clone)]
pub struct CollectivePlan {
    /// What every rank runs.
    pub sweep: SweepConfig,
    /// How it runs.
    pub backend: BackendOptions,
    /// What the table's first lines say of the run, as nccl-tests prints them.
    pub params: RunParams<'static>,
}

impl CollectiveArgs {
    /// Reads and checks every value, so that a bad one is said before any rank starts; `rdma`
    /// is the RDMA transport's settings should the backend use it.
    pub fn plan(&self, rdma: &RdmaSettings) -> Result<CollectivePlan, ClusterError> {
        let op: CollOp = self.op.parse()?;
        let choice: BackendChoice = self.backend.parse().map_err(|_| {
            ClusterError::Invalid(format!(
                "unknown --backend {:?} (tcp, rdma, auto or nccl)",
                self.backend
            ))
        })?;
        let min = parse_bytes(&self.min_bytes)?;
        let max = parse_bytes(&self.max_bytes)?;
        let inc = self.step_bytes.as_deref().map(parse_bytes).transpose()?;
        let chunk_bytes = match self.chunk.as_deref().map(parse_bytes).transpose()? {
            Some(0) => return Err(ClusterError::Misuse("--chunk-size must be at least 1 byte")),
            Some(c) => Some(
                usize::try_from(c)
                    .map_err(|_| ClusterError::Misuse("--chunk-size is too large"))?,
            ),
            None => None,
        };
        let size_list = sizes(min, max, self.step_factor, inc);
        if size_list.is_empty() {
            return Err(ClusterError::Invalid(format!(
                "no sizes between {min} and {max}"
            )));
        }
        let params = RunParams {
            op: op.name(),
            min_bytes: min,
            max_bytes: max,
            step: match inc {
                Some(i) => format!("{i}(bytes)"),
                None => format!("{}(factor)", self.step_factor),
            },
            warmup: self.warmup,
            iters: self.iters.max(1),
            check: self.check != 0,
        };
        Ok(CollectivePlan {
            params,
            sweep: SweepConfig {
                op,
                dtype: self.dtype.parse::<DType>()?,
                redop: self.redop.parse::<RedOp>()?,
                root: self.root,
                sizes: size_list,
                warmup: self.warmup,
                iters: self.iters.max(1),
                check: self.check != 0,
            },
            backend: BackendOptions {
                choice,
                channels: self.channels,
                algo: self.algo.parse::<AlgoChoice>()?,
                chunk_bytes,
                rdma: rdma.clone(),
            },
        })
    }
}

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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::transport::TransportChoice;

    fn args() -> CollectiveArgs {
        CollectiveArgs {
            op: "all_reduce".into(),
            min_bytes: "1K".into(),
            max_bytes: "8K".into(),
            step_factor: 2,
            step_bytes: None,
            iters: 0,
            warmup: 1,
            check: 1,
            dtype: "half".into(),
            redop: "max".into(),
            root: 0,
            backend: "auto".into(),
            channels: 3,
            algo: "ring".into(),
            chunk: Some("16K".into()),
        }
    }

    #[test]
    fn a_plan_reads_every_flag() {
        let p = args().plan(&RdmaSettings::default()).unwrap();
        assert_eq!(p.sweep.sizes, vec![1024, 2048, 4096, 8192]);
        assert_eq!((p.sweep.dtype, p.sweep.redop), (DType::Half, RedOp::Max));
        assert_eq!((p.sweep.iters, p.sweep.check), (1, true));
        assert_eq!(p.backend.choice, BackendChoice::Host(TransportChoice::Auto));
        assert_eq!(
            (p.backend.channels, p.backend.algo, p.backend.chunk_bytes),
            (3, AlgoChoice::Ring, Some(16 << 10))
        );
        let (min, max) = (p.params.min_bytes, p.params.max_bytes);
        assert_eq!(
            (min, max, p.params.step.as_str()),
            (1024, 8192, "2(factor)")
        );
        assert_eq!(
            (p.params.op, p.params.iters, p.params.check),
            ("all_reduce", 1, true)
        );
    }

    #[test]
    fn a_bad_flag_is_named() {
        let plan = |f: fn(&mut CollectiveArgs)| {
            let mut a = args();
            f(&mut a);
            a.plan(&RdmaSettings::default()).unwrap_err().to_string()
        };
        assert_eq!(
            plan(|a| a.backend = "ucx".into()),
            "unknown --backend \"ucx\" (tcp, rdma, auto or nccl)"
        );
        assert_eq!(
            plan(|a| a.chunk = Some("0".into())),
            "--chunk-size must be at least 1 byte"
        );
        assert_eq!(
            plan(|a| a.min_bytes = "1M".into()),
            "no sizes between 1048576 and 8192"
        );
        assert_eq!(
            plan(|a| a.max_bytes = "8Q".into()),
            "\"8Q\" is not a size in bytes (e.g. 8, 64K, 32M, 1G)"
        );
    }
}
