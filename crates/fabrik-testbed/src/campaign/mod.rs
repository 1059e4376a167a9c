//! The fault campaign: faults injected for real into three kinds of target, fabrik run on each
//! as an operator would, and the culprit it names compared with the one injected.
//!
//! - [`netns`]: eight hosts as network namespaces; rate limits, loss (iptables' `statistic`
//!   match: no `sch_netem` needed), delay (where the kernel has `sch_netem`), MTU mismatches and
//!   black holes, a firewalled pair, small TCP buffers, a rank that never starts or is killed,
//!   two faults at once; judged by `fabrik cluster matrix` (and `cluster doctor` for MTU and TCP buffers).
//! - [`snapshots`]: copies of the project's node trees with one fact changed as the fault
//!   changes it (a port's state, rate or width, a module, memlock, GIDs, peer memory, and across
//!   nodes kernel, driver, firmware, MTU and rate drift); judged by `fabrik doctor`.
//! - [`vm`]: the Soft-RoCE VM (one boot for all its cases): a port taken down, an MTU mismatch
//!   between the two ends, a wrong GID index, a memlock limit.
//!
//! Victims, rates, loss shares and MTUs are drawn from a seeded generator, so that a run
//! exercises the fault classes rather than a fixed list of cases, and a seed replays a run.
//! Every fault case runs beside healthy runs of the same layout.

use std::collections::BTreeMap;
use std::fmt::Write as _;

pub mod netns;
mod output;
pub mod snapshots;
pub mod vm;

/// What fabrik can blame, by the names it uses in its output.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Entity {
    /// A host (node).
    Host(String),
    /// The path between two hosts, in either order.
    Link(String, String),
    /// One RDMA port of a host (`mlx5_3:1`).
    Port(String, String),
    /// The whole fabric, or a verdict that blames nothing in particular (`undecided`).
    Fabric,
}

impl Entity {
    /// Whether naming `self` is naming what `expected` stands for: the same host (a port of it
    /// or the host itself: a finding about the node of a downed port names the right node), the
    /// same port, or the same pair.
    pub fn consistent(&self, expected: &Entity) -> bool {
        use Entity::*;
        match (self, expected) {
            (Host(a), Host(b)) => a == b,
            (Host(a), Port(b, _)) | (Port(a, _), Host(b)) => a == b,
            (Port(a, p), Port(b, q)) => a == b && p == q,
            (Link(a, b), Link(c, d)) => (a == c && b == d) || (a == d && b == c),
            _ => false,
        }
    }
}

impl std::fmt::Display for Entity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Entity::Host(h) => write!(f, "host {h}"),
            Entity::Link(a, b) => write!(f, "link {a}<->{b}"),
            Entity::Port(h, p) => write!(f, "port {h}/{p}"),
            Entity::Fabric => write!(f, "the fabric"),
        }
    }
}

/// One run of fabrik on one target, faulty or healthy.
#[derive(Debug, Clone)]
pub struct Run {
    /// `netns`, `snapshot` or `vm`.
    pub target: &'static str,
    /// The fault class (`host loss`, `port state`...), or `healthy`.
    pub class: String,
    /// What was injected where, and how fabrik was run.
    pub detail: String,
    /// What fabrik should name; empty for a healthy run.
    pub expected: Vec<Entity>,
    /// What fabrik named.
    pub named: Vec<Entity>,
    /// Seconds from starting fabrik to its verdict.
    pub seconds: f64,
    /// Something worth saying beside the outcome (a run that had to be killed, a rule that
    /// another issue adds).
    pub note: Option<String>,
    /// Left out of the totals: the rule that would name this fault is not in this build.
    pub pending: bool,
}

/// How one run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    /// The injected culprit, and nothing else, was named.
    Right,
    /// Something was named, but not exactly the injected culprit.
    Wrong,
    /// Nothing was named.
    Missed,
    /// A healthy run named nothing.
    Quiet,
    /// A healthy run named something.
    FalseAlarm,
}

impl Run {
    /// Expected culprits that some named entity stands for.
    pub fn found(&self) -> usize {
        self.expected
            .iter()
            .filter(|e| self.named.iter().any(|n| n.consistent(e)))
            .count()
    }

    /// Named entities that stand for no expected culprit.
    pub fn false_positives(&self) -> usize {
        self.named
            .iter()
            .filter(|n| !self.expected.iter().any(|e| n.consistent(e)))
            .count()
    }

