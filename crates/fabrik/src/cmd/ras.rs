//! NCCL RAS and the Inspector: `fabrik parse ras` (reports, DIAG lines and monitor events from a
//! file or a live `ncclras -m` pipe), `fabrik parse inspector` (stragglers from the Inspector
//! plugin's files) and `fabrik ras HOST[:PORT]` (asks a running
//! job's RAS port itself).

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use fabrik_model::Finding;
use fabrik_parse::nccl_log::{LogAnalyzer, LogReport};
use fabrik_parse::ras::monitor::{MonitorParser, PeerRow};
use fabrik_render::Format;

#[derive(clap::Args)]
pub struct ParseArgs {
    /// `ncclras` output (text or JSON report, `-D` DIAG lines, `-m` monitor events) or a job log
    /// holding it; `-` reads stdin, as it comes: `ncclras -m | fabrik parse ras -`.
    pub file: PathBuf,
    #[arg(long, default_value = "text", value_parser = Format::text_or_json())]
    pub format: Format,
}

#[derive(clap::Args)]
pub struct InspectorArgs {
    /// The Inspector's dump directory (NCCL_INSPECTOR_DUMP_DIR, `<host>-pid<pid>.log` files) or
    /// one of its files.
    pub path: PathBuf,
    /// NCCL_DEBUG=INFO logs of the same job: straggler ranks are joined with their processes' NICs.
    #[arg(long = "log", value_name = "FILE")]
    pub logs: Vec<PathBuf>,
    #[arg(long, default_value = "text", value_parser = Format::text_or_json())]
    pub format: Format,
}

/// Feeds a line to the log analyzer and, in text mode, prints each monitor event as it comes
/// with the running count of troubled peers: the live view of a `ncclras -m` pipe.
pub fn parse_ras(a: ParseArgs) -> anyhow::Result<ExitCode> {
    let mut reader = fabrik_parse::input::open_input(&a.file)
        .with_context(|| format!("opening {}", a.file.display()))?;
    let name = a.file.display().to_string();
    let mut analyzer = LogAnalyzer::new();
    analyzer.begin_input(&name);
    let mut live = MonitorParser::new();
    let mut out = std::io::stdout().lock();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        // Monitor events come one at a time from a pipe: read line by line, not in blocks.
        let n = reader
            .read_until(b'\n', &mut buf)
            .with_context(|| format!("reading {name}"))?;
        if n == 0 {
            break;
        }
        if buf.len() > 1 << 16 {
            buf.truncate(1 << 16);
        }
        let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        analyzer.line(line);
        if a.format == Format::Text {
            if let Some(e) = live.line(&String::from_utf8_lossy(line)) {
                let (_, unreachable, dead) = live.table().counts();
                let _ = out
                    .write_all(fabrik_render::ras::monitor_event(&e, dead, unreachable).as_bytes());
                let _ = out.flush();
            }
        }
    }
    drop(out);
    let report = analyzer.finish();
    if report.ras.is_none() && report.diag.is_empty() && report.ras_monitor.is_none() {
        anyhow::bail!("{name}: no NCCL RAS report, DIAG line or RAS monitor event found");
    }
    emit_report(&report, a.format)
}

fn emit_report(report: &LogReport, format: Format) -> anyhow::Result<ExitCode> {
    match format {
        Format::Json => {
            #[derive(serde::Serialize)]
            struct Doc<'a> {
                schema_version: u32,
                source: &'static str,
                #[serde(skip_serializing_if = "Option::is_none")]
                ras: Option<&'a fabrik_parse::ras::RasReport>,
                #[serde(skip_serializing_if = "<[_]>::is_empty")]
                diag: &'a [fabrik_parse::ras::diag::DiagReport],
                #[serde(skip_serializing_if = "Option::is_none")]
                monitor: Option<&'a fabrik_parse::ras::monitor::PeerTable>,
                #[serde(skip_serializing_if = "<[_]>::is_empty")]
                troubled_peers: Vec<&'a PeerRow>,
                findings: &'a [Finding],
            }
            crate::output::print_json(&Doc {
                schema_version: fabrik_model::SCHEMA_VERSION,
                source: "ncclras",
                ras: report.ras.as_ref(),
                diag: &report.diag,
                monitor: report.ras_monitor.as_ref(),
                troubled_peers: report
                    .ras_monitor
                    .as_ref()
                    .map(|t| t.troubled())
                    .unwrap_or_default(),
                findings: &report.findings,
            })?;
        }
        Format::Text | Format::Markdown => {
            crate::output::print_text(&fabrik_render::ras::report(report))?;
        }
    }
    Ok(crate::exit::status(crate::exit::has_problems(
        &report.findings,
        false,
    )))
}

