//! `ibdiagnet` summaries (NVIDIA ibutils2 / MFT): the `Stages Status Report` (or `Summary`)
//! table of its last lines, a header naming the `Errors` and `Warnings` columns and one row per
//! stage ending in the two counts; the `-E-` lines that explain them.

use std::collections::BTreeSet;

use fabrik_model::{Fabric, FabricCheck, Fact, FactTable, Node};
use serde::{Deserialize, Serialize};

use super::{lines, Format, Paste};

/// What an `ibdiagnet` summary said.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IbdiagnetFacts {
    /// The stages and their counts.
    pub checks: Vec<FabricCheck>,
    /// `-E-` lines.
    pub errors: Vec<String>,
    /// `-W-` lines.
    pub warnings: Vec<String>,
}

/// `ibdiagnet`.
pub struct Ibdiagnet;

impl Format for Ibdiagnet {
    type Facts = IbdiagnetFacts;
    const EXPECTED: &'static str =
        "a `Stages Status Report` (or `Summary`) table: `STAGE  Errors Warnings` then rows like `Links Check  0  2`";

    fn parse(text: &str) -> Option<IbdiagnetFacts> {
        let mut out = IbdiagnetFacts::default();
        // Column order of the two counts; None until a header is seen.
        let mut errors_first: Option<bool> = None;
        for line in lines(text) {
            let t = line.trim();
            let t = t.strip_prefix("-I-").map(str::trim).unwrap_or(t);
            if let Some(e) = t.strip_prefix("-E-") {
                if out.errors.len() < 64 {
                    out.errors.push(e.trim().to_string());
                }
                continue;
            }
            if let Some(w) = t.strip_prefix("-W-") {
                if out.warnings.len() < 64 {
                    out.warnings.push(w.trim().to_string());
                }
                continue;
            }
            let words: Vec<&str> = t.split_whitespace().collect();
            let e = words.iter().position(|w| w.eq_ignore_ascii_case("errors"));
            let w = words
                .iter()
                .position(|x| x.eq_ignore_ascii_case("warnings"));
            if let (Some(e), Some(w)) = (e, w) {
                if words
                    .first()
                    .is_some_and(|f| f.eq_ignore_ascii_case("stage") || f.starts_with("---"))
                    || words.len() <= 4
                {
                    errors_first = Some(e < w);
                    continue;
                }
            }
            let Some(errors_first) = errors_first else {
                continue;
            };
            // `Links Check  0  2` or `Links Check  0  2  comment`: the first two numbers in a
            // row after the stage's name.
            let Some(i) = (1..words.len().saturating_sub(1))
                .find(|&i| words[i].parse::<u64>().is_ok() && words[i + 1].parse::<u64>().is_ok())
            else {
                continue;
            };
            let (Ok(a), Ok(b)) = (words[i].parse::<u64>(), words[i + 1].parse::<u64>()) else {
                continue;
            };
            let stage = words[..i].join(" ");
            if stage.chars().all(|c| c == '-') {
                continue;
            }
            let (errors, warnings) = if errors_first { (a, b) } else { (b, a) };
            out.checks.push(FabricCheck {
                stage,
                warnings,
                errors,
            });
        }
        (!out.checks.is_empty()).then_some(out)
    }
}

impl Paste for Ibdiagnet {
    const NAME: &'static str = "ibdiagnet";
    const ABOUT: &'static str =
        "`ibdiagnet` summary: errors and warnings per stage (links, counters, speed/width...) and its -E- lines; `-` reads stdin";

    fn node(facts: &IbdiagnetFacts) -> Node {
        Node {
            fabric: Some(Fabric {
                checks: facts.checks.clone(),
                errors: facts.errors.clone(),
                ..Fabric::default()
            }),
            known: Some(BTreeSet::from([Fact::Fabric])),
            ..Node::default()
        }
    }

    fn table(facts: &IbdiagnetFacts) -> FactTable {
        let mut t = FactTable::new(["stage", "errors", "warnings"]);
        for c in &facts.checks {
            t.row([
                c.stage.clone(),
                c.errors.to_string(),
                c.warnings.to_string(),
            ]);
        }
        for e in facts.errors.iter().take(10) {
            t.note(format!("-E- {e}"));
        }
        t
    }
}
