//! The text a person reads: the plan, an apply run's before/after with its verdict, an undo.

use std::fmt::Write as _;

use fabrik_doctor::remedy::{Op, Risk, Takes};

use crate::apply::{Outcome, Status, Undone, Verdict, Verdicts};
use crate::quote::{comment, words};
use crate::{ConvergeSource, Plan};

fn shown(op: &Op) -> String {
    let argv = match op {
        Op::Run { argv } => argv.clone(),
        Op::Write { path, value } => vec!["echo".into(), value.clone(), ">".into(), path.clone()],
    };
    words(&argv).unwrap_or_else(|_| comment(&argv.join(" ")))
}

fn takes(t: Takes) -> &'static str {
    match t {
        Takes::Now => "takes effect now",
        Takes::NewSessions => "takes effect for new sessions",
        Takes::FirmwareReset => "takes effect at the next firmware reset",
    }
}

/// The plan, node by node: each change with its before and after, commands, files and risk;
/// then what no change fixes.
pub fn plan(p: &Plan) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "fabrik fix: {} finding(s) on {} node(s): {} automatic, {} need a drained node, {} manual only; {} change(s)",
        p.items.len(),
        p.nodes.len(),
        p.summary.automatic,
        p.summary.needs_drain,
        p.summary.manual,
        p.steps.len()
    );
    for node in &p.nodes {
        let steps: Vec<_> = p.steps_of(node).collect();
        let manual: Vec<_> = p.manual_of(node).collect();
        let converge: Vec<_> = p
            .items
            .iter()
            .filter(|i| &i.node == node && i.converge.is_some())
            .collect();
        if steps.is_empty() && manual.is_empty() && converge.is_empty() {
            continue;
        }
        let _ = writeln!(s, "\n{}", comment(node));
        for st in steps {
            let _ = writeln!(
                s,
                "  {} [{}] {}: {} -> {} ({}, {})",
                st.id,
                st.rules.join(" "),
                comment(&st.setting),
                comment(st.previous.as_deref().unwrap_or("unknown")),
                comment(&st.target),
                match st.risk {
                    Risk::SafeLive => "safe live",
                    Risk::NeedsDrain => "needs a drained node",
                },
                takes(st.takes)
            );
            for op in st.change.apply() {
                let _ = writeln!(s, "      now:  {}", shown(&op));
            }
            for f in st.change.persist() {
                let _ = writeln!(s, "      keep: {}", comment(&f.path));
            }
            if let Some(t) = &st.then {
                let _ = writeln!(s, "      then: {}", comment(t));
            }
        }
        for i in converge {
            if let Some(c) = &i.converge {
                let from = match &c.source {
                    ConvergeSource::Expectations => "the expectations file".to_string(),
                    ConvergeSource::Majority { nodes, of } => format!("{nodes} of {of} nodes"),
                };
                let _ = writeln!(
                    s,
                    "  converge [{}]: `{}` ({})",
                    i.rule,
                    comment(&c.value),
                    from
                );
            }
        }
        for i in manual {
            for m in &i.manual {
                let _ = writeln!(
                    s,
                    "  manual [{}] {}: {}",
                    i.rule,
                    comment(&i.subject),
                    comment(m)
                );
            }
        }
    }
    s
}

/// An apply run: each step's value before and after, what was skipped or not reached, and the
/// verdict of the checks run again.
pub fn applied(node: &str, o: &Outcome, verdicts: &[Verdict], record_path: &str) -> String {
    let mut s = String::new();
    let made = o
        .record
        .steps
        .iter()
        .filter(|d| d.status == Status::Applied)
        .count();
    let _ = writeln!(
        s,
        "fabrik fix --apply on {}: {} step(s) changed, {} already set, {} skipped; undo record {}",
        comment(node),
        made,
        o.record
            .steps
            .iter()
            .filter(|d| d.status == Status::AlreadySet)
            .count(),
        o.skipped.len(),
        comment(record_path)
    );
    for d in &o.record.steps {
        let _ = writeln!(
            s,
            "  {} [{}] {}: before {}, after {}: {}",
            d.id,
            d.rules.join(" "),
            comment(&d.change.setting()),
            comment(d.previous.as_deref().unwrap_or("unknown")),
            comment(d.after.as_deref().unwrap_or(&d.change.target())),
            match d.status {
                Status::Applied => "changed".to_string(),
                Status::AlreadySet => "already set".to_string(),
                Status::Failed => format!("FAILED: {}", comment(d.error.as_deref().unwrap_or(""))),
                other => format!("{other:?}"),
            }
        );
        for f in &d.files {
            let _ = writeln!(
                s,
                "      kept in {} ({})",
                comment(&f.path),
                if f.before.is_some() {
                    "replaced"
                } else {
                    "new"
                }
            );
        }
    }
    for (id, why) in &o.skipped {
        let _ = writeln!(s, "  {id}: skipped, {why}");
    }
    if let Some(f) = o.failed() {
        let _ = writeln!(
            s,
            "stopped at {}: the steps above it were made (undo with `fabrik fix --undo {}`), these were not: {}",
            f.id,
            comment(record_path),
            if o.not_attempted.is_empty() {
                "none".to_string()
            } else {
                o.not_attempted.join(", ")
            }
        );
    }
    if !verdicts.is_empty() {
        s.push_str("verdict (the checks run again):\n");
        for v in verdicts {
            let _ = writeln!(
                s,
                "  [{}] {}: {}",
                v.rule,
                comment(&v.subject),
                match v.outcome {
                    Verdicts::Fixed => "fixed, the finding is gone",
                    Verdicts::Pending =>
                        "changed, takes effect later (see the step); the finding stays until then",
                    Verdicts::StillPresent => "STILL PRESENT after the change",
                    Verdicts::NotApplied => "not applied",
                }
            );
        }
    }
    s
}

/// An undo run.
pub fn undone(u: &Undone) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "fabrik fix --undo on {}: {} step(s) put back, {} failed",
        comment(&u.record.node),
        u.restored.len(),
        u.failed.len()
    );
    for d in &u.record.steps {
        let _ = writeln!(
            s,
            "  {} {}: back to {}: {:?}{}",
            d.id,
            comment(&d.change.setting()),
            comment(d.previous.as_deref().unwrap_or("unknown")),
            d.status,
            d.error
                .as_deref()
                .map(|e| format!(" ({})", comment(e)))
                .unwrap_or_default()
        );
    }
    s
}
