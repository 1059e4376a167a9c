//! Accuracy of `fabrik logs` over the whole public-log corpus in `fixtures/nccl-logs`.
//!
//! The ground truth is `fixtures/nccl-logs/truth.tsv` (one row per file, what a careful reader
//! takes from the excerpt; the README beside it says where each file comes from). This test runs
//! the analyzer over every file, prints the accuracy per column and the files it gets wrong, and
//! fails when
//! - a file has no truth row or a truth row has no file,
//! - the accuracy of a column falls below the figure measured when the corpus was assembled (a
//!   ratchet: raise the floor when the analyzer gets better, never lower it to make a change pass),
//! - a healthy log (fine by design: one rank, no RDMA, sockets by design, or RDMA working) produces
//!   an error-level finding that is not already listed in `KNOWN_FALSE_ALARMS`.
//!
//! Reproduce the table with
//! `cargo test -p fabrik-parse --test corpus_accuracy -- --nocapture`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use fabrik_model::Severity;
use fabrik_parse::nccl_log::{analyze_paths, LogReport};

/// Accuracy floors (correct / scored, in percent) measured over the corpus as committed. Each
/// figure is the measured one rounded down; the analyzer may only move them up.
const FLOORS: &[(&str, f64)] = &[
    // Measured on 136 logs (2026-11-26). Files 124-136 were added unseen, after the analyzer
    // work of that round: they lowered failed, cause_class and processes from the 123-log
    // figures (99.1, 98.3, 100); the analyzer itself did not get worse. On 146 logs (files
    // 137-146 added unseen, then the fixes they led to): 100, 100, 100, 97.1, 96.2, 100, 100,
    // 99.2 -- the same floors. On 152 logs (files 147-152 added for the misjudgement classes of
    // 2026-11-27, then the class fixes): failed 97.2, cause_class 96.4.
    ("transport", 100.0),
    ("gdr", 100.0),
    ("socket_fallback", 100.0),
    ("failed", 97.2),
    ("cause_class", 96.4),
    ("version", 100.0),
    ("hosts", 100.0),
    ("processes", 99.1),
];

/// Healthy logs that today still get an error-level finding (each is explained in the README row
/// of the file). Remove a name here once the analyzer stops alarming on it. The test fails when a
/// healthy log that is not in this list alarms, so the list can only shrink.
const KNOWN_FALSE_ALARMS: &[&str] = &[];

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/nccl-logs")
}

struct Truth {
    file: String,
    cols: BTreeMap<&'static str, String>,
    healthy: bool,
}

const COLUMNS: [&str; 9] = [
    "transport",
    "gdr",
    "socket_fallback",
    "failed",
    "cause_class",
    "version",
    "hosts",
    "processes",
    "healthy",
];

fn read_truth() -> Vec<Truth> {
    let text = std::fs::read_to_string(corpus_dir().join("truth.tsv")).expect("truth.tsv");
    let mut rows = Vec::new();
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() || line.starts_with("file\t") {
            continue;
        }
        let fields: Vec<&str> = line.split('\t').collect();
        assert_eq!(
            fields.len(),
            COLUMNS.len() + 1,
            "truth.tsv row has {} fields: {line}",
            fields.len()
        );
        let mut cols = BTreeMap::new();
        for (name, value) in COLUMNS.iter().zip(&fields[1..]) {
            cols.insert(*name, value.to_string());
        }
        let healthy = match fields[COLUMNS.len()] {
            "yes" => true,
            "no" => false,
            other => panic!("healthy must be yes or no, got {other:?} in {line}"),
        };
        rows.push(Truth {
            file: fields[0].to_string(),
            cols,
            healthy,
        });
    }
    rows
}

