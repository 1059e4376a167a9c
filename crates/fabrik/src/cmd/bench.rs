//! `fabrik bench`: measurements between hosts. `p2p` is point-to-point TCP bandwidth and latency
//! with multi-NIC striping (TCP or RDMA verbs); `collective` runs nccl-tests-style collectives.

use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{bail, Context};
use fabrik_bench::client::with_port;
use fabrik_cluster::transport::TransportChoice;
use fabrik_bench::{Amount, BenchError, ClientConfig, PathSpec, Server, ServerConfig};
use fabrik_model::P2pTest;
use fabrik_render::Format;
use fabrik_wire::Token;

/// The control port a server listens on when none is given.
pub const DEFAULT_PORT: u16 = 18800;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    kind: Kind,
}

#[derive(clap::Subcommand)]
enum Kind {
    /// Point-to-point bandwidth or latency between two hosts: TCP striped over several NICs, or
    /// RDMA verbs (`--transport rdma`), from host or GPU memory.
    P2p(Box<P2pArgs>),
    /// A collective (all_reduce, all_gather, ...) across ranks, as nccl-tests runs it: host
    /// memory over TCP or RDMA verbs, or GPU memory through NCCL (`--backend`).
    Collective(Box<super::collective::Args>),
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum TestKind {
    Bw,
    Lat,
}

#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("role").required(true).args(["server", "client", "local"])))]
struct P2pArgs {
    /// Run the server end.
    #[arg(long)]
    server: bool,
    /// Run the client end against HOST[:PORT].
    #[arg(long, value_name = "HOST[:PORT]")]
    client: Option<String>,
    /// Run both ends on this machine over loopback, for a quick look.
    #[arg(long)]
    local: bool,
    /// Server: address to listen on.
    #[arg(long, default_value = "0.0.0.0", value_name = "ADDR")]
    bind: IpAddr,
    /// Server: control port to listen on (0 picks a free one); client: the default for HOST.
    #[arg(long, short = 'p', default_value_t = DEFAULT_PORT)]
    port: u16,
    /// Shared secret; the server prints a random one when none is given.
    #[arg(long, env = "FABRIK_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Server: exit after the first session.
    #[arg(long)]
    once: bool,
    /// bw: bandwidth (streams of messages); lat: ping-pong latency.
    #[arg(long, value_enum, default_value = "bw")]
    test: TestKind,
    /// Message size (K, M, G, T suffixes are powers of 1024). Default 64K for bw, 2 for lat.
    #[arg(long, short = 's', value_parser = fabrik_model::size::parse_bytes, conflicts_with_all = ["min_size", "max_size", "all"])]
    size: Option<u64>,
    /// Sweep: smallest message size.
    #[arg(short = 'b', long = "min-size", value_parser = fabrik_model::size::parse_bytes, requires = "max_size")]
    min_size: Option<u64>,
    /// Sweep: largest message size.
    #[arg(short = 'e', long = "max-size", value_parser = fabrik_model::size::parse_bytes, requires = "min_size")]
    max_size: Option<u64>,
    /// Sweep: each size is the previous times this.
    #[arg(short = 'f', long, default_value_t = 2)]
    factor: u64,
    /// Sweep 2 B to 8 MiB by powers of two, as perftest's -a.
    #[arg(short = 'a', long)]
    all: bool,
    /// Messages per stream (bw) or round trips (lat). Default: 2 s per size for bw, 10000 for lat.
    #[arg(long, short = 'n', conflicts_with = "duration")]
    iters: Option<u64>,
    /// Seconds per size (bw).
    #[arg(long, short = 'D')]
    duration: Option<f64>,
    /// Parallel TCP streams.
    #[arg(long, short = 'P', default_value_t = 1)]
    streams: u32,
    /// Local addresses to spread the streams over, round-robin.
    #[arg(long, value_delimiter = ',', conflicts_with = "ifaces")]
    local_addrs: Vec<IpAddr>,
    /// Local interfaces to spread the streams over, round-robin (SO_BINDTODEVICE).
    #[arg(long, value_delimiter = ',')]
    ifaces: Vec<String>,
    /// Server addresses paired by position with the local addresses or interfaces (default:
    /// the server's address on each local subnet).
    #[arg(long, value_delimiter = ',')]
    peer_addrs: Vec<IpAddr>,
    /// Send in both directions at once (bandwidth is the sum).
    #[arg(long)]
    bidir: bool,
    /// Check every payload byte end to end.
    #[arg(long)]
    verify: bool,
    /// Seconds any network wait may take before the peer is declared gone.
    #[arg(long, default_value_t = 30.0)]
    timeout: f64,
    /// SO_SNDBUF/SO_RCVBUF in bytes (default: kernel autotuning).
    #[arg(long, value_parser = fabrik_model::size::parse_bytes)]
    sock_buf: Option<u64>,
    /// Latency round trips run before measuring.
    #[arg(long, default_value_t = 100)]
    warmup: u64,
    /// Client: a perftest-style table (rows as they are measured) or the JSON report.
    #[arg(long, default_value = "text", value_parser = Format::text_or_json())]
    format: Format,
    /// tcp (default), rdma, or auto (rdma when a usable RDMA device exists). Both ends use the
    /// same transport.
    #[arg(long, value_enum, default_value = "tcp")]
    transport: TransportChoice,
    #[command(flatten)]
    rdma: crate::cmd::rdma::RdmaArgs,
    /// Judge the bandwidth against this cluster file's `bandwidth.p2p_gbps_per_nic`; exit 1
    /// below the line.
    #[arg(long, value_name = "FILE")]
    expect: Option<std::path::PathBuf>,
    /// Link rate per NIC in Gb/s for the default line, 90 % of it (else the inventory's speed
    /// of the --ifaces in use, or of the RDMA port in use).
    #[arg(long, value_name = "GBPS")]
    link_gbps: Option<f64>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.kind {
        Kind::P2p(a) => p2p(*a),
        Kind::Collective(a) => super::collective::run(*a),
    }
}

fn p2p(a: P2pArgs) -> anyhow::Result<ExitCode> {
    let timeout = secs(a.timeout, "--timeout")?;
    let (rdma, tcp_because) = match a.transport {
        TransportChoice::Tcp => (false, None),
        TransportChoice::Rdma => (true, None),
        TransportChoice::Auto => match fabrik_verbs::p2p::rdma_choice() {
            Ok(_) => (true, None),
            Err(why) => (false, Some(why)),
        },
    };
    if !rdma {
        let given = a.rdma.given();
        if !given.is_empty() {
            let chosen = match &tcp_because {
                Some(why) => format!("--transport auto chose TCP ({why})"),
                None => "the transport is TCP".to_string(),
            };
            bail!(
                "{} {} RDMA-only: {chosen}, which would measure host memory over TCP streams \
                 instead; add --transport rdma to measure them (or drop them for a TCP test)",
                given.join(", "),
                if given.len() == 1 { "is" } else { "are" }
            );
        }
    }
    let auto_note = tcp_because.map(|why| format!("--transport auto chose TCP: {why}"));
    if rdma {
        if a.duration.is_some() || a.bidir || a.streams != 1 || !a.ifaces.is_empty() {
            bail!("--duration, --bidir, --streams and --ifaces are TCP options (RDMA: --qps)");
        }
        let common = crate::cmd::rdma::Common {
            server: a.server,
            client: a.client.as_deref().map(|h| with_port(h, a.port)),
            local: a.local,
            bind: SocketAddr::new(a.bind, a.port),
            token: a.token.clone(),
            once: a.once,
            test: match a.test {
                TestKind::Bw => P2pTest::Bw,
                TestKind::Lat => P2pTest::Lat,
            },
            sizes: sizes(&a)?,
            iters: a.iters,
            verify: a.verify,
            timeout,
            json: matches!(a.format, Format::Json),
            expect: a.expect.clone(),
            link_gbps: a.link_gbps,
        };
        return crate::cmd::rdma::p2p(&common, &a.rdma);
    }
    if a.server {
        if let Some(note) = &auto_note {
            eprintln!("fabrik: {note}");
        }
        return serve(&a, timeout);
    }
    let token = match (&a.token, a.local) {
        (Some(t), _) => Token::new(t).context("--token / FABRIK_TOKEN")?,
        (None, true) => Token::random()?,
        (None, false) => bail!("the client needs the server's token: --token or FABRIK_TOKEN"),
    };
    let test = match a.test {
        TestKind::Bw => P2pTest::Bw,
        TestKind::Lat => P2pTest::Lat,
    };
    let server = match &a.client {
        Some(host) => with_port(host, a.port),
        None => String::new(),
    };
    let mut cfg = ClientConfig::new(server, token, test);
    if let Some(sizes) = sizes(&a)? {
        cfg.sizes = sizes;
    }
    if let Some(n) = a.iters {
        cfg.amount = Amount::Iters(n);
    }
    if let Some(d) = a.duration {
        cfg.amount = Amount::Duration(secs(d, "--duration")?);
    }
    cfg.streams = a.streams;
    cfg.paths = if !a.local_addrs.is_empty() {
        PathSpec::LocalAddrs(a.local_addrs.clone())
    } else if !a.ifaces.is_empty() {
        PathSpec::Ifaces(a.ifaces.clone())
    } else {
        PathSpec::Default
    };
    cfg.peer_addrs = a.peer_addrs.clone();
    cfg.bidir = a.bidir;
    cfg.verify = a.verify;
    cfg.timeout = timeout;
    cfg.sock_buf = a.sock_buf.map(|b| b as usize);
    cfg.warmup = a.warmup;
    // Table rows are printed as each size finishes, as perftest does; JSON comes at the end.
    let table = matches!(a.format, Format::Text);
    if table {
        if let Some(note) = &auto_note {
            println!("# {note}");
        }
        print!("{}", fabrik_render::p2p::tcp::columns(test));
    }
    let mut on_row = |row: fabrik_bench::client::Row<'_>| {
        if table {
            let line = match row {
                fabrik_bench::client::Row::Bw(r) => fabrik_render::p2p::tcp::bw_line(r),
                fabrik_bench::client::Row::Lat(r) => fabrik_render::p2p::tcp::lat_line(r),
            };
            print!("{line}");
            let _ = std::io::stdout().flush();
        }
    };
    let result = if a.local {
        fabrik_bench::run_local_observed(&cfg, &mut on_row)
    } else {
        fabrik_bench::client::run_observed(&cfg, &mut on_row)
    };
    let mut report = match result {
        Ok(r) => r,
        Err(e @ BenchError::Corrupt { .. }) => {
            eprintln!("fabrik: {e}");
            return Ok(crate::exit::status(true));
        }
        Err(e) => return Err(e).context("bench p2p"),
    };
    report.notes.extend(auto_note);
    let judged = crate::cmd::expect::judge_bench_p2p(
        &report,
        a.expect.as_deref(),
        a.link_gbps,
        &a.ifaces,
        a.bidir,
    )?;
    match a.format {
        Format::Json => crate::output::print_json(&fabrik_doctor::passline::WithPassLine {
            report: &report,
            pass_line: judged.clone(),
        })?,
        Format::Text | Format::Markdown => {
            print!("{}", fabrik_render::p2p::tcp::closing(&report));
            if let Some(j) = &judged {
                print!("{}", fabrik_render::passline::judgement(j));
            }
        }
    }
    Ok(crate::exit::status(judged.is_some_and(|j| {
        j.verdict == fabrik_doctor::passline::Verdict::Fail
    })))
}