    /// Named entities that stand for an expected culprit.
    pub fn true_positives(&self) -> usize {
        self.named.len() - self.false_positives()
    }

    /// The run's outcome.
    pub fn outcome(&self) -> Outcome {
        if self.expected.is_empty() {
            return if self.named.is_empty() {
                Outcome::Quiet
            } else {
                Outcome::FalseAlarm
            };
        }
        if self.named.is_empty() {
            Outcome::Missed
        } else if self.found() == self.expected.len() && self.false_positives() == 0 {
            Outcome::Right
        } else {
            Outcome::Wrong
        }
    }
}

/// The campaign's totals.
#[derive(Debug, Clone, PartialEq)]
pub struct Totals {
    /// Named entities that stand for an injected culprit, over all counted runs.
    pub true_positives: usize,
    /// Named entities that stand for none (healthy runs' false alarms included).
    pub false_positives: usize,
    /// Injected culprits that were named.
    pub found: usize,
    /// Injected culprits.
    pub injected: usize,
    /// Healthy runs that stayed quiet, and healthy runs.
    pub quiet: (usize, usize),
    /// Median seconds to a verdict over the fault runs.
    pub median_s: f64,
    /// The longest.
    pub max_s: f64,
}

impl Totals {
    /// Of everything named, the share that was injected; 1 when nothing was named.
    pub fn precision(&self) -> f64 {
        let all = self.true_positives + self.false_positives;
        if all == 0 {
            1.0
        } else {
            self.true_positives as f64 / all as f64
        }
    }

    /// Of everything injected, the share that was named; 1 when nothing was injected.
    pub fn recall(&self) -> f64 {
        if self.injected == 0 {
            1.0
        } else {
            self.found as f64 / self.injected as f64
        }
    }
}

/// The totals over the runs that count (pending ones left out).
pub fn totals(runs: &[Run]) -> Totals {
    let counted: Vec<&Run> = runs.iter().filter(|r| !r.pending).collect();
    let mut times: Vec<f64> = counted
        .iter()
        .filter(|r| !r.expected.is_empty())
        .map(|r| r.seconds)
        .collect();
    times.sort_by(f64::total_cmp);
    let median_s = match times.len() {
        0 => 0.0,
        n if n % 2 == 1 => times[n / 2],
        n => (times[n / 2 - 1] + times[n / 2]) / 2.0,
    };
    let healthy: Vec<&&Run> = counted.iter().filter(|r| r.expected.is_empty()).collect();
    Totals {
        true_positives: counted.iter().map(|r| r.true_positives()).sum(),
        false_positives: counted.iter().map(|r| r.false_positives()).sum(),
        found: counted.iter().map(|r| r.found()).sum(),
        injected: counted.iter().map(|r| r.expected.len()).sum(),
        quiet: (
            healthy
                .iter()
                .filter(|r| r.outcome() == Outcome::Quiet)
                .count(),
            healthy.len(),
        ),
        median_s,
        max_s: times.last().copied().unwrap_or(0.0),
    }
}

/// The confusion table (Markdown): one row per target and class, the runs' outcomes counted,
/// then the totals.
pub fn table(runs: &[Run]) -> String {
    #[derive(Default)]
    struct Row {
        right: usize,
        wrong: usize,
        missed: usize,
        quiet: usize,
        alarm: usize,
        secs: Vec<f64>,
        pending: bool,
    }
    let mut rows: BTreeMap<(&str, bool, &str), Row> = BTreeMap::new();
    for r in runs {
        let row = rows
            .entry((r.target, r.expected.is_empty(), r.class.as_str()))
            .or_default();
        row.pending |= r.pending;
        row.secs.push(r.seconds);
        match r.outcome() {
            Outcome::Right => row.right += 1,
            Outcome::Wrong => row.wrong += 1,
            Outcome::Missed => row.missed += 1,
            Outcome::Quiet => row.quiet += 1,
            Outcome::FalseAlarm => row.alarm += 1,
        }
    }
    let mut out = String::new();
    out.push_str(
        "| target | class | runs | named right | wrong culprit | missed | quiet | false alarm | median s |\n",
    );
    out.push_str("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for ((target, healthy, class), row) in &rows {
        let mut secs = row.secs.clone();
        secs.sort_by(f64::total_cmp);
        let median = secs.get(secs.len() / 2).copied().unwrap_or(0.0);
        let dash = |n: usize, applies: bool| {
            if applies {
                n.to_string()
            } else {
                "-".to_string()
            }
        };
        let _ = writeln!(
            out,
            "| {target} | {class}{} | {} | {} | {} | {} | {} | {} | {median:.1} |",
            if row.pending { " (pending)" } else { "" },
            secs.len(),
            dash(row.right, !healthy),
            dash(row.wrong, !healthy),
            dash(row.missed, !healthy),
            dash(row.quiet, *healthy),
            dash(row.alarm, *healthy),
        );
    }
    let t = totals(runs);
    let _ = writeln!(
        out,
        "\nprecision {:.3} ({} of {} named were injected), recall {:.3} ({} of {} injected were named), healthy runs quiet {} of {}, median time to a verdict {:.1} s (longest {:.1} s)",
        t.precision(),
        t.true_positives,
        t.true_positives + t.false_positives,
        t.recall(),
        t.found,
        t.injected,
        t.quiet.0,
        t.quiet.1,
        t.median_s,
        t.max_s
    );
    out
}

