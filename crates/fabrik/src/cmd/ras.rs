//! NCCL RAS and the Inspector: `fabrik parse ras` (reports, DIAG lines and monitor events from a
//! file or a live `ncclras -m` pipe), `fabrik parse inspector` (stragglers from the Inspector
//! plugin's files) and `fabrik ras HOST[:PORT]` (asks a running
//! job's RAS port itself).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use fabrik_parse::nccl_log::LogReport;
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

/// The report of a RAS file or pipe; in text mode each monitor event is printed as it comes,
/// with the running count of troubled peers: the live view of a `ncclras -m` pipe.
pub fn parse_ras(a: ParseArgs) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    let text = a.format == Format::Text;
    let report = fabrik_parse::nccl_log::follow::follow_path(&a.file, &mut |e| {
        if text {
            let line = fabrik_render::ras::monitor_event(&e.event, e.dead, e.unreachable);
            let _ = out.write_all(line.as_bytes());
            let _ = out.flush();
        }
    })?;
    drop(out);
    emit_report(&report, a.format)
}

fn emit_report(report: &LogReport, format: Format) -> anyhow::Result<ExitCode> {
    crate::output::print(format, &report.ras_document(), |_| {
        fabrik_render::ras::report(report)
    })?;
    Ok(crate::exit::of_findings(&report.findings))
}

pub fn parse_inspector(a: InspectorArgs) -> anyhow::Result<ExitCode> {
    let report = fabrik_parse::inspector::read_dump(&a.path, &a.logs)?;
    crate::output::print(a.format, &report, fabrik_render::ras::inspector)?;
    Ok(crate::exit::of_findings(&report.findings))
}

pub use client::{run as run_client, ClientArgs};

mod client {
    use std::io::Write;
    use std::process::ExitCode;
    use std::time::Duration;

    use fabrik_parse::nccl_log::follow::{ask_job, Answer, Heard, JobQuery, Question};
    use fabrik_parse::ras::client;
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

    pub fn run(a: ClientArgs) -> anyhow::Result<ExitCode> {
        let question = match a.ask {
            Ask::Status => Question::Report(client::Ask::Status {
                verbose: a.verbose_report,
            }),
            Ask::Diagnostics => Question::Report(client::Ask::Diagnostics),
            Ask::Monitor => Question::Monitor(a.duration.map(Duration::from_secs)),
        };
        let query = JobQuery {
            target: a.target.clone(),
            question,
            json_report: a.json_report,
            ras_timeout: a.ras_timeout,
            connect_timeout: Duration::from_secs(a.connect_timeout),
            raw: a.raw,
        };
        let mut out = std::io::stdout().lock();
        let answer = ask_job(&query, &mut |heard| {
            let _ = match heard {
                Heard::Protocol { job, ours } => {
                    eprintln!(
                        "fabrik ras: the job speaks RAS protocol {job}, this client {ours}; going on"
                    );
                    return;
                }
                Heard::Line(line) => out.write_all(line).and_then(|()| out.write_all(b"\n")),
                Heard::Event(e) => out.write_all(
                    fabrik_render::ras::monitor_event(&e.event, e.dead, e.unreachable).as_bytes(),
                ),
            };
            let _ = out.flush();
        })?;
        drop(out);
        match answer {
            Answer::Raw(text) => {
                crate::output::print_text(&text)?;
                Ok(ExitCode::SUCCESS)
            }
            Answer::Report(report) => super::emit_report(&report, a.format),
        }
    }
}
