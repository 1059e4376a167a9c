//! docs/rules/ holds one page per rule, generated from the catalog. This test fails when a page
//! is missing, stale or orphaned; `FABRIK_BLESS=1 cargo test -p fabrik-doctor --test rule_pages`
//! rewrites them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::PathBuf;

use fabrik_doctor::catalog;

fn docs_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/rules")
}

#[test]
fn rule_pages_match_the_catalog() {
    let dir = docs_dir();
    let mut expected: Vec<(String, String)> = catalog::rules()
        .into_iter()
        .map(|r| (format!("{}.md", r.id), catalog::page(r)))
        .collect();
    expected.push(("README.md".to_string(), catalog::index_page()));
    if std::env::var_os("FABRIK_BLESS").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            if p.extension().is_some_and(|e| e == "md") {
                std::fs::remove_file(p).unwrap();
            }
        }
        for (name, text) in &expected {
            std::fs::write(dir.join(name), text).unwrap();
        }
    }
    for (name, text) in &expected {
        let on_disk = std::fs::read_to_string(dir.join(name))
            .unwrap_or_else(|_| panic!("docs/rules/{name} is missing; run with FABRIK_BLESS=1"));
        assert_eq!(
            &on_disk, text,
            "docs/rules/{name} is stale; run with FABRIK_BLESS=1"
        );
    }
    let names: BTreeSet<String> = expected.into_iter().map(|(n, _)| n).collect();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            names.contains(&name),
            "docs/rules/{name} belongs to no rule"
        );
    }
}

#[test]
fn every_rule_page_is_complete() {
    let mut ids = BTreeSet::new();
    for r in catalog::rules() {
        assert!(ids.insert(r.id), "duplicate id {}", r.id);
        assert!(r.id.starts_with("FAB-"));
        for (what, text) in [
            ("title", r.title),
            ("checks", r.checks),
            ("why", r.why),
            ("evidence", r.evidence),
            ("fix", r.fix),
        ] {
            assert!(text.len() > 10, "{} has no real {what}", r.id);
        }
        assert!(!r.sources.is_empty(), "{} cites no source", r.id);
        for s in r.sources {
            assert!(
                s.url.starts_with("https://"),
                "{}: source {} is not a URL",
                r.id,
                s.url
            );
        }
    }
}
