//! `fabrik top`: live rates and moving error/congestion counters, one line per RDMA port and
//! netdev.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use fabrik_model::{Finding, SCHEMA_VERSION};
use fabrik_monitor::{compare, report_findings, Report, SampleOptions};
use fabrik_render::Format;
use serde::Serialize;

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
    pub thresholds: crate::cmd::diff::ThresholdArgs,
}

#[derive(Serialize)]
struct Frame<'a> {
    schema_version: u32,
    time_unix_s: f64,
    #[serde(flatten)]
    report: &'a Report,
    findings: &'a [Finding],
}

/// What `top` and `exporter` read: `--all-netdevs` and `--no-ethtool` applied, and a word on
/// stderr when a live root has no ethtool (no pause or phy discard counters then).
pub(crate) fn sample_options(
    root: &std::path::Path,
    all_netdevs: bool,
    no_ethtool: bool,
) -> SampleOptions {
    let mut options = SampleOptions::for_root(root);
    options.all_netdevs = all_netdevs;
    if no_ethtool {
        options.ethtool = fabrik_monitor::EthtoolMode::Off;
    } else if fabrik_monitor::is_live(root) && !fabrik_monitor::ethtool_on_path() {
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
    let limit = if args.once { Some(1) } else { args.count };
    let tty = std::io::stdout().is_terminal();
    let stdout = std::io::stdout();
    let mut sampler = fabrik_monitor::Sampler::new(&args.root, options);
    let mut prev = sampler.sample();
    let mut prev_at = Instant::now();
    let mut next = prev_at + args.interval;
    let mut done = 0u64;
    let mut first = true;
    // `q` quits when top refreshes in place, as in top(1); Ctrl-C still works too.
    let keys = if tty && !args.once && matches!(args.format, Format::Text) {
        Keys::open()
    } else {
        None
    };
    loop {
        // Sleep to a fixed schedule so the interval does not drift by the sampling time.
        let now = Instant::now();
        if next > now {
            match &keys {
                Some(k) => {
                    if k.quit_within(next - now) {
                        break;
                    }
                }
                None => std::thread::sleep(next - now),
            }
        }
        next += args.interval;
        let cur = sampler.sample();
        let at = Instant::now();
        let report = compare(&prev, &cur, Some(at.duration_since(prev_at)));
        let mut out = stdout.lock();
        match args.format {
            Format::Json => {
                let findings = report_findings(&report, &args.thresholds.get());
                let frame = Frame {
                    schema_version: SCHEMA_VERSION,
                    time_unix_s: unix_now(),
                    report: &report,
                    findings: &findings,
                };
                serde_json::to_writer(&mut out, &frame).context("writing JSON")?;
                writeln!(out).context("writing to stdout")?;
            }
            Format::Text | Format::Markdown => {
                let head = format!(
                    "fabrik top  {}  every {}  {}",
                    args.root.display(),
                    humantime::format_duration(args.interval),
                    humantime::format_rfc3339_seconds(SystemTime::now())
                );
                let lines = fabrik_render::monitor::table(
                    &report,
                    crate::output::colour(&std::io::stdout()),
                );
                if tty && !(args.once) {
                    // Home the cursor and overwrite in place; clear each line's tail and the
                    // rest of the screen so no stale characters remain.
                    let mut buf = String::from("\x1b[H");
                    if first {
                        buf.push_str("\x1b[2J\x1b[H");
                    }
                    buf.push_str(&format!("\x1b[1m{head}\x1b[0m\x1b[K\r\n"));
                    for l in &lines {
                        buf.push_str(l);
                        buf.push_str("\x1b[K\r\n");
                    }
                    buf.push_str(if keys.is_some() {
                        "(q to quit)\x1b[K\x1b[J"
                    } else {
                        "(Ctrl-C to quit)\x1b[K\x1b[J"
                    });
                    out.write_all(buf.as_bytes()).context("writing to stdout")?;
                } else {
                    if !first {
                        writeln!(out).context("writing to stdout")?;
                    }
                    writeln!(out, "{head}").context("writing to stdout")?;
                    for l in &lines {
                        writeln!(out, "{l}").context("writing to stdout")?;
                    }
                }
            }
        }
        out.flush().context("writing to stdout")?;
        drop(out);
        first = false;
        prev = cur;
        prev_at = at;
        done += 1;
        if limit.is_some_and(|n| done >= n) {
            break;
        }
    }
    if keys.is_some() {
        // Leave the shell's prompt below the last frame, not on its hint line.
        println!();
    }
    Ok(ExitCode::SUCCESS)
}

/// The terminal on stdin without line buffering or echo, so a single `q` is read at once;
/// put back as it was when dropped.
struct Keys {
    saved: nix::sys::termios::Termios,
}

impl Keys {
    fn open() -> Option<Keys> {
        use nix::sys::termios::{
            tcgetattr, tcsetattr, LocalFlags, SetArg, SpecialCharacterIndices,
        };
        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            return None;
        }
        let saved = tcgetattr(&stdin).ok()?;
        let mut raw = saved.clone();
        raw.local_flags
            .remove(LocalFlags::ICANON | LocalFlags::ECHO);
        raw.control_chars[SpecialCharacterIndices::VMIN as usize] = 0;
        raw.control_chars[SpecialCharacterIndices::VTIME as usize] = 0;
        tcsetattr(&stdin, SetArg::TCSANOW, &raw).ok()?;
        Some(Keys { saved })
    }

    /// Waits up to `wait` for keys; true when one of them is `q`.
    fn quit_within(&self, wait: Duration) -> bool {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        use std::io::Read;
        use std::os::fd::AsFd;
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            let stdin = std::io::stdin();
            let ms = i32::try_from(left.as_millis().max(1)).unwrap_or(i32::MAX);
            let timeout = PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX);
            let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, timeout) {
                Ok(n) if n > 0 => {
                    let mut buf = [0u8; 64];
                    match stdin.lock().read(&mut buf) {
                        Ok(0) | Err(_) => {
                            // stdin closed: no more keys; sleep out the interval.
                            std::thread::sleep(left);
                            return false;
                        }
                        Ok(k) => {
                            if buf[..k].iter().any(|b| matches!(b, b'q' | b'Q')) {
                                return true;
                            }
                        }
                    }
                }
                Ok(_) => return false,
                Err(nix::errno::Errno::EINTR) => {}
                Err(_) => {
                    std::thread::sleep(left);
                    return false;
                }
            }
        }
    }
}

impl Drop for Keys {
    fn drop(&mut self) {
        let _ = nix::sys::termios::tcsetattr(
            std::io::stdin(),
            nix::sys::termios::SetArg::TCSANOW,
            &self.saved,
        );
    }
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}
