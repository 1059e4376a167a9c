//! The fault campaign (`fabrik_testbed::campaign`): injects faults into the namespace testbed,
//! copies of the node trees and the Soft-RoCE VM, runs fabrik on each, and prints the confusion
//! table, precision, recall and the median time to a verdict. Exit 0 when the targets are met
//! (precision and recall at least 0.95, every healthy run quiet), 1 when not, 2 when the
//! campaign could not run.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

use fabrik_testbed::campaign::{self, netns, snapshots, vm, Rng, Run};

const USAGE: &str = "\
fabrik-faults: the fault campaign: faults injected, fabrik run, culprits compared

usage: fabrik-faults [--fabrik BIN] [--only netns,snapshots,vm] [--rounds N] [--seed N]
                     [--markdown FILE] [--no-targets]
  --fabrik BIN     the fabrik binary under test (default: the newer of target/{release,debug}/fabrik)
  --only LIST      targets to run (default: all three; a target that cannot run here says why)
  --rounds N       draws of every fault class per target (default 1)
  --seed N         the generator's seed (default: from the clock; printed, to replay a run)
  --markdown FILE  also write the table there
  --no-targets     exit 0 whatever the precision and recall
Needs root for the namespaces and the VM; the snapshot cases run anywhere.";

struct Args {
    fabrik: Option<PathBuf>,
    only: BTreeSet<String>,
    rounds: u32,
    seed: u64,
    markdown: Option<PathBuf>,
    targets: bool,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        fabrik: None,
        only: ["netns", "snapshots", "vm"].map(String::from).into(),
        rounds: 1,
        seed: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(1),
        markdown: None,
        targets: true,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--fabrik" => a.fabrik = Some(PathBuf::from(value()?)),
            "--only" => {
                a.only = value()?.split(',').map(str::to_string).collect();
                if let Some(bad) = a
                    .only
                    .iter()
                    .find(|t| !["netns", "snapshots", "vm"].contains(&t.as_str()))
                {
                    return Err(format!("unknown target {bad:?} (netns, snapshots, vm)"));
                }
            }
            "--rounds" => a.rounds = value()?.parse().map_err(|_| "--rounds takes a number")?,
            "--seed" => a.seed = value()?.parse().map_err(|_| "--seed takes a number")?,
            "--markdown" => a.markdown = Some(PathBuf::from(value()?)),
            "--no-targets" => a.targets = false,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(a)
}

/// The rule ids the fabrik under test knows (`fabrik rules --format json`).
fn rules(fabrik: &std::path::Path) -> BTreeSet<String> {
    let out = Command::new(fabrik)
        .args(["rules", "--format", "json"])
        .output()
        .ok();
    let v: serde_json::Value = out
        .and_then(|o| serde_json::from_slice(&o.stdout).ok())
        .unwrap_or(serde_json::Value::Null);
    v["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["id"].as_str().map(str::to_string))
        .collect()
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(msg) => {
            if msg.is_empty() {
                eprintln!("{USAGE}");
            } else {
                eprintln!("fabrik-faults: {msg}\n\n{USAGE}");
            }
            return ExitCode::from(2);
        }
    };
    let Some(fabrik) = args.fabrik.clone().or_else(netns::built_fabrik) else {
        eprintln!("fabrik-faults: no fabrik binary (cargo build -p fabrik, or --fabrik BIN)");
        return ExitCode::from(2);
    };
    let fabrik = std::fs::canonicalize(&fabrik).unwrap_or(fabrik);
    println!(
        "# fault campaign: fabrik {}, seed {}, {} round(s), targets {}",
        fabrik.display(),
        args.seed,
        args.rounds,
        args.only.iter().cloned().collect::<Vec<_>>().join(",")
    );
    let mut rng = Rng::with_seed(args.seed);
    let mut runs: Vec<Run> = Vec::new();
    let mut progress = |r: &Run| {
        println!(
            "# {} {}: {:?} in {:.1} s: {}",
            r.target,
            r.class,
            r.outcome(),
            r.seconds,
            r.detail
        );
    };
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    if args.only.contains("snapshots") {
        let known = rules(&fabrik);
        match snapshots::campaign(
            &fabrik,
            &snapshots::fixtures_dir(),
            &known,
            &mut rng,
            args.rounds,
            &mut progress,
        ) {
            Ok(r) => runs.extend(r),
            Err(e) => {
                eprintln!("fabrik-faults: snapshot cases: {e}");
                return ExitCode::from(2);
            }
        }
    }
    if args.only.contains("netns") {
        match fabrik_testbed::skip_reason() {
            Some(why) => println!("# netns cases skipped: {why}"),
            None => {
                let opts = netns::Options {
                    fabrik: fabrik.clone(),
                    ..netns::Options::default()
                };
                match netns::campaign(opts, &mut rng, args.rounds, &mut progress) {
                    Ok(r) => runs.extend(r),
                    Err(e) => {
                        eprintln!("fabrik-faults: namespace cases: {e}");
                        return ExitCode::from(2);
                    }
                }
            }
        }
    }
    if args.only.contains("vm") {
        match vm::skip_reason() {
            Some(why) => println!("# VM cases skipped: {why}"),
            None => match vm::campaign(&fabrik, &repo, &mut rng, &mut progress) {
                Ok(r) => runs.extend(r),
                Err(e) => {
                    eprintln!("fabrik-faults: VM cases: {e}");
                    return ExitCode::from(2);
                }
            },
        }
    }
    let table = campaign::table(&runs);
    println!("\n{table}");
    let misses = campaign::misses(&runs);
    if !misses.is_empty() {
        println!("runs worth a look:\n{misses}");
    }
    if let Some(path) = &args.markdown {
        if let Err(e) = std::fs::write(path, format!("{table}\n{misses}")) {
            eprintln!("fabrik-faults: writing {}: {e}", path.display());
            return ExitCode::from(2);
        }
    }
    let t = campaign::totals(&runs);
    let met = t.precision() >= 0.95 && t.recall() >= 0.95 && t.quiet.0 == t.quiet.1;
    if met || !args.targets {
        ExitCode::SUCCESS
    } else {
        println!("targets not met: precision and recall must be at least 0.95 and every healthy run quiet");
        ExitCode::from(1)
    }
}
