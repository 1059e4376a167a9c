//! The RDMA half of `fabrik bench p2p --transport rdma|auto`: the wiring of fabrik-verbs'
//! point-to-point runs ([`fabrik_verbs::p2p`]) to the output.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use fabrik_bench::P2pOptions;
use fabrik_doctor::passline;
use fabrik_verbs::p2p::{run_local, run_remote, Server, ServerConfig};
use fabrik_verbs::Verbs;

/// Options that only the RDMA transport has (flattened into `bench p2p`).
pub use fabrik_verbs::options::RdmaOptions as RdmaArgs;

pub fn p2p(
    o: &P2pOptions,
    r: &RdmaArgs,
    json: bool,
    expect: Option<&std::path::Path>,
    link_gbps: Option<f64>,
) -> anyhow::Result<ExitCode> {
    let timeout = o.wait()?;
    let opts = r.local_options(timeout)?;
    let verbs = Arc::new(Verbs::load()?);
    if o.server {
        let (c, generated) = o.server_config()?;
        let token = generated.then(|| c.token.as_str().to_string());
        let cfg = ServerConfig {
            bind: c.bind,
            token: c.token,
            timeout,
            once: c.once,
        };
        let server = Server::bind(verbs, opts, cfg)?;
        let what = "fabrik bench p2p (rdma) server";
        print!(
            "{}",
            fabrik_render::p2p::listening(what, server.local_addr()?, token.as_deref())
        );
        std::io::stdout().flush()?;
        server.serve(&mut |e| eprintln!("fabrik: {:#}", anyhow::Error::from(e)))?;
        return Ok(ExitCode::SUCCESS);
    }
    let params = r.params(o.test, o.sizes()?, o.iters, o.verify)?;
    let report = if o.local {
        run_local(&verbs, &opts, &params)?
    } else {
        let host = o.server_address().unwrap_or_default();
        run_remote(&verbs, &host, &o.client_token()?, &opts, &params)?
    };
    if let Some(w) = report.memory.as_ref().and_then(|m| m.warning.as_ref()) {
        eprintln!("fabrik: warning: {w}");
    }
    let expect = crate::cmd::expect::load_file(expect)?;
    let judged =
        passline::judge_rdma_p2p(&report, expect.as_ref(), link_gbps, fabrik_probe::live_nics)?;
    if json {
        crate::output::print_json(&passline::WithPassLine {
            report: &report,
            pass_line: judged.clone(),
        })?;
    } else {
        print!("{}", fabrik_render::p2p::rdma(&report));
        if let Some(j) = &judged {
            print!("{}", fabrik_render::passline::judgement(j));
        }
    }
    Ok(crate::exit::status(passline::failed(judged.as_ref())))
}
