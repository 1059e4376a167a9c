//! The RDMA half of `fabrik bench p2p --transport rdma|auto`: verbs options, and the wiring of
//! fabrik-verbs' point-to-point runs ([`fabrik_verbs::p2p`]) to the output.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use fabrik_model::P2pTest;
use fabrik_verbs::p2p::{run_local, run_remote, test_params, Requested, Server, ServerConfig};
use fabrik_verbs::wire::Token;
use fabrik_verbs::{LocalOptions, MemKind, Op, TestParams, Verbs};

use crate::output::print_json;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OpArg {
    Write,
    Read,
    Send,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum MemArg {
    Host,
    Cuda,
    Managed,
}

/// Options that only the RDMA transport has (flattened into `bench p2p`).
#[derive(clap::Args, Debug, Clone)]
#[command(next_help_heading = "RDMA (--transport rdma)")]
pub struct RdmaArgs {
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
    /// RDMA operation.
    #[arg(long, value_enum, default_value = "write")]
    pub op: OpArg,
    /// Work requests in flight per QP (default 128 for bw, 1 for lat, as perftest: a latency
    /// test then waits for every send's completion, as ib_send_lat does).
    #[arg(long, short = 't')]
    pub tx_depth: Option<u32>,
    /// One signaled completion every N work requests (capped at --tx-depth).
    #[arg(long, default_value_t = 100)]
    pub cq_mod: u32,
    /// Queue pairs (bandwidth only).
    #[arg(long, short = 'q', default_value_t = 1)]
    pub qps: u32,
    /// Largest message sent inline (default 0 for bw, 236 for lat, as perftest).
    #[arg(long, short = 'I')]
    pub inline_size: Option<u32>,
    /// Where the registered buffer lives.
    #[arg(long, value_enum, default_value = "host")]
    pub mem: MemArg,
    /// CUDA device ordinal for --mem cuda/managed.
    #[arg(long, default_value_t = 0)]
    pub cuda_device: i32,
    /// Register memory with IBV_ACCESS_RELAXED_ORDERING (matters for GPU memory behind SR-IOV
    /// VFs and some PCIe topologies).
    #[arg(long)]
    pub relaxed_ordering: bool,
    /// With --mem cuda|managed, skip the host-memory reference pass (by default a bandwidth test
    /// also runs from a host buffer on the same QPs and sizes, to compare).
    #[arg(long)]
    pub no_host_reference: bool,
    /// Warn when GPU memory's bandwidth is below this fraction of the host reference's.
    #[arg(long, default_value_t = fabrik_verbs::gpuref::DEFAULT_WARN_BELOW, value_parser = parse_fraction)]
    pub warn_below_host: f64,
}

fn parse_fraction(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|e| format!("{e}"))?;
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err("a positive number, such as 0.8".into())
    }
}

/// What `bench p2p` already parsed that the RDMA transport uses too.
pub struct Common {
    pub server: bool,
    pub client: Option<String>,
    pub local: bool,
    pub bind: SocketAddr,
    pub token: Option<String>,
    pub once: bool,
    pub test: P2pTest,
    pub sizes: Option<Vec<u64>>,
    pub iters: Option<u64>,
    pub verify: bool,
    pub timeout: Duration,
    pub json: bool,
    /// The cluster file whose per-NIC line judges the bandwidth.
    pub expect: Option<std::path::PathBuf>,
    /// The link rate the default line is 90 % of (else the port's rate in sysfs).
    pub link_gbps: Option<f64>,
}

impl RdmaArgs {
    /// The RDMA options given with a value other than their default: over TCP each would be
    /// silently ignored and the run would measure something else (host memory, one stream).
    pub fn given(&self) -> Vec<&'static str> {
        let d = fabrik_verbs::gpuref::DEFAULT_WARN_BELOW;
        [
            (self.device.is_some(), "-d/--device"),
            (self.gid_index.is_some(), "-x/--gid-index"),
            (self.mtu.is_some(), "-m/--mtu"),
            (self.op != OpArg::Write, "--op"),
            (self.tx_depth.is_some(), "-t/--tx-depth"),
            (self.cq_mod != 100, "--cq-mod"),
            (self.qps != 1, "-q/--qps"),
            (self.inline_size.is_some(), "-I/--inline-size"),
            (self.mem != MemArg::Host, "--mem"),
            (self.cuda_device != 0, "--cuda-device"),
            (self.relaxed_ordering, "--relaxed-ordering"),
            (self.no_host_reference, "--no-host-reference"),
            (self.warn_below_host != d, "--warn-below-host"),
        ]
        .into_iter()
        .filter_map(|(given, name)| given.then_some(name))
        .collect()
    }
}

