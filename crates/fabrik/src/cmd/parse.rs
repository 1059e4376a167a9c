//! `fabrik parse`: nccl-tests and perftest output into fabrik's result types.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use fabrik_doctor::passline::{Judgement, Verdict};
use fabrik_model::{Finding, P2pReport};
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
    /// `nvidia-smi topo -m` output: each GPU's nearest NIC; `-` reads stdin.
    Topo(CmdArgs),
    /// `ibstat` output: port states and rates; `-` reads stdin.
    Ibstat(CmdArgs),
    /// `ibv_devinfo [-v]` output: port states, MTUs, link layers; `-` reads stdin.
    #[command(alias = "ibv_devinfo")]
    IbvDevinfo(CmdArgs),
    /// `show_gids` output: the RoCE v2 GID index with an IPv4 address per port; `-` reads stdin.
    #[command(alias = "show_gids")]
    ShowGids(CmdArgs),
    /// `ibdev2netdev [-v]` output: RDMA device to netdev, and their states; `-` reads stdin.
    Ibdev2netdev(CmdArgs),
    /// `mlnx_qos -i IF` output: PFC priorities and trust mode; `-` reads stdin.
    #[command(alias = "mlnx_qos")]
    MlnxQos(CmdArgs),
    /// NCCL RAS output: `ncclras` reports, `NCCL DIAG` lines, monitor events; `-` reads stdin.
    Ras(crate::cmd::ras::ParseArgs),
    /// NCCL Inspector profiler files: straggler ranks per collective, with their hosts.
    Inspector(crate::cmd::ras::InspectorArgs),
}

#[derive(clap::Args)]
pub struct CmdArgs {
    pub file: PathBuf,
    #[arg(long, default_value = "text", value_parser = Format::text_or_json())]
    pub format: Format,
}

#[derive(clap::Args)]
pub struct ToolArgs {
    pub file: PathBuf,
    #[arg(long, default_value = "text", value_parser = Format::text_or_json())]
    pub format: Format,
    /// Link rate in Gb/s of one NIC: the pass line is 90 % of it (perftest; a collective
    /// across hosts as bus bandwidth, Gb/s / 8) unless `--expect` gives one.
    #[arg(long)]
    pub link_gbps: Option<f64>,
    /// Take the link rate from this machine's inventory instead (a sysfs root such as `/`
    /// or a captured tree): the slowest active RDMA port, else the default-route NIC speed.
    #[arg(long, conflicts_with = "link_gbps")]
    pub root: Option<PathBuf>,
    /// Collective name when the text does not say (`all_reduce`, `reduce_scatter`...).
    #[arg(long)]
    pub op: Option<String>,
    /// Judge the numbers against this cluster file's `[bandwidth]` lines (else against 90 %,
    /// or its `pass_fraction`, of the link rate, when one is known); exit 1 below the line.
    #[arg(long, value_name = "FILE")]
    pub expect: Option<PathBuf>,
}

/// One parsed result with the findings about it; the report's own keys stay at the top level,
/// so the JSON reads back as the model type.
#[derive(Serialize)]
struct WithFindings<'a, T: Serialize> {
    #[serde(flatten)]
    report: &'a T,
    findings: Vec<Finding>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pass_line: Option<Judgement>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.what {
        What::NcclTests(a) => nccl_tests(a),
        What::Perftest(a) => perftest(a),
        What::Topo(a) => command_output(a, "topo"),
        What::Ibstat(a) => command_output(a, "ibstat"),
        What::IbvDevinfo(a) => command_output(a, "ibv_devinfo"),
        What::ShowGids(a) => command_output(a, "show_gids"),
        What::Ibdev2netdev(a) => command_output(a, "ibdev2netdev"),
        What::MlnxQos(a) => command_output(a, "mlnx_qos"),
        What::Ras(a) => crate::cmd::ras::parse_ras(a),
        What::Inspector(a) => crate::cmd::ras::parse_inspector(a),
    }
}

