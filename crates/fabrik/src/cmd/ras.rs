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

    use fabrik_parse::nccl_log::follow::{ask_job, Answer, Heard, JobOptions};
    use fabrik_render::Format;

    #[derive(clap::Args)]
    pub struct ClientArgs {
        #[command(flatten)]
        pub job: JobOptions,
        #[arg(long, default_value = "text", value_parser = Format::text_or_json())]
        pub format: Format,
    }

    pub fn run(a: ClientArgs) -> anyhow::Result<ExitCode> {
        let mut out = std::io::stdout().lock();
        let answer = ask_job(&a.job.query(), &mut |heard| {
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
