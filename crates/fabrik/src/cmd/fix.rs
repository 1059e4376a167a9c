//! `fabrik fix`: the configuration changes the doctor's findings call for, printed as a plan,
//! a bash script or an Ansible playbook; `--apply` makes them on this machine with an undo
//! record and runs the checks again; `--undo RECORD` puts the values back.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use fabrik_doctor::{diagnose, name_nodes, NamedNode};
use fabrik_fix::apply::{self, Live, Record, Verdicts, RECORD_KIND};
use fabrik_model::Finding;

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum FixFormat {
    /// The plan for people.
    Text,
    /// The plan (or the apply/undo result) as JSON.
    Json,
    /// An idempotent bash script.
    Script,
    /// An Ansible playbook.
    Ansible,
}

#[derive(clap::Args)]
pub struct Args {
    /// Root to plan for: `/` for this machine, or a snapshot directory or .tar.gz. Give it
    /// several times for several nodes; cross-node findings converge them. With --apply, `/`
    /// is the node changed and the others are its peers.
    #[arg(long, default_value = "/")]
    pub root: Vec<PathBuf>,
    /// Only the findings of this rule (repeatable).
    #[arg(long = "rule", value_name = "ID")]
    pub rules: Vec<String>,
    #[arg(long, value_enum, default_value = "text")]
    pub format: FixFormat,
    /// Make the changes on this machine (the root `/`), then run the checks again.
    #[arg(long, conflicts_with = "undo")]
    pub apply: bool,
    /// With --apply: also make the changes that need a drained node (MTU, PFC, ACS, firmware).
    #[arg(long, requires = "apply")]
    pub drained: bool,
    /// Where --apply writes its undo record (default /var/lib/fabrik/fix/undo-<time>.json).
    #[arg(long, value_name = "PATH", requires = "apply")]
    pub record: Option<PathBuf>,
    /// Put back the values an --apply run recorded.
    #[arg(long, value_name = "RECORD")]
    pub undo: Option<PathBuf>,
    #[command(flatten)]
    pub expect: crate::cmd::expect::ExpectArgs,
}

fn is_live(root: &Path) -> bool {
    std::fs::canonicalize(root).is_ok_and(|p| p == Path::new("/"))
}

fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

struct Diagnosed {
    nodes: Vec<NamedNode>,
    findings: Vec<Finding>,
}

fn diagnose_roots(
    roots: &[PathBuf],
    expect: Option<&fabrik_doctor::Expectations>,
) -> anyhow::Result<Diagnosed> {
    let nodes: Result<Vec<_>, _> = roots
        .iter()
        .map(|r| fabrik_probe::open::load_node(r))
        .collect();
    let named = name_nodes(nodes?);
    let mut report = diagnose(&named, None);
    if let Some(e) = expect {
        crate::cmd::expect::apply(&mut report, &named, e, None);
    }
    Ok(Diagnosed {
        nodes: named,
        findings: report.findings,
    })
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(record) = &args.undo {
        return undo(record, args.format);
    }
    let expect = args.expect.load()?;
    let before = diagnose_roots(&args.root, expect.as_ref())?;
    let plan = fabrik_fix::plan(
        &before.findings,
        &before.nodes,
        expect.as_ref(),
        &args.rules,
    );
    if !args.apply {
        match args.format {
            FixFormat::Text => crate::output::print_text(&fabrik_fix::text::plan(&plan))?,
            FixFormat::Json => crate::output::print_json(&plan)?,
            FixFormat::Script => crate::output::print_text(
                &fabrik_fix::script::render(&plan).context("writing the script")?,
            )?,
            FixFormat::Ansible => crate::output::print_text(
                &fabrik_fix::ansible::render(&plan).context("writing the playbook")?,
            )?,
        }
        let planned: Vec<Finding> = before
            .findings
            .iter()
            .filter(|f| {
                args.rules.is_empty() || args.rules.iter().any(|r| r.eq_ignore_ascii_case(&f.rule))
            })
            .cloned()
            .collect();
        return Ok(crate::exit::status(crate::exit::has_problems(
            &planned, false,
        )));
    }
    if matches!(args.format, FixFormat::Script | FixFormat::Ansible) {
        bail!("--apply prints its result as text or json, not as a script or playbook");
    }
    let lives: Vec<usize> = args
        .root
        .iter()
        .enumerate()
        .filter(|(_, r)| is_live(r))
        .map(|(i, _)| i)
        .collect();
    let [live] = lives.as_slice() else {
        bail!("--apply changes this machine: give --root / once (and the peers' snapshots as further --root)");
    };
    let node = before.nodes[*live].name.clone();
    let record_path = args
        .record
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("/var/lib/fabrik/fix/undo-{}.json", now_unix())));
    if let Some(dir) = record_path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("creating {} for the undo record", dir.display()))?;
    }
    let mut sys = Live::new(Path::new("/")).context("opening / to apply")?;
    let mut save = |r: &Record| -> std::io::Result<()> {
        let bytes = serde_json::to_vec_pretty(r).map_err(std::io::Error::other)?;
        crate::output::write_atomically(&record_path, &bytes).map_err(std::io::Error::other)
    };
    let outcome = apply::apply(&plan, &node, args.drained, now_unix(), &mut sys, &mut save)
        .with_context(|| format!("writing the undo record {}", record_path.display()))?;
    // The checks again, on this machine as it is now, beside the same peers.
    let after_roots: Vec<PathBuf> = args.root.clone();
    let after = diagnose_roots(&after_roots, expect.as_ref())?;
    let verdicts = apply::verdicts(
        &plan,
        &node,
        &outcome,
        &after.findings,
        before.nodes.len() > 1,
    );
    match args.format {
        FixFormat::Json => crate::output::print_json(&serde_json::json!({
            "schema_version": fabrik_model::SCHEMA_VERSION,
            "node": node,
            "record_path": record_path,
            "plan": plan,
            "outcome": outcome,
            "verdicts": verdicts,
        }))?,
        _ => crate::output::print_text(&fabrik_fix::text::applied(
            &node,
            &outcome,
            &verdicts,
            &record_path.display().to_string(),
        ))?,
    }
    if outcome.failed().is_some() {
        return Ok(crate::exit::failure());
    }
    Ok(crate::exit::status(
        verdicts.iter().any(|v| v.outcome == Verdicts::StillPresent),
    ))
}

/// Undo records are small; a larger file is not one.
const MAX_RECORD: u64 = 16 << 20;

fn undo(path: &Path, format: FixFormat) -> anyhow::Result<ExitCode> {
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::Read::take(file, MAX_RECORD + 1), &mut text)
        .with_context(|| format!("reading {}", path.display()))?;
    if text.len() as u64 > MAX_RECORD {
        bail!("{} is larger than an undo record can be", path.display());
    }
    let record: Record = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a fabrik fix undo record", path.display()))?;
    if record.kind != RECORD_KIND {
        bail!(
            "{} is not a fabrik fix undo record (kind `{}`)",
            path.display(),
            record.kind
        );
    }
    let mut sys = Live::new(Path::new("/")).context("opening / to undo")?;
    let undone = apply::undo(record, &mut sys);
    let bytes = serde_json::to_vec_pretty(&undone.record).context("encoding the undo record")?;
    crate::output::write_atomically(path, &bytes)?;
    match format {
        FixFormat::Json => crate::output::print_json(&undone)?,
        _ => crate::output::print_text(&fabrik_fix::text::undone(&undone))?,
    }
    Ok(if undone.failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        crate::exit::failure()
    })
}
