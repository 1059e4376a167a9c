//! All-pairs scheduling and the statistics that find bad links and nodes. Pure functions.
//!
//! The schedule is a round-robin tournament (the circle method): with N ranks, N-1 rounds of
//! N/2 disjoint pairs (N rounds with one rank resting each when N is odd), so every pair meets
//! exactly once and a full matrix takes time proportional to N, not N².

use fabrik_model::{
    Culprit, CulpritKind, LinkMeasurement, MatrixAnalysis, PairEvidence, SlowLink, SlowNode,
};

/// Scale that makes the MAD estimate a normal distribution's standard deviation.
const MAD_TO_SIGMA: f64 = 1.4826;
/// How many robust standard deviations (of log-bandwidth) below the median make an outlier.
pub const OUTLIER_Z: f64 = 4.0;
/// Below the median by at least this fraction too: when all links are nearly identical the MAD
/// is tiny and a 1 % wobble would otherwise be "many sigmas".
pub const MIN_DROP: f64 = 0.15;

/// Round-robin rounds: `rounds[k]` lists the pairs `(a, b)`, `a < b`, that run in round `k`.
pub fn round_robin(n: u32) -> Vec<Vec<(u32, u32)>> {
    if n < 2 {
        return Vec::new();
    }
    // With an odd count, a phantom player `n` makes the count even; whoever meets it rests.
    let m = if n % 2 == 0 { n } else { n + 1 };
    let mut ring: Vec<u32> = (1..m).collect();
    let mut rounds = Vec::with_capacity((m - 1) as usize);
    for _ in 0..m - 1 {
        let mut players = Vec::with_capacity(m as usize);
        players.push(0);
        players.extend_from_slice(&ring);
        let mut pairs = Vec::with_capacity((m / 2) as usize);
        for i in 0..(m / 2) as usize {
            let (a, b) = (players[i], players[m as usize - 1 - i]);
            if a < n && b < n {
                pairs.push((a.min(b), a.max(b)));
            }
        }
        rounds.push(pairs);
        ring.rotate_right(1);
    }
    rounds
}

/// This rank's partner in a round, if it plays.
pub fn partner(round: &[(u32, u32)], rank: u32) -> Option<u32> {
    round.iter().find_map(|&(a, b)| {
        if a == rank {
            Some(b)
        } else if b == rank {
            Some(a)
        } else {
            None
        }
    })
}

/// The median of the finite values; 0 when there is none.
pub fn median(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 0 {
        (v[mid - 1] + v[mid]) / 2.0
    } else {
        v[mid]
    }
}

/// Median absolute deviation from `center`.
pub fn mad(values: &[f64], center: f64) -> f64 {
    let dev: Vec<f64> = values.iter().map(|x| (x - center).abs()).collect();
    median(&dev)
}

/// Bandwidth on a log scale: link speeds differ by ratios (a 10 % slower NIC, a link at a
/// tenth), and run-to-run noise is multiplicative, so spread is measured on logarithms. Zero or
/// nonsense values count as very slow rather than breaking the statistics.
fn ln_bw(x: f64) -> f64 {
    if x.is_finite() && x > 1e-12 {
        x.ln()
    } else {
        1e-12f64.ln()
    }
}

/// Median and MAD of log-bandwidth, and the bandwidth below which a value is an outlier:
/// `OUTLIER_Z` robust standard deviations below the median, and at least `MIN_DROP` below it.
fn low_threshold(values: &[f64]) -> (f64, f64, f64) {
    let logs: Vec<f64> = values.iter().map(|&x| ln_bw(x)).collect();
    let med = median(&logs);
    let m = mad(&logs, med);
    let drop = (OUTLIER_Z * MAD_TO_SIGMA * m).max(-(1.0 - MIN_DROP).ln());
    (med, m, (med - drop).exp())
}

