//! `fabrik fix`: from the doctor's findings to the configuration changes that clear them.
//!
//! [`plan`] is pure: findings and the nodes they were found on (and the expectations, when
//! given) to a [`Plan`] that lists, per finding, the changes its rule's remediation calls for
//! (`fabrik_doctor::remedy`) or the sentence a person acts on. [`script`] and [`ansible`] render
//! a plan as an idempotent bash script and as a playbook; [`apply`] makes the changes on the live
//! node with an undo record and undoes them from it. Every value from a node passes
//! [`fabrik_doctor::remedy::Change::check`] before it is planned, and every renderer quotes
//! through one private module.
#![warn(missing_docs)]

pub mod ansible;
pub mod apply;
pub mod options;
mod outline;
mod quote;
pub mod run;
pub mod script;
pub mod text;

use std::collections::BTreeSet;

use fabrik_doctor::expect::Expectations;
use fabrik_doctor::remedy::{self, Change, Class, Planned, Risk, Takes, Target};
use fabrik_doctor::NamedNode;
use fabrik_model::{Finding, Severity, Source, SCHEMA_VERSION};
use serde::Serialize;

pub use fabrik_doctor::remedy::rules::Source as ConvergeSource;

/// What `fabrik fix` prints: every finding with its remediation, and the distinct changes.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// [`fabrik_model::SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// The nodes, as the doctor names them.
    pub nodes: Vec<String>,
    /// One entry per finding, worst first.
    pub items: Vec<Item>,
    /// The changes, each once even when several findings call for it, in the order to make them.
    pub steps: Vec<Step>,
    /// Counts of the items by class.
    pub summary: Summary,
}

/// A finding and what the plan does about it.
#[derive(Debug, Clone, Serialize)]
pub struct Item {
    /// Rule id.
    pub rule: String,
    /// The finding's severity.
    pub severity: Severity,
    /// The node the finding is about.
    pub node: String,
    /// The finding's subject on that node (`mlx5_0:1`, `node`).
    pub subject: String,
    /// The finding's message.
    pub message: String,
    /// What can be done: automatic, needs drain, manual only.
    pub class: Class,
    /// For a cross-node finding, the value this node should converge to and where it comes from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub converge: Option<Converge>,
    /// Ids of the steps that fix it.
    pub steps: Vec<String>,
    /// What a person must do (the rule's sentence, or why a change was refused).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub manual: Vec<String>,
}

/// The value a drifted node should converge to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Converge {
    /// The value.
    pub value: String,
    /// Expectations, or the majority of the nodes.
    #[serde(flatten)]
    pub source: ConvergeSource,
}

/// One change on one node.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// `s1`, `s2`, ... in plan order.
    pub id: String,
    /// The node to change.
    pub node: String,
    /// The rules whose findings it fixes.
    pub rules: Vec<String>,
    /// The change.
    pub change: Change,
    /// What is set (`MTU of eth2`).
    pub setting: String,
    /// The value before, as probed (`None` when the node's data does not hold it).
    pub previous: Option<String>,
    /// The value after.
    pub target: String,
    /// Safe live, or needs a drained node.
    pub risk: Risk,
    /// When it takes effect.
    pub takes: Takes,
    /// What else must happen for it to take effect.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub then: Option<String>,
    /// Where its commands and files come from.
    pub sources: &'static [Source],
}

/// Items per class.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Items whose changes are safe live.
    pub automatic: usize,
    /// Items with a change that needs a drained node.
    pub needs_drain: usize,
    /// Items no change fixes.
    pub manual: usize,
}

/// The node a report subject belongs to, and the subject on that node: with several nodes the
/// doctor prefixes node-level subjects with `name/`, and names cross-node findings' subjects
/// by the node alone. Node names may hold `/` (roots), so the longest name that fits wins.
fn locate<'a>(subject: &'a str, nodes: &'a [NamedNode]) -> Option<(&'a NamedNode, &'a str)> {
    if nodes.len() == 1 {
        return Some((&nodes[0], subject));
    }
    if let Some(n) = nodes.iter().find(|n| n.name == subject) {
        return Some((n, "node"));
    }
    nodes
        .iter()
        .filter_map(|n| {
            let rest = subject.strip_prefix(n.name.as_str())?.strip_prefix('/')?;
            Some((n, rest))
        })
        .max_by_key(|(n, _)| n.name.len())
}

