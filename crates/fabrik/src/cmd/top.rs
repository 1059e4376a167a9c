//! `fabrik top`: live rates and moving error/congestion counters, one line per RDMA port and
//! netdev.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use fabrik_model::counters::Frame;
use fabrik_monitor::keys::Keys;
use fabrik_monitor::top::Schedule;
use fabrik_render::monitor::{table, top_frame, TopLayout};
use fabrik_render::Format;

#[derive(clap::Args)]
pub struct Args {
    /// Root to read (`/` for this machine, or a snapshot directory).
    #[arg(long, default_value = "/")]
    pub root: PathBuf,
    /// Time between samples (`1s`, `500ms`, `10s`).
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    pub interval: Duration,
    /// Print one interval and exit.
    #[arg(long)]
    pub once: bool,
    /// Stop after this many intervals.
    #[arg(long)]
    pub count: Option<u64>,
    /// Show every netdev except lo, not only RDMA-backed and physical ones.
    #[arg(long)]
    pub all_netdevs: bool,
    /// Do not run `ethtool -S` (per-priority pause and phy discard counters) on a live root.
    #[arg(long)]
    pub no_ethtool: bool,
    /// `text` refreshes in place on a terminal (plain lines otherwise); `json` writes one object
    /// per interval (NDJSON).
    #[arg(long, default_value = "text", value_parser = Format::text_or_json())]
    pub format: Format,
    #[command(flatten)]
    pub thresholds: fabrik_monitor::Thresholds,
}

/// What `top` and `exporter` read, with a word on stderr when a live root has no ethtool.
pub(crate) fn sample_options(
    root: &std::path::Path,
    all_netdevs: bool,
    no_ethtool: bool,
) -> fabrik_monitor::SampleOptions {
    let (options, missing) = fabrik_monitor::top::sample_options(root, all_netdevs, no_ethtool);
    if missing {
        eprintln!("fabrik: ethtool not found: no per-priority pause or phy discard counters");
    }
    options
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.interval.is_zero() {
        anyhow::bail!("--interval must be more than zero");
    }
    fabrik_probe::open::check_root(&args.root)?;
    let options = sample_options(&args.root, args.all_netdevs, args.no_ethtool);
    let schedule = Schedule {
        interval: args.interval,
        limit: if args.once { Some(1) } else { args.count },
    };
    let in_place = std::io::stdout().is_terminal() && !args.once;
    // `q` quits when top refreshes in place, as in top(1); Ctrl-C still works too.
    let keys = (in_place && matches!(args.format, Format::Text))
        .then(Keys::open)
        .flatten();
    let hint = if keys.is_some() {
        "(q to quit)"
    } else {
        "(Ctrl-C to quit)"
    };
    let mut first = true;
    let mut wait = |left: Duration| fabrik_monitor::keys::wait(keys.as_ref(), left);
    let mut frame = |frame: &Frame| -> anyhow::Result<()> {
        let mut out = std::io::stdout().lock();
        match args.format {
            Format::Json => {
                serde_json::to_writer(&mut out, frame).context("writing JSON")?;
                writeln!(out).context("writing to stdout")?;
            }
            Format::Text | Format::Markdown => {
                let head = format!(
                    "fabrik top  {}  every {}  {}",
                    args.root.display(),
                    humantime::format_duration(args.interval),
                    humantime::format_rfc3339_seconds(SystemTime::now())
                );
                let lines = table(&frame.report, crate::output::colour(&std::io::stdout()));
                let layout = if in_place {
                    TopLayout::InPlace { first, hint }
                } else {
                    TopLayout::Lines { first }
                };
                out.write_all(top_frame(&head, &lines, layout).as_bytes())
                    .context("writing to stdout")?;
            }
        }
        out.flush().context("writing to stdout")?;
        first = false;
        Ok(())
    };
    let thresholds = args.thresholds;
    fabrik_monitor::top::run(
        &args.root,
        options,
        &schedule,
        &thresholds,
        &mut wait,
        &mut frame,
    )?;
    if keys.is_some() {
        // Leave the shell's prompt below the last frame, not on its hint line.
        println!();
    }
    Ok(ExitCode::SUCCESS)
}
