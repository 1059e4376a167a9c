//! The rule catalog: every rule's stable id, severity, and its page (what it checks, why it
//! matters, the evidence it reads, the fix, and where the knowledge comes from). The pages are
//! data in [`pages`] (their cited sources, each once, in `sources`); this module joins them with
//! the other catalogs and writes them out.
//!
//! The counter rules' pages (FAB-CNT-1xx) are in [`counters`], beside the rules ([`crate::counter_rules`]);
//! the log rules (FAB-NCCL-*, FAB-BENCH-*) live with NCCL's message catalog
//! (`fabrik_parse::catalog::rules`); both join this table in [`rules`] and [`rule`].
//! `docs/rules/` is generated from both (tests/rule_pages.rs); the same test keeps them in sync.

pub use fabrik_model::{Rule, Scope, Source};

pub mod counters;
mod docs;
mod pages;
mod sources;

pub use docs::{explain, rules_doc, ExplainDoc, RulesDoc};
pub use pages::RULES;

/// Every rule: the doctor's node, environment, cluster and counter rules,
/// then the log and benchmark rules (FAB-NCCL-*, FAB-BENCH-*), whose pages live with NCCL's
/// message catalog in `fabrik_parse::catalog` (data/nccl-classes.txt).
pub fn rules() -> Vec<&'static Rule> {
    RULES
        .iter()
        .chain(counters::RULES)
        .chain(fabrik_parse::catalog::rules())
        .chain(fabrik_parse::perftest_failures::rules())
        .collect()
}

/// The page of rule `id` (`FAB-PORT-001`, any case) among every rule [`rules`] lists.
pub fn rule(id: &str) -> Option<&'static Rule> {
    RULES
        .iter()
        .chain(counters::RULES)
        .chain(fabrik_parse::catalog::rules())
        .chain(fabrik_parse::perftest_failures::rules())
        .find(|r| r.id.eq_ignore_ascii_case(id))
}

/// The rule's page in Markdown: what `fabrik explain ID` prints and what docs/rules/ holds.
pub fn page(rule: &Rule) -> String {
    let mut s = String::new();
    s.push_str(&format!("# {}: {}\n\n", rule.id, rule.title));
    s.push_str(&format!(
        "Severity: **{}** (at most) · Scope: {}\n\n",
        rule.severity,
        match rule.scope {
            Scope::Node => "one node",
            Scope::Env => "one node and the planned NCCL environment",
            Scope::Cluster => "across nodes",
            Scope::Counters =>
                "two samples of one node's counters (`doctor --watch`, `diff`, `top`)",
            Scope::Log => "an NCCL log or a benchmark's output (`fabrik logs`, `fabrik parse`)",
        }
    ));
    s.push_str(&format!("## What it checks\n\n{}\n\n", rule.checks));
    s.push_str(&format!("## Why it matters\n\n{}\n\n", rule.why));
    s.push_str(&format!("## Evidence read\n\n{}\n\n", rule.evidence));
    s.push_str(&format!("## Fix\n\n{}\n\n", rule.fix));
    s.push_str("## Sources\n\n");
    for src in rule.sources {
        s.push_str(&format!("- [{}]({})\n", src.title, src.url));
    }
    s
}

/// `docs/rules/README.md`: the index of all pages.
pub fn index_page() -> String {
    let mut s = String::from("# fabrik doctor rules\n\nGenerated from `crates/fabrik-doctor/src/catalog/pages/` (one file per area), for the counter rules FAB-CNT-1xx from `crates/fabrik-doctor/src/catalog/counters.rs`, and for the log and benchmark rules FAB-NCCL-*/FAB-BENCH-* from `crates/fabrik-parse/data/nccl-classes.txt`; `FABRIK_BLESS=1 cargo test -p fabrik-doctor --test rule_pages` rewrites them and the same test fails when they drift. `fabrik explain ID` prints the same page.\n\n| id | severity | scope | title |\n| --- | --- | --- | --- |\n");
    for r in rules() {
        s.push_str(&format!(
            "| [{}]({}.md) | {} | {:?} | {} |\n",
            r.id, r.id, r.severity, r.scope, r.title
        ));
    }
    s
}
