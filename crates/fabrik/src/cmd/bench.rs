//! `fabrik bench`: measurements between hosts. `p2p` is point-to-point TCP bandwidth and latency
//! with multi-NIC striping (TCP or RDMA verbs); `collective` runs nccl-tests-style collectives.

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use anyhow::{bail, Context};
use fabrik_bench::{BenchError, P2pOptions, Server};
use fabrik_render::Format;

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

/// `bench p2p`'s data paths (its own: TCP streams from fabrik-bench, verbs from fabrik-verbs).
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Transport {
    Tcp,
    /// RDMA verbs (RC queue pairs); see the RDMA options.
    Rdma,
    /// RDMA when this node has an RDMA device with an ACTIVE port, else TCP.
    Auto,
}

#[derive(clap::Args)]
struct P2pArgs {
    #[command(flatten)]
    opts: P2pOptions,
    /// Client: a perftest-style table (rows as they are measured) or the JSON report.
    #[arg(long, default_value = "text", value_parser = Format::text_or_json())]
    format: Format,
    /// tcp (default), rdma, or auto (rdma when a usable RDMA device exists). Both ends use the
    /// same transport.
    #[arg(long, value_enum, default_value = "tcp")]
    transport: Transport,
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
    let o = &a.opts;
    let timeout = o.wait()?;
    let (rdma, tcp_because) = match a.transport {
        Transport::Tcp => (false, None),
        Transport::Rdma => (true, None),
        Transport::Auto => match fabrik_verbs::p2p::rdma_choice() {
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
        o.tcp_only_unused()?;
        let common = crate::cmd::rdma::Common {
            server: o.server,
            client: o.server_address(),
            local: o.local,
            bind: SocketAddr::new(o.bind, o.port),
            token: o.token.clone(),
            once: o.once,
            test: o.test,
            sizes: o.sizes()?,
            iters: o.iters,
            verify: o.verify,
            timeout,
            json: matches!(a.format, Format::Json),
            expect: a.expect.clone(),
            link_gbps: a.link_gbps,
        };
        return crate::cmd::rdma::p2p(&common, &a.rdma);
    }
    if o.server {
        if let Some(note) = &auto_note {
            eprintln!("fabrik: {note}");
        }
        return serve(o);
    }
    let cfg = o.client_config()?;
    let test = cfg.test;
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
    let result = if o.local {
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
    let expect = crate::cmd::expect::load_file(a.expect.as_deref())?;
    let judged = fabrik_doctor::passline::judge_tcp_p2p(
        &report,
        expect.as_ref(),
        a.link_gbps,
        &o.ifaces,
        o.bidir,
        fabrik_probe::live_nics,
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
    Ok(crate::exit::status(fabrik_doctor::passline::failed(
        judged.as_ref(),
    )))
}

fn serve(o: &P2pOptions) -> anyhow::Result<ExitCode> {
    let (cfg, generated) = o.server_config()?;
    let token = cfg.token.clone();
    let server = Server::bind(cfg)?;
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
