//! Readers of fabrik's output: the findings of a doctor report, and what a matrix run names
//! (its culprits, or the ranks its error blames), as the campaign compares them with the fault
//! it injected.

use serde_json::Value;

use super::{node_name, Entity};

/// A finding as the campaign matches it: (rule, host, the rest of the subject).
pub type FindingKey = (String, String, String);

/// (rule, host, rest of the subject) of every warning or error of a doctor report: node rules'
/// subjects read `host/subject`, cross-node rules' the host alone.
pub fn finding_keys(report: &Value) -> Vec<FindingKey> {
    report["findings"]
        .as_array()
        .map(|fs| {
            fs.iter()
                .filter(|f| matches!(f["severity"].as_str(), Some("warning" | "error")))
                .filter_map(|f| {
                    let rule = f["rule"].as_str()?.to_string();
                    let subject = f["subject"].as_str()?;
                    let (host, rest) = subject.split_once('/').unwrap_or((subject, ""));
                    Some((rule, host.to_string(), rest.to_string()))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// What a matrix run names: its culprits, or, when the run failed, the ranks rank 0's error
/// blames (died, silent, never joined).
pub fn named_by_matrix(out: &str, err: &str) -> Vec<Entity> {
    let mut named = Vec::new();
    if let Ok(v) = serde_json::from_str::<Value>(out) {
        for c in v["culprits"].as_array().into_iter().flatten() {
            let hosts: Vec<String> = c["hosts"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|h| h.as_str().map(str::to_string))
                .collect();
            named.push(match (c["kind"].as_str(), hosts.as_slice()) {
                (Some("node"), [h]) => Entity::Host(h.clone()),
                (Some("link"), [a, b]) => Entity::Link(a.clone(), b.clone()),
                _ => Entity::Fabric,
            });
        }
    } else {
        for r in blamed_ranks(err) {
            named.push(Entity::Host(node_name(r)));
        }
    }
    named.sort();
    named.dedup();
    named
}

/// What each culprit of a matrix report says, for the campaign's notes.
pub fn culprit_whys(out: &str) -> Vec<String> {
    let Ok(v) = serde_json::from_str::<Value>(out) else {
        return Vec::new();
    };
    v["culprits"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| {
            let why = c["why"].as_str()?;
            let causes: Vec<&str> = c["causes"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let short: String = why.chars().take(400).collect();
            Some(format!("[{}] {short}", causes.join(",")))
        })
        .collect()
}

/// Ranks an error message blames: `rank N (...) died or exited`, `... is silent`,
/// `rank N never joined`.
pub fn blamed_ranks(err: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for marker in [" died or exited", " is silent", " never joined"] {
        let mut from = 0;
        while let Some(i) = err[from..].find(marker) {
            let at = from + i;
            if let Some(r) = err[..at].rfind("rank ").and_then(|j| {
                err[j + 5..at]
                    .split(|c: char| !c.is_ascii_digit())
                    .next()
                    .and_then(|d| d.parse::<usize>().ok())
            }) {
                if !out.contains(&r) {
                    out.push(r);
                }
            }
            from = at + marker.len();
        }
    }
    out.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_error_names_the_ranks_it_blames() {
        let err = "fabrik: rank 0 in the pair matrix: the run was aborted: rank 5 (node5, 10.77.0.6) died or exited (its control connection closed); rank 0: rank 5 (node5, 10.77.0.6): connection closed";
        assert_eq!(blamed_ranks(err), vec![5]);
        let never = "fabrik: rank 0 joining the job: rendezvous: rank 3 never joined within 16 s (world size 8)";
        assert_eq!(blamed_ranks(never), vec![3]);
        let silent = "rank 2 (node2, 10.77.0.3) is silent: its peers gave up on it";
        assert_eq!(blamed_ranks(silent), vec![2]);
        assert!(blamed_ranks("rank 0: sending: timed out").is_empty());
    }

    #[test]
    fn a_matrix_names_its_culprits() {
        let out = r#"{"culprits":[{"kind":"node","hosts":["node3"]},{"kind":"link","hosts":["node1","node6"]},{"kind":"undecided","hosts":[]}]}"#;
        assert_eq!(
            named_by_matrix(out, ""),
            vec![
                Entity::Host("node3".into()),
                Entity::Link("node1".into(), "node6".into()),
                Entity::Fabric
            ]
        );
        assert!(named_by_matrix(r#"{"links":[]}"#, "").is_empty());
    }
}
