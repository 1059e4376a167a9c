//! `fabrik bench collective OP`: nccl-tests-style sweeps of a collective between ranks, with
//! verified results: in host memory over TCP (`--backend tcp`) or RDMA verbs (`--backend rdma`),
//! or in GPU memory through NCCL loaded at run time (`--backend nccl`).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use fabrik_cluster::bench::{run_collective, CollectiveArgs, Observer, Outcome};
use fabrik_cluster::sweep::SweepConfig;
use fabrik_doctor::{passline, Expectations};
use fabrik_model::{CollectiveRow, RankDevice, RunParams};
use fabrik_render::nccl_tests::{closing, header, row};

use crate::cmd::cluster::run_ranked;
use crate::output::print_json;
use crate::progress::Progress;

type Done = anyhow::Result<ExitCode>;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub run: CollectiveArgs,
    /// text (nccl-tests' table) or json.
    #[arg(long, default_value = "text", value_parser = fabrik_render::Format::text_or_json())]
    pub format: fabrik_render::Format,
    /// Also write the JSON report here (kept, with the rows so far, when a run fails).
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Judge all_reduce's bus bandwidth at the largest size against this cluster file's
    /// `bandwidth.all_reduce_busbw_gbs`; exit 1 below the line.
    #[arg(long, value_name = "FILE")]
    pub expect: Option<PathBuf>,
    #[command(flatten)]
    pub ranks: fabrik_cluster::launch::JoinOptions,
    #[command(flatten)]
    pub verbs: fabrik_cluster::transport::RdmaSettings,
}

pub fn run(args: Args) -> Done {
    // A bad cluster file is said before the run, not after it.
    let expect = crate::cmd::expect::load_file(args.expect.as_deref())?;
    let plan = args.run.plan(&args.verbs)?;
    let cfg = &plan.sweep;
    let json = args.format == fabrik_render::Format::Json;
    run_ranked(&args.ranks, |group| {
        let is_root = group.rank() == 0;
        let mut table = Table {
            params: &plan.params,
            json,
            progress: Progress::new(is_root, cfg.op.name(), "sizes", cfg.sizes.len() as u64),
        };
        let outcome = run_collective(group, cfg, &plan.backend, &mut table);
        drop(table);
        match outcome? {
            Some(outcome) => finish(&args, cfg, expect.as_ref(), outcome),
            None => Ok(ExitCode::SUCCESS),
        }
    })
}

/// Rank 0's nccl-tests table, printed row by row as sizes finish (nothing with `--format json`).
struct Table<'a> {
    params: &'a RunParams<'a>,
    json: bool,
    progress: Progress,
}

impl Observer for Table<'_> {
    fn started(&mut self, banner: Option<&str>, devices: &[RankDevice]) {
        if self.json {
            return;
        }
        if let Some(b) = banner {
            println!("{b}");
        }
        print!("{}", header(self.params, devices));
        let _ = std::io::stdout().flush();
    }

    fn row(&mut self, r: &CollectiveRow, done: usize) {
        if !self.json {
            self.progress.suspend(|| {
                println!("{}", row(r));
                let _ = std::io::stdout().flush();
            });
        }
        self.progress.done(done as u64, &format!("{} B", r.size));
    }
}

/// Rank 0: writes `--output`, judges the pass line and prints the closing lines or the JSON.
fn finish(args: &Args, cfg: &SweepConfig, expect: Option<&Expectations>, o: Outcome) -> Done {
    let report = &o.report;
    if let Some(path) = &args.output {
        fabrik_probe::output::write_json(path, report)?;
    }
    let judged = passline::judge_busbw(report, expect);
    if args.format == fabrik_render::Format::Json {
        let pass_line = judged.clone();
        print_json(&passline::WithPassLine { report, pass_line })?;
    } else {
        let avg = report.avg_busbw.unwrap_or(0.0);
        let finished = o
            .error
            .is_none()
            .then_some((cfg.op.name(), o.wrong_total, avg));
        print!("{}", closing(&o.first_wrong, finished));
        if let Some(j) = &judged {
            print!("{}", fabrik_render::passline::judgement(j));
        }
    }
    if let Some(e) = o.error {
        return Err(e).context("the collective run failed");
    }
    let below = passline::failed(judged.as_ref());
    Ok(crate::exit::status(o.wrong_total > 0 || below))
}
