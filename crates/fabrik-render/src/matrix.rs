//! `cluster matrix`: the pair matrix as text: what was measured, the grid of Gb/s with slow
//! links marked, the analysis's verdicts, and the second pass that isolates a bad node or link.

use std::fmt::Write as _;

use fabrik_model::{Cause, CulpritKind, Isolation, LinkMeasurement, MatrixAnalysis, PairMatrix};

/// Every rail's matrix ([`text`]), each followed by its links' judgement when one was made
/// (`cluster matrix`).
pub fn judged(
    matrices: &[PairMatrix],
    judged: &[Option<fabrik_model::passline::LinksJudgement>],
    rdma: Option<&str>,
) -> String {
    let mut out = String::new();
    for (m, j) in matrices.iter().zip(judged) {
        out.push_str(&text(m, rdma));
        if let Some(j) = j {
            out.push_str(&crate::passline::links(j));
        }
    }
    out
}

/// The whole matrix report; `rdma` describes the RDMA device when the run used one.
pub fn text(m: &PairMatrix, rdma: Option<&str>) -> String {
    let mut out = String::new();
    let rail = m.rail.map(|r| format!(", rail {r}")).unwrap_or_default();
    let _ = writeln!(
        out,
        "# pair matrix: {}, {}, {} B x {} per direction, transport {}{rail}",
        crate::plural(m.ranks.into(), "rank", "ranks"),
        crate::plural(m.rounds.into(), "round", "rounds"),
        m.size,
        m.iterations,
        m.transport
    );
    if let Some(dev) = rdma {
        let _ = writeln!(out, "# rdma: {dev}");
    }
    for (r, h) in m.hosts.iter().enumerate() {
        let _ = writeln!(out, "#  rank {r:>3} on {h}");
    }
    let _ = writeln!(out, "# bandwidth in Gb/s (* = slow link)");
    out.push_str(&grid(&m.links, &m.analysis, m.ranks));
    let a = &m.analysis;
    let _ = writeln!(
        out,
        "# median link {:.3} Gb/s, MAD {:.3} Gb/s; slow below {:.3} Gb/s",
        a.median_gbps, a.mad_gbps, a.link_threshold_gbps
    );
    if let Some(note) = &a.note {
        let _ = writeln!(out, "# {note}");
    }
    for l in &a.slow_links {
        let _ = writeln!(
            out,
            "SLOW LINK rank {} ({}) -> rank {} ({}): {:.3} Gb/s, {:.0}% of the median",
            l.src,
            l.src_host,
            l.dst,
            l.dst_host,
            l.gbps,
            l.ratio_to_median * 100.0
        );
    }
    for n in &a.slow_nodes {
        let _ = writeln!(
            out,
            "SLOW NODE rank {} ({}): median of its links {:.3} Gb/s, {:.0}% of the nodes' median",
            n.rank,
            n.host,
            n.median_gbps,
            n.ratio_to_median * 100.0
        );
    }
    if a.slow_links.is_empty() && a.slow_nodes.is_empty() && a.note.is_none() {
        let _ = writeln!(out, "# no slow links or nodes");
    }
    if let Some(iso) = &m.isolation {
        out.push_str(&isolation(iso));
    }
    out.push_str(&evidence(m));
    out.push_str(&culprits(m));
    out
}

/// Pairs that could not be measured, paths whose MTU is below their interfaces', and links
/// that retransmitted: the evidence beyond bandwidth, one line each.
fn evidence(m: &PairMatrix) -> String {
    let mut s = String::new();
    for f in &m.failures {
        let _ = writeln!(
            s,
            "FAILED PAIR rank {} ({}) <-> rank {} ({}), {} pass, at {}: {}",
            f.a,
            host(m, f.a),
            f.b,
            host(m, f.b),
            f.pass,
            f.stage,
            f.errors.join("; ")
        );
    }
    for p in &m.path_mtu {
        match p.path_mtu {
            Some(path) if path < p.local_mtu => {
                let _ = writeln!(
                    s,
                    "PATH MTU rank {} -> rank {}: {path} bytes reach it, the interface{} allows {}",
                    p.src,
                    p.dst,
                    p.interface
                        .as_deref()
                        .map(|i| format!(" {i}"))
                        .unwrap_or_default(),
                    p.local_mtu
                );
            }
            None => {
                let _ = writeln!(
                    s,
                    "PATH MTU rank {} -> rank {}: no probe came back ({} sent)",
                    p.src, p.dst, p.probes
                );
            }
            _ => {}
        }
    }
    if !m.path_mtu.is_empty() && m.path_mtu.iter().all(|p| p.path_mtu == Some(p.local_mtu)) {
        let mut mtus: Vec<u32> = m.path_mtu.iter().map(|p| p.local_mtu).collect();
        mtus.sort_unstable();
        mtus.dedup();
        let list: Vec<String> = mtus.iter().map(u32::to_string).collect();
        let _ = writeln!(
            s,
            "# path MTU: every probe reached its interface's MTU ({})",
            list.join(", ")
        );
    }
    for e in m.evidence.iter().filter(|e| e.pass == "matrix") {
        let Some(r) = &e.retransmits else { continue };
        let lost = r.retransmitted.saturating_sub(r.duplicates.unwrap_or(0));
        if lost == 0 {
            continue;
        }
        let share = r
            .sent
            .filter(|&n| n > 0)
            .map(|n| format!(" of {n} ({:.2} %)", lost as f64 * 100.0 / n as f64))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "# retransmitted rank {} -> rank {}: {lost}{share} ({})",
            e.src, e.dst, r.source
        );
    }
    s
}

