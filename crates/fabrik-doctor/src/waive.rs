//! Waivers: a known-harmless finding silenced (or its severity changed) with a reason, so a
//! health check does not drain a node for it every five minutes. A waiver without a reason is
//! refused: the report must say why each finding it hides was hidden. Waivers come from the
//! cluster file's `[[waive]]` tables or `--ignore RULE[:SUBJECT]=REASON`.

use fabrik_model::{sort_findings, Finding, Severity};
use serde::{Deserialize, Serialize};

use crate::util::{ev, finding};
use crate::Report;

pub use fabrik_model::report::Waived;

/// Rule id of "A waiver expired".
pub const EXPIRED: &str = "FAB-EXP-010";

/// One `[[waive]]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Waiver {
    /// The rule id (`FAB-PCI-003`).
    pub rule: String,
    /// A glob over the finding's subject (`mlx5_*:1`); every subject when absent. With several
    /// nodes the subject may be given with or without its `NODE/` prefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// Why the finding is accepted (shown in the report).
    pub reason: String,
    /// Keep the finding at this severity instead of removing it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<Severity>,
    /// The last day the waiver holds (a TOML date, `2026-12-31`); after it the finding is back
    /// and a warning says the waiver expired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<toml::value::Datetime>,
}

/// Why an `--ignore` argument was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WaiverError {
    /// Not `RULE[:SUBJECT]=REASON`.
    #[error("--ignore `{0}`: expected RULE[:SUBJECT]=REASON")]
    Syntax(String),
    /// The argument, and what is wrong with it.
    #[error("--ignore `{0}`: {1}")]
    Invalid(String, String),
}

impl Waiver {
    /// `RULE[:SUBJECT]=REASON`: the subject may itself hold `:` (`mlx5_0:1`), the rule never does.
    pub fn parse_flag(text: &str) -> Result<Self, WaiverError> {
        let (target, reason) = text
            .split_once('=')
            .ok_or_else(|| WaiverError::Syntax(text.to_string()))?;
        let (rule, subject) = match target.split_once(':') {
            Some((r, s)) => (r, Some(s.to_string())),
            None => (target, None),
        };
        let w = Waiver {
            rule: rule.trim().to_string(),
            subject,
            reason: reason.trim().to_string(),
            severity: None,
            expires: None,
        };
        w.validate()
            .map_err(|m| WaiverError::Invalid(text.to_string(), m))?;
        Ok(w)
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.rule.trim().is_empty() {
            return Err("a waiver needs a rule id".into());
        }
        if crate::catalog::rule(self.rule.trim()).is_none() {
            let ids: Vec<&str> = crate::catalog::rules().iter().map(|r| r.id).collect();
            return Err(format!(
                "unknown rule id `{}` (nearest known: {}); `fabrik rules` lists every id",
                self.rule.trim(),
                crate::util::nearest(&self.rule, ids, 3).join(", ")
            ));
        }
        if self.reason.trim().is_empty() {
            return Err(format!(
                "the waiver of {} has no reason: say why the finding is harmless",
                self.rule
            ));
        }
        if let Some(s) = &self.subject {
            glob::Pattern::new(s)
                .map_err(|e| format!("subject glob `{s}` of {}: {e}", self.rule))?;
        }
        if let Some(d) = &self.expires {
            if d.date.is_none() || d.time.is_some() {
                return Err(format!(
                    "expires of the {} waiver must be a date (2026-12-31)",
                    self.rule
                ));
            }
        }
        Ok(())
    }

    fn expiry(&self) -> Option<String> {
        let d = self.expires.as_ref()?.date?;
        Some(format!("{:04}-{:02}-{:02}", d.year, d.month, d.day))
    }

    fn matches(&self, f: &Finding, nodes: &[String]) -> bool {
        if !f.rule.eq_ignore_ascii_case(&self.rule) {
            return false;
        }
        let Some(glob) = &self.subject else {
            return true;
        };
        let Ok(pattern) = glob::Pattern::new(glob) else {
            return false;
        };
        if pattern.matches(&f.subject) {
            return true;
        }
        // Several nodes prefix subjects with `NODE/`; a waiver written for one node's subject
        // holds on every node.
        nodes.len() > 1
            && nodes.iter().any(|n| {
                f.subject
                    .strip_prefix(n.as_str())
                    .and_then(|rest| rest.strip_prefix('/'))
                    .is_some_and(|rest| pattern.matches(rest))
            })
    }
}

