//! The JSON document of `ncclras -f json` (NCCL 2.28.7+).

use super::{RasCommIssue, RasCount, RasOutlier, RasRank, RasReport, MAX_ITEMS, MAX_JSON};

/// Reads a RAS JSON document (`ncclras -f json`, NCCL 2.28.7+).
pub fn parse_json(text: &str) -> Option<RasReport> {
    if text.len() > MAX_JSON {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    let comms = v.get("communicators")?.as_array()?;
    let mut report = RasReport {
        format: "json".into(),
        nccl_version: v
            .get("nccl_version")
            .and_then(|x| x.as_str())
            .map(str::to_string),
        timeouts: v
            .get("ras")
            .and_then(|r| r.get("timeouts_count"))
            .and_then(serde_json::Value::as_u64),
        ..RasReport::default()
    };
    let mut nodes: Vec<(String, u64)> = Vec::new();
    let mut procs: Vec<(String, u64)> = Vec::new();
    let str_of =
        |x: &serde_json::Value, k: &str| x.get(k).and_then(|s| s.as_str()).map(str::to_string);
    let u_of = |x: &serde_json::Value, k: &str| x.get(k).and_then(serde_json::Value::as_u64);
    for (ci, c) in comms.iter().enumerate().take(MAX_ITEMS) {
        let hash = str_of(c, "hash").unwrap_or_default();
        let rank_of = |r: &serde_json::Value| RasRank {
            rank: u_of(r, "rank"),
            gpu: u_of(r, "cuda_dev").map(|d| d.to_string()),
            pid: u_of(r, "pid"),
            node: str_of(r, "host"),
            status: None,
            launched: None,
        };
        let ranks: Vec<&serde_json::Value> = c
            .get("ranks")
            .and_then(|r| r.as_array())
            .map(|a| a.iter().take(1 << 20).collect())
            .unwrap_or_default();
        for r in &ranks {
            if let (Some(h), Some(p)) = (str_of(r, "host"), u_of(r, "pid")) {
                if !procs.iter().any(|(h2, p2)| *h2 == h && *p2 == p) && procs.len() < (1 << 20) {
                    procs.push((h.clone(), p));
                    match nodes.iter_mut().find(|(n, _)| *n == h) {
                        Some(e) => e.1 += 1,
                        None => nodes.push((h, 1)),
                    }
                }
            }
        }
        let issue = |kind: &str| RasCommIssue {
            id: format!("#{ci}"),
            hash: hash.clone(),
            kind: kind.to_string(),
            what: Vec::new(),
            op: None,
            counts: Vec::new(),
            ranks: Vec::new(),
        };
        // Missing and dead ranks.
        let missing: Vec<&serde_json::Value> = c
            .get("missing_ranks")
            .and_then(|r| r.as_array())
            .map(|a| a.iter().take(MAX_ITEMS).collect())
            .unwrap_or_default();
        if !missing.is_empty() {
            let mut inc = issue("INCOMPLETE");
            inc.what.push(format!(
                "Missing communicator data from {} rank(s)",
                missing.len()
            ));
            for m in &missing {
                let mut r = rank_of(m);
                let st = m.get("status");
                let dead = st
                    .and_then(|s| s.get("considered_dead"))
                    .and_then(serde_json::Value::as_bool)
                    == Some(true);
                let unresp = st
                    .and_then(|s| s.get("unresponsive"))
                    .and_then(serde_json::Value::as_bool)
                    == Some(true);
                r.status = Some(
                    if dead {
                        "dead"
                    } else if unresp {
                        "unresponsive"
                    } else {
                        "missing"
                    }
                    .into(),
                );
                if dead && report.dead_processes.len() < MAX_ITEMS {
                    report.dead_processes.push(r.clone());
                }
                inc.ranks.push(r);
            }
            report.comm_issues.push(inc);
        }
        // Asynchronous errors and aborts.
        let mut err = issue("ERROR");
        for r in &ranks {
            let st = r.get("status");
            let async_err = st
                .and_then(|s| s.get("async_error"))
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0);
            let abort = st
                .and_then(|s| s.get("abort_flag"))
                .and_then(serde_json::Value::as_bool)
                == Some(true);
            if async_err != 0 || abort {
                let mut x = rank_of(r);
                x.status = Some(if async_err != 0 {
                    fabrik_model::nccl::result_name(u32::try_from(async_err).unwrap_or(u32::MAX))
                        .map_or_else(|| format!("error {async_err}"), str::to_string)
                } else {
                    "aborted".into()
                });
                if err.ranks.len() < MAX_ITEMS {
                    err.ranks.push(x);
                }
            }
        }
        if !err.ranks.is_empty() {
            err.what.push(format!(
                "Asynchronous errors or aborts on {} rank(s)",
                err.ranks.len()
            ));
            report.comm_issues.push(err);
        }
        // Operation counts per collective.
        let mut ops: Vec<String> = Vec::new();
        for r in &ranks {
            if let Some(cc) = r.get("collective_counts").and_then(|x| x.as_object()) {
                for k in cc.keys() {
                    if !ops.contains(k) && ops.len() < 64 {
                        ops.push(k.clone());
                    }
                }
            }
        }
        for op in ops {
            let mut by_value: Vec<(u64, Vec<RasRank>)> = Vec::new();
            for r in &ranks {
                let n = r
                    .get("collective_counts")
                    .and_then(|cc| cc.get(&op))
                    .and_then(serde_json::Value::as_u64)
                    .unwrap_or(0);
                let mut x = rank_of(r);
                x.launched = Some(n);
                match by_value.iter_mut().find(|(v, _)| *v == n) {
                    Some(e) => {
                        if e.1.len() < MAX_ITEMS {
                            e.1.push(x);
                        }
                    }
                    None => by_value.push((n, vec![x])),
                }
            }
            if by_value.len() > 1 {
                let mut m = issue("MISMATCH");
                m.what.push(format!(
                    "Communicator ranks have different {op} operation counts"
                ));
                m.op = Some(op.clone());
                by_value.sort_by_key(|b| std::cmp::Reverse(b.1.len()));
                for (v, rs) in by_value {
                    m.counts.push(RasCount {
                        count: rs.len() as u64,
                        value: v.to_string(),
                        ranks: rs,
                    });
                }
                report.comm_issues.push(m);
            }
        }
    }
    report.nodes = Some(nodes.len() as u64);
    report.processes = Some(procs.len() as u64);
    // Nodes running a different number of processes than most: RAS's own outlier notion.
    let mut per: Vec<u64> = nodes.iter().map(|(_, n)| *n).collect();
    per.sort_unstable();
    let mode = mode_of(&per);
    for (n, c) in &nodes {
        if Some(*c) != mode && nodes.len() > 2 {
            report.outlier_nodes.push(RasOutlier {
                node: n.clone(),
                pids: procs
                    .iter()
                    .filter(|(h, _)| h == n)
                    .map(|(_, p)| *p)
                    .collect(),
            });
        }
    }
    Some(report)
}

fn mode_of(sorted: &[u64]) -> Option<u64> {
    let mut best: Option<(u64, usize)> = None;
    let mut i = 0;
    while i < sorted.len() {
        let j = sorted[i..].iter().take_while(|v| **v == sorted[i]).count();
        if best.is_none_or(|(_, n)| j > n) {
            best = Some((sorted[i], j));
        }
        i += j;
    }
    best.map(|(v, _)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_of_counts() {
        assert_eq!(mode_of(&[1, 8, 8, 8]), Some(8));
        assert_eq!(mode_of(&[]), None);
    }
}
