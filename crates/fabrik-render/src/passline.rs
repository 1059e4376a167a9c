//! A result judged against its pass line (`--expect`): the line and its basis, the verdict, and
//! what fell below it.

use std::fmt::Write as _;

use fabrik_model::passline::{Judged, Judgement, LinksJudgement, Verdict};

/// Parsed runs (`parse nccl-tests`, `parse perftest`): each one's table (`table`), then its
/// judgement when it has a pass line.
pub fn judged_runs<T>(runs: &[Judged<T>], table: fn(&T) -> String) -> String {
    let mut out = String::new();
    for r in runs {
        out.push_str(&table(&r.report));
        if let Some(j) = &r.pass_line {
            out.push_str(&judgement(j));
        }
    }
    out
}

/// The table lines of a judged result: the line and its basis, then a verdict per row.
pub fn judgement(j: &Judgement) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "pass line {:.1} {} ({}): {}",
        j.line.value,
        j.line.unit,
        j.line.basis,
        j.verdict.as_str().to_uppercase()
    );
    for r in &j.rows {
        let _ = writeln!(
            out,
            "  {:>12} bytes {:>10.2} {}  {}",
            r.bytes,
            r.value,
            j.line.unit,
            r.verdict.as_str()
        );
    }
    out
}

/// The table lines of a judged matrix: the line, then each link below it.
pub fn links(j: &LinksJudgement) -> String {
    let mut out = String::new();
    let below: Vec<_> = j
        .links
        .iter()
        .filter(|l| l.verdict == Verdict::Fail)
        .collect();
    let _ = writeln!(
        out,
        "pass line {:.1} {} ({}): {} ({} of {} links below)",
        j.line.value,
        j.line.unit,
        j.line.basis,
        j.verdict.as_str().to_uppercase(),
        below.len(),
        j.links.len()
    );
    for l in below {
        let _ = writeln!(
            out,
            "BELOW LINE rank {} -> rank {}: {:.3} {}",
            l.src, l.dst, l.value, j.line.unit
        );
    }
    out
}
