//! `fabrik cluster`: runs across the ranks of a job (matrix, doctor), and the rank options
//! every multi-rank command shares.

use std::process::ExitCode;

use anyhow::Context;
use fabrik_cluster::launch::{JoinOptions, Ranked};
use fabrik_cluster::rendezvous::Group;

use crate::progress::Progress;

/// Runs `body` as one rank of the job, or with `--local N` starts N ranks of this very command
/// and waits for them (rank 0's exit code, naming the ranks that failed).
pub fn run_ranked(
    args: &JoinOptions,
    body: impl FnOnce(&mut Group) -> anyhow::Result<ExitCode>,
) -> anyhow::Result<ExitCode> {
    match fabrik_cluster::launch::run_ranked(args, body)? {
        Ranked::Rank(done) => done,
        Ranked::Local(outcome) => {
            if let Some(list) = outcome.failed_list() {
                eprintln!("fabrik: local ranks that failed: {list}");
            }
            Ok(ExitCode::from(outcome.exit_code(crate::exit::TOOL_FAILURE)))
        }
    }
}

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: ClusterCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum ClusterCommand {
    /// Bandwidth and latency between every pair of ranks (N-1 rounds of disjoint pairs); names
    /// the links and nodes far below the rest.
    Matrix(MatrixArgs),
    /// Every rank's inventory gathered at rank 0 and checked across nodes.
    Doctor(DoctorArgs),
}

#[derive(clap::Args, Debug)]
pub struct MatrixArgs {
    #[command(flatten)]
    pub run: fabrik_cluster::matrix_options::MatrixOptions,
    /// text or json.
    #[arg(long, default_value = "text", value_parser = fabrik_render::Format::text_or_json())]
    pub format: fabrik_render::Format,
    /// Also write the JSON matrix here.
    #[arg(long, value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
    /// Judge every link against this cluster file's `bandwidth.p2p_gbps_per_nic`; exit 1 when
    /// one is below it.
    #[arg(long, value_name = "FILE")]
    pub expect: Option<std::path::PathBuf>,
    /// Link rate in Gb/s for the default line, 90 % of it (NVIDIA ngc_multinode_perf's).
    #[arg(long, value_name = "GBPS")]
    pub link_gbps: Option<f64>,
    #[command(flatten)]
    pub ranks: JoinOptions,
    #[command(flatten)]
    pub verbs: fabrik_cluster::transport::RdmaSettings,
}

#[derive(clap::Args, Debug)]
pub struct DoctorArgs {
    /// Root directory to probe on every rank (a snapshot directory, or / for the live node).
    #[arg(long, default_value = "/")]
    pub root: std::path::PathBuf,
    /// text or json.
    #[arg(long, default_value = "text", value_parser = fabrik_render::Format::text_or_json())]
    pub format: fabrik_render::Format,
    /// Write every rank's inventory as DIR/rank-N-HOST.json.
    #[arg(long, value_name = "DIR")]
    pub save: Option<std::path::PathBuf>,
    /// Also write the JSON report here.
    #[arg(long, value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub ranks: JoinOptions,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        ClusterCommand::Matrix(a) => run_matrix(a),
        ClusterCommand::Doctor(a) => run_doctor(a),
    }
}

fn run_matrix(args: MatrixArgs) -> anyhow::Result<ExitCode> {
    use fabrik_cluster::matrix;
    use fabrik_cluster::matrix_job::{MatrixJob, Step};
    let expect = crate::cmd::expect::load_file(args.expect.as_deref())?;
    let job = MatrixJob::new(&args.run, &args.verbs, expect.as_ref(), args.link_gbps)?;
    run_ranked(&args.ranks, |group| {
        let is_root = group.rank() == 0;
        let mut bar = None;
        let mut on_rows = |m: &fabrik_model::PairMatrix| {
            let written = args.output.as_deref().map(|p| matrix::write_matrix(p, m));
            if let Some(Err(e)) = written {
                eprintln!("fabrik: {:#}", anyhow::Error::from(e));
            }
        };
        let result = job.run(
            group,
            &mut |step| match step {
                Step::Matrix { what, rounds } => {
                    bar = Some(Progress::new(is_root, what, "rounds", rounds))
                }
                Step::Rounds(k) => bar.iter().for_each(|p| p.done(k, "")),
            },
            &mut on_rows,
        );
        drop(bar);
        let Some(judged) = result? else {
            return Ok(ExitCode::SUCCESS);
        };
        if args.format == fabrik_render::Format::Json {
            crate::output::print_json(&judged)?;
        } else {
            let (m, rdma) = (&judged.matrices, judged.transport.as_deref());
            print!("{}", fabrik_render::matrix::judged(m, &judged.judged, rdma));
        }
        Ok(crate::exit::status(judged.failed()))
    })
}

fn run_doctor(args: DoctorArgs) -> anyhow::Result<ExitCode> {
    use fabrik_cluster::doctor::{diagnose, gather_nodes};
    let json = args.format == fabrik_render::Format::Json;
    run_ranked(&args.ranks, |group| {
        let node = fabrik_probe::probe(&args.root)
            .with_context(|| format!("probing {}", args.root.display()))?;
        let Some(report) = gather_nodes(group, node, &diagnose)
            .with_context(|| format!("rank {} gathering inventories", group.rank()))?
        else {
            return Ok(ExitCode::SUCCESS);
        };
        if let Some(dir) = &args.save {
            fabrik_cluster::doctor::save_inventories(dir, &report)?;
        }
        if let Some(path) = &args.output {
            fabrik_probe::output::write_json(path, &report)?;
        }
        if json {
            crate::output::print_json(&report)?;
        } else {
            let names = fabrik_cluster::doctor::node_names(&report.nodes);
            print!("{}", fabrik_render::cluster::doctor(&report, names));
        }
        Ok(crate::exit::status(crate::exit::has_problems(
            &report.findings,
            false,
        )))
    })
}
