//! Every FAB-NCCL-* and FAB-BENCH-* id that the code can put in a finding is listed by
//! `fabrik rules` and has a `fabrik explain` page. The ids are read from the sources (every
//! crate's `src/`) and from the message catalog's classes, so a new id without a page fails here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use assert_cmd::Command;

fn fabrik() -> Command {
    Command::cargo_bin("fabrik").unwrap()
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// `"FAB-NCCL-..."` / `"FAB-BENCH-..."` string literals: complete ids, not prose that mentions
/// a family (`FAB-NCCL-*`).
fn ids_in(text: &str, out: &mut BTreeSet<String>) {
    for family in ["\"FAB-NCCL-", "\"FAB-BENCH-"] {
        let mut rest = text;
        while let Some(p) = rest.find(family) {
            let tail = &rest[p + 1..];
            let end = tail
                .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '-'))
                .unwrap_or(tail.len());
            if tail[end..].starts_with('"') {
                out.insert(tail[..end].to_string());
            }
            rest = &tail[end..];
        }
    }
}

fn ids_in_code() -> BTreeSet<String> {
    let crates = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&crates).unwrap() {
        let src = entry.unwrap().path().join("src");
        if src.is_dir() {
            rs_files(&src, &mut files);
        }
    }
    let mut ids = BTreeSet::new();
    for f in files {
        ids_in(&std::fs::read_to_string(&f).unwrap(), &mut ids);
    }
    let classes =
        std::fs::read_to_string(crates.join("fabrik-parse/data/nccl-classes.txt")).unwrap();
    for line in classes.lines() {
        if let Some(id) = line.strip_prefix("rule: ") {
            ids.insert(id.trim().to_string());
        }
    }
    ids
}

#[test]
fn every_log_and_bench_rule_id_has_a_rule_and_a_page() {
    let ids = ids_in_code();
    // The families as they stand when this test was written; the set only grows.
    for known in [
        "FAB-NCCL-WARN",
        "FAB-NCCL-SOCKET-FALLBACK",
        "FAB-NCCL-GDR-OFF",
        "FAB-NCCL-IB-TIMEOUT",
        "FAB-BENCH-WRONG",
        "FAB-BENCH-LOW-BUSBW",
        "FAB-BENCH-LOW-BW",
        "FAB-NCCL-DUP-GPU",
    ] {
        assert!(ids.contains(known), "{known} not found in the sources");
    }

    let out = fabrik()
        .args(["rules", "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let listed: BTreeSet<String> = v["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    let missing: Vec<&String> = ids.iter().filter(|id| !listed.contains(*id)).collect();
    assert!(missing.is_empty(), "not in `fabrik rules`: {missing:?}");

    for id in &ids {
        let out = fabrik().args(["explain", id]).output().unwrap();
        assert!(out.status.success(), "`fabrik explain {id}` failed");
        let page = String::from_utf8(out.stdout).unwrap();
        assert!(page.starts_with(&format!("# {id}: ")), "{id}: {page}");
        for section in [
            "## What it checks",
            "## Why it matters",
            "## Fix",
            "## Sources",
        ] {
            assert!(page.contains(section), "{id} page lacks {section}");
        }
    }
}

#[test]
fn the_table_lists_the_log_rules() {
    let out = fabrik().arg("rules").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("FAB-NCCL-DUP-GPU"), "{text}");
    assert!(text.contains("FAB-BENCH-WRONG"), "{text}");
}