/// The Inspector's files under a directory (its own layout: one level, `*.log`), or the file.
fn inspector_files(path: &Path) -> anyhow::Result<Vec<PathBuf>> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut v: Vec<PathBuf> = std::fs::read_dir(path)
        .with_context(|| format!("listing {}", path.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "log" || x == "json"))
        .collect();
    v.sort();
    if v.is_empty() {
        anyhow::bail!(
            "{}: no Inspector file (<host>-pid<pid>.log)",
            path.display()
        );
    }
    Ok(v)
}

pub fn parse_inspector(a: InspectorArgs) -> anyhow::Result<ExitCode> {
    let mut insp = fabrik_parse::inspector::Inspector::new();
    for f in inspector_files(&a.path)? {
        let r = fabrik_parse::input::open_input(&f)
            .with_context(|| format!("opening {}", f.display()))?;
        insp.read(&f.display().to_string(), r)?;
    }
    if insp.records().is_empty() {
        anyhow::bail!("{}: no NCCL Inspector record found", a.path.display());
    }
    let mut nics: BTreeMap<String, Vec<String>> = BTreeMap::new();
    if !a.logs.is_empty() {
        let log = fabrik_parse::nccl_log::analyze_paths(&a.logs).context("reading NCCL logs")?;
        for p in &log.processes {
            if let (Some(h), Some(pid)) = (&p.host, p.pid) {
                let mut n: Vec<String> = p
                    .ib_nics
                    .iter()
                    .map(|x| x.device.clone())
                    .chain(p.socket_interfaces.iter().map(|e| e.interface.clone()))
                    .collect();
                n.dedup();
                nics.insert(format!("{h}:{pid}"), n);
            }
        }
    }
    let report = insp.finish(&nics);
    match a.format {
        Format::Json => crate::output::print_json(&report)?,
        Format::Text | Format::Markdown => {
            crate::output::print_text(&fabrik_render::ras::inspector(&report))?;
        }
    }
    Ok(crate::exit::status(crate::exit::has_problems(
        &report.findings,
        false,
    )))
}

pub use client::{run as run_client, ClientArgs};

mod client {
    use std::io::{Read, Write};
    use std::net::{TcpStream, ToSocketAddrs};
    use std::process::ExitCode;
    use std::time::{Duration, Instant};

    use anyhow::{bail, Context};
    use fabrik_parse::ras::protocol::{
        self, decode_reply, parse_target, EventGroups, Reply, ReportFormat, Request,
    };
    use fabrik_render::Format;

    #[derive(clap::Args)]
    pub struct ClientArgs {
        /// The job's RAS address: HOST[:PORT] (port 28028 unless NCCL_RAS_ADDR set another).
        pub target: String,
        /// What to ask: the job's status, NCCL 2.31+'s RAS diagnostics, or monitor events.
        #[arg(long, value_enum, default_value = "status")]
        pub ask: Ask,
        /// Ask the job for its JSON report (NCCL 2.28.7+) instead of text.
        #[arg(long)]
        pub json_report: bool,
        /// The verbose status report.
        #[arg(long)]
        pub verbose_report: bool,
        /// Seconds the job's RAS waits for its peers (ncclras -t).
        #[arg(long)]
        pub ras_timeout: Option<u32>,
        /// Seconds to wait for the connection.
        #[arg(long, default_value_t = 5)]
        pub connect_timeout: u64,
        /// Monitor: stop after this many seconds (default: until the job closes).
        #[arg(long)]
        pub duration: Option<u64>,
        /// Print what the job sent, unparsed.
        #[arg(long)]
        pub raw: bool,
        #[arg(long, default_value = "text", value_parser = Format::text_or_json())]
        pub format: Format,
    }