/// The line below which one of `values` (Gb/s) is slow: [`OUTLIER_Z`] robust standard
/// deviations of log-bandwidth below their median, and at least [`MIN_DROP`] below it.
pub fn slow_line(values: &[f64]) -> f64 {
    low_threshold(values).2
}

/// Robust standard deviations (of log-bandwidth) below the median.
fn robust_z(x: f64, med_ln: f64, mad_ln: f64) -> Option<f64> {
    let sigma = MAD_TO_SIGMA * mad_ln;
    let z = (med_ln - ln_bw(x)) / sigma;
    (sigma > 0.0 && z.is_finite()).then_some(z)
}

/// Finds the links and nodes well below the rest. `hosts[r]` names rank `r`.
pub fn analyze(links: &[LinkMeasurement], hosts: &[String], ranks: u32) -> MatrixAnalysis {
    let host = |r: u32| {
        hosts
            .get(r as usize)
            .cloned()
            .unwrap_or_else(|| format!("rank {r}"))
    };
    let bw: Vec<f64> = links.iter().map(|l| l.gbps).collect();
    let (med_ln, mad_ln, thr) = low_threshold(&bw);
    let med = median(&bw);
    let mut out = MatrixAnalysis {
        links: links.len() as u32,
        median_gbps: med,
        mad_gbps: mad(&bw, med),
        link_threshold_gbps: thr,
        node_median_gbps: 0.0,
        node_threshold_gbps: 0.0,
        slow_links: Vec::new(),
        slow_nodes: Vec::new(),
        note: None,
    };
    if ranks < 3 || links.len() < 4 {
        out.note =
            Some("too few links to tell a slow one from the rest (3 or more ranks needed)".into());
        return out;
    }
    for l in links {
        if l.gbps < thr {
            out.slow_links.push(SlowLink {
                src: l.src,
                dst: l.dst,
                src_host: host(l.src),
                dst_host: host(l.dst),
                gbps: l.gbps,
                ratio_to_median: if med > 0.0 { l.gbps / med } else { 0.0 },
                robust_z: robust_z(l.gbps, med_ln, mad_ln),
            });
        }
    }
    out.slow_links.sort_by(|a, b| a.gbps.total_cmp(&b.gbps));

    // A rank none of whose pairs could be measured has no median: the failures speak for it.
    let per_node: Vec<(u32, f64)> = (0..ranks)
        .filter_map(|r| {
            let mine: Vec<f64> = links
                .iter()
                .filter(|l| l.src == r || l.dst == r)
                .map(|l| l.gbps)
                .collect();
            (!mine.is_empty()).then(|| (r, median(&mine)))
        })
        .collect();
    let node_medians: Vec<f64> = per_node.iter().map(|(_, v)| *v).collect();
    let (nmed_ln, nmad_ln, nthr) = low_threshold(&node_medians);
    let nmed = median(&node_medians);
    out.node_median_gbps = nmed;
    out.node_threshold_gbps = nthr;
    for &(r, v) in &per_node {
        if v < nthr {
            out.slow_nodes.push(SlowNode {
                rank: r,
                host: host(r),
                median_gbps: v,
                ratio_to_median: if nmed > 0.0 { v / nmed } else { 0.0 },
                robust_z: robust_z(v, nmed_ln, nmad_ln),
            });
        }
    }
    out
}

/// A node judged as a whole (its links' median against the others') is bad only below this
/// share of the others' pace, in the matrix and again in the second pass: a host with small
/// socket buffers or a throttled CPU runs at a third to a half of its peers, while a loaded host
/// of a healthy cluster sharing CPUs was seen at 0.6 to 0.8.
pub const NODE_DROP: f64 = 0.6;

/// How many good nodes each suspect is measured against in the second pass: enough that one
/// partner's own bad luck cannot make a node look bad, few enough to stay a short pass.
pub const PARTNERS: usize = 3;