/// Reads a pasted command output whole, up to what one node's output can hold.
fn read_text(path: &std::path::Path) -> anyhow::Result<String> {
    use std::io::Read;
    let max = fabrik_parse::commands::MAX_INPUT;
    let r = fabrik_parse::input::open_input(path)
        .with_context(|| format!("opening {}", path.display()))?;
    let mut buf = Vec::new();
    r.take(max as u64 + 1)
        .read_to_end(&mut buf)
        .with_context(|| format!("reading {}", path.display()))?;
    if buf.len() > max {
        anyhow::bail!(
            "{}: larger than {max} bytes, not a command output",
            path.display()
        );
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

#[derive(Serialize)]
struct CommandDoc<T: Serialize> {
    schema_version: u32,
    tool: &'static str,
    facts: T,
    findings: Vec<Finding>,
}

fn emit_command<T: Serialize>(
    a: &CmdArgs,
    tool: &'static str,
    facts: T,
    table: String,
    findings: Vec<Finding>,
) -> anyhow::Result<ExitCode> {
    let code = exit_for(&findings);
    match a.format {
        Format::Json => crate::output::print_json(&CommandDoc {
            schema_version: fabrik_model::SCHEMA_VERSION,
            tool,
            facts,
            findings,
        })?,
        Format::Text | Format::Markdown => {
            print!("{table}{}", fabrik_render::findings::text(&findings))
        }
    }
    Ok(code)
}

fn command_output(a: CmdArgs, tool: &'static str) -> anyhow::Result<ExitCode> {
    use fabrik_parse::commands as c;
    let text = read_text(&a.file)?;
    let none = |what: &str| -> anyhow::Result<ExitCode> {
        anyhow::bail!("{}: no {what} output found", a.file.display())
    };
    match tool {
        "topo" => {
            let cells = c::topo::parse_nvidia_smi_topo(&text);
            if cells.is_empty() {
                return none("nvidia-smi topo -m");
            }
            let near = c::topo::nearest_nics(&cells);
            let nics: std::collections::BTreeSet<String> =
                cells.keys().map(|(_, n)| n.clone()).collect();
            let (f, advice) = c::findings::topo(&near, &nics);
            let t = fabrik_render::commands::topo(&near, &advice.nccl_ib_hca);
            #[derive(Serialize)]
            struct Facts {
                nearest: Vec<c::topo::GpuNearestNic>,
                nics: std::collections::BTreeSet<String>,
                nccl_ib_hca: Vec<String>,
            }
            emit_command(
                &a,
                tool,
                Facts {
                    nearest: near,
                    nics,
                    nccl_ib_hca: advice.nccl_ib_hca,
                },
                t,
                f,
            )
        }
        "ibstat" => {
            let st = c::ibstat::parse_ibstat(&text);
            if st.ports.is_empty() && st.errors.is_empty() {
                return none("ibstat");
            }
            let t = fabrik_render::commands::ibstat(&st);
            let f = c::findings::ibstat(&st);
            emit_command(&a, tool, st, t, f)
        }
        "ibv_devinfo" => {
            let ports = c::ibv_devinfo::parse_ibv_devinfo(&text);
            if ports.is_empty() {
                return none("ibv_devinfo");
            }
            let t = fabrik_render::commands::ibv_devinfo(&ports);
            let f = c::findings::ibv_devinfo(&ports);
            emit_command(&a, tool, ports, t, f)
        }
        "show_gids" => {
            let rows = c::show_gids::parse_show_gids(&text);
            if rows.is_empty() {
                return none("show_gids");
            }
            let idx = c::show_gids::roce_v2_indices(&rows);
            let t = fabrik_render::commands::show_gids(&idx);
            let f = c::findings::show_gids(&rows, &idx);
            #[derive(Serialize)]
            struct Facts {
                roce_v2_ipv4: Vec<c::show_gids::RoceV2Index>,
                gids: Vec<c::show_gids::GidRow>,
            }
            emit_command(
                &a,
                tool,
                Facts {
                    roce_v2_ipv4: idx,
                    gids: rows,
                },
                t,
                f,
            )
        }
        "ibdev2netdev" => {
            let maps = c::ibdev2netdev::parse_ibdev2netdev(&text);
            if maps.is_empty() {
                return none("ibdev2netdev");
            }
            let t = fabrik_render::commands::ibdev2netdev(&maps);
            let f = c::findings::ibdev2netdev(&maps);
            emit_command(&a, tool, maps, t, f)
        }
        _ => {
            let Some(q) = c::mlnx_qos::parse_mlnx_qos_full(&text) else {
                return none("mlnx_qos");
            };
            let t = fabrik_render::commands::mlnx_qos(&q);
            let f = c::findings::mlnx_qos(&q);
            #[derive(Serialize)]
            struct Facts {
                #[serde(flatten)]
                qos: c::mlnx_qos::MlnxQos,
                lossless_dscp: Vec<u8>,
            }
            let lossless_dscp = q.lossless_dscp();
            emit_command(
                &a,
                tool,
                Facts {
                    qos: q,
                    lossless_dscp,
                },
                t,
                f,
            )
        }
    }
}

/// The link rate to check against: given, or read from the inventory under `--root`.
fn link_gbps(a: &ToolArgs) -> anyhow::Result<Option<f64>> {
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

fn exit_for(findings: &[Finding]) -> ExitCode {
    crate::exit::status(crate::exit::has_problems(findings, false))
}

/// Exit 1 on error findings or on a result below its pass line.
fn exit_judged(findings: &[Finding], judged: &[Option<Judgement>]) -> ExitCode {
    let below = judged.iter().flatten().any(|j| j.verdict == Verdict::Fail);
    crate::exit::status(below || crate::exit::has_problems(findings, false))
}

fn print_docs<T: Serialize>(docs: &[WithFindings<'_, T>]) -> anyhow::Result<()> {
    match docs {
        [one] => crate::output::print_json(one),
        many => crate::output::print_json(&many),
    }
}

fn nccl_tests(a: ToolArgs) -> anyhow::Result<ExitCode> {
    let link = link_gbps(&a)?;
    let mut runs = fabrik_parse::nccl_tests::parse_path(&a.file)
        .with_context(|| format!("parsing nccl-tests output {}", a.file.display()))?;
    if runs.is_empty() {
        anyhow::bail!("{}: no nccl-tests table found", a.file.display());
    }
    if let Some(op) = &a.op {
        for r in &mut runs {
            r.report.op = op.clone();
        }
    }
    let expect = crate::cmd::expect::load_file(a.expect.as_deref())?;
    let (findings, judged): (Vec<Vec<Finding>>, Vec<Option<Judgement>>) = runs
        .iter()
        .map(|r| crate::cmd::expect::judge_parsed_collective(r, expect.as_ref(), link))
        .unzip();
    let all: Vec<Finding> = findings.iter().flatten().cloned().collect();
    match a.format {
        Format::Json => {
            let docs: Vec<_> = runs
                .iter()
                .zip(findings)
                .zip(judged.iter().cloned())
                .map(|((r, f), j)| WithFindings {
                    report: &r.report,
                    findings: f,
                    pass_line: j,
                })
                .collect();
            print_docs(&docs)?;
        }
        Format::Text | Format::Markdown => {
            let mut out = String::new();
            for (r, j) in runs.iter().zip(&judged) {
                out.push_str(&fabrik_render::collective::table(&r.report));
                if let Some(j) = j {
                    out.push_str(&crate::cmd::expect::judgement_text(j));
                }
            }
            out.push_str(&fabrik_render::findings::text(&all));
            print!("{out}");
        }
    }
    Ok(exit_judged(&all, &judged))
}

/// A perftest run that printed failure messages: what it printed and the findings about it.
#[derive(Serialize)]
struct FailedRun<'a> {
    schema_version: u32,
    source: &'static str,
    failed: bool,
    failures: &'a [fabrik_parse::perftest_failures::PerftestFailure],
    findings: Vec<Finding>,
}

fn perftest(a: ToolArgs) -> anyhow::Result<ExitCode> {
    let link = link_gbps(&a)?;
    let out = fabrik_parse::perftest::parse_path_full(&a.file)
        .with_context(|| format!("parsing perftest output {}", a.file.display()))?;
    let reports = &out.reports;
    if reports.is_empty() && out.failures.is_empty() {
        anyhow::bail!(
            "{}: no perftest report and no perftest failure message found",
            a.file.display()
        );
    }
    let expect = crate::cmd::expect::load_file(a.expect.as_deref())?;
    let (findings, judged): (Vec<Vec<Finding>>, Vec<Option<Judgement>>) = reports
        .iter()
        .map(|r| crate::cmd::expect::judge_parsed_p2p(r, expect.as_ref(), link))
        .unzip();
    let failed = fabrik_parse::perftest_failures::findings(&out.failures);
    let mut all: Vec<Finding> = failed.clone();
    all.extend(findings.iter().flatten().cloned());
    match a.format {
        Format::Json => {
            let docs: Vec<_> = reports
                .iter()
                .zip(findings)
                .zip(judged.iter().cloned())
                .map(|((r, f), j)| WithFindings {
                    report: r,
                    findings: f,
                    pass_line: j,
                })
                .collect();
            if out.failures.is_empty() {
                print_docs(&docs)?;
            } else {
                // The failure comes first: it is why the reports (if any) are short or absent.
                #[derive(Serialize)]
                #[serde(untagged)]
                enum Doc<'a> {
                    Failed(FailedRun<'a>),
                    Report(WithFindings<'a, P2pReport>),
                }
                let mut all_docs = vec![Doc::Failed(FailedRun {
                    schema_version: fabrik_model::SCHEMA_VERSION,
                    source: "perftest",
                    failed: true,
                    failures: &out.failures,
                    findings: failed,
                })];
                all_docs.extend(docs.into_iter().map(Doc::Report));
                match all_docs.as_slice() {
                    [one] => crate::output::print_json(one)?,
                    many => crate::output::print_json(&many)?,
                }
            }
        }
        Format::Text | Format::Markdown => {
            let mut text = String::new();
            for (r, j) in reports.iter().zip(&judged) {
                text.push_str(&fabrik_render::p2p::table(r));
                if let Some(j) = j {
                    text.push_str(&crate::cmd::expect::judgement_text(j));
                }
            }
            text.push_str(&fabrik_render::p2p::perftest_failures(&out));
            text.push_str(&fabrik_render::findings::text(&all));
            print!("{text}");
        }
    }
    Ok(exit_judged(&all, &judged))
}