/// The verdict: one line per culprit, its causes and why; the time it took.
fn culprits(m: &PairMatrix) -> String {
    let mut s = String::new();
    for c in &m.culprits {
        let causes: Vec<&str> = c
            .causes
            .iter()
            .map(|c| match c {
                Cause::Bandwidth => "bandwidth",
                Cause::Loss => "loss",
                Cause::Latency => "latency",
                Cause::Mtu => "MTU",
                Cause::Unreachable => "unreachable",
                Cause::TcpBuffers => "TCP buffers",
            })
            .collect();
        let who = match c.kind {
            CulpritKind::Node => format!("HOST {}", c.hosts.join(", ")),
            CulpritKind::Link => format!("LINK {}", c.hosts.join(" <-> ")),
            CulpritKind::NotReproduced => "NOT REPRODUCED".to_string(),
            CulpritKind::Undecided => "UNDECIDED".to_string(),
        };
        let _ = writeln!(s, "CULPRIT {who} [{}]: {}", causes.join(", "), c.why);
    }
    if let Some(secs) = m.elapsed_s {
        let _ = writeln!(
            s,
            "# verdict in {secs:.1} s: {}",
            if m.culprits.is_empty() {
                "no culprit".to_string()
            } else {
                crate::plural(m.culprits.len() as u64, "culprit", "culprits")
            }
        );
    }
    s
}

fn host(m: &PairMatrix, r: u32) -> &str {
    m.hosts.get(r as usize).map_or("?", String::as_str)
}

/// The second pass as text: what it measured, then one line per verdict and its evidence.
fn isolation(iso: &Isolation) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# second pass: {} suspect(s) {:?} against good nodes {:?}: {} links in {} rounds, slow below {:.3} Gb/s",
        iso.suspects.len(),
        iso.suspects,
        iso.good,
        iso.links.len(),
        iso.rounds,
        iso.threshold_gbps
    );
    for c in &iso.verdicts {
        let who: Vec<String> = c
            .ranks
            .iter()
            .zip(&c.hosts)
            .map(|(r, h)| format!("rank {r} ({h})"))
            .collect();
        let (tag, joint) = match c.kind {
            CulpritKind::Node => ("BAD NODE", ""),
            CulpritKind::Link => ("BAD LINK", " <-> "),
            CulpritKind::NotReproduced => ("NOT REPRODUCED", " <-> "),
            CulpritKind::Undecided => ("UNDECIDED", ", "),
        };
        let _ = writeln!(s, "{tag} {}: {}", who.join(joint), c.why);
        for e in &c.evidence {
            let _ = writeln!(
                s,
                "  rank {} -> rank {}: {:.3} Gb/s ({}{})",
                e.src,
                e.dst,
                e.gbps,
                e.pass,
                if e.slow { ", slow" } else { "" }
            );
        }
    }
    s
}

