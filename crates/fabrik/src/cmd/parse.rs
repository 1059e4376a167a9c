//! `fabrik parse`: nccl-tests and perftest output into fabrik's result types, and tool outputs
//! (ibstat, lspci, mstconfig...) into their facts and the doctor's findings on them.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use fabrik_doctor::parsed::{self, PasteDoc, ResultOptions};
use fabrik_parse::formats::paste::{Tool, ToolCommand};
use fabrik_render::Format;
use serde::Serialize;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub what: What,
}

#[derive(clap::Subcommand)]
pub enum What {
    /// nccl-tests output (text of any version, or the JSON of `-J`); `-` reads stdin.
    NcclTests(ToolArgs),
    /// perftest output (ib_write_bw, ib_read_bw, ib_send_bw, ib_*_lat); `-` reads stdin.
    Perftest(ToolArgs),
    /// NCCL RAS output: `ncclras` reports, `NCCL DIAG` lines, monitor events; `-` reads stdin.
    Ras(crate::cmd::ras::ParseArgs),
    /// NCCL Inspector profiler files: straggler ranks per collective, with their hosts.
    Inspector(crate::cmd::ras::InspectorArgs),
    /// A tool's output (ibstat, lspci, mstconfig...): the facts it gives and the doctor's
    /// findings on them.
    #[command(flatten)]
    Tool(ToolCommand<CmdArgs>),
}

#[derive(clap::Args)]
pub struct CmdArgs {
    pub file: PathBuf,
    #[arg(long, default_value = "text", value_parser = Format::text_or_json())]
    pub format: Format,
}

#[derive(clap::Args)]
pub struct ToolArgs {
    #[command(flatten)]
    pub result: ResultOptions,
    #[arg(long, default_value = "text", value_parser = Format::text_or_json())]
    pub format: Format,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.what {
        What::NcclTests(a) => nccl_tests(a),
        What::Perftest(a) => perftest(a),
        What::Ras(a) => crate::cmd::ras::parse_ras(a),
        What::Inspector(a) => crate::cmd::ras::parse_inspector(a),
        What::Tool(t) => command_output(t.tool, t.args),
    }
}

/// A pasted tool output: its facts, and the doctor's rules on the facts it gives. Text that
/// holds nothing of the tool is a tool failure (exit 2) that says what was expected.
fn command_output(tool: Tool, a: CmdArgs) -> anyhow::Result<ExitCode> {
    let text = fabrik_probe::input::read_paste(&a.file)?;
    let pasted = tool
        .read(&text)
        .with_context(|| a.file.display().to_string())?;
    let doc = PasteDoc::new(&pasted);
    crate::output::print(a.format, &doc, |d| {
        fabrik_render::commands::table(&d.pasted.table)
            + &fabrik_render::findings::text(&d.findings)
    })?;
    Ok(crate::exit::of_findings(&doc.findings))
}

/// The link rate to check against: given, or read from the inventory under `--root`.
fn link_gbps(a: &ResultOptions) -> anyhow::Result<Option<f64>> {
    let Some(root) = &a.root else {
        return Ok(a.link_gbps);
    };
    let node = fabrik_probe::probe(root)
        .with_context(|| format!("reading the inventory under {}", root.display()))?;
    let gbps = fabrik_parse::check::link_gbps_from_node(&node);
    if gbps.is_none() {
        eprintln!(
            "fabrik parse: no RDMA port or default-route NIC speed under {}; bandwidth not checked against a link rate",
            root.display()
        );
    }
    Ok(gbps)
}

/// One document as an object, several as an array.
fn print_docs<T: Serialize>(docs: &[T]) -> anyhow::Result<()> {
    match docs {
        [one] => crate::output::print_json(one),
        many => crate::output::print_json(&many),
    }
}

fn nccl_tests(args: ToolArgs) -> anyhow::Result<ExitCode> {
    let (a, format) = (&args.result, args.format);
    let link = link_gbps(a)?;
    let expect = crate::cmd::expect::load_file(a.expect.as_deref())?;
    let runs = parsed::nccl_tests_file(&a.file, a.op.as_deref(), expect.as_ref(), link)?;
    let all = parsed::all_findings(&runs);
    match format {
        Format::Json => print_docs(&runs)?,
        Format::Text | Format::Markdown => print!(
            "{}{}",
            fabrik_render::passline::judged_runs(&runs, fabrik_render::collective::table),
            fabrik_render::findings::text(&all)
        ),
    }
    Ok(crate::exit::status(parsed::failed(&runs, &all)))
}

fn perftest(args: ToolArgs) -> anyhow::Result<ExitCode> {
    let (a, format) = (&args.result, args.format);
    let link = link_gbps(a)?;
    let expect = crate::cmd::expect::load_file(a.expect.as_deref())?;
    let (out, judged) = parsed::perftest_file(&a.file, expect.as_ref(), link)?;
    let all = judged.findings();
    match format {
        Format::Json => print_docs(&judged.docs())?,
        Format::Text | Format::Markdown => print!(
            "{}{}{}",
            fabrik_render::passline::judged_runs(&judged.runs, fabrik_render::p2p::table),
            fabrik_render::p2p::perftest_failures(&out),
            fabrik_render::findings::text(&all)
        ),
    }
    Ok(crate::exit::status(parsed::failed(&judged.runs, &all)))
}