/// The cause class a finding's rule id stands for, in the vocabulary of the README. Rules the
/// analyzer may grow later are matched by the words in their id, so a new rule lands in its class
/// without editing this test.
fn class_of_rule(rule: &str) -> &'static str {
    let r = rule.trim_start_matches("FAB-NCCL-");
    let has = |w: &str| r.contains(w);
    if has("FIRST-FAILURE") || has("SOCKET-ONLY") {
        // The first failure restates its root cause's finding (whose class counts), and a
        // socket-only job is a performance verdict, not a cause of failure.
        ""
    } else if has("SOCKET-FALLBACK") {
        "socket-fallback"
    } else if has("DUPLICATE") || has("DUP-GPU") {
        "duplicate-gpu"
    } else if has("IOMMU") || has("HSA") || has("HOST-CONFIG") {
        // RCCL's checks of the kernel command line and the HSA driver environment.
        "host-config"
    } else if has("GID") {
        "gid"
    } else if has("NVLS") {
        "nvls"
    } else if has("COLLNET") || has("SHARP") {
        "collnet"
    } else if has("SHM") {
        "shm"
    } else if has("CUDA") {
        "cuda"
    } else if has("GDR") || has("PROTECTION") || has("REGMR") {
        "gdr"
    } else if has("COMPLETION") || has("IB-TIMEOUT") || has("RETRY") {
        "completion-error"
    } else if has("IB-") || has("QP") || has("VERBS-FAIL") {
        "ib-setup"
    } else if has("OFI") || has("PLUGIN") {
        "plugin-load"
    } else if has("BOOTSTRAP-MISMATCH") {
        // Ranks that disagree about the job (sizes, ranks, builds): not an interface problem.
        "config"
    } else if has("BOOTSTRAP") || has("IFNAME") || has("UNREACHABLE") {
        "bootstrap-interface"
    } else if has("COLL-MISMATCH")
        || has("API-MISUSE")
        || has("INVALID-USAGE")
        || has("ADDRESS-FAMILY")
        || has("SETTING-IGNORED")
    {
        // The program used NCCL wrongly: mismatched collectives, unpaired send/recv.
        "config"
    } else if has("MISMATCH") || has("STRAGGLER") {
        "straggler"
    } else if has("TIMEOUT") || has("TCPX") {
        "timeout"
    } else if has("REMOTE") || has("PEER") || has("DEAD") || has("SOCKET") {
        "peer-died"
    } else if has("CONFIG") || has("USAGE") || has("VERSION-MIX") {
        "config"
    } else {
        "other"
    }
}

/// The analyzer's answer for each scored column.
fn predict(r: &LogReport) -> BTreeMap<&'static str, String> {
    let s = &r.summary;
    let yes_no = |b: bool| if b { "yes" } else { "no" }.to_string();
    let mut p = BTreeMap::new();
    p.insert("transport", s.transport.as_str().to_string());
    p.insert(
        "gdr",
        match s.gdr {
            Some(true) => "true",
            Some(false) => "false",
            None => "null",
        }
        .to_string(),
    );
    p.insert("socket_fallback", yes_no(s.socket_fallback));
    p.insert("failed", yes_no(s.errors > 0));
    p.insert(
        "version",
        s.nccl_version.clone().unwrap_or_else(|| "null".to_string()),
    );
    p.insert("hosts", s.hosts.to_string());
    p.insert("processes", s.processes.to_string());
    p
}

/// Classes named by the analyzer: those of its error findings, or, when it has none, those of
/// its warnings (a warning is the right verdict for a problem that did not stop the run).
/// Generic classes (`other`, and GDR-off warnings, which the gdr column scores) do not count as
/// naming a cause.
fn named_classes(r: &LogReport) -> BTreeSet<&'static str> {
    let of = |sev: Severity| -> BTreeSet<&'static str> {
        r.findings
            .iter()
            .filter(|f| f.severity == sev)
            .map(|f| class_of_rule(&f.rule))
            .filter(|c| !c.is_empty())
            .collect()
    };
    let errors = of(Severity::Error);
    if !errors.is_empty() {
        return errors;
    }
    of(Severity::Warning)
        .into_iter()
        .filter(|c| *c != "other" && *c != "gdr")
        .collect()
}

fn cause_correct(truth: &str, r: &LogReport) -> bool {
    let named = named_classes(r);
    match truth {
        "none" => named.is_empty(),
        // A generic WARN or error is the honest answer for a cause the analyzer has no rule for.
        "other" => {
            named.is_empty() && r.findings.iter().any(|f| f.severity >= Severity::Warning)
                || named.contains("other")
        }
        t => named.contains(t),
    }
}