/// What the second pass measures: the suspects, the good nodes, and the pairs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsolationPlan {
    /// Ranks flagged by the first pass: the slow nodes, and both ends of every slow link that
    /// no slow node explains.
    pub suspects: Vec<u32>,
    /// Every other rank: its links all passed, or only its link to a slow node failed.
    pub good: Vec<u32>,
    /// Pairs to measure, lower rank first, each once: every suspect with up to [`PARTNERS`]
    /// good nodes, and the pair of every slow link that no slow node explains.
    pub pairs: Vec<(u32, u32)>,
}

/// Slow nodes with at least half of their directed links slow: a bad node makes every one of
/// its links slow, so those links are its own and not suspects of their own.
fn dominant(analysis: &MatrixAnalysis, ranks: u32) -> Vec<u32> {
    let per_node = 2 * ranks.saturating_sub(1) as usize;
    analysis
        .slow_nodes
        .iter()
        .map(|n| n.rank)
        .filter(|&r| {
            let slow = analysis
                .slow_links
                .iter()
                .filter(|l| l.src == r || l.dst == r)
                .count();
            2 * slow >= per_node
        })
        .collect()
}

/// The slow links with neither end a [`dominant`] slow node: the ones a bad node does not
/// already explain.
fn unexplained(analysis: &MatrixAnalysis, ranks: u32) -> impl Iterator<Item = &SlowLink> {
    let dom = dominant(analysis, ranks);
    analysis
        .slow_links
        .iter()
        .filter(move |l| !dom.contains(&l.src) && !dom.contains(&l.dst))
}

/// The second pass's plan, or `None` when the first pass flagged nothing.
pub fn isolation_plan(analysis: &MatrixAnalysis, ranks: u32) -> Option<IsolationPlan> {
    // A bad node makes every one of its links slow; blaming its partners too would leave no
    // good node to compare with, so only links no slow node explains make suspects.
    let mut suspects: Vec<u32> = analysis
        .slow_nodes
        .iter()
        .map(|n| n.rank)
        .chain(unexplained(analysis, ranks).flat_map(|l| [l.src, l.dst]))
        .filter(|&r| r < ranks)
        .collect();
    suspects.sort_unstable();
    suspects.dedup();
    if suspects.is_empty() {
        return None;
    }
    let good: Vec<u32> = (0..ranks).filter(|r| !suspects.contains(r)).collect();
    let mut pairs = Vec::new();
    let mut add = |a: u32, b: u32| {
        let p = (a.min(b), a.max(b));
        if a != b && !pairs.contains(&p) {
            pairs.push(p);
        }
    };
    for (i, &s) in suspects.iter().enumerate() {
        // Rotating the start spreads the suspects over the good nodes, so the rounds stay few.
        for j in 0..PARTNERS.min(good.len()) {
            add(s, good[(i + j) % good.len()]);
        }
    }
    for l in unexplained(analysis, ranks) {
        add(l.src, l.dst);
    }
    Some(IsolationPlan {
        suspects,
        good,
        pairs,
    })
}

/// The slow line of the second pass: the first pass's rule drawn over the links among good
/// nodes only, since a bad node's many slow links widen the spread of the whole matrix (seen: a
/// node shaped to 20 Mb/s among 1-10 Gb/s links put the whole-matrix line at 0.01 Gb/s). `None`
/// with fewer than 4 such links.
pub fn good_threshold(links: &[LinkMeasurement], good: &[u32]) -> Option<f64> {
    let among: Vec<f64> = links
        .iter()
        .filter(|l| good.contains(&l.src) && good.contains(&l.dst))
        .map(|l| l.gbps)
        .collect();
    (among.len() >= 4).then(|| low_threshold(&among).2)
}

