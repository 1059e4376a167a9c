//! `fabrik cluster`: runs across the ranks of a job (matrix, doctor), and the rank options
//! every multi-rank command shares.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use fabrik_cluster::launch::{JoinOptions, Ranked};
use fabrik_cluster::rendezvous::Group;

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
    use fabrik_cluster::matrix::{self, RunHooks};
    let (cfg, choice) = args.run.plan()?;
    let json = args.format == fabrik_render::Format::Json;
    run_ranked(&args.ranks, |group| {
        let transport = fabrik_cluster::transport::agree(group, choice, &args.verbs)?;
        let rails = args.run.rails(group)?;
        let rates = crate::cmd::expect::gather_data_nic_rates(
            group,
            rails,
            args.expect.is_none() && args.link_gbps.is_none(),
        )?;
        let is_root = group.rank() == 0;
        let rounds = fabrik_cluster::pairs::round_robin(group.size()).len() as u64;
        let mut progress: Option<(Option<u32>, Progress)> = None;
        let mut counters = rdma_counters(&*transport);
        let output = args.output.clone();
        let per_rail = args.run.per_rail;
        let result = matrix::run(
            group,
            &cfg,
            per_rail,
            &*transport,
            &mut RunHooks {
                on_round: &mut |rail, k, _| {
                    if progress.as_ref().is_none_or(|(r, _)| *r != rail) {
                        let what = match rail {
                            Some(r) => format!("matrix rail {r}"),
                            None => "matrix".into(),
                        };
                        progress = Some((rail, Progress::new(is_root, &what, "rounds", rounds)));
                    }
                    if let Some((_, p)) = &progress {
                        if k > 0 {
                            p.done(u64::from(k), "");
                        }
                    }
                },
                on_rows: &mut |m| {
                    let path = output.as_deref().map(|p| match m.rail {
                        Some(rail) if per_rail => matrix::rail_path(p, rail),
                        _ => p.to_path_buf(),
                    });
                    if let Some(path) = path {
                        if let Err(e) = write_matrix(&path, m) {
                            eprintln!("fabrik: {e:#}");
                        }
                    }
                },
                counters: &mut counters,
            },
        );
        if let Some((_, p)) = &progress {
            if result.is_ok() {
                p.done(rounds, "");
            }
            p.finish();
        }
        let matrices =
            result.with_context(|| format!("rank {} in the pair matrix", group.rank()))?;
        if matrices.is_empty() {
            return Ok(ExitCode::SUCCESS);
        }
        let mut judged = Vec::new();
        for (rail, m) in matrices.iter().enumerate() {
            judged.push(crate::cmd::expect::judge_matrix(
                m,
                args.expect.as_deref(),
                args.link_gbps,
                rates.get(rail).map(Vec::as_slice).unwrap_or_default(),
            )?);
        }
        if json {
            let each: Vec<_> = matrices
                .iter()
                .zip(&judged)
                .map(|(m, j)| fabrik_doctor::passline::WithLinksPassLine {
                    report: m,
                    pass_line: j.clone(),
                })
                .collect();
            if per_rail {
                crate::output::print_json(&serde_json::json!({ "rails": each }))?;
            } else {
                crate::output::print_json(&each[0])?;
            }
        } else {
            let described = transport.describe();
            for (m, j) in matrices.iter().zip(&judged) {
                print!("{}", fabrik_render::matrix::text(m, described.as_deref()));
                if let Some(j) = j {
                    print!("{}", fabrik_render::passline::links(j));
                }
            }
        }
        let below = judged
            .iter()
            .flatten()
            .any(|j| j.verdict == fabrik_doctor::passline::Verdict::Fail);
        Ok(crate::exit::status(
            below || matrices.iter().any(matrix::flagged),
        ))
    })
}

/// Over RDMA, the device port's retransmission and sequence-error counters (read from the live
/// sysfs, as `fabrik top` reads them); nothing over TCP.
fn rdma_counters(
    transport: &dyn fabrik_cluster::transport::Transport,
) -> impl FnMut() -> Option<std::collections::BTreeMap<String, u64>> {
    let mut counters = transport.counter_port().map(|(device, port)| {
        fabrik_monitor::read::PortCounters::new(std::path::Path::new("/"), &device, port)
    });
    move || counters.as_mut()?.read()
}

fn write_matrix(path: &std::path::Path, m: &fabrik_model::PairMatrix) -> anyhow::Result<()> {
    crate::output::write_atomically(path, &serde_json::to_vec_pretty(m)?)
        .with_context(|| format!("writing {}", path.display()))
}

fn run_doctor(args: DoctorArgs) -> anyhow::Result<ExitCode> {
    use fabrik_cluster::doctor::{diagnose, gather_nodes, inventory_file_name};
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
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            for n in &report.nodes {
                let path = dir.join(inventory_file_name(n));
                crate::output::write_atomically(&path, &serde_json::to_vec_pretty(&n.node)?)?;
            }
        }
        if let Some(path) = &args.output {
            crate::output::write_atomically(path, &serde_json::to_vec_pretty(&report)?)?;
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

/// Progress of a long run, on rank 0's stderr only (stdout carries the table or JSON): a bar on
/// a terminal, and on anything else (logs, CI, tests) one stable plain line per step:
/// `# progress: all_reduce 3/10 sizes done (4096 B)`, `# progress: matrix 2/7 rounds done`.
pub struct Progress {
    kind: ProgressKind,
    what: String,
    unit: &'static str,
    total: u64,
}

enum ProgressKind {
    Off,
    Lines,
    Bar(indicatif::ProgressBar),
}

impl Progress {
    /// `show` is false on every rank but 0.
    pub fn new(show: bool, what: &str, unit: &'static str, total: u64) -> Self {
        use std::io::IsTerminal;
        let kind = if !show {
            ProgressKind::Off
        } else if std::io::stderr().is_terminal() {
            let bar = indicatif::ProgressBar::with_draw_target(
                Some(total),
                indicatif::ProgressDrawTarget::stderr(),
            );
            let template =
                format!("{what} {{bar:30}} {{pos}}/{{len}} {unit} [{{elapsed}}] {{msg}}");
            if let Ok(style) = indicatif::ProgressStyle::with_template(&template) {
                bar.set_style(style);
            }
            bar.enable_steady_tick(Duration::from_millis(250));
            ProgressKind::Bar(bar)
        } else {
            ProgressKind::Lines
        };
        Self {
            kind,
            what: what.to_string(),
            unit,
            total,
        }
    }

    /// `done` steps of `total` are finished; `detail` (may be empty) says which was last.
    pub fn done(&self, done: u64, detail: &str) {
        match &self.kind {
            ProgressKind::Off => {}
            ProgressKind::Lines => {
                let tail = if detail.is_empty() {
                    String::new()
                } else {
                    format!(" ({detail})")
                };
                eprintln!(
                    "# progress: {} {done}/{} {} done{tail}",
                    self.what, self.total, self.unit
                );
            }
            ProgressKind::Bar(bar) => {
                bar.set_position(done);
                bar.set_message(detail.to_string());
            }
        }
    }

    /// Runs `f` (which prints to stdout) with the bar hidden, so a table row shared with the
    /// same terminal is not torn by a redraw.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.kind {
            ProgressKind::Bar(bar) => bar.suspend(f),
            _ => f(),
        }
    }

    /// Removes the bar (plain lines stay as written).
    pub fn finish(&self) {
        if let ProgressKind::Bar(bar) = &self.kind {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