#[test]
fn corpus_accuracy_per_column() {
    let truth = read_truth();
    let dir = corpus_dir();

    let mut on_disk: BTreeSet<String> = std::fs::read_dir(&dir)
        .expect("corpus dir")
        .map(|e| {
            e.expect("dir entry")
                .file_name()
                .to_string_lossy()
                .to_string()
        })
        .filter(|n| n.ends_with(".log"))
        .collect();
    let in_truth: BTreeSet<String> = truth.iter().map(|t| t.file.clone()).collect();
    let missing: Vec<_> = on_disk.difference(&in_truth).collect();
    let stale: Vec<_> = in_truth.difference(&on_disk).collect();
    assert!(
        missing.is_empty(),
        "logs without a truth.tsv row: {missing:?}"
    );
    assert!(stale.is_empty(), "truth.tsv rows without a file: {stale:?}");
    on_disk.clear();

    let scored_columns = &COLUMNS[..COLUMNS.len() - 1];
    let mut scored: BTreeMap<&str, (u32, u32)> = BTreeMap::new();
    // Files 50 and up were collected after the analyzer was written: its accuracy on logs it was
    // not tuned on.
    let mut scored_unseen: BTreeMap<&str, (u32, u32)> = BTreeMap::new();
    let mut wrong: Vec<String> = Vec::new();
    let mut false_alarms: Vec<String> = Vec::new();

    for t in &truth {
        let report = analyze_paths(&[dir.join(&t.file)]).expect("corpus file readable");
        let pred = predict(&report);
        for col in scored_columns {
            let want = &t.cols[col];
            if want == "-" {
                continue;
            }
            let ok = if *col == "cause_class" {
                cause_correct(want, &report)
            } else {
                pred.get(col) == Some(want)
            };
            let unseen = t
                .file
                .split('-')
                .next()
                .and_then(|n| n.parse::<u32>().ok())
                .is_some_and(|n| n >= 50);
            for (map, take) in [(&mut scored, true), (&mut scored_unseen, unseen)] {
                if take {
                    let e = map.entry(col).or_insert((0, 0));
                    e.0 += 1;
                    if ok {
                        e.1 += 1;
                    }
                }
            }
            if !ok {
                let got = if *col == "cause_class" {
                    format!("{:?}", named_classes(&report))
                } else {
                    pred.get(col).cloned().unwrap_or_default()
                };
                wrong.push(format!("{}: {col} want {want}, got {got}", t.file));
            }
        }
        if t.healthy {
            let errors: Vec<&str> = report
                .findings
                .iter()
                .filter(|f| f.severity == Severity::Error)
                .map(|f| f.rule.as_str())
                .collect();
            if !errors.is_empty() {
                false_alarms.push(format!("{} ({})", t.file, errors.join(", ")));
            }
        }
    }

    let pct_of = |map: &BTreeMap<&str, (u32, u32)>, col: &str| -> (u32, u32, f64) {
        let (n, ok) = map.get(col).copied().unwrap_or((0, 0));
        let pct = if n == 0 {
            0.0
        } else {
            100.0 * f64::from(ok) / f64::from(n)
        };
        (n, ok, pct)
    };
    println!("corpus: {} logs", truth.len());
    println!("| column | scored | correct | accuracy | files 50+: scored | correct | accuracy |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    let mut below = Vec::new();
    for (col, floor) in FLOORS {
        let (n, ok, pct) = pct_of(&scored, col);
        let (un, uok, upct) = pct_of(&scored_unseen, col);
        println!("| {col} | {n} | {ok} | {pct:.1}% | {un} | {uok} | {upct:.1}% |");
        if pct + 1e-9 < *floor {
            below.push(format!("{col}: {pct:.1}% < floor {floor}%"));
        }
    }
    println!("\nmismatches ({}):", wrong.len());
    for w in &wrong {
        println!("  {w}");
    }
    println!(
        "\nhealthy logs with an error finding ({}):",
        false_alarms.len()
    );
    for f in &false_alarms {
        println!("  {f}");
    }

    let new_alarms: Vec<&String> = false_alarms
        .iter()
        .filter(|f| !KNOWN_FALSE_ALARMS.iter().any(|k| f.starts_with(k)))
        .collect();
    assert!(
        new_alarms.is_empty(),
        "healthy logs now produce error findings: {new_alarms:?}"
    );
    assert!(
        below.is_empty(),
        "accuracy fell below the ratchet: {below:?}"
    );
}

#[test]
fn rule_classes_cover_the_vocabulary_used_in_truth() {
    let vocabulary: BTreeSet<&str> = [
        "none",
        "socket-fallback",
        "ib-setup",
        "gid",
        "gdr",
        "completion-error",
        "plugin-load",
        "bootstrap-interface",
        "peer-died",
        "timeout",
        "cuda",
        "duplicate-gpu",
        "nvls",
        "collnet",
        "shm",
        "straggler",
        "config",
        "host-config",
        "other",
    ]
    .into_iter()
    .collect();
    for t in read_truth() {
        let c = t.cols["cause_class"].as_str();
        assert!(
            c == "-" || vocabulary.contains(c),
            "{}: cause_class {c:?} is not in the README vocabulary",
            t.file
        );
    }
    // Today's rule ids land in the class their message describes.
    assert_eq!(class_of_rule("FAB-NCCL-SOCKET-FALLBACK"), "socket-fallback");
    assert_eq!(class_of_rule("FAB-NCCL-SOCKET"), "peer-died");
    assert_eq!(class_of_rule("FAB-NCCL-IB-TIMEOUT"), "completion-error");
    assert_eq!(class_of_rule("FAB-NCCL-IB-PROTECTION"), "gdr");
    assert_eq!(class_of_rule("FAB-NCCL-OFI"), "plugin-load");
    assert_eq!(
        class_of_rule("FAB-NCCL-BOOTSTRAP-NOIF"),
        "bootstrap-interface"
    );
    assert_eq!(class_of_rule("FAB-NCCL-TIMEOUT"), "timeout");
    assert_eq!(class_of_rule("FAB-NCCL-WARN"), "other");
    assert_eq!(class_of_rule("FAB-NCCL-RCCL-IOMMU"), "host-config");
    assert_eq!(class_of_rule("FAB-NCCL-TCPX-STALL"), "timeout");
}

/// Every fixture file of the public corpora has its row (source and ground truth) in the README
/// beside it, and every row names a file that exists.
#[test]
fn every_corpus_file_is_documented_in_its_readme() {
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let mut dirs = vec![
        fixtures.join("nccl-logs"),
        fixtures.join("nccl-tests"),
        fixtures.join("perftest"),
    ];
    let commands = fixtures.join("commands");
    for entry in std::fs::read_dir(&commands).expect("fixtures/commands") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            dirs.push(path);
        }
    }
    let mut problems = Vec::new();
    for dir in dirs {
        let readme_path = if dir.starts_with(&commands) {
            commands.join("README.md")
        } else {
            dir.join("README.md")
        };
        let readme = std::fs::read_to_string(&readme_path).expect("README.md");
        let listed: BTreeSet<String> = readme
            .lines()
            .filter_map(|l| l.strip_prefix("| "))
            .filter_map(|l| l.split(" |").next())
            .filter(|f| f.ends_with(".log") || f.ends_with(".txt"))
            .map(str::to_string)
            .collect();
        let on_disk: BTreeSet<String> = std::fs::read_dir(&dir)
            .expect("fixture dir")
            .map(|e| {
                e.expect("dir entry")
                    .file_name()
                    .to_string_lossy()
                    .to_string()
            })
            .filter(|n| n.ends_with(".log") || n.ends_with(".txt"))
            .collect();
        for f in on_disk.difference(&listed) {
            problems.push(format!("{}: {f} has no README row", dir.display()));
        }
        if !dir.starts_with(&commands) {
            for f in listed.difference(&on_disk) {
                problems.push(format!("{}: README row for missing {f}", dir.display()));
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}