/// Packs pairs into rounds of disjoint pairs (no rank in two tests at once), greedily in order.
pub fn disjoint_rounds(pairs: &[(u32, u32)]) -> Vec<Vec<(u32, u32)>> {
    let mut rounds: Vec<Vec<(u32, u32)>> = Vec::new();
    for &(a, b) in pairs {
        let free = rounds
            .iter_mut()
            .find(|r| r.iter().all(|&(x, y)| x != a && x != b && y != a && y != b));
        match free {
            Some(r) => r.push((a, b)),
            None => rounds.push(vec![(a, b)]),
        }
    }
    rounds
}

/// The verdicts of the second pass. A suspect is a bad node when at least half of its pairs
/// with good nodes have a direction below `threshold` (a bad NIC is slow with everyone); the
/// slow links of suspects that are not bad nodes are bad links when their pair is slow again,
/// and not reproduced when it is not. `first` is the matrix's links, `second` the second
/// pass's.
pub fn isolation_verdicts(
    plan: &IsolationPlan,
    analysis: &MatrixAnalysis,
    first: &[LinkMeasurement],
    second: &[LinkMeasurement],
    hosts: &[String],
    threshold: f64,
) -> Vec<Culprit> {
    let host = |r: u32| {
        hosts
            .get(r as usize)
            .cloned()
            .unwrap_or_else(|| format!("rank {r}"))
    };
    let evidence = |links: &[LinkMeasurement], pass: &str, a: u32, b: u32| -> Vec<PairEvidence> {
        links
            .iter()
            .filter(|l| (l.src == a && l.dst == b) || (l.src == b && l.dst == a))
            .map(|l| PairEvidence {
                src: l.src,
                dst: l.dst,
                gbps: l.gbps,
                pass: pass.into(),
                slow: l.gbps.is_nan() || l.gbps < threshold,
            })
            .collect()
    };
    let mut out = Vec::new();
    let mut bad_nodes = Vec::new();
    if plan.good.is_empty() {
        out.push(Culprit {
            kind: CulpritKind::Undecided,
            ranks: plan.suspects.clone(),
            hosts: plan.suspects.iter().map(|&r| host(r)).collect(),
            why: "no node passed every pair, so no suspect could be measured against a good one"
                .into(),
            evidence: Vec::new(),
            causes: Vec::new(),
        });
        return out;
    }
    for &s in &plan.suspects {
        let partners: Vec<u32> = plan
            .pairs
            .iter()
            .filter_map(|&(a, b)| match (a == s, b == s) {
                (true, _) if plan.good.contains(&b) => Some(b),
                (_, true) if plan.good.contains(&a) => Some(a),
                _ => None,
            })
            .collect();
        let mut ev = Vec::new();
        let mut slow_with = 0;
        for &g in &partners {
            let e = evidence(second, "second", s, g);
            // A pair the second pass could not measure counts as neither slow nor fine.
            if e.iter().any(|x| x.slow) {
                slow_with += 1;
            }
            ev.extend(e);
        }
        // A node slow as a whole is judged as a whole again: the median of its second-pass
        // links against the line that flagged it. A host whose every link is a third of the
        // others' (small socket buffers, a throttled CPU) stays above the per-link line where
        // links among good nodes spread widely, but not above the nodes' line.
        // The line is drawn relative to the control pairs measured beside the suspects in the
        // same rounds (pairs of good nodes filling the rounds), which met the same load; without
        // them, relative to the first pass's median node.
        let again: Vec<f64> = ev.iter().map(|e| e.gbps).collect();
        let slow_node = analysis.slow_nodes.iter().any(|n| n.rank == s);
        let controls: Vec<f64> = second
            .iter()
            .filter(|l| plan.good.contains(&l.src) && plan.good.contains(&l.dst))
            .filter(|l| !plan.pairs.contains(&(l.src.min(l.dst), l.src.max(l.dst))))
            .map(|l| l.gbps)
            .collect();
        let base = if controls.len() >= 2 {
            median(&controls)
        } else {
            analysis.node_median_gbps
        };
        let line = if analysis.node_median_gbps > 0.0 {
            base * analysis.node_threshold_gbps / analysis.node_median_gbps
        } else {
            0.0
        };
        // Judged as a whole, a node must also be well below the rest both times: on hosts that
        // share CPUs, a node's links swing by a fifth from round to round.
        let first_ratio = analysis
            .slow_nodes
            .iter()
            .find(|n| n.rank == s)
            .map_or(1.0, |n| n.ratio_to_median);
        let whole = slow_node
            && !again.is_empty()
            && median(&again) < line.min(NODE_DROP * base)
            && first_ratio < NODE_DROP;
        // Slow with at least half of its good partners, and with two of them when it has two
        // or more: one partner's bad moment must not make a bad node.
        let by_partners = 2 * slow_with >= partners.len() && slow_with >= partners.len().min(2);
        if !partners.is_empty() && (by_partners || whole) {
            bad_nodes.push(s);
            let why = if by_partners {
                format!(
                    "slow with {slow_with} of {} nodes that passed every pair: the node (its \
                     NIC, port, cable or host) is bad",
                    partners.len()
                )
            } else {
                format!(
                    "slow again with the {} nodes that passed every pair: its links' median {:.3} \
                     Gb/s is below the line of {line:.3} Gb/s drawn from {}, so the node (its \
                     NIC, port, cable, socket buffers or host) is bad",
                    partners.len(),
                    median(&again),
                    if controls.len() >= 2 {
                        "pairs of good nodes measured beside it"
                    } else {
                        "the nodes' median"
                    }
                )
            };
            out.push(Culprit {
                kind: CulpritKind::Node,
                ranks: vec![s],
                hosts: vec![host(s)],
                why,
                evidence: ev,
                causes: Vec::new(),
            });
        } else if analysis.slow_nodes.iter().any(|n| n.rank == s) {
            out.push(Culprit {
                kind: CulpritKind::NotReproduced,
                ranks: vec![s],
                hosts: vec![host(s)],
                why: format!(
                    "slow as a whole in the matrix, but at pace with {} of {} nodes that \
                     passed every pair when measured again",
                    partners.len() - slow_with,
                    partners.len()
                ),
                evidence: ev,
                causes: Vec::new(),
            });
        }
    }
    let mut seen: Vec<(u32, u32)> = Vec::new();
    // A link to a node slow with most of its partners is the node's verdict's business.
    let ranks = hosts
        .len()
        .max(plan.suspects.iter().chain(&plan.good).count()) as u32;
    for l in unexplained(analysis, ranks) {
        let (a, b) = (l.src.min(l.dst), l.src.max(l.dst));
        if seen.contains(&(a, b)) || bad_nodes.contains(&a) || bad_nodes.contains(&b) {
            continue;
        }
        seen.push((a, b));
        let mut ev = evidence(first, "matrix", a, b);
        let again = evidence(second, "second", a, b);
        let slow_again = again.iter().any(|x| x.slow);
        ev.extend(again);
        for &end in &[a, b] {
            for &(x, y) in &plan.pairs {
                let other = if x == end {
                    y
                } else if y == end {
                    x
                } else {
                    continue;
                };
                if plan.good.contains(&other) {
                    ev.extend(evidence(second, "second", end, other));
                }
            }
        }
        let (kind, why) = if slow_again {
            (
                CulpritKind::Link,
                "slow again between these two, while each end is at pace with nodes that \
                 passed every pair: the path between them (a cable, a switch port or route, \
                 a shaping or ACL rule) is bad, not either node"
                    .to_string(),
            )
        } else {
            (
                CulpritKind::NotReproduced,
                "slow in the matrix but at pace when measured again: transient (contention, \
                 a flap), not a lasting fault"
                    .to_string(),
            )
        };
        out.push(Culprit {
            kind,
            ranks: vec![a, b],
            hosts: vec![host(a), host(b)],
            why,
            evidence: ev,
            causes: Vec::new(),
        });
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;
