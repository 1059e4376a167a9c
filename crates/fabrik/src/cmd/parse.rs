//! `fabrik parse`: nccl-tests and perftest output into fabrik's result types.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use fabrik_model::{Finding, P2pReport, P2pRows, Severity};
use fabrik_parse::check::{check_collective, check_p2p};
use fabrik_parse::nccl_tests::NcclTestsRun;
use serde::Serialize;

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Format {
    /// Text for people (`table` is accepted as another name for it).
    #[value(name = "text", alias = "table")]
    Table,
    Json,
}

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
}

#[derive(clap::Args)]
pub struct ToolArgs {
    pub file: PathBuf,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Link rate in Gb/s to compare large-message bandwidth with (per NIC).
    #[arg(long)]
    pub link_gbps: Option<f64>,
    /// Take the link rate from this machine's inventory instead (a sysfs root such as `/`
    /// or a captured tree): the slowest active RDMA port, else the default-route NIC speed.
    #[arg(long, conflicts_with = "link_gbps")]
    pub root: Option<PathBuf>,
    /// Collective name when the text does not say (`all_reduce`, `reduce_scatter`...).
    #[arg(long)]
    pub op: Option<String>,
}

/// One parsed result with the findings about it; the report's own keys stay at the top level,
/// so the JSON reads back as the model type.
#[derive(Serialize)]
struct WithFindings<'a, T: Serialize> {
    #[serde(flatten)]
    report: &'a T,
    findings: Vec<Finding>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.what {
        What::NcclTests(a) => nccl_tests(a),
        What::Perftest(a) => perftest(a),
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
    if findings.iter().any(|f| f.severity == Severity::Error) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
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
    let findings: Vec<Vec<Finding>> = runs.iter().map(|r| check_collective(r, link)).collect();
    let all: Vec<Finding> = findings.iter().flatten().cloned().collect();
    match a.format {
        Format::Json => {
            let docs: Vec<_> = runs
                .iter()
                .zip(findings)
                .map(|(r, f)| WithFindings {
                    report: &r.report,
                    findings: f,
                })
                .collect();
            print_docs(&docs)?;
        }
        Format::Table => {
            let mut out = String::new();
            for r in &runs {
                out.push_str(&collective_table(r));
            }
            out.push_str(&findings_text(&all));
            print!("{out}");
        }
    }
    Ok(exit_for(&all))
}

fn timing_cells(t: &Option<fabrik_model::CollTiming>) -> String {
    match t {
        Some(t) => format!(
            "{:>10.2} {:>8.2} {:>8.2} {:>6}",
            t.time_us,
            t.algbw,
            t.busbw,
            t.wrong.map_or_else(|| "N/A".to_string(), |w| w.to_string())
        ),
        None => format!("{:>10} {:>8} {:>8} {:>6}", "-", "-", "-", "-"),
    }
}

fn collective_table(run: &NcclTestsRun) -> String {
    let r = &run.report;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}  ranks {}  hosts {}  avg busbw {}",
        r.op,
        r.ranks.map_or_else(|| "-".into(), |n| n.to_string()),
        if r.hosts.is_empty() {
            "-".into()
        } else {
            r.hosts.join(",")
        },
        r.avg_busbw
            .map_or_else(|| "-".into(), |v| format!("{v} GB/s"))
    );
    let _ = writeln!(
        out,
        "{:>12} {:>12} {:>8} {:>6} {:>5} | {:>10} {:>8} {:>8} {:>6} | {:>10} {:>8} {:>8} {:>6}",
        "size",
        "count",
        "type",
        "redop",
        "root",
        "time(us)",
        "algbw",
        "busbw",
        "wrong",
        "time(us)",
        "algbw",
        "busbw",
        "wrong"
    );
    for row in &r.rows {
        let _ = writeln!(
            out,
            "{:>12} {:>12} {:>8} {:>6} {:>5} | {} | {}",
            row.size,
            row.count,
            row.dtype,
            row.redop.as_deref().unwrap_or("-"),
            row.root.map_or_else(|| "-".into(), |v| v.to_string()),
            timing_cells(&row.out_of_place),
            timing_cells(&row.in_place)
        );
    }
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out.push('\n');
    out
}

fn findings_text(all: &[Finding]) -> String {
    let mut out = String::new();
    for f in all {
        let _ = writeln!(
            out,
            "{} {} [{}] {}",
            f.severity, f.rule, f.subject, f.message
        );
        let _ = writeln!(out, "    fix: {}", f.fix);
    }
    out
}

fn perftest(a: ToolArgs) -> anyhow::Result<ExitCode> {
    let link = link_gbps(&a)?;
    let reports = fabrik_parse::perftest::parse_path(&a.file)
        .with_context(|| format!("parsing perftest output {}", a.file.display()))?;
    if reports.is_empty() {
        anyhow::bail!("{}: no perftest report found", a.file.display());
    }
    let findings: Vec<Vec<Finding>> = reports.iter().map(|r| check_p2p(r, link)).collect();
    let all: Vec<Finding> = findings.iter().flatten().cloned().collect();
    match a.format {
        Format::Json => {
            let docs: Vec<_> = reports
                .iter()
                .zip(findings)
                .map(|(r, f)| WithFindings {
                    report: r,
                    findings: f,
                })
                .collect();
            print_docs(&docs)?;
        }
        Format::Table => {
            let mut out = String::new();
            for r in &reports {
                out.push_str(&p2p_table(r));
            }
            out.push_str(&findings_text(&all));
            print!("{out}");
        }
    }
    Ok(exit_for(&all))
}

fn p2p_table(r: &P2pReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} {:?}  device {}  link {}  mtu {}  gid {}  qps {}",
        r.op.as_deref().unwrap_or("?"),
        r.test,
        r.device.as_deref().unwrap_or("-"),
        r.link_type.as_deref().unwrap_or("-"),
        r.mtu.map_or_else(|| "-".into(), |v| v.to_string()),
        r.gid_index.map_or_else(|| "-".into(), |v| v.to_string()),
        r.streams
    );
    match &r.results {
        P2pRows::Bw(rows) => {
            let _ = writeln!(
                out,
                "{:>10} {:>12} {:>12} {:>12} {:>10}",
                "bytes", "iterations", "peak Gb/s", "avg Gb/s", "Mpps"
            );
            for x in rows {
                let _ = writeln!(
                    out,
                    "{:>10} {:>12} {:>12.2} {:>12.2} {:>10.6}",
                    x.bytes, x.iterations, x.bw_peak_gbps, x.bw_avg_gbps, x.msg_rate_mpps
                );
            }
        }
        P2pRows::Lat(rows) => {
            let _ = writeln!(
                out,
                "{:>10} {:>12} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
                "bytes",
                "iterations",
                "min us",
                "max us",
                "typ us",
                "avg us",
                "stdev",
                "p99",
                "p99.9"
            );
            let o = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.2}"));
            for x in rows {
                let _ = writeln!(
                    out,
                    "{:>10} {:>12} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8} {:>8} {:>8}",
                    x.bytes,
                    x.iterations,
                    x.t_min_us,
                    x.t_max_us,
                    x.t_typical_us,
                    x.t_avg_us,
                    o(x.t_stdev_us),
                    o(x.p99_us),
                    o(x.p999_us)
                );
            }
        }
    }
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out.push('\n');
    out
}