/// The plan for `findings` (a doctor report's, expectations and waivers applied) over `nodes`.
/// `rules`, when not empty, keeps only the findings of those rule ids. Findings of rules with
/// no node in the report (log rules) are left out.
pub fn plan(
    findings: &[Finding],
    nodes: &[NamedNode],
    expect: Option<&Expectations>,
    rules: &[String],
) -> Plan {
    let mut items = vec![];
    let mut steps: Vec<Step> = vec![];
    for f in findings {
        if !rules.is_empty() && !rules.iter().any(|r| r.eq_ignore_ascii_case(&f.rule)) {
            continue;
        }
        let Some((node, subject)) = locate(&f.subject, nodes) else {
            continue;
        };
        let target = Target {
            finding: f,
            subject,
            node,
            nodes,
            expect,
        };
        let converge = remedy::rules::converge(f, nodes, expect)
            .map(|(value, source)| Converge { value, source });
        let mut item = Item {
            rule: f.rule.clone(),
            severity: f.severity,
            node: node.name.clone(),
            subject: subject.to_string(),
            message: f.message.clone(),
            class: Class::Manual,
            converge,
            steps: vec![],
            manual: vec![],
        };
        for p in remedy::plan_finding(&target) {
            match p {
                Planned::Manual { what } => item.manual.push(what),
                Planned::Change { change, previous } => {
                    if let Err(e) = change.check() {
                        item.manual.push(format!(
                            "Not planned: {e}; make the change by hand ({}).",
                            f.fix
                        ));
                        continue;
                    }
                    let id = match steps
                        .iter_mut()
                        .find(|s| s.node == node.name && s.change == change)
                    {
                        Some(s) => {
                            if !s.rules.contains(&f.rule) {
                                s.rules.push(f.rule.clone());
                            }
                            s.id.clone()
                        }
                        None => {
                            let id = format!("s{}", steps.len() + 1);
                            steps.push(Step {
                                id: id.clone(),
                                node: node.name.clone(),
                                rules: vec![f.rule.clone()],
                                setting: change.setting(),
                                target: change.target(),
                                risk: change.risk(),
                                takes: change.takes(),
                                then: change.then(),
                                sources: change.sources(),
                                change,
                                previous,
                            });
                            id
                        }
                    };
                    if !item.steps.contains(&id) {
                        item.steps.push(id);
                    }
                }
            }
        }
        item.class = if item.steps.is_empty() {
            Class::Manual
        } else if item
            .steps
            .iter()
            .filter_map(|id| steps.iter().find(|s| &s.id == id))
            .any(|s| s.risk == Risk::NeedsDrain)
        {
            Class::NeedsDrain
        } else {
            Class::Automatic
        };
        items.push(item);
    }
    let count = |c: Class| items.iter().filter(|i| i.class == c).count();
    let summary = Summary {
        automatic: count(Class::Automatic),
        needs_drain: count(Class::NeedsDrain),
        manual: count(Class::Manual),
    };
    Plan {
        schema_version: SCHEMA_VERSION,
        nodes: nodes.iter().map(|n| n.name.clone()).collect(),
        items,
        steps,
        summary,
    }
}

impl Plan {
    /// The steps of `node`, in plan order.
    pub fn steps_of<'a>(&'a self, node: &'a str) -> impl Iterator<Item = &'a Step> + 'a {
        self.steps.iter().filter(move |s| s.node == node)
    }

    /// The nodes that have steps, in the report's order.
    pub fn nodes_with_steps(&self) -> Vec<&str> {
        let with: BTreeSet<&str> = self.steps.iter().map(|s| s.node.as_str()).collect();
        self.nodes
            .iter()
            .map(String::as_str)
            .filter(|n| with.contains(n))
            .collect()
    }

    /// The items of `node` no step fixes.
    pub fn manual_of<'a>(&'a self, node: &'a str) -> impl Iterator<Item = &'a Item> + 'a {
        self.items
            .iter()
            .filter(move |i| i.node == node && !i.manual.is_empty())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use fabrik_model::Node;

    fn node(name: &str) -> NamedNode {
        NamedNode {
            name: name.into(),
            node: Node::default(),
        }
    }

    #[test]
    fn subjects_find_their_node_even_when_names_hold_slashes() {
        let nodes = vec![node("fx/a"), node("fx/a/b")];
        let (n, s) = locate("fx/a/b/mlx5_0:1", &nodes).unwrap();
        assert_eq!((n.name.as_str(), s), ("fx/a/b", "mlx5_0:1"));
        let (n, s) = locate("fx/a", &nodes).unwrap();
        assert_eq!((n.name.as_str(), s), ("fx/a", "node"));
        assert!(locate("other/x", &nodes).is_none());
    }
}
