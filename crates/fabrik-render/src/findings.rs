//! Findings for people: one text layout and one Markdown layout, used by every command that
//! prints findings (doctor, check, logs, parse, diff, top, the cluster doctor). Subjects,
//! messages and evidence carry names and values read from nodes and logs, so every string
//! passes through [`visible`] on its way to a terminal.

use std::collections::BTreeMap;
use std::fmt::Write;

use fabrik_model::text::{visible, visible_lines};
use fabrik_model::{Finding, Severity};

/// The severity as a fixed-width column word.
fn label(s: Severity) -> &'static str {
    match s {
        Severity::Error => "ERROR",
        Severity::Warning => "WARN ",
        Severity::Info => "info ",
    }
}

/// Subjects in the order of their worst finding (errors first), then by name; the findings of
/// each subject keep their given order.
pub fn grouped(findings: &[Finding]) -> Vec<(&str, Vec<&Finding>)> {
    let mut groups: BTreeMap<&str, Vec<&Finding>> = BTreeMap::new();
    for f in findings {
        groups.entry(f.subject.as_str()).or_default().push(f);
    }
    let mut v: Vec<(&str, Vec<&Finding>)> = groups.into_iter().collect();
    v.sort_by(|a, b| {
        let worst = |g: &Vec<&Finding>| g.iter().map(|f| f.severity).max();
        worst(&b.1).cmp(&worst(&a.1)).then_with(|| a.0.cmp(b.0))
    });
    v
}

/// Findings grouped by subject: the subject on its own line, then each finding with its
/// severity, rule and message, its evidence (`path = value`) and its fix, and a blank line
/// after each subject. Empty for no findings.
pub fn text(findings: &[Finding]) -> String {
    let mut out = String::new();
    for (subject, group) in grouped(findings) {
        let _ = writeln!(out, "{}", visible(subject));
        for f in group {
            let _ = writeln!(
                out,
                "  {} {}  {}",
                label(f.severity),
                f.rule,
                visible(&f.message)
            );
            for e in &f.evidence {
                let _ = writeln!(
                    out,
                    "          {} = {}",
                    visible(&e.path),
                    visible(&e.value)
                );
            }
            let _ = writeln!(out, "          fix: {}", visible_lines(&f.fix));
        }
        let _ = writeln!(out);
    }
    out
}

/// A Markdown table cell: pipes escaped, one line.
pub fn md_cell(s: &str) -> String {
    visible(&s.replace('|', "\\|").replace('\n', " ")).into_owned()
}

/// Findings for a ticket: a table of all of them (severity, rule, subject, finding), then a
/// section per subject with each finding's evidence in a code block and its fix. Empty for no
/// findings.
pub fn markdown(findings: &[Finding]) -> String {
    let mut out = String::new();
    if findings.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "| severity | rule | subject | finding |\n| --- | --- | --- | --- |"
    );
    for f in findings {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            f.severity,
            f.rule,
            md_cell(&f.subject),
            md_cell(&f.message)
        );
    }
    let _ = writeln!(out);
    for (subject, group) in grouped(findings) {
        let _ = writeln!(out, "### {}\n", visible(subject));
        for f in group {
            let _ = writeln!(
                out,
                "**{} {}**: {}\n",
                f.severity,
                f.rule,
                visible(&f.message)
            );
            if !f.evidence.is_empty() {
                let _ = writeln!(out, "```");
                for e in &f.evidence {
                    let _ = writeln!(out, "{} = {}", visible(&e.path), visible(&e.value));
                }
                let _ = writeln!(out, "```");
            }
            let _ = writeln!(out, "Fix: {}\n", visible_lines(&f.fix));
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use fabrik_model::Evidence;

    fn finding(rule: &str, severity: Severity, subject: &str) -> Finding {
        Finding {
            rule: rule.into(),
            severity,
            subject: subject.into(),
            message: format!("{rule} on {subject}"),
            evidence: vec![Evidence {
                path: format!("/sys/class/infiniband/{subject}/state"),
                value: "2: INIT".into(),
            }],
            fix: "bring | the port up".into(),
        }
    }

    #[test]
    fn text_groups_by_subject_worst_first() {
        let all = [
            finding("FAB-A", Severity::Warning, "mlx5_0:1"),
            finding("FAB-B", Severity::Error, "mlx5_1:1"),
            finding("FAB-C", Severity::Info, "mlx5_0:1"),
        ];
        let t = text(&all);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "mlx5_1:1");
        assert_eq!(lines[1], "  ERROR FAB-B  FAB-B on mlx5_1:1");
        assert_eq!(
            lines[2],
            "          /sys/class/infiniband/mlx5_1:1/state = 2: INIT"
        );
        assert_eq!(lines[3], "          fix: bring | the port up");
        assert_eq!(lines[4], "");
        assert_eq!(lines[5], "mlx5_0:1");
        assert!(lines[6].starts_with("  WARN  FAB-A  "));
        assert!(lines[9].starts_with("  info  FAB-C  "));
        assert_eq!(text(&[]), "");
    }

    #[test]
    fn markdown_escapes_cells_and_keeps_evidence_in_code() {
        let mut f = finding("FAB-B", Severity::Error, "a|b");
        f.message = "two\nlines".into();
        let md = markdown(&[f]);
        assert!(md.contains("| error | FAB-B | a\\|b | two lines |"), "{md}");
        assert!(md.contains("### a|b\n"), "{md}");
        assert!(md.contains("```\n/sys/class/infiniband/a|b/state = 2: INIT\n```"));
        assert_eq!(markdown(&[]), "");
    }

    #[test]
    fn terminal_control_from_inputs_is_made_visible() {
        let t = text(&[finding("FAB-B", Severity::Error, "gpu\x1b]0;x\x07")]);
        assert!(!t.chars().any(|c| c.is_control() && c != '\n'), "{t:?}");
    }
}
