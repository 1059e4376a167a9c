//! `fabrik bench-rdma` (hidden, temporary): the RDMA verbs point-to-point benchmark until
//! `fabrik bench p2p --transport rdma` exists to carry the same options.

use std::net::TcpListener;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use fabrik_model::{P2pReport, P2pRows, P2pTest};
use fabrik_verbs::wire::{Channel, Token};
use fabrik_verbs::{LocalOptions, MemKind, Op, TestParams, Verbs};

use crate::output::print_json;

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TestKind {
    Bw,
    Lat,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OpArg {
    Write,
    Read,
    Send,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MemArg {
    Host,
    Cuda,
    Managed,
}

#[derive(clap::Args)]
pub struct Args {
    /// Server to connect to (client mode); omit with --server.
    pub host: Option<String>,
    /// Wait for one client and follow its test.
    #[arg(long)]
    pub server: bool,
    /// TCP port of the control channel.
    #[arg(long, default_value_t = 18515)]
    pub port: u16,
    /// Address the server listens on.
    #[arg(long, default_value = "0.0.0.0")]
    pub bind: String,
    /// Shared secret of the control channel (both ends); a server without one makes one up and
    /// prints it.
    #[arg(long, env = "FABRIK_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// RDMA device and port, `mlx5_0` or `mlx5_0:1`; default: the first device with an ACTIVE
    /// port 1.
    #[arg(long, short = 'd')]
    pub device: Option<String>,
    /// GID index; default: the RoCE v2 GID carrying the control connection's local IPv4.
    #[arg(long, short = 'x')]
    pub gid_index: Option<u32>,
    /// Path MTU in bytes (256..4096); default: the port's active MTU.
    #[arg(long, short = 'm')]
    pub mtu: Option<u32>,
    #[arg(long, value_enum, default_value = "write")]
    pub op: OpArg,
    #[arg(long, value_enum, default_value = "bw")]
    pub test: TestKind,
    /// One message size in bytes (default 65536 for bw, 2 for lat).
    #[arg(long, short = 's')]
    pub size: Option<u64>,
    /// Sweep all powers of two from 2 bytes to 8 MiB (perftest -a).
    #[arg(long, short = 'a')]
    pub all: bool,
    /// Sweep from this size ...
    #[arg(long, short = 'b')]
    pub min_size: Option<u64>,
    /// ... to this size ...
    #[arg(long, short = 'e')]
    pub max_size: Option<u64>,
    /// ... multiplying by this factor.
    #[arg(long, short = 'f', default_value_t = 2)]
    pub factor: u64,
    /// Iterations per size (default 5000 for bw, 1000 for lat, as perftest).
    #[arg(long, short = 'n')]
    pub iters: Option<u64>,
    /// Work requests in flight per QP.
    #[arg(long, short = 't', default_value_t = 128)]
    pub tx_depth: u32,
    /// One signaled completion every N work requests (capped at --tx-depth).
    #[arg(long, default_value_t = 100)]
    pub cq_mod: u32,
    /// Queue pairs (bandwidth only).
    #[arg(long, short = 'q', default_value_t = 1)]
    pub qps: u32,
    /// Largest message sent inline (default 0 for bw, 236 for lat, as perftest).
    #[arg(long, short = 'I')]
    pub inline_size: Option<u32>,
    /// Check every payload against the expected pattern.
    #[arg(long)]
    pub verify: bool,
    #[arg(long, value_enum, default_value = "host")]
    pub mem: MemArg,
    /// CUDA device ordinal for --mem cuda/managed.
    #[arg(long, default_value_t = 0)]
    pub cuda_device: i32,
    /// Register memory with IBV_ACCESS_RELAXED_ORDERING.
    #[arg(long)]
    pub relaxed_ordering: bool,
    /// Seconds to wait for the peer, a completion or a control message before giving up.
    #[arg(long, default_value_t = 30.0)]
    pub timeout: f64,
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (device, port) = match args.device.as_deref() {
        Some(d) => match d.split_once(':') {
            Some((name, p)) => (
                Some(name.to_string()),
                p.parse::<u8>()
                    .with_context(|| format!("bad port in --device {d}"))?,
            ),
            None => (Some(d.to_string()), 1),
        },
        None => (None, 1),
    };
    if !(args.timeout > 0.0 && args.timeout.is_finite()) {
        bail!("--timeout must be a positive number of seconds");
    }
    let timeout = Duration::from_secs_f64(args.timeout);
    let opts = LocalOptions {
        device,
        port,
        gid_index: args.gid_index,
        mtu: args.mtu,
        mem: match args.mem {
            MemArg::Host => MemKind::Host,
            MemArg::Cuda => MemKind::Cuda,
            MemArg::Managed => MemKind::Managed,
        },
        cuda_device: args.cuda_device,
        relaxed_ordering: args.relaxed_ordering,
        timeout,
        root: "/".into(),
    };
    let verbs = Arc::new(Verbs::load()?);
    if args.server {
        let token = match &args.token {
            Some(t) => Token::new(t)?,
            None => {
                let t = Token::random()?;
                eprintln!("fabrik: token for this server: {}", t.as_str());
                t
            }
        };
        let listener = TcpListener::bind((args.bind.as_str(), args.port))
            .with_context(|| format!("listening on {}:{}", args.bind, args.port))?;
        let (stream, peer) = listener.accept().context("accepting the client")?;
        let mut ch = Channel::accept(stream, &token, timeout)
            .with_context(|| format!("control channel with {peer}"))?;
        fabrik_verbs::serve(&verbs, &mut ch, &opts)
            .with_context(|| format!("serving the RDMA test of {peer}"))?;
        return Ok(ExitCode::SUCCESS);
    }
    let Some(host) = &args.host else {
        bail!("give the server's address, or --server to be one");
    };
    let Some(token) = &args.token else {
        bail!("--token (or FABRIK_TOKEN) is required: the server prints one if it was given none");
    };
    let token = Token::new(token)?;
    let params = params_from(&args)?;
    let addr = format!("{host}:{}", args.port);
    let mut ch = Channel::connect(addr.as_str(), &token, timeout)
        .with_context(|| format!("connecting to {addr}"))?;
    let report = fabrik_verbs::run_client(&verbs, &mut ch, &opts, &params).with_context(|| {
        format!(
            "RDMA {} {} test with {addr}",
            params.op.as_str(),
            test_name(params.test)
        )
    })?;
    match args.format {
        Format::Json => print_json(&report)?,
        Format::Table => print!("{}", render(&report)),
    }
    Ok(ExitCode::SUCCESS)
}

fn test_name(t: P2pTest) -> &'static str {
    match t {
        P2pTest::Bw => "bandwidth",
        P2pTest::Lat => "latency",
    }
}

fn params_from(args: &Args) -> anyhow::Result<TestParams> {
    let test = match args.test {
        TestKind::Bw => P2pTest::Bw,
        TestKind::Lat => P2pTest::Lat,
    };
    let sizes = if args.all {
        fabrik_verbs::stats::size_sweep(2, 8 << 20, 2)
    } else if args.min_size.is_some() || args.max_size.is_some() {
        let min = args.min_size.unwrap_or(2);
        let max = args.max_size.unwrap_or(min);
        fabrik_verbs::stats::size_sweep(min, max, args.factor)
    } else {
        vec![args
            .size
            .unwrap_or(if test == P2pTest::Bw { 65536 } else { 2 })]
    };
    let tx_depth = args.tx_depth;
    let p = TestParams {
        op: match args.op {
            OpArg::Write => Op::Write,
            OpArg::Read => Op::Read,
            OpArg::Send => Op::Send,
        },
        test,
        sizes,
        iterations: args
            .iters
            .unwrap_or(if test == P2pTest::Bw { 5000 } else { 1000 }),
        tx_depth,
        cq_mod: args.cq_mod.min(tx_depth).max(1),
        qps: args.qps,
        inline_size: args
            .inline_size
            .unwrap_or(if test == P2pTest::Bw { 0 } else { 236 }),
        verify: args.verify,
    };
    p.validate().map_err(anyhow::Error::msg)?;
    Ok(p)
}

/// perftest-shaped table, so that the two can be read side by side.
fn render(r: &P2pReport) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        " RDMA {} {} | device {} | link {} | MTU {} | GID index {} | QPs {}\n",
        r.op.as_deref().unwrap_or("?"),
        test_name(r.test),
        r.device.as_deref().unwrap_or("?"),
        r.link_type.as_deref().unwrap_or("?"),
        r.mtu.map(|m| m.to_string()).unwrap_or_else(|| "?".into()),
        r.gid_index
            .map(|g| g.to_string())
            .unwrap_or_else(|| "?".into()),
        r.streams,
    ));
    for n in &r.notes {
        out.push_str(&format!(" {n}\n"));
    }
    match &r.results {
        P2pRows::Bw(rows) => {
            out.push_str(" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n");
            for w in rows {
                out.push_str(&format!(
                    " {:<10} {:<10}       {:<10.2}         {:<10.2}           {:.6}\n",
                    w.bytes, w.iterations, w.bw_peak_gbps, w.bw_avg_gbps, w.msg_rate_mpps
                ));
            }
        }
        P2pRows::Lat(rows) => {
            out.push_str(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]\n");
            let o = |v: Option<f64>| v.map(|x| format!("{x:.2}")).unwrap_or_else(|| "-".into());
            for l in rows {
                out.push_str(&format!(
                    " {:<7} {:<10}     {:<10.2}     {:<10.2}   {:<10.2}       {:<10.2}     {:<10}      {:<10}             {}\n",
                    l.bytes,
                    l.iterations,
                    l.t_min_us,
                    l.t_max_us,
                    l.t_typical_us,
                    l.t_avg_us,
                    o(l.t_stdev_us),
                    o(l.p99_us),
                    o(l.p999_us)
                ));
            }
        }
    }
    out
}
