//! Expectations and waivers on the command line: the `--expect`/`--ignore` flags that `doctor`
//! and `check` share, and `fabrik expect --from-root`, which writes a cluster file from a
//! known-good node.

use std::path::PathBuf;
use std::process::ExitCode;

use fabrik_doctor::expect::ExpectOptions;
use fabrik_doctor::{Expectations, NamedNode, PlannedEnv, Report};

/// The expectations `--expect` and its flags give (the file read through the bounded reader),
/// or `None` when none was asked for.
pub fn load(o: &ExpectOptions) -> anyhow::Result<Option<Expectations>> {
    let text = o
        .expect
        .as_deref()
        .map(|p| {
            fabrik_probe::input::read_text(p, "expectations", fabrik_probe::input::cap::EXPECT)
        })
        .transpose()?;
    let name = o.expect.as_ref().map(|p| p.display().to_string());
    Ok(o.resolve(name.as_deref().zip(text.as_deref()))?)
}

/// Adds the expectation findings to a report, then applies the waivers (today in UTC).
pub fn apply(
    report: &mut Report,
    nodes: &[NamedNode],
    expect: &Expectations,
    env: Option<&PlannedEnv>,
) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    fabrik_doctor::expect::apply(report, nodes, expect, env, now);
}

#[derive(clap::Args)]
pub struct Args {
    /// A known-good node: `/`, a snapshot directory or .tar.gz.
    #[arg(long, value_name = "DIR")]
    pub from_root: PathBuf,
    /// Write the file here instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let node = fabrik_probe::open::load_node(&args.from_root)?;
    let e = Expectations::from_node(&node);
    let text = format!(
        "# Written by `fabrik expect --from-root {}` from a node taken as known-good: review\n# every value before using it as the cluster's expectations.\n\n{}",
        args.from_root.display(),
        e.to_toml()?
    );
    match &args.output {
        Some(path) => crate::output::write_atomically(path, text.as_bytes())?,
        None => crate::output::print_text(&text)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Reads an expectations file when one is given (the benchmarks' `--expect`).
pub fn load_file(path: Option<&std::path::Path>) -> anyhow::Result<Option<Expectations>> {
    let Some(path) = path else {
        return Ok(None);
    };
    let text =
        fabrik_probe::input::read_text(path, "expectations", fabrik_probe::input::cap::EXPECT)?;
    Ok(Some(Expectations::parse(
        &path.display().to_string(),
        &text,
    )?))
}

/// This machine's NICs (`/`), read once per process: the line rates the benchmarks judge by
/// come from them, and under `--local N` every rank is a thread of this process.
fn live_nics() -> anyhow::Result<&'static fabrik_model::Node> {
    static NICS: std::sync::OnceLock<Result<fabrik_model::Node, String>> =
        std::sync::OnceLock::new();
    NICS.get_or_init(|| {
        fabrik_probe::probe_nics(std::path::Path::new("/")).map_err(|e| format!("probing /: {e}"))
    })
    .as_ref()
    .map_err(|e| anyhow::anyhow!("{e}"))
}

/// Judges a `bench p2p` run: against `--expect`'s per-NIC line, else 90 % of `--link-gbps`
/// (per NIC), else of the speeds this machine's inventory reports for the `--ifaces` in use;
/// times the number of NICs the run was striped over.
pub fn judge_bench_p2p(
    report: &fabrik_model::P2pReport,
    expect: Option<&std::path::Path>,
    link_gbps: Option<f64>,
    ifaces: &[String],
    bidirectional: bool,
) -> anyhow::Result<Option<fabrik_doctor::passline::Judgement>> {
    let expect = load_file(expect)?;
    let mut nics: Vec<&String> = ifaces.iter().collect();
    nics.sort();
    nics.dedup();
    let link = match link_gbps {
        Some(g) => Some(g),
        None if !nics.is_empty() && expect.is_none() => {
            // The slowest NIC in use sets the per-NIC line.
            fabrik_parse::check::slowest_nic_gbps(live_nics()?, &nics)
        }
        None => None,
    };
    let line = fabrik_doctor::passline::p2p_line_striped(
        expect.as_ref(),
        link,
        nics.len().max(1),
        bidirectional,
    );
    Ok(line.and_then(|l| fabrik_doctor::passline::judge_p2p(report, &l)))
}

/// Judges a `bench p2p --transport rdma` run: against `--expect`'s per-NIC line, else 90 % of
/// `--link-gbps`, else of the rate this machine's sysfs gives the port in use (where
/// ngc_multinode_perf reads it too).
pub fn judge_rdma_p2p(
    report: &fabrik_model::P2pReport,
    expect: Option<&std::path::Path>,
    link_gbps: Option<f64>,
) -> anyhow::Result<Option<fabrik_doctor::passline::Judgement>> {
    let expect = load_file(expect)?;
    let link = match (link_gbps, &report.device) {
        (Some(g), _) => Some(g),
        (None, Some(dev)) if expect.is_none() => fabrik_parse::check::port_gbps(live_nics()?, dev),
        _ => None,
    };
    Ok(
        fabrik_doctor::passline::p2p_line(expect.as_ref(), link, false)
            .and_then(|l| fabrik_doctor::passline::judge_p2p(report, &l)),
    )
}

/// Judges the all-pairs matrix: each link against `--expect`'s per-NIC line, else 90 % of
/// `--link-gbps`, else of the rate most ranks' inventories give their data NIC (`rank_rates`).
pub fn judge_matrix(
    m: &fabrik_model::PairMatrix,
    expect: Option<&std::path::Path>,
    link_gbps: Option<f64>,
    rank_rates: &[Option<f64>],
) -> anyhow::Result<Option<fabrik_doctor::passline::LinksJudgement>> {
    let expect = load_file(expect)?;
    Ok(
        fabrik_doctor::passline::matrix_line(expect.as_ref(), link_gbps, rank_rates)
            .and_then(|l| fabrik_doctor::passline::judge_links(&m.links, &l)),
    )
}

/// This rank's data NIC rate on each of `rails` rails (Gb/s, from this machine's inventory),
/// gathered at rank 0 in rank order: `rates[rail][rank]`. Every rank calls it. Only probed when
/// no `--expect`/`--link-gbps` gives the line; a rank that cannot read its inventory reports
/// none.
pub fn gather_data_nic_rates(
    group: &mut fabrik_cluster::rendezvous::Group,
    rails: u32,
    probe: bool,
) -> anyhow::Result<Vec<Vec<Option<f64>>>> {
    let node = if probe { live_nics().ok() } else { None };
    Ok(fabrik_cluster::matrix::gather_rail_rates(
        group,
        rails,
        |ip| fabrik_parse::check::address_gbps(node?, ip),
    )?)
}