    #[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
    pub enum Ask {
        Status,
        Diagnostics,
        Monitor,
    }

    struct Conn {
        sock: TcpStream,
        pending: Vec<u8>,
    }

    impl Conn {
        fn send(&mut self, r: &Request) -> anyhow::Result<()> {
            self.sock
                .write_all(r.encode().as_bytes())
                .context("sending to the RAS port")
        }

        /// One reply line, bounded by the protocol's line size.
        fn reply(&mut self) -> anyhow::Result<Reply> {
            loop {
                if let Some(p) = self.pending.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = self.pending.drain(..=p).collect();
                    return Ok(decode_reply(&line));
                }
                if self.pending.len() > protocol::MAX_REPLY_LINE {
                    bail!(
                        "the RAS port sent a line longer than {} bytes: not NCCL RAS",
                        protocol::MAX_REPLY_LINE
                    );
                }
                let mut b = [0u8; 4096];
                let n = self
                    .sock
                    .read(&mut b)
                    .context("waiting for the RAS port's answer")?;
                if n == 0 {
                    bail!("the RAS port closed the connection during the handshake");
                }
                self.pending.extend_from_slice(&b[..n]);
            }
        }

        fn expect_ok(&mut self, what: &str) -> anyhow::Result<()> {
            match self.reply()? {
                Reply::Ok => Ok(()),
                Reply::Error(e) => bail!("the job refused {what}: {e}"),
                other => bail!("unexpected answer to {what}: {other:?}"),
            }
        }
    }

    fn connect(a: &ClientArgs) -> anyhow::Result<Conn> {
        let (host, port) = parse_target(&a.target)?;
        let addrs: Vec<_> = (host.as_str(), port)
            .to_socket_addrs()
            .with_context(|| format!("resolving {host}"))?
            .collect();
        let mut last = None;
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, Duration::from_secs(a.connect_timeout.max(1))) {
                Ok(s) => {
                    s.set_write_timeout(Some(Duration::from_secs(5)))?;
                    s.set_read_timeout(Some(Duration::from_secs(5)))?;
                    let mut c = Conn {
                        sock: s,
                        pending: Vec::new(),
                    };
                    c.send(&Request::Hello)?;
                    match c.reply()? {
                        Reply::ServerProtocol(v) if v != protocol::PROTOCOL_VERSION => eprintln!(
                            "fabrik ras: the job speaks RAS protocol {v}, this client {}; going on",
                            protocol::PROTOCOL_VERSION
                        ),
                        Reply::ServerProtocol(_) => {}
                        other => bail!("{addr} is not an NCCL RAS port (answered {other:?})"),
                    }
                    return Ok(c);
                }
                Err(e) => last = Some(format!("{addr}: {e}")),
            }
        }
        bail!(
            "cannot reach NCCL RAS at {host}:{port} ({}): is the job running there with RAS enabled (NCCL_RAS_ENABLE, NCCL_RAS_ADDR)?",
            last.unwrap_or_else(|| "no address".into())
        )
    }

    pub fn run(a: ClientArgs) -> anyhow::Result<ExitCode> {
        let mut c = connect(&a)?;
        if let Some(t) = a.ras_timeout {
            c.send(&Request::Timeout(t))?;
            c.expect_ok("TIMEOUT")?;
        }
        if a.json_report {
            c.send(&Request::Format(ReportFormat::Json))?;
            c.expect_ok("SET FORMAT json")?;
        }
        let req = match a.ask {
            Ask::Status => Request::Status {
                verbose: a.verbose_report,
            },
            Ask::Diagnostics => Request::Diagnostics,
            Ask::Monitor => Request::Monitor(EventGroups::All),
        };
        c.send(&req)?;
        if a.ask == Ask::Monitor {
            return monitor(c, &a);
        }
        // The report is streamed until the job closes; RAS may wait for its peers first.
        let deadline = Instant::now() + Duration::from_secs(protocol::report_wait_s(a.ras_timeout));
        let mut data = std::mem::take(&mut c.pending);
        let mut b = [0u8; 65536];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                bail!(
                    "the RAS report did not end within {} s",
                    protocol::report_wait_s(a.ras_timeout)
                );
            }
            c.sock.set_read_timeout(Some(left))?;
            let n = match c.sock.read(&mut b) {
                Ok(n) => n,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    bail!(
                        "the RAS report did not end within {} s",
                        protocol::report_wait_s(a.ras_timeout)
                    )
                }
                Err(e) => return Err(e).context("reading the RAS report"),
            };
            if n == 0 {
                break;
            }
            if data.len() + n > protocol::MAX_REPORT {
                bail!(
                    "the RAS report is larger than {} bytes",
                    protocol::MAX_REPORT
                );
            }
            data.extend_from_slice(&b[..n]);
        }
        if let Reply::Busy(m) | Reply::Error(m) = decode_reply(&data) {
            bail!("the job answered: {m}");
        }
        let text = String::from_utf8_lossy(&data).into_owned();
        if a.raw {
            crate::output::print_text(&text)?;
            return Ok(ExitCode::SUCCESS);
        }
        let report = fabrik_parse::nccl_log::analyze_str(&a.target, &text);
        if report.ras.is_none() && report.diag.is_empty() {
            bail!(
                "the job's answer holds no RAS report ({} bytes); rerun with --raw to see it",
                data.len()
            );
        }
        super::emit_report(&report, a.format)
    }

    fn monitor(mut c: Conn, a: &ClientArgs) -> anyhow::Result<ExitCode> {
        match c.reply()? {
            Reply::Ok => {}
            // NCCL added MONITOR to its RAS client protocol in 2.29 (src/ras/client_support.cc);
            // an older job answers it as an unknown command.
            Reply::Error(e) if e.to_ascii_lowercase().contains("unknown command") => bail!(
                "the job's NCCL has no RAS monitor mode (it came with NCCL 2.29): {e}; \
                 `fabrik ras {}` asks for its status instead",
                a.target
            ),
            Reply::Error(e) => bail!("the job refused MONITOR: {e}"),
            other => bail!("unexpected answer to MONITOR: {other:?}"),
        }
        let end = a.duration.map(|d| Instant::now() + Duration::from_secs(d));
        let mut analyzer = fabrik_parse::nccl_log::LogAnalyzer::new();
        analyzer.begin_input(&a.target);
        let mut live = fabrik_parse::ras::monitor::MonitorParser::new();
        let mut pending = std::mem::take(&mut c.pending);
        let mut b = [0u8; 8192];
        let mut out = std::io::stdout().lock();
        loop {
            while let Some(p) = pending.iter().position(|x| *x == b'\n') {
                let line: Vec<u8> = pending.drain(..=p).collect();
                let line = &line[..line.len() - 1];
                analyzer.line(line);
                if a.raw {
                    let _ = out.write_all(line);
                    let _ = out.write_all(b"\n");
                } else if let Some(e) = live.line(&String::from_utf8_lossy(line)) {
                    let (_, u, d) = live.table().counts();
                    let _ = out.write_all(fabrik_render::ras::monitor_event(&e, d, u).as_bytes());
                }
                let _ = out.flush();
            }
            if pending.len() > protocol::MAX_REPLY_LINE * 4 {
                pending.clear();
            }
            if end.is_some_and(|t| Instant::now() >= t) {
                break;
            }
            // Wake up once a second to honour --duration; a monitor stream may be silent for hours.
            c.sock.set_read_timeout(Some(Duration::from_secs(1)))?;
            match c.sock.read(&mut b) {
                Ok(0) => break,
                Ok(n) => pending.extend_from_slice(&b[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(e) => return Err(e).context("reading RAS monitor events"),
            }
        }
        drop(out);
        let report = analyzer.finish();
        super::emit_report(&report, a.format)
    }
}
