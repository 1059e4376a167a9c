//! `fabrik bench collective OP`: nccl-tests-style sweeps of a collective between ranks, with
//! verified results: in host memory over TCP (`--backend tcp`) or RDMA verbs (`--backend rdma`),
//! or in GPU memory through NCCL loaded at run time (`--backend nccl`).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use fabrik_cluster::backend::{BackendChoice, BackendOptions};
use fabrik_cluster::bench::{run_collective, Observer, Outcome};
use fabrik_cluster::collective::{AlgoChoice, CollOp};
use fabrik_cluster::dtype::{DType, RedOp};
use fabrik_cluster::sweep::{sizes, SweepConfig};
use fabrik_model::size::parse_bytes as parse_size;
use fabrik_model::{CollectiveRow, RankDevice};
use fabrik_render::nccl_tests::{footer, header, row, RunParams};

use crate::cmd::cluster::{run_ranked, Progress};
use crate::output::{print_json, write_atomically};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// all_reduce, all_gather, reduce_scatter, broadcast, reduce or alltoall.
    pub op: String,
    /// Smallest size (bytes; K, M, G, T suffixes).
    #[arg(short = 'b', long = "minbytes", default_value = "8")]
    pub min_bytes: String,
    /// Largest size.
    #[arg(short = 'e', long = "maxbytes", default_value = "32M")]
    pub max_bytes: String,
    /// Multiply the size by this each step.
    #[arg(short = 'f', long = "stepfactor", default_value_t = 2)]
    pub step_factor: u64,
    /// Add this many bytes each step instead of multiplying.
    #[arg(short = 'i', long = "stepbytes")]
    pub step_bytes: Option<String>,
    /// Timed iterations per size.
    #[arg(short = 'n', long = "iters", default_value_t = 20)]
    pub iters: u32,
    /// Warm-up iterations per size.
    #[arg(short = 'w', long = "warmup_iters", default_value_t = 5)]
    pub warmup: u32,
    /// Verify every result (1) or not (0).
    #[arg(short = 'c', long = "check", default_value_t = 1)]
    pub check: u8,
    /// Element type: float, double, half, bfloat16, int8, uint8, int32, uint32, int64, uint64.
    #[arg(short = 'd', long = "datatype", default_value = "float")]
    pub dtype: String,
    /// Reduction: sum, prod, max, min, avg.
    #[arg(short = 'o', long = "op", default_value = "sum")]
    pub redop: String,
    /// Root rank of broadcast and reduce.
    #[arg(short = 'r', long = "root", default_value_t = 0)]
    pub root: u32,
    /// Where the data moves: tcp or rdma (verbs RC queue pairs), both in host memory; auto (rdma
    /// when every rank has a usable RDMA device, else tcp); or nccl (GPU memory, libnccl.so.2 and
    /// the CUDA driver loaded at run time; one GPU per local rank).
    #[arg(long, default_value = "tcp")]
    pub backend: String,
    /// Parallel connections per ring neighbour (spread over --data-ip addresses).
    #[arg(long, default_value_t = 2)]
    pub channels: usize,
    /// Algorithm: ring, rd (recursive doubling; Bruck for all_gather, binomial trees for
    /// broadcast and reduce), tree (binomial trees; all_reduce as reduce then broadcast), or
    /// auto (by size and rank count). Host-memory backends only.
    #[arg(long, default_value = "auto")]
    pub algo: String,
    /// Pipelining chunk size [default: 64K over tcp, 1M over rdma].
    #[arg(long = "chunk-size")]
    pub chunk: Option<String>,
    /// text (nccl-tests' table) or json.
    #[arg(long, default_value = "text", value_parser = fabrik_render::Format::text_or_json())]
    pub format: fabrik_render::Format,
    /// Also write the JSON report here (kept, with the rows so far, when a run fails).
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Judge all_reduce's bus bandwidth at the largest size against this cluster file's
    /// `bandwidth.all_reduce_busbw_gbs`; exit 1 below the line.
    #[arg(long, value_name = "FILE")]
    pub expect: Option<PathBuf>,
    #[command(flatten)]
    pub ranks: fabrik_cluster::launch::JoinOptions,
    #[command(flatten)]
    pub verbs: fabrik_cluster::transport::RdmaSettings,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // A bad cluster file is said before the run, not after it.
    crate::cmd::expect::load_file(args.expect.as_deref())?;
    let op: CollOp = args.op.parse()?;
    let choice: BackendChoice = args.backend.parse().map_err(|_| {
        anyhow::anyhow!(
            "unknown --backend {:?} (tcp, rdma, auto or nccl)",
            args.backend
        )
    })?;
    let json = args.format == fabrik_render::Format::Json;
    let min = parse_size(&args.min_bytes)?;
    let max = parse_size(&args.max_bytes)?;
    let inc = args.step_bytes.as_deref().map(parse_size).transpose()?;
    let chunk_bytes = match args.chunk.as_deref().map(parse_size).transpose()? {
        Some(0) => anyhow::bail!("--chunk-size must be at least 1 byte"),
        Some(c) => Some(usize::try_from(c).context("--chunk-size is too large")?),
        None => None,
    };
    let size_list = sizes(min, max, args.step_factor, inc);
    if size_list.is_empty() {
        anyhow::bail!("no sizes between {min} and {max}");
    }
    let cfg = SweepConfig {
        op,
        dtype: args.dtype.parse::<DType>()?,
        redop: args.redop.parse::<RedOp>()?,
        root: args.root,
        sizes: size_list,
        warmup: args.warmup,
        iters: args.iters.max(1),
        check: args.check != 0,
    };
    let opts = BackendOptions {
        choice,
        channels: args.channels,
        algo: args.algo.parse::<AlgoChoice>()?,
        chunk_bytes,
        rdma: args.verbs.clone(),
    };
    let params = RunParams {
        op: cfg.op.name(),
        min_bytes: min,
        max_bytes: max,
        step: match inc {
            Some(i) => format!("{i}(bytes)"),
            None => format!("{}(factor)", args.step_factor),
        },
        warmup: cfg.warmup,
        iters: cfg.iters,
        check: cfg.check,
    };
    run_ranked(&args.ranks, |group| {
        let is_root = group.rank() == 0;
        let mut table = Table {
            params: &params,
            json,
            progress: Progress::new(is_root, cfg.op.name(), "sizes", cfg.sizes.len() as u64),
        };
        let outcome = run_collective(group, &cfg, &opts, &mut table);
        table.progress.finish();
        match outcome? {
            Some(outcome) => finish(&args, &cfg, json, outcome),
            None => Ok(ExitCode::SUCCESS),
        }
    })
}