/// The matrix as text: one row per source rank, Gb/s to each destination, `*` after a slow link.
fn grid(links: &[LinkMeasurement], analysis: &MatrixAnalysis, ranks: u32) -> String {
    let mut s = format!("{:>8}", "src\\dst");
    for d in 0..ranks {
        s.push_str(&format!(" {d:>8}"));
    }
    s.push('\n');
    for src in 0..ranks {
        s.push_str(&format!("{src:>8}"));
        for dst in 0..ranks {
            let cell = links
                .iter()
                .find(|l| l.src == src && l.dst == dst)
                .map(|l| {
                    let slow = analysis
                        .slow_links
                        .iter()
                        .any(|x| x.src == src && x.dst == dst);
                    format!("{:.2}{}", l.gbps, if slow { "*" } else { " " })
                })
                .unwrap_or_else(|| "-".into());
            s.push_str(&format!(" {cell:>8}"));
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use fabrik_model::{Culprit, PairEvidence, PairFailure, PathMtu, Retransmits};

    /// Three ranks at 10 Gb/s but for rank 2's link to rank 0.
    fn matrix() -> PairMatrix {
        let hosts = (0..3).map(|r| format!("node{r}")).collect();
        crate::testkit::pair_matrix(hosts, None, &[((2, 0), 0.5)])
    }

    #[test]
    fn the_grid_marks_the_slow_link_and_names_it() {
        let m = matrix();
        assert_eq!(m.analysis.slow_links.len(), 1, "{:?}", m.analysis);
        let t = text(&m, Some("mlx5_0 port 1"));
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[0],
            "# pair matrix: 3 ranks, 3 rounds, 1048576 B x 3 per direction, transport tcp"
        );
        assert_eq!(lines[1], "# rdma: mlx5_0 port 1");
        assert_eq!(lines[2], "#  rank   0 on node0");
        assert_eq!(lines[6], " src\\dst        0        1        2");
        assert_eq!(lines[7], "       0        -   10.00    10.00 ");
        assert_eq!(lines[9], "       2    0.50*   10.00         -");
        assert!(t.contains("SLOW LINK rank 2 (node2) -> rank 0 (node0): 0.500 Gb/s"));
        assert!(!t.contains("# no slow links or nodes"));
    }

    #[test]
    fn the_second_pass_prints_each_verdict_with_its_evidence() {
        let mut m = matrix();
        m.isolation = Some(Isolation {
            good: vec![0, 1],
            suspects: vec![2],
            threshold_gbps: 5.0,
            rounds: 2,
            links: vec![],
            verdicts: vec![Culprit {
                kind: CulpritKind::Node,
                ranks: vec![2],
                hosts: vec!["node2".into()],
                why: "slow with 2 of 2 good nodes".into(),
                evidence: vec![PairEvidence {
                    src: 2,
                    dst: 0,
                    gbps: 0.5,
                    pass: "second".into(),
                    slow: true,
                }],
                causes: vec![],
            }],
        });
        let t = text(&m, None);
        assert!(!t.contains("# rdma:"));
        assert!(t.contains(
            "# second pass: 1 suspect(s) [2] against good nodes [0, 1]: 0 links in 2 rounds, \
             slow below 5.000 Gb/s\nBAD NODE rank 2 (node2): slow with 2 of 2 good nodes\n  \
             rank 2 -> rank 0: 0.500 Gb/s (second, slow)\n"
        ));
    }

    #[test]
    fn failures_short_paths_retransmissions_and_culprits_are_said() {
        let mut m = matrix();
        m.failures = vec![PairFailure {
            a: 1,
            b: 2,
            pass: "matrix".into(),
            round: 1,
            stage: "1 -> 2".into(),
            errors: vec!["rank 1: sending: timed out".into()],
        }];
        m.path_mtu = vec![
            PathMtu {
                src: 1,
                dst: 2,
                local_mtu: 1500,
                interface: Some("eth0".into()),
                path_mtu: Some(1400),
                probes: 56,
            },
            PathMtu {
                src: 0,
                dst: 1,
                local_mtu: 1500,
                interface: None,
                path_mtu: Some(1500),
                probes: 2,
            },
        ];
        m.evidence = vec![fabrik_model::LinkEvidence {
            src: 0,
            dst: 2,
            pass: "matrix".into(),
            transfers: None,
            latency: None,
            retransmits: Some(Retransmits {
                source: "tcp_info".into(),
                sent: Some(1000),
                retransmitted: 35,
                duplicates: Some(5),
                counters: Default::default(),
            }),
            cut_short: false,
        }];
        m.culprits = vec![Culprit {
            kind: CulpritKind::Node,
            ranks: vec![2],
            hosts: vec!["node2".into()],
            why: "node2: packet loss on 2 of its 2 pairs".into(),
            evidence: vec![],
            causes: vec![Cause::Loss, Cause::Mtu],
        }];
        m.elapsed_s = Some(3.25);
        let t = text(&m, None);
        assert!(t.contains(
            "FAILED PAIR rank 1 (node1) <-> rank 2 (node2), matrix pass, at 1 -> 2: rank 1: sending: timed out\n"
        ), "{t}");
        assert!(
            t.contains(
                "PATH MTU rank 1 -> rank 2: 1400 bytes reach it, the interface eth0 allows 1500\n"
            ),
            "{t}"
        );
        assert!(!t.contains("PATH MTU rank 0 -> rank 1"), "{t}");
        assert!(
            t.contains("# retransmitted rank 0 -> rank 2: 30 of 1000 (3.00 %) (tcp_info)\n"),
            "{t}"
        );
        assert!(
            t.contains("CULPRIT HOST node2 [loss, MTU]: node2: packet loss on 2 of its 2 pairs\n"),
            "{t}"
        );
        assert!(t.ends_with("# verdict in 3.2 s: 1 culprit\n"), "{t}");
    }
}
