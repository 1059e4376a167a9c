//! `fabrik cluster`: runs across the ranks of a job (matrix, doctor), and the rank options
//! every multi-rank command shares.

use std::net::IpAddr;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use fabrik_cluster::launch::{join_config, spawn_local, strip_local, JoinOptions};
use fabrik_cluster::ranks::process_env;
use fabrik_cluster::rendezvous::{join, Group};

/// How this process finds the other ranks. Ranks come from the launcher's environment
/// (torchrun/Kubernetes `RANK`/`WORLD_SIZE`/`MASTER_ADDR`/`MASTER_PORT`, Open MPI, PMI, Slurm).
#[derive(clap::Args, Debug, Clone)]
pub struct RankArgs {
    /// Start N ranks on this machine (loopback) instead of reading them from a launcher.
    #[arg(long, value_name = "N")]
    pub local: Option<u32>,
    /// Shared secret every rank must present (default: $FABRIK_TOKEN).
    #[arg(long, env = "FABRIK_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Rank 0's rendezvous address, HOST:PORT (default: $MASTER_ADDR:$MASTER_PORT, or the first
    /// host of $SLURM_JOB_NODELIST).
    #[arg(long, value_name = "HOST:PORT")]
    pub master: Option<String>,
    /// Seconds any wait may take (joining, each transfer) before the run fails naming the rank.
    #[arg(long, default_value_t = 60.0, value_name = "SECS")]
    pub timeout: f64,
    /// Address(es) of this rank's data NICs, announced at the rendezvous: the other ranks send
    /// collective and matrix traffic to them. The cluster doctor moves no data over them.
    #[arg(long = "data-ip", value_name = "IP", value_delimiter = ',')]
    pub data_ips: Vec<IpAddr>,
    /// How this rank's host is named in output (default: the host name).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
}

/// Runs `body` as one rank of the job, or with `--local N` starts N ranks of this very command
/// and waits for them.
pub fn run_ranked(
    args: &RankArgs,
    body: impl FnOnce(&mut Group) -> anyhow::Result<ExitCode>,
) -> anyhow::Result<ExitCode> {
    if let Some(n) = args.local {
        let exe = std::env::current_exe().context("finding this program to start local ranks")?;
        let argv: Vec<_> = std::env::args_os().skip(1).collect();
        let run = spawn_local(&exe, &strip_local(&argv), n)?;
        let (first, failed) = run.wait()?;
        if !failed.is_empty() {
            let list: Vec<String> = failed
                .iter()
                .map(|(r, s)| format!("rank {r} ({s})"))
                .collect();
            eprintln!("fabrik: local ranks that failed: {}", list.join(", "));
        }
        let code = first
            .code()
            .unwrap_or(crate::exit::TOOL_FAILURE.into())
            .clamp(0, 255) as u8;
        return Ok(if code == 0 && !failed.is_empty() {
            crate::exit::failure()
        } else {
            ExitCode::from(code)
        });
    }
    let opts = JoinOptions {
        token: args.token.clone(),
        master: args.master.clone(),
        timeout: Duration::from_secs_f64(args.timeout.max(0.1)),
        data_ips: args.data_ips.clone(),
        name: args.name.clone(),
    };
    let (cfg, _) = join_config(&opts, &process_env(), &hostname())?;
    let rank = cfg.rank;
    let mut group = join(&cfg).with_context(|| format!("rank {rank} joining the job"))?;
    body(&mut group)
}

/// The UTS host name (per network namespace's UTS namespace where set).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into())
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
    /// tcp, rdma (verbs RC queue pairs), or auto (rdma when every rank has a usable RDMA
    /// device, else tcp).
    #[arg(long, default_value = "tcp")]
    pub transport: String,
    /// Bytes per timed transfer (K, M, G, T suffixes are powers of 1024).
    #[arg(long, default_value = "16M")]
    pub size: String,
    /// Timed transfers per direction, after one warm-up.
    #[arg(long, default_value_t = 3)]
    pub iters: u32,
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
    /// One matrix per rail: rail i pairs every rank's i-th --data-ip (NIC i against NIC i, for
    /// rail-optimised fabrics). Every rank gives the same number of addresses; --output FILE is
    /// written as FILE-railI per rail.
    #[arg(long)]
    pub per_rail: bool,
    /// Skip the second pass that measures each suspect against nodes whose every pair passed
    /// (to tell a bad node from a bad link).
    #[arg(long)]
    pub no_second_pass: bool,
    #[command(flatten)]
    pub ranks: RankArgs,
    #[command(flatten)]
    pub verbs: crate::cmd::coll_rdma::VerbsArgs,
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
    pub ranks: RankArgs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        ClusterCommand::Matrix(a) => run_matrix(a),
        ClusterCommand::Doctor(a) => run_doctor(a),
    }
}