pub fn p2p(c: &Common, r: &RdmaArgs) -> anyhow::Result<ExitCode> {
    let opts = local_options(r, c.timeout)?;
    let verbs = Arc::new(Verbs::load()?);
    if c.server {
        let (token, generated) = match &c.token {
            Some(t) => (Token::new(t).context("--token / FABRIK_TOKEN")?, false),
            None => (Token::random()?, true),
        };
        let cfg = ServerConfig {
            bind: c.bind,
            token: token.clone(),
            timeout: c.timeout,
            once: c.once,
        };
        let server = Server::bind(verbs, opts, cfg)?;
        println!(
            "fabrik bench p2p (rdma) server listening on {}",
            server.local_addr()?
        );
        if generated {
            println!(
                "token: {} (give it to the client with --token or FABRIK_TOKEN)",
                token.as_str()
            );
        }
        server.serve(&mut |e| eprintln!("fabrik: {:#}", anyhow::Error::from(e)))?;
        return Ok(ExitCode::SUCCESS);
    }
    let params = params_from(c, r)?;
    let report = if c.local {
        run_local(&verbs, &opts, &params)?
    } else {
        let Some(host) = &c.client else {
            bail!("--client HOST, --server or --local");
        };
        let Some(token) = &c.token else {
            bail!("the client needs the server's token: --token or FABRIK_TOKEN");
        };
        let token = Token::new(token).context("--token / FABRIK_TOKEN")?;
        run_remote(&verbs, host, &token, &opts, &params)?
    };
    if let Some(w) = report.memory.as_ref().and_then(|m| m.warning.as_ref()) {
        eprintln!("fabrik: warning: {w}");
    }
    let judged = crate::cmd::expect::judge_rdma_p2p(&report, c.expect.as_deref(), c.link_gbps)?;
    if c.json {
        print_json(&fabrik_doctor::passline::WithPassLine {
            report: &report,
            pass_line: judged.clone(),
        })?;
    } else {
        print!("{}", fabrik_render::p2p::rdma(&report));
        if let Some(j) = &judged {
            print!("{}", fabrik_render::passline::judgement(j));
        }
    }
    Ok(crate::exit::status(judged.is_some_and(|j| {
        j.verdict == fabrik_doctor::passline::Verdict::Fail
    })))
}

fn local_options(r: &RdmaArgs, timeout: Duration) -> anyhow::Result<LocalOptions> {
    let (device, port) = fabrik_verbs::device_port(r.device.as_deref())?;
    Ok(LocalOptions {
        device,
        port,
        gid_index: r.gid_index,
        mtu: r.mtu,
        mem: match r.mem {
            MemArg::Host => MemKind::Host,
            MemArg::Cuda => MemKind::Cuda,
            MemArg::Managed => MemKind::Managed,
        },
        cuda_device: r.cuda_device,
        relaxed_ordering: r.relaxed_ordering,
        host_reference: !r.no_host_reference,
        warn_below: r.warn_below_host,
        timeout,
        root: "/".into(),
    })
}

fn params_from(c: &Common, r: &RdmaArgs) -> anyhow::Result<TestParams> {
    let op = match r.op {
        OpArg::Write => Op::Write,
        OpArg::Read => Op::Read,
        OpArg::Send => Op::Send,
    };
    let req = Requested {
        sizes: c.sizes.clone(),
        iterations: c.iters,
        tx_depth: r.tx_depth,
        cq_mod: r.cq_mod,
        qps: r.qps,
        inline_size: r.inline_size,
        verify: c.verify,
    };
    Ok(test_params(op, c.test, &req)?)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn rdma() -> RdmaArgs {
        RdmaArgs {
            device: Some("mlx5_0:2".into()),
            gid_index: None,
            mtu: None,
            op: OpArg::Send,
            tx_depth: Some(64),
            cq_mod: 100,
            qps: 1,
            inline_size: None,
            mem: MemArg::Host,
            cuda_device: 0,
            relaxed_ordering: true,
            no_host_reference: false,
            warn_below_host: 0.8,
        }
    }

    fn common(test: P2pTest) -> Common {
        Common {
            server: false,
            client: Some("node-b:18800".into()),
            local: false,
            bind: "0.0.0.0:18800".parse().unwrap(),
            token: Some("t".into()),
            once: false,
            test,
            sizes: None,
            iters: None,
            verify: true,
            timeout: Duration::from_secs(5),
            json: false,
            expect: None,
            link_gbps: None,
        }
    }

    #[test]
    fn flags_map_to_the_test_with_perftest_defaults() {
        // The defaults themselves are fabrik_verbs::p2p's; here, that the flags reach them.
        let p = params_from(&common(P2pTest::Bw), &rdma()).unwrap();
        assert_eq!(
            (p.op, p.tx_depth, p.cq_mod, p.verify),
            (Op::Send, 64, 64, true)
        );
        assert_eq!((p.sizes.clone(), p.iterations), (vec![65536], 5000));
    }

    #[test]
    fn device_and_port_split() {
        let o = local_options(&rdma(), Duration::from_secs(1)).unwrap();
        assert_eq!((o.device.as_deref(), o.port), (Some("mlx5_0"), 2));
        assert!(o.relaxed_ordering);
        let mut r = rdma();
        r.device = Some("mlx5_0:x".into());
        let e = local_options(&r, Duration::from_secs(1)).unwrap_err();
        assert_eq!(e.to_string(), "bad port in --device mlx5_0:x");
    }
}
