//! The message catalog against the real logs under fixtures/nccl-logs: every WARN that NCCL or
//! one of the catalogued plugins printed there is found in the catalog (its format string was
//! extracted from the sources and the matcher recognises the rendered text).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use fabrik_parse::catalog::catalog;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/nccl-logs")
}

#[test]
fn every_nccl_warn_of_the_fixtures_is_in_the_catalog() {
    let c = catalog();
    let mut seen = 0;
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(fixtures()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        // RCCL (AMD's fork) prints its own warnings; the catalog is NVIDIA NCCL's.
        if !name.ends_with(".log") || name.contains("rccl") {
            continue;
        }
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        for line in text.lines() {
            let Some(p) = line.find("NCCL WARN ") else {
                continue;
            };
            let msg = &line[p + "NCCL WARN ".len()..];
            // A paste flattened onto one line keeps the next line after a long run of blanks
            // (fixture 54): the message ends there.
            let msg = msg.split("        ").next().unwrap_or(msg).trim_end();
            // Ray's log deduplication appends ` [repeated 15x across cluster]` (fixture 137).
            let msg = match msg.rfind(" [repeated ") {
                Some(i) if msg.ends_with(" across cluster]") => &msg[..i],
                _ => msg,
            };
            seen += 1;
            if c.lookup(msg.as_bytes()).is_none() {
                missing.push(format!("{name}: {msg}"));
            }
        }
    }
    assert!(seen >= 10, "only {seen} WARN lines in the fixtures");
    assert!(
        missing.is_empty(),
        "{} of {seen} WARN lines not in the catalog:\n{}",
        missing.len(),
        missing.join("\n")
    );
}

#[test]
fn the_duplicate_gpu_warning_of_a_public_report_is_classified() {
    // NVIDIA-NeMo/RL#3155 (NCCL 2.2x): the whole WARN line as printed.
    let line = "pool0-00008:1391870:1393239 [7] init.cc:904 NCCL WARN Duplicate GPU detected : rank 15 and rank 7 both on CUDA device e4000";
    let report = fabrik_parse::nccl_log::analyze_str("nemo-rl-3155.log", line);
    let rules: Vec<&str> = report
        .processes
        .iter()
        .flat_map(|p| p.issues.iter().map(|i| i.rule.as_str()))
        .collect();
    assert_eq!(rules, ["FAB-NCCL-DUP-GPU"]);
}
