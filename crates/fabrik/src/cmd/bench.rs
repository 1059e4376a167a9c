//! `fabrik bench`: measurements between hosts. `p2p` is point-to-point TCP bandwidth and latency
//! with multi-NIC striping (TCP or RDMA verbs); `collective` runs nccl-tests-style collectives.

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use anyhow::Context;
use fabrik_bench::client::Row;
use fabrik_bench::{BenchError, P2pOptions, Server};
use fabrik_doctor::passline;
use fabrik_render::p2p::tcp;
use fabrik_render::Format;
use fabrik_verbs::options::{P2pPath, P2pTransport};

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
    transport: P2pTransport,
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
    o.wait()?;
    let auto_note = match a.rdma.path(a.transport)? {
        P2pPath::Rdma => {
            o.tcp_only_unused()?;
            o.sizes()?;
            let json = matches!(a.format, Format::Json);
            return crate::cmd::rdma::p2p(o, &a.rdma, json, a.expect.as_deref(), a.link_gbps);
        }
        P2pPath::Tcp(why) => why.map(|why| format!("--transport auto chose TCP: {why}")),
    };
    if o.server {
        if let Some(note) = &auto_note {
            eprintln!("fabrik: {note}");
        }
        return serve(o);
    }
    let cfg = o.client_config()?;
    // Table rows are printed as each size finishes, as perftest does; JSON comes at the end.
    let table = matches!(a.format, Format::Text);
    if table {
        if let Some(note) = &auto_note {
            println!("# {note}");
        }
        print!("{}", tcp::columns(cfg.test));
    }
    let mut on_row = |row: Row<'_>| {
        if table {
            print!(
                "{}",
                match row {
                    Row::Bw(r) => tcp::bw_line(r),
                    Row::Lat(r) => tcp::lat_line(r),
                }
            );
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
    let nics = fabrik_probe::live_nics;
    let judged = passline::judge_tcp_p2p(
        &report,
        expect.as_ref(),
        a.link_gbps,
        &o.ifaces,
        o.bidir,
        nics,
    )?;
    match a.format {
        Format::Json => crate::output::print_json(&passline::WithPassLine {
            report: &report,
            pass_line: judged.clone(),
        })?,
        Format::Text | Format::Markdown => {
            print!("{}", tcp::closing(&report));
            if let Some(j) = &judged {
                print!("{}", fabrik_render::passline::judgement(j));
            }
        }
    }
    Ok(crate::exit::status(passline::failed(judged.as_ref())))
}

fn serve(o: &P2pOptions) -> anyhow::Result<ExitCode> {
    let (cfg, generated) = o.server_config()?;
    let token = generated.then(|| cfg.token.as_str().to_string());
    let server = Server::bind(cfg)?;
    let what = "fabrik bench p2p server";
    print!(
        "{}",
        fabrik_render::p2p::listening(what, server.local_addr()?, token.as_deref())
    );
    std::io::stdout().flush()?;
    server.serve(&AtomicBool::new(false))?;
    Ok(ExitCode::SUCCESS)
}
