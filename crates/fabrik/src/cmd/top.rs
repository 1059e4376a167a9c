//! `fabrik top`: live rates and moving error/congestion counters, one line per RDMA port and
//! netdev.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use fabrik_model::counters::Frame;
use fabrik_monitor::keys::Keys;
use fabrik_monitor::options::{SourceOptions, TopOptions};
use fabrik_render::monitor::{table, top_frame, TopLayout};
use fabrik_render::Format;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub top: TopOptions,
    /// `text` refreshes in place on a terminal (plain lines otherwise); `json` writes one object
    /// per interval (NDJSON).
    #[arg(long, default_value = "text", value_parser = Format::text_or_json())]
    pub format: Format,
}

/// The sampler's options, with a word on stderr when a live root has no ethtool (`top` and
/// `exporter`).
pub(crate) fn source(o: &SourceOptions) -> anyhow::Result<fabrik_monitor::SampleOptions> {
    let source = o.source()?;
    if source.ethtool_missing {
        eprintln!("fabrik: ethtool not found: no per-priority pause or phy discard counters");
    }
    Ok(source.options)
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (top, root) = (&args.top, &args.top.source.root);
    let schedule = top.schedule()?;
    let options = source(&top.source)?;
    let in_place = std::io::stdout().is_terminal() && !top.once;
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
                    root.display(),
                    humantime::format_duration(top.interval),
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
    let thresholds = &top.thresholds;
    fabrik_monitor::top::run(root, options, &schedule, thresholds, &mut wait, &mut frame)?;
    if keys.is_some() {
        // Leave the shell's prompt below the last frame, not on its hint line.
        println!();
    }
    Ok(ExitCode::SUCCESS)
}
