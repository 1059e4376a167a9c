//! Text renderings of a [`Report`]: a terminal table grouped by subject, and Markdown for a
//! ticket. JSON is the report serialized as is.

use std::fmt::Write;

use fabrik_model::text::visible;
use fabrik_model::Severity;
use fabrik_render::findings;

use crate::Report;

/// The one-line verdict that ends the text report (`verdict: NODE: healthy, no findings`).
pub fn verdict(report: &Report) -> String {
    let s = &report.summary;
    let nodes = match report.nodes.len() {
        1 => visible(&report.nodes[0]).into_owned(),
        n => format!("{n} nodes"),
    };
    if s.errors == 0 && s.warnings == 0 {
        if s.infos == 0 {
            format!("verdict: {nodes}: healthy, no findings")
        } else {
            format!(
                "verdict: {nodes}: no problems found ({} informational)",
                s.infos
            )
        }
    } else {
        format!(
            "verdict: {nodes}: {} error(s), {} warning(s), {} info — {}",
            s.errors,
            s.warnings,
            s.infos,
            if s.errors > 0 {
                "fix the errors before running multi-node jobs"
            } else {
                "usable, but below its best"
            }
        )
    }
}

/// The waived findings, one line each with the reason: printed under the verdict so that a
/// silenced finding is never invisible.
pub fn waived(report: &Report) -> String {
    let mut out = String::new();
    for w in &report.waived {
        let what = match w.new_severity {
            Some(s) => format!("{} -> {s}", w.severity),
            None => format!("{} waived", w.severity),
        };
        let until = w
            .expires
            .as_deref()
            .map(|d| format!(" (until {d})"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "waived: {} {} [{what}]: {}{until}",
            w.rule, w.subject, w.reason
        );
    }
    out
}

/// The findings grouped by subject, then the verdict and what was waived.
pub fn table(report: &Report) -> String {
    let mut out = findings::text(&report.findings);
    let _ = writeln!(out, "{}", verdict(report));
    out.push_str(&waived(report));
    out
}

/// Health-check lines in the style of LBNL NHC, one per error (and per warning with `strict`):
/// `ERROR: fabrik: RULE SUBJECT: MESSAGE`. A scheduler wrapper takes the first line as the drain
/// reason, so each line stands alone and carries no newline from the message.
pub fn health_lines(report: &Report, strict: bool) -> String {
    let mut out = String::new();
    for f in &report.findings {
        let word = match f.severity {
            Severity::Error => "ERROR",
            Severity::Warning if strict => "WARNING",
            _ => continue,
        };
        let _ = writeln!(
            out,
            "{word}: fabrik: {} {}: {}",
            f.rule,
            visible(&f.subject),
            visible(&f.message)
        );
    }
    out
}

/// A heading with the nodes and the verdict, what was waived, then the findings.
pub fn markdown(report: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## fabrik doctor: {}\n",
        visible(&report.nodes.join(", "))
    );
    let _ = writeln!(out, "**{}**\n", verdict(report));
    if !report.waived.is_empty() {
        let _ = writeln!(out, "Waived:\n");
        for line in waived(report).lines() {
            let _ = writeln!(
                out,
                "- {}",
                findings::md_cell(line.trim_start_matches("waived: "))
            );
        }
        let _ = writeln!(out);
    }
    out.push_str(&findings::markdown(&report.findings));
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::testkit::*;
    use crate::{diagnose, name_nodes};

    #[test]
    fn a_healthy_node_is_one_line() {
        let r = diagnose(&name_nodes(vec![healthy_ib_node("gpu1")]), None);
        assert_eq!(table(&r), "verdict: gpu1: healthy, no findings\n");
    }

    #[test]
    fn findings_are_grouped_by_subject_and_end_with_the_verdict() {
        let mut n = healthy_ib_node("gpu1");
        n.rdma_devices[1].ports[0].state = state("2: INIT");
        n.rdma_devices[1].ports[0].phys_state = state("6: LinkErrorRecovery");
        n.memlock = Some(fabrik_model::MemlockLimit {
            soft_bytes: Some(65536),
            hard_bytes: Some(65536),
        });
        let r = diagnose(&name_nodes(vec![n]), None);
        let t = table(&r);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "mlx5_1:1");
        assert!(lines[1].starts_with("  ERROR FAB-PORT-001"));
        assert_eq!(
            t.matches("\nmlx5_1:1\n").count() + usize::from(t.starts_with("mlx5_1:1\n")),
            1
        );
        assert!(lines
            .last()
            .unwrap()
            .starts_with("verdict: gpu1: 2 error(s), 1 warning(s)"));
        let md = markdown(&r);
        assert!(md.contains("| error | FAB-PORT-001 | mlx5_1:1 |"));
        assert!(md.contains("### mlx5_1:1"));
    }

    #[test]
    fn text_from_the_node_cannot_drive_the_terminal() {
        // A host name and a port state as a hostile snapshot could hold them.
        let mut n = healthy_ib_node("gpu\x1b]0;pwned\x07");
        n.rdma_devices[1].ports[0].state = state("2: INIT\x1b[2J\u{9b}1m");
        let r = diagnose(&name_nodes(vec![n]), None);
        assert!(!r.findings.is_empty());
        for text in [table(&r), markdown(&r)] {
            assert!(
                !text.chars().any(|c| c.is_control() && c != '\n'),
                "{text:?}"
            );
            assert!(text.contains("gpu\\x1b]0;pwned\\x07"), "{text}");
        }
        // The report itself (the JSON) keeps the exact text.
        assert!(r.nodes[0].contains('\x1b'));
    }

    #[test]
    fn health_lines_name_each_error_and_warnings_only_when_strict() {
        let r = diagnose(&name_nodes(vec![healthy_ib_node("gpu1")]), None);
        assert_eq!(health_lines(&r, true), "");
        let mut n = healthy_ib_node("gpu1");
        n.rdma_devices[1].ports[0].state = state("2: INIT");
        n.rdma_devices[1].ports[0].phys_state = state("6: LinkErrorRecovery");
        n.memlock = Some(fabrik_model::MemlockLimit {
            soft_bytes: Some(65536),
            hard_bytes: Some(65536),
        });
        let r = diagnose(&name_nodes(vec![n]), None);
        let plain = health_lines(&r, false);
        assert!(plain
            .lines()
            .all(|l| l.starts_with("ERROR: fabrik: FAB-") && !l.contains('\t')));
        assert_eq!(plain.lines().count(), r.summary.errors);
        assert!(plain.lines().next().unwrap().contains(" mlx5_1:1: "));
        let strict = health_lines(&r, true);
        assert_eq!(
            strict.lines().count(),
            r.summary.errors + r.summary.warnings
        );
        assert!(strict.contains("\nWARNING: fabrik: "));
    }
}