/// One line per run that did not end as it should, with what was injected and named.
pub fn misses(runs: &[Run]) -> String {
    let mut out = String::new();
    for r in runs {
        let o = r.outcome();
        if matches!(o, Outcome::Right | Outcome::Quiet) {
            continue;
        }
        let list = |v: &[Entity]| {
            if v.is_empty() {
                "nothing".to_string()
            } else {
                v.iter()
                    .map(|e| e.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        let _ = writeln!(
            out,
            "- {} {} ({:?}{}): {}; expected {}, named {}{}",
            r.target,
            r.class,
            o,
            if r.pending { ", pending" } else { "" },
            r.detail,
            list(&r.expected),
            list(&r.named),
            r.note
                .as_deref()
                .map(|n| format!(" ({n})"))
                .unwrap_or_default()
        );
    }
    out
}

/// A seeded generator for the campaign's choices, so that a run can be replayed.
pub type Rng = fastrand::Rng;

/// The host names fabrik gives the namespace hosts (`--name node<h>`) and the copies of a tree.
pub fn node_name(h: usize) -> String {
    format!("node{h}")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn run(expected: Vec<Entity>, named: Vec<Entity>) -> Run {
        Run {
            target: "netns",
            class: "x".into(),
            detail: String::new(),
            expected,
            named,
            seconds: 1.0,
            note: None,
            pending: false,
        }
    }

    fn h(n: &str) -> Entity {
        Entity::Host(n.into())
    }

    #[test]
    fn outcomes_and_totals_count_what_was_named() {
        let runs = vec![
            run(vec![h("a")], vec![h("a")]),
            run(vec![h("a")], vec![h("b")]),
            run(vec![h("a")], vec![]),
            run(vec![], vec![]),
            run(vec![], vec![h("c")]),
            run(
                vec![Entity::Port("a".into(), "mlx5_0:1".into())],
                vec![h("a"), Entity::Port("a".into(), "mlx5_0:1".into())],
            ),
            run(
                vec![Entity::Link("a".into(), "b".into())],
                vec![Entity::Link("b".into(), "a".into()), h("a")],
            ),
        ];
        let o: Vec<Outcome> = runs.iter().map(Run::outcome).collect();
        use Outcome::*;
        assert_eq!(o, [Right, Wrong, Missed, Quiet, FalseAlarm, Right, Wrong]);
        let t = totals(&runs);
        // Named: a (tp), b (fp), c (fp), a + port (tp tp), link (tp) + a (fp).
        assert_eq!((t.true_positives, t.false_positives), (4, 3));
        assert_eq!((t.found, t.injected), (3, 5));
        assert_eq!(t.quiet, (1, 2));
        let md = table(&runs);
        assert!(md.contains("| netns | x | 5 | 2 | 2 | 1 | - | - |"), "{md}");
        assert!(md.contains("| netns | x | 2 | - | - | - | 1 | 1 |"), "{md}");
        assert!(md.contains("precision 0.571"), "{md}");
    }

    #[test]
    fn pending_runs_are_shown_but_not_counted() {
        let mut p = run(vec![h("a")], vec![]);
        p.pending = true;
        let t = totals(&[p.clone(), run(vec![h("b")], vec![h("b")])]);
        assert_eq!((t.found, t.injected), (1, 1));
        assert!(table(&[p]).contains("x (pending)"));
    }
}