/// Rank 0's nccl-tests table, printed row by row as sizes finish (nothing with `--format json`).
struct Table<'a> {
    params: &'a RunParams<'a>,
    json: bool,
    progress: Progress,
}

impl Observer for Table<'_> {
    fn started(&mut self, banner: Option<&str>, devices: &[RankDevice]) {
        if self.json {
            return;
        }
        if let Some(b) = banner {
            println!("{b}");
        }
        print!("{}", header(self.params, devices));
        let _ = std::io::stdout().flush();
    }

    fn row(&mut self, r: &CollectiveRow, done: usize) {
        if !self.json {
            self.progress.suspend(|| {
                println!("{}", row(r));
                let _ = std::io::stdout().flush();
            });
        }
        self.progress.done(done as u64, &format!("{} B", r.size));
    }
}

/// Rank 0: writes `--output`, judges the pass line and prints the closing lines or the JSON.
fn finish(args: &Args, cfg: &SweepConfig, json: bool, o: Outcome) -> anyhow::Result<ExitCode> {
    let report = &o.report;
    if let Some(path) = &args.output {
        write_atomically(path, &serde_json::to_vec_pretty(report)?)?;
    }
    let expect = crate::cmd::expect::load_file(args.expect.as_deref())?;
    let judged = fabrik_doctor::passline::busbw_line(expect.as_ref())
        .and_then(|l| fabrik_doctor::passline::judge_collective(report, &l));
    if json {
        print_json(&fabrik_doctor::passline::WithPassLine {
            report,
            pass_line: judged.clone(),
        })?;
    } else {
        for w in &o.first_wrong {
            println!("# first wrong element: {w}");
        }
        if o.error.is_none() {
            let avg = report.avg_busbw.unwrap_or(0.0);
            print!("{}", footer(cfg.op.name(), o.wrong_total, avg));
        }
        if let Some(j) = &judged {
            print!("{}", fabrik_render::passline::judgement(j));
        }
    }
    if let Some(e) = o.error {
        return Err(e).context("the collective run failed");
    }
    let below = judged.is_some_and(|j| j.verdict == fabrik_doctor::passline::Verdict::Fail);
    Ok(crate::exit::status(o.wrong_total > 0 || below))
}
