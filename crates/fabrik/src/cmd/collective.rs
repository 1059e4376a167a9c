//! `fabrik bench collective OP`: nccl-tests-style sweeps of a collective between ranks, with
//! verified results: in host memory over TCP (`--backend tcp`) or RDMA verbs (`--backend rdma`),
//! or in GPU memory through NCCL loaded at run time (`--backend nccl`).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use fabrik_cluster::collective::{AlgoChoice, CollOp, Comm, DEFAULT_CHUNK_BYTES, TCP_CHUNK_BYTES};
use fabrik_cluster::dtype::{DType, RedOp};
use fabrik_cluster::nccl_sweep::{check_support, local_index, GpuRank};
use fabrik_cluster::ranks::process_env;
use fabrik_cluster::rdma_link::connect_comm;
use fabrik_cluster::rendezvous::Group;
use fabrik_cluster::sweep::{counts, run_sweep, sizes, SweepConfig, WrongElement};
use fabrik_cluster::ClusterError;
use fabrik_gpu::LIBNCCL;
use fabrik_model::size::parse_bytes as parse_size;
use fabrik_model::{CollectiveReport, CollectiveRow, RankDevice, ResultSource, SCHEMA_VERSION};
use fabrik_render::nccl_tests::{footer, header, row, RunParams};

use crate::cmd::cluster::{run_ranked, Progress, RankArgs};
use crate::cmd::coll_rdma::{agree_transport, Transport, VerbsArgs};
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
    pub ranks: RankArgs,
    #[command(flatten)]
    pub verbs: VerbsArgs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // A bad cluster file is said before the run, not after it.
    crate::cmd::expect::load_file(args.expect.as_deref())?;
    let op: CollOp = args.op.parse()?;
    let dtype: DType = args.dtype.parse()?;
    let redop: RedOp = args.redop.parse()?;
    let _: AlgoChoice = args.algo.parse()?;
    if !matches!(args.backend.as_str(), "tcp" | "rdma" | "auto" | "nccl") {
        anyhow::bail!(
            "unknown --backend {:?} (tcp, rdma, auto or nccl)",
            args.backend
        );
    }
    let json = args.format == fabrik_render::Format::Json;
    let min = parse_size(&args.min_bytes)?;
    let max = parse_size(&args.max_bytes)?;
    let inc = args.step_bytes.as_deref().map(parse_size).transpose()?;
    let chunk = match args.chunk.as_deref().map(parse_size).transpose()? {
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
        dtype,
        redop,
        root: args.root,
        sizes: size_list,
        warmup: args.warmup,
        iters: args.iters.max(1),
        check: args.check != 0,
    };
    let step = match inc {
        Some(i) => format!("{i}(bytes)"),
        None => format!("{}(factor)", args.step_factor),
    };
    let ranks = args.ranks.clone();
    let out = Output {
        args: &args,
        cfg: &cfg,
        json,
        step: &step,
        min,
        max,
    };
    run_ranked(&ranks, |group| {
        if args.backend == "nccl" {
            nccl_rank(group, &out)
        } else {
            host_rank(group, &out, chunk)
        }
    })
}

/// What every backend prints and reports the same way.
struct Output<'a> {
    args: &'a Args,
    cfg: &'a SweepConfig,
    json: bool,
    step: &'a str,
    min: u64,
    max: u64,
}

type OnRow<'a> = &'a mut dyn FnMut(&CollectiveRow, Option<&WrongElement>);

fn local_rank() -> u32 {
    std::env::var("LOCAL_RANK")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .unwrap_or(0)
}

/// The host-memory backends: ring lanes over TCP or over RDMA verbs pipes.
fn host_rank(
    group: &mut Group,
    out: &Output<'_>,
    chunk: Option<usize>,
) -> anyhow::Result<ExitCode> {
    let (args, cfg) = (out.args, out.cfg);
    let transport = agree_transport(group, &args.backend, &args.verbs)?;
    let via = match &transport {
        Transport::Tcp => "tcp".to_string(),
        Transport::Rdma(dev) => format!("rdma {}", dev.device_port()),
    };
    let me = RankDevice {
        rank: group.rank(),
        group: Some(0),
        pid: Some(u64::from(std::process::id())),
        host: group.peers()[group.rank() as usize].host.clone(),
        device: Some(local_rank()),
        bus_id: Some("host".into()),
        name: Some(format!("host memory ({via}, {} channels)", args.channels)),
    };
    let devices = group.gather(me)?;
    let chunk_bytes = match (chunk, &transport) {
        (Some(c), _) => c,
        (None, Transport::Tcp) => TCP_CHUNK_BYTES,
        (None, Transport::Rdma(_)) => DEFAULT_CHUNK_BYTES,
    };
    let algo: AlgoChoice = args.algo.parse()?;
    let mesh = cfg.op == CollOp::Alltoall || algo.needs_mesh();
    let mut comm = match &transport {
        Transport::Tcp => Comm::connect(group, args.channels.max(1), mesh, chunk_bytes),
        Transport::Rdma(dev) => {
            let pipe = args.verbs.pipe_config(group.timeout())?;
            connect_comm(group, dev, args.channels.max(1), mesh, chunk_bytes, &pipe)
        }
    }
    .context("opening data connections")?;
    comm.set_algo(algo);
    let by_size: Vec<(u64, usize)> = cfg
        .sizes
        .iter()
        .map(|&s| (s, counts(cfg.op, cfg.dtype, s, group.size()).3 as usize))
        .collect();
    let algos = comm.algorithms_by_size(cfg.op, &by_size);
    let mut notes = vec![
        format!(
            "channels {}, chunk {} B, warm-up {}, iterations {}",
            args.channels, chunk_bytes, cfg.warmup, cfg.iters
        ),
        format!("algorithm ({}): {algos}", args.algo),
    ];
    if let Transport::Rdma(dev) = &transport {
        notes.push(format!(
            "rdma: {}, {} x {} B in flight per pipe",
            dev.describe(),
            args.verbs.rdma_slots,
            args.verbs.rdma_chunk
        ));
    }
    let backend = transport.name();
    report_sweep(
        group,
        out,
        backend,
        devices,
        notes,
        Some(format!("# Algorithm ({}): {algos}", args.algo)),
        |group, on_row| run_sweep(group, &comm, cfg, on_row),
    )
}