fn run_matrix(args: MatrixArgs) -> anyhow::Result<ExitCode> {
    use crate::cmd::coll_rdma::{agree_transport, check_transport, Transport};
    use fabrik_cluster::matrix::MatrixConfig;
    check_transport(&args.transport, "--transport")?;
    let json = args.format == fabrik_render::Format::Json;
    let cfg = MatrixConfig {
        size: fabrik_model::size::parse_bytes(&args.size)?.max(1),
        iters: args.iters.max(1),
        rail: 0,
        isolate: !args.no_second_pass,
    };
    run_ranked(&args.ranks, |group| {
        let transport = agree_transport(group, &args.transport, &args.verbs)?;
        let rails = if args.per_rail {
            if matches!(transport, Transport::Rdma(_)) {
                anyhow::bail!("--per-rail runs over TCP only (use --transport tcp)");
            }
            Some(rail_count(group)?)
        } else {
            None
        };
        let rates = crate::cmd::expect::gather_data_nic_rates(
            group,
            rails.unwrap_or(1),
            args.expect.is_none() && args.link_gbps.is_none(),
        )?;
        let mut matrices = Vec::new();
        for rail in 0..rails.unwrap_or(1) {
            let cfg = MatrixConfig {
                rail,
                ..cfg.clone()
            };
            let output = args.output.as_deref().map(|p| match rails {
                Some(_) => rail_path(p, rail),
                None => p.to_path_buf(),
            });
            let m = one_matrix(group, &args, &cfg, &transport, rails.map(|_| rail), output)?;
            matrices.extend(m);
        }
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
                .map(|(m, j)| crate::cmd::expect::WithLinksPassLine {
                    report: m,
                    pass_line: j.clone(),
                })
                .collect();
            match rails {
                Some(_) => crate::output::print_json(&serde_json::json!({ "rails": each }))?,
                None => crate::output::print_json(&each[0])?,
            }
        } else {
            for (m, j) in matrices.iter().zip(&judged) {
                print_matrix(m, &transport);
                if let Some(j) = j {
                    print!("{}", crate::cmd::expect::links_text(j));
                }
            }
        }
        let below = judged
            .iter()
            .flatten()
            .any(|j| j.verdict == fabrik_doctor::passline::Verdict::Fail);
        let slow = matrices
            .iter()
            .any(|m| !m.analysis.slow_links.is_empty() || !m.analysis.slow_nodes.is_empty());
        Ok(crate::exit::status(below || slow))
    })
}

/// The rails of a per-rail run: every rank must name the same number of data addresses, one per
/// rail, so that rail i pairs NIC i of every node.
fn rail_count(group: &Group) -> anyhow::Result<u32> {
    let counts: Vec<usize> = group.peers().iter().map(|p| p.data_addrs.len()).collect();
    let n = counts.iter().copied().min().unwrap_or(0);
    if counts.iter().any(|&c| c != n) {
        let list: Vec<String> = counts
            .iter()
            .enumerate()
            .map(|(r, c)| format!("rank {r}: {c}"))
            .collect();
        anyhow::bail!(
            "--per-rail needs the same number of --data-ip addresses on every rank (one per rail); got {}",
            list.join(", ")
        );
    }
    let max = fabrik_cluster::matrix::MAX_RAILS;
    if n == 0 || n as u64 > u64::from(max) {
        anyhow::bail!("--per-rail needs 1 to {max} data addresses per rank, got {n}");
    }
    Ok(n as u32)
}

/// `m.json` for rail 2 is `m-rail2.json`: one pair matrix per file, as `fabrik report` reads.
fn rail_path(path: &std::path::Path, rail: u32) -> std::path::PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match path.extension() {
        Some(ext) => format!("{stem}-rail{rail}.{}", ext.to_string_lossy()),
        None => format!("{stem}-rail{rail}"),
    };
    path.with_file_name(name)
}

