//! The mutation campaign over the text parsers, run by CI within a bounded budget: each parser
//! is fed the real fixtures (fixtures/nccl-logs, nccl-tests, perftest) mutated by
//! `fuzz_support` (bit flips, truncation, huge numbers, NaN, invalid UTF-8, CRLF, NUL, very
//! long lines). A panic or a hang fails the test. `FABRIK_FUZZ_SECS=60 cargo test -p
//! fabrik-parse --test fuzz -- --nocapture` is the longer run for release checks
//! (docs/benchmarks/fuzz.md).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod fuzz_support;

use std::path::Path;

use fuzz_support::{campaign, check, mutated};

fn corpus(dir: &str) -> Vec<Vec<u8>> {
    let d = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(dir);
    let mut files: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.file_name().is_some_and(|n| n != "README.md"))
        .collect();
    files.sort();
    let v: Vec<Vec<u8>> = files.iter().map(|p| std::fs::read(p).unwrap()).collect();
    assert!(!v.is_empty(), "no fixtures in {}", d.display());
    v
}

#[test]
fn nccl_logs() {
    let c = corpus("nccl-logs");
    let o = campaign(
        "logs",
        move |rng| {
            let d = mutated(rng, &c);
            (d.clone(), d)
        },
        |d: &Vec<u8>| {
            let mut a = fabrik_parse::nccl_log::LogAnalyzer::new();
            let mut r = d.as_slice();
            a.read("fuzz", &mut r).unwrap();
            let report = a.finish();
            serde_json::to_string(&report).unwrap();
        },
    );
    check(&o);
}

#[test]
fn nccl_tests() {
    let c = corpus("nccl-tests");
    let o = campaign(
        "nccl-tests",
        move |rng| {
            let d = mutated(rng, &c);
            (d.clone(), d)
        },
        |d: &Vec<u8>| {
            let mut r = d.as_slice();
            if let Ok(runs) = fabrik_parse::nccl_tests::parse_reader(&mut r) {
                serde_json::to_string(&runs).unwrap();
                for run in &runs {
                    fabrik_parse::check::check_collective(run);
                }
            }
        },
    );
    check(&o);
}

#[test]
fn perftest() {
    let c = corpus("perftest");
    let o = campaign(
        "perftest",
        move |rng| {
            let d = mutated(rng, &c);
            (d.clone(), d)
        },
        |d: &Vec<u8>| {
            let mut r = d.as_slice();
            if let Ok(reports) = fabrik_parse::perftest::parse_reader(&mut r) {
                serde_json::to_string(&reports).unwrap();
                for p in &reports {
                    fabrik_parse::perftest::is_bidirectional(p);
                }
            }
        },
    );
    check(&o);
}