fn nccl_rank(group: &mut Group, out: &Output<'_>) -> anyhow::Result<ExitCode> {
    let cfg = out.cfg;
    // Every rank reports its own failure to load or set up the GPU, so that rank 0's error
    // names the rank (and its host) that lacks the library or the device.
    let local = local_index(&process_env(), group.peers(), group.rank());
    let mut gpu = match GpuRank::open(local) {
        Ok(g) => g,
        Err(e) => {
            let e = group.fail(&ClusterError::Gpu(e));
            return Err(e).context("the nccl backend could not start");
        }
    };
    if let Err(e) = check_support(gpu.version, cfg) {
        return Err(group.fail(&e)).context("the nccl backend could not start");
    }
    let devices = group.gather(gpu.device(group))?;
    gpu.connect(group)
        .context("setting up the NCCL communicator")?;
    let banner = format!(
        "# fabrik nccl backend: NCCL {} ({LIBNCCL}), CUDA driver {}.{}",
        gpu.version,
        gpu.driver_version / 1000,
        (gpu.driver_version % 1000) / 10
    );
    let notes = vec![
        format!("nccl {}, cuda driver {}", gpu.version, gpu.driver_version),
        format!("warm-up {}, iterations {}", cfg.warmup, cfg.iters),
    ];
    report_sweep(
        group,
        out,
        "nccl",
        devices,
        notes,
        Some(banner),
        |group, on_row| gpu.run_sweep(group, cfg, on_row),
    )
}

fn report_sweep(
    group: &mut Group,
    out: &Output<'_>,
    backend: &str,
    devices: Option<Vec<RankDevice>>,
    notes: Vec<String>,
    banner: Option<String>,
    sweep: impl FnOnce(&mut Group, OnRow<'_>) -> Result<(), ClusterError>,
) -> anyhow::Result<ExitCode> {
    let (args, cfg, json) = (out.args, out.cfg, out.json);
    let is_root = group.rank() == 0;
    let mut report = CollectiveReport {
        schema_version: SCHEMA_VERSION,
        source: ResultSource::Fabrik,
        op: cfg.op.name().to_string(),
        backend: Some(backend.to_string()),
        ranks: Some(group.size()),
        hosts: group.hosts(),
        devices: devices.unwrap_or_default(),
        rows: Vec::new(),
        avg_busbw: None,
        notes,
    };
    if is_root && !json {
        let params = RunParams {
            op: cfg.op.name(),
            min_bytes: out.min,
            max_bytes: out.max,
            step: out.step.to_string(),
            warmup: cfg.warmup,
            iters: cfg.iters,
            check: cfg.check,
        };
        if let Some(b) = &banner {
            println!("{b}");
        }
        print!("{}", header(&params, &report.devices));
        let _ = std::io::stdout().flush();
    }
    let mut rows: Vec<CollectiveRow> = Vec::new();
    let mut wrongs: Vec<WrongElement> = Vec::new();
    let progress = Progress::new(is_root, cfg.op.name(), "sizes", cfg.sizes.len() as u64);
    let result = sweep(group, &mut |r, first| {
        if !json {
            progress.suspend(|| {
                println!("{}", row(r));
                let _ = std::io::stdout().flush();
            });
        }
        progress.done(rows.len() as u64 + 1, &format!("{} B", r.size));
        if let Some(f) = first {
            wrongs.push(f.clone());
        }
        rows.push(r.clone());
    });
    progress.finish();
    if !is_root {
        return match result {
            Ok(()) => Ok(ExitCode::SUCCESS),
            Err(e) => Err(e).with_context(|| format!("rank {}", group.rank())),
        };
    }
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
    let wrong_total: u64 = timings().filter_map(|t| t.wrong).sum();
    report.rows = rows.clone();
    report.avg_busbw = Some(avg);
    for w in &wrongs {
        report.notes.push(format!("first wrong element: {w}"));
    }
    if let Err(e) = &result {
        report.notes.push(format!("aborted: {e}"));
    }
    if let Some(path) = &args.output {
        let bytes = serde_json::to_vec_pretty(&report)?;
        write_atomically(path, &bytes)?;
    }
    let expect = crate::cmd::expect::load_file(args.expect.as_deref())?;
    let judged = fabrik_doctor::passline::busbw_line(expect.as_ref())
        .and_then(|l| fabrik_doctor::passline::judge_collective(&report, &l));
    if json {
        print_json(&crate::cmd::expect::WithPassLine {
            report: &report,
            pass_line: judged.clone(),
        })?;
    } else {
        for w in &wrongs {
            println!("# first wrong element: {w}");
        }
        if result.is_ok() {
            print!("{}", footer(cfg.op.name(), wrong_total, avg));
        }
        if let Some(j) = &judged {
            print!("{}", crate::cmd::expect::judgement_text(j));
        }
    }
    result.context("the collective run failed")?;
    let below = judged.is_some_and(|j| j.verdict == fabrik_doctor::passline::Verdict::Fail);
    Ok(crate::exit::status(wrong_total > 0 || below))
}