/// One matrix (and its second pass) on this rank; rank 0 gets it back. `--output` is rewritten
/// as rounds finish, and keeps the rows so far with an `aborted:` note when the run fails.
fn one_matrix(
    group: &mut Group,
    args: &MatrixArgs,
    cfg: &fabrik_cluster::matrix::MatrixConfig,
    transport: &crate::cmd::coll_rdma::Transport,
    rail: Option<u32>,
    output: Option<std::path::PathBuf>,
) -> anyhow::Result<Option<fabrik_model::PairMatrix>> {
    use crate::cmd::coll_rdma::Transport;
    use fabrik_cluster::link::Link;
    use fabrik_cluster::matrix::{rail_stream, run_matrix_over};
    use fabrik_cluster::rdma_link::pair_link;
    let is_root = group.rank() == 0;
    let rounds = fabrik_cluster::pairs::round_robin(group.size()).len() as u64;
    let pipe = args.verbs.pipe_config(group.timeout())?;
    let mut open = |g: &mut Group, peer: u32, tag: u32| -> Result<Box<dyn Link>, _> {
        Ok(match transport {
            Transport::Tcp => Box::new(fabrik_cluster::link::TcpLink::new(rail_stream(
                g, peer, tag, cfg.rail,
            )?)?),
            Transport::Rdma(dev) => Box::new(pair_link(g, dev, peer, tag, &pipe)?),
        })
    };
    let what = match rail {
        Some(r) => format!("matrix rail {r}"),
        None => "matrix".into(),
    };
    let progress = Progress::new(is_root, &what, "rounds", rounds);
    let mut partial: Option<fabrik_model::PairMatrix> = None;
    let mut keep = |m: &fabrik_model::PairMatrix| {
        let mut m = m.clone();
        m.rail = rail;
        if let Some(path) = &output {
            if let Err(e) = write_matrix(path, &m) {
                eprintln!("fabrik: {e:#}");
            }
        }
        partial = Some(m);
    };
    // Round k starts after a barrier every rank passed, so k rounds are done everywhere.
    let result = run_matrix_over(
        group,
        cfg,
        transport.name(),
        &mut open,
        &mut |k, _| {
            if k > 0 {
                progress.done(u64::from(k), "");
            }
        },
        &mut keep,
    )
    .with_context(|| format!("rank {} in the pair matrix", group.rank()));
    if result.is_ok() {
        progress.done(rounds, "");
    }
    progress.finish();
    if let (Err(e), Some(path), Some(mut m)) = (&result, &output, partial) {
        let done = m.analysis.note.take();
        m.analysis.note = Some(format!(
            "aborted: {e:#}{}",
            done.map(|d| format!(" ({d})")).unwrap_or_default()
        ));
        write_matrix(path, &m)?;
    }
    let Some(mut m) = result? else {
        return Ok(None);
    };
    m.rail = rail;
    if let Some(path) = &output {
        write_matrix(path, &m)?;
    }
    Ok(Some(m))
}

fn print_matrix(m: &fabrik_model::PairMatrix, transport: &crate::cmd::coll_rdma::Transport) {
    let rdma = match transport {
        crate::cmd::coll_rdma::Transport::Rdma(dev) => Some(dev.describe()),
        crate::cmd::coll_rdma::Transport::Tcp => None,
    };
    print!("{}", fabrik_render::matrix::text(m, rdma.as_deref()));
}

fn write_matrix(path: &std::path::Path, m: &fabrik_model::PairMatrix) -> anyhow::Result<()> {
    crate::output::write_atomically(path, &serde_json::to_vec_pretty(m)?)
        .with_context(|| format!("writing {}", path.display()))
}

fn run_doctor(args: DoctorArgs) -> anyhow::Result<ExitCode> {
    use fabrik_cluster::doctor::gather_nodes;
    let json = args.format == fabrik_render::Format::Json;
    run_ranked(&args.ranks, |group| {
        let node = fabrik_probe::probe(&args.root)
            .with_context(|| format!("probing {}", args.root.display()))?;
        // Rank 0 runs every node rule on each inventory and the cross-node rules over all of
        // them (fabrik-doctor's `diagnose`), naming nodes by host or, where hosts repeat, rank.
        let rules = |nodes: &[fabrik_model::RankNode]| {
            let names = fabrik_cluster::doctor::node_names(nodes);
            let named: Vec<fabrik_doctor::NamedNode> = nodes
                .iter()
                .zip(names)
                .map(|(n, name)| fabrik_doctor::NamedNode {
                    name,
                    node: n.node.clone(),
                })
                .collect();
            (fabrik_doctor::diagnose(&named, None).findings, Vec::new())
        };
        let Some(report) = gather_nodes(group, node, &rules)
            .with_context(|| format!("rank {} gathering inventories", group.rank()))?
        else {
            return Ok(ExitCode::SUCCESS);
        };
        if let Some(dir) = &args.save {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            for n in &report.nodes {
                let safe = fabrik_probe::snapshot::file_name_part(&n.host);
                let path = dir.join(format!("rank-{}-{safe}.json", n.rank));
                crate::output::write_atomically(&path, &serde_json::to_vec_pretty(&n.node)?)?;
            }
        }
        if let Some(path) = &args.output {
            crate::output::write_atomically(path, &serde_json::to_vec_pretty(&report)?)?;
        }
        if json {
            crate::output::print_json(&report)?;
        } else {
            print!("{}", fabrik_render::cluster::doctor_nodes(&report));
            let names = fabrik_cluster::doctor::node_names(&report.nodes);
            print!("{}", fabrik_render::doctor::shared(names, &report.findings));
            for note in &report.notes {
                println!("# {note}");
            }
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
