//! The RDMA half of `fabrik bench p2p --transport rdma|auto`: verbs options, and the wiring of
//! fabrik-verbs' point-to-point runs ([`fabrik_verbs::p2p`]) to the output.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use fabrik_model::P2pTest;
use fabrik_verbs::p2p::{run_local, run_remote, Server, ServerConfig};
use fabrik_verbs::wire::Token;
use fabrik_verbs::Verbs;

use crate::output::print_json;

/// Options that only the RDMA transport has (flattened into `bench p2p`).
pub use fabrik_verbs::options::RdmaOptions as RdmaArgs;

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

pub fn p2p(c: &Common, r: &RdmaArgs) -> anyhow::Result<ExitCode> {
    let opts = r.local_options(c.timeout)?;
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
    let params = r.params(c.test, c.sizes.clone(), c.iters, c.verify)?;
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
    let expect = crate::cmd::expect::load_file(c.expect.as_deref())?;
    let judged = fabrik_doctor::passline::judge_rdma_p2p(
        &report,
        expect.as_ref(),
        c.link_gbps,
        fabrik_probe::live_nics,
    )?;
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
    Ok(crate::exit::status(fabrik_doctor::passline::failed(
        judged.as_ref(),
    )))
}
