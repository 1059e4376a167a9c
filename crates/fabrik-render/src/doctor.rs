//! `fabrik doctor` and `fabrik check`: a doctor [`Report`] as a terminal table grouped by
//! subject, as Markdown for a ticket, and as health-check lines. JSON is the report serialized
//! as is.

use std::fmt::Write;

use fabrik_model::report::Report;
use fabrik_model::text::visible;
use fabrik_model::{Finding, Severity};

use crate::findings;

/// `fabrik rules`: one line per rule of the catalog, its id, severity and title.
pub fn rules(rules: &[&fabrik_model::Rule]) -> String {
    let mut out = String::new();
    for r in rules {
        let _ = writeln!(out, "{:<14} {:<8} {}", r.id, r.severity.as_str(), r.title);
    }
    out
}

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

/// Health-check lines in the style of LBNL NHC, one per error, then one per warning:
/// `ERROR: fabrik: RULE SUBJECT: MESSAGE`. A scheduler wrapper takes the first line as the drain
/// reason, so each line stands alone and carries no newline from the message.
pub fn health_lines(report: &Report) -> String {
    let mut out = String::new();
    for f in &report.findings {
        let word = match f.severity {
            Severity::Error => "ERROR",
            Severity::Warning => "WARNING",
            Severity::Info => continue,
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

/// Many nodes' findings as `doctor` prints them (evidence, fix, verdict). A finding that
/// several nodes share (same rule, subject, message and fix) is printed once with their names,
/// not once per rank: eight ranks of one bad image are one problem, said once.
pub fn shared(names: Vec<String>, findings: &[Finding]) -> String {
    let mut merged: Vec<(Finding, Vec<String>)> = Vec::new();
    for f in findings {
        let split = f
            .subject
            .split_once('/')
            .filter(|(n, _)| names.iter().any(|x| x == n));
        let Some((node, rest)) = split else {
            merged.push((f.clone(), Vec::new()));
            continue;
        };
        let same = |g: &Finding| {
            g.rule == f.rule
                && g.severity == f.severity
                && g.subject == rest
                && g.message == f.message
                && g.fix == f.fix
        };
        match merged.iter_mut().find(|(g, ns)| !ns.is_empty() && same(g)) {
            Some((_, ns)) => ns.push(node.to_string()),
            None => {
                let mut g = f.clone();
                g.subject = rest.to_string();
                merged.push((g, vec![node.to_string()]));
            }
        }
    }
    let mut findings: Vec<Finding> = merged
        .into_iter()
        .map(|(mut f, ns)| {
            f.subject = match ns.as_slice() {
                [] => f.subject,
                [one] => format!("{one}/{}", f.subject),
                many => format!("{} on {}", f.subject, many.join(", ")),
            };
            f
        })
        .collect();
    fabrik_model::sort_findings(&mut findings);
    let report = Report {
        schema_version: fabrik_model::SCHEMA_VERSION,
        nodes: names,
        summary: fabrik_model::report::Summary::of(&findings),
        findings,
        waived: vec![],
    };
    table(&report)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use fabrik_model::report::Summary;
    use fabrik_model::Evidence;

    fn finding(rule: &str, severity: Severity, subject: &str, message: &str) -> Finding {
        Finding {
            rule: rule.into(),
            severity,
            subject: subject.into(),
            message: message.into(),
            evidence: vec![Evidence {
                path: format!("/sys/class/infiniband/{subject}/state"),
                value: "2: INIT".into(),
            }],
            fix: "bring the port up".into(),
        }
    }

    fn report(node: &str, findings: Vec<Finding>) -> Report {
        Report {
            schema_version: fabrik_model::SCHEMA_VERSION,
            nodes: vec![node.into()],
            summary: Summary::of(&findings),
            findings,
            waived: vec![],
        }
    }

    /// What the doctor finds on a node with one port stuck in INIT and a 64 KiB memlock limit.
    fn broken() -> Report {
        report(
            "gpu1",
            vec![
                finding(
                    "FAB-PORT-001",
                    Severity::Error,
                    "mlx5_1:1",
                    "port state is INIT, not ACTIVE",
                ),
                finding(
                    "FAB-PORT-002",
                    Severity::Error,
                    "mlx5_1:1",
                    "physical state is LinkErrorRecovery",
                ),
                finding(
                    "FAB-RDMA-003",
                    Severity::Warning,
                    "gpu1",
                    "memlock limit is 65536 bytes",
                ),
            ],
        )
    }

    #[test]
    fn a_healthy_node_is_one_line() {
        assert_eq!(
            table(&report("gpu1", vec![])),
            "verdict: gpu1: healthy, no findings\n"
        );
    }

    #[test]
    fn findings_are_grouped_by_subject_and_end_with_the_verdict() {
        let r = broken();
        let t = table(&r);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "mlx5_1:1");
        assert!(lines[1].starts_with("  ERROR FAB-PORT-001"), "{t}");
        assert_eq!(t.matches("mlx5_1:1\n").count(), 1, "{t}");
        assert!(lines
            .last()
            .unwrap()
            .starts_with("verdict: gpu1: 2 error(s), 1 warning(s)"));
        let md = markdown(&r);
        assert!(md.contains("| error | FAB-PORT-001 | mlx5_1:1 |"), "{md}");
        assert!(md.contains("### mlx5_1:1"), "{md}");
    }

    #[test]
    fn text_from_the_node_cannot_drive_the_terminal() {
        // A host name and a port state as a hostile snapshot could hold them.
        let r = report(
            "gpu\x1b]0;pwned\x07",
            vec![finding(
                "FAB-PORT-001",
                Severity::Error,
                "mlx5_1:1",
                "port state is 2: INIT\x1b[2J\u{9b}1m",
            )],
        );
        for text in [table(&r), markdown(&r)] {
            assert!(
                !text.chars().any(|c| c.is_control() && c != '\n'),
                "{text:?}"
            );
            assert!(text.contains("gpu\\x1b]0;pwned\\x07"), "{text}");
        }
    }

    #[test]
    fn health_lines_name_each_error_then_each_warning() {
        assert_eq!(health_lines(&report("gpu1", vec![])), "");
        let r = broken();
        let text = health_lines(&r);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[..2]
            .iter()
            .all(|l| l.starts_with("ERROR: fabrik: FAB-") && !l.contains('\t')));
        assert!(lines[0].contains(" mlx5_1:1: "));
        // Warnings are printed whether or not --strict makes them fail the check.
        assert!(lines[2].starts_with("WARNING: fabrik: FAB-RDMA-003 gpu1: "));
    }

    #[test]
    fn a_finding_several_nodes_share_is_printed_once_with_their_names() {
        let names = vec!["a".to_string(), "b".to_string(), "c".to_string()];
        let findings = vec![
            finding(
                "FAB-PORT-001",
                Severity::Error,
                "a/mlx5_0:1",
                "port state is INIT",
            ),
            finding(
                "FAB-PORT-001",
                Severity::Error,
                "b/mlx5_0:1",
                "port state is INIT",
            ),
            finding(
                "FAB-PORT-001",
                Severity::Error,
                "c/mlx5_1:1",
                "port state is INIT",
            ),
        ];
        let t = shared(names, &findings);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines.contains(&"mlx5_0:1 on a, b"), "{t}");
        assert!(lines.contains(&"c/mlx5_1:1"), "{t}");
        assert_eq!(t.matches("FAB-PORT-001").count(), 2, "{t}");
        assert!(lines
            .last()
            .unwrap()
            .starts_with("verdict: 3 nodes: 2 error(s)"));
    }
}