fn serve(a: &P2pArgs, timeout: Duration) -> anyhow::Result<ExitCode> {
    let (token, generated) = match &a.token {
        Some(t) => (Token::new(t).context("--token / FABRIK_TOKEN")?, false),
        None => (Token::random()?, true),
    };
    let server = Server::bind(ServerConfig {
        bind: SocketAddr::new(a.bind, a.port),
        token: token.clone(),
        timeout,
        once: a.once,
        sock_buf: a.sock_buf.map(|b| b as usize),
    })?;
    let addr = server.local_addr()?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "fabrik bench p2p server listening on {addr}")?;
    if generated {
        writeln!(
            out,
            "token: {} (give it to the client with --token or FABRIK_TOKEN)",
            token.as_str()
        )?;
    }
    out.flush()?;
    drop(out);
    server.serve(&AtomicBool::new(false))?;
    Ok(ExitCode::SUCCESS)
}

fn secs(v: f64, what: &str) -> anyhow::Result<Duration> {
    if !(v.is_finite() && v > 0.0 && v < 1e6) {
        bail!("{what} must be a positive number of seconds, not {v}");
    }
    Ok(Duration::from_secs_f64(v))
}

fn sizes(a: &P2pArgs) -> anyhow::Result<Option<Vec<u64>>> {
    if let Some(s) = a.size {
        return Ok(Some(vec![s]));
    }
    let (lo, hi) = match (a.all, a.min_size, a.max_size) {
        (true, _, _) => (2, 8 << 20),
        (false, Some(lo), Some(hi)) => (lo, hi),
        _ => return Ok(None),
    };
    if a.factor < 2 {
        bail!("--factor must be at least 2");
    }
    if lo == 0 || lo > hi {
        bail!("the sweep needs 0 < MIN <= MAX (got {lo} and {hi})");
    }
    Ok(Some(fabrik_model::size::sweep(lo, hi, a.factor, None)))
}