/// The civil date (`YYYY-MM-DD`, UTC) of a Unix time, to compare with waiver expiry dates.
pub fn utc_date(unix_secs: u64) -> String {
    // Howard Hinnant's days-to-civil algorithm (proleptic Gregorian).
    let z = (unix_secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// Applies waivers to a report: matching findings are removed or changed in severity and listed
/// in `report.waived`; a waiver past its expiry (`today` as `YYYY-MM-DD`) applies to nothing and
/// adds a warning saying so. The summary, and so the exit code, follow.
pub fn apply_waivers(report: &mut Report, waivers: &[Waiver], today: &str) {
    let mut expired = vec![];
    let live: Vec<&Waiver> = waivers
        .iter()
        .filter(|w| match w.expiry() {
            // ISO dates compare as text.
            Some(day) if day.as_str() < today => {
                expired.push(finding(
                    EXPIRED,
                    Severity::Warning,
                    format!("waiver {}", w.rule),
                    format!(
                        "the waiver of {}{} expired on {day} ({}); its findings are reported again",
                        w.rule,
                        w.subject
                            .as_deref()
                            .map(|s| format!(" for {s}"))
                            .unwrap_or_default(),
                        w.reason
                    ),
                    vec![ev("waive.expires", day.clone())],
                    "Fix what the waiver covered, or renew it with a new date and reason.",
                ));
                false
            }
            _ => true,
        })
        .collect();
    let mut kept = vec![];
    for mut f in std::mem::take(&mut report.findings) {
        let Some(w) = live.iter().find(|w| w.matches(&f, &report.nodes)) else {
            kept.push(f);
            continue;
        };
        report.waived.push(Waived {
            rule: f.rule.clone(),
            subject: f.subject.clone(),
            severity: f.severity,
            new_severity: w.severity,
            reason: w.reason.clone(),
            message: f.message.clone(),
            expires: w.expiry(),
        });
        if let Some(s) = w.severity {
            f.severity = s;
            kept.push(f);
        }
    }
    kept.extend(expired);
    sort_findings(&mut kept);
    report.findings = kept;
    report.summary = crate::Summary::of(&report.findings);
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::testkit::*;
    use crate::{diagnose, name_nodes};

    fn memlocked() -> Report {
        let mut n = healthy_ib_node("a");
        n.memlock = Some(fabrik_model::MemlockLimit {
            soft_bytes: Some(65536),
            hard_bytes: Some(65536),
        });
        n.rdma_devices[1].ports[0].state = state("2: INIT");
        diagnose(&name_nodes(vec![n]), None)
    }

    #[test]
    fn flags_parse_with_colons_in_the_subject_and_need_a_reason() {
        let w = Waiver::parse_flag("FAB-PORT-001:mlx5_1:1=cable on order, ticket 42").unwrap();
        assert_eq!(w.rule, "FAB-PORT-001");
        assert_eq!(w.subject.as_deref(), Some("mlx5_1:1"));
        assert_eq!(w.reason, "cable on order, ticket 42");
        assert!(matches!(
            Waiver::parse_flag("FAB-PORT-001"),
            Err(WaiverError::Syntax(_))
        ));
        assert!(matches!(
            Waiver::parse_flag("FAB-PORT-001= "),
            Err(WaiverError::Invalid(..))
        ));
        assert!(Waiver::parse_flag("FAB-PORT-001:[=x").is_err());
    }

    #[test]
    fn an_unknown_rule_id_is_refused_naming_the_nearest_known_ones() {
        let e = Waiver::parse_flag("FAB-PCI-02=typo").unwrap_err();
        let text = e.to_string();
        assert!(text.contains("unknown rule id `FAB-PCI-02`"), "{text}");
        let named = text.split("nearest known: ").nth(1).unwrap();
        assert!(named.starts_with("FAB-PCI-002"), "{text}");
        assert!(Waiver::parse_flag("FAB-NOPE-999=x").is_err());
        // Every id the catalog lists is accepted, in any case.
        for r in crate::catalog::rules() {
            Waiver::parse_flag(&format!("{}=known", r.id.to_ascii_lowercase())).unwrap();
        }
    }

    #[test]
    fn a_waiver_removes_or_downgrades_and_the_exit_code_follows() {
        let r = memlocked();
        assert!(r.has_problems(false));
        let mut a = r.clone();
        apply_waivers(
            &mut a,
            &[Waiver::parse_flag("FAB-PORT-001:mlx5_*=SM being replaced").unwrap()],
            "2026-01-01",
        );
        assert!(a.findings.iter().all(|f| f.rule != "FAB-PORT-001"));
        assert_eq!(a.waived.len(), 1);
        assert_eq!(a.waived[0].reason, "SM being replaced");
        assert_eq!(a.waived[0].new_severity, None);
        assert!(!a.has_problems(false));
        assert!(a.findings.iter().any(|f| f.rule == "FAB-RDMA-003"));

        let mut b = r.clone();
        let mut w = Waiver::parse_flag("fab-rdma-003=jobs raise it in the prolog").unwrap();
        w.severity = Some(Severity::Info);
        apply_waivers(&mut b, &[w], "2026-01-01");
        let f = b
            .findings
            .iter()
            .find(|f| f.rule == "FAB-RDMA-003")
            .unwrap();
        assert_eq!(f.severity, Severity::Info);
        assert_eq!(b.waived[0].new_severity, Some(Severity::Info));
        assert!(b.has_problems(true), "the port error is still there");

        let mut c = r.clone();
        apply_waivers(
            &mut c,
            &[Waiver::parse_flag("FAB-PORT-001:mlx5_9:1=other port").unwrap()],
            "2026-01-01",
        );
        assert!(c.waived.is_empty());
        assert_eq!(c.findings, r.findings);
    }

    #[test]
    fn an_expired_waiver_holds_nothing_and_says_so() {
        let r = memlocked();
        // One `[[waive]]` table, as the cluster file holds it.
        let waive: Vec<Waiver> = vec![toml::from_str(
            "rule = \"FAB-PORT-001\"\nreason = \"SM swap\"\nexpires = 2026-03-01\n",
        )
        .unwrap()];
        let mut on_the_day = r.clone();
        apply_waivers(&mut on_the_day, &waive, "2026-03-01");
        assert_eq!(on_the_day.waived.len(), 1);
        assert_eq!(on_the_day.waived[0].expires.as_deref(), Some("2026-03-01"));
        let mut after = r.clone();
        apply_waivers(&mut after, &waive, "2026-03-02");
        assert!(after.waived.is_empty());
        assert!(after.findings.iter().any(|f| f.rule == "FAB-PORT-001"));
        assert!(after
            .findings
            .iter()
            .any(|f| f.rule == EXPIRED && f.message.contains("SM swap")));
    }

    #[test]
    fn subjects_match_with_or_without_the_node_prefix() {
        let mut b = healthy_ib_node("gpu2");
        b.rdma_devices[0].ports[0].state = state("2: INIT");
        let mut r = diagnose(&name_nodes(vec![healthy_ib_node("gpu1"), b]), None);
        assert!(r.findings.iter().any(|f| f.subject == "gpu2/mlx5_0:1"));
        apply_waivers(
            &mut r,
            &[Waiver::parse_flag("FAB-PORT-001:mlx5_0:1=known").unwrap()],
            "2026-01-01",
        );
        assert!(r.findings.iter().all(|f| f.rule != "FAB-PORT-001"));
        assert_eq!(r.waived[0].subject, "gpu2/mlx5_0:1");
    }

    #[test]
    fn dates_are_civil_utc() {
        assert_eq!(utc_date(0), "1970-01-01");
        assert_eq!(utc_date(951_782_400), "2000-02-29");
        assert_eq!(utc_date(1_798_761_599), "2026-12-31");
    }
}
