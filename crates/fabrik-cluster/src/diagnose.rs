//! The matrix's verdict: which hosts and links are at fault, for every kind of evidence the
//! pair tests gathered, and why. Pure functions of a [`PairMatrix`].
//!
//! Each cause is judged per pair (both directions together: a host that drops what it receives
//! shows retransmissions on its partners' sockets, not its own) and then triangulated, as a
//! technician does with a cable tester: a host is blamed when at least three quarters of its
//! pairs are bad while its partners are fine with everyone else; a link when its pair is bad
//! and neither end is. Every pair of the matrix meets every other rank, so each suspect has
//! already been measured against partners known to be good. When more than half of the hosts
//! would be blamed for one cause the fault is the whole fabric's, and no host is named for it.
//!
//! Causes and their evidence:
//! - loss: retransmitted segments over segments sent (TCP_INFO), or RDMA retry and
//!   sequence-error events, on either direction of the pair;
//! - MTU: a host whose interface MTU differs from the majority's, or a path whose probed MTU
//!   (don't-fragment datagrams echoed) is below what both ends' interfaces allow (a black
//!   hole);
//! - unreachable: pairs that could not be measured (no connection, a transfer that stalled);
//! - latency: a pair's median round trip far above the matrix's;
//! - TCP buffers: a rank whose TCP buffer limits (`net.ipv4.tcp_rmem` / `tcp_wmem` max, as it
//!   read them when the matrix started) are below those most ranks share, the cross-node check
//!   `FAB-X-014` of `cluster doctor` on the ranks as they run: on a short path a small window
//!   costs little bandwidth, so the setting is named before any pair is slow;
//! - bandwidth: the second pass's verdicts (or, without one, the first pass's slow nodes and
//!   links), which [`crate::pairs`] decides.

use std::collections::{BTreeMap, BTreeSet};

use fabrik_model::{Cause, Culprit, CulpritKind, PairEvidence, PairMatrix};

mod evidence;
use evidence::{
    black_holes, latency, loss, mtu_mismatch, mtu_pair_mismatch, pairs_of, small_tcp_buffers,
    unreachable,
};

/// A pair loses packets when this share of what was sent on one of its directions was sent
/// again. Healthy links retransmit nothing or next to nothing (a veth pair between namespaces
/// on a loaded 2-core machine: 0 of tens of thousands); a host dropping 1 % of its packets
/// costs its partners about 1 % retransmissions.
pub const LOSS_SHARE: f64 = 0.002;
/// And at least this many retransmissions (or RDMA retry events): a handful is noise.
pub const LOSS_MIN: u64 = 8;
/// A pair is slow to answer when its median half round trip is this many times the median
/// pair's...
pub const LATENCY_RATIO: f64 = 4.0;
/// ...and at least this much longer (µs): on a fabric of microsecond latencies a loaded CPU
/// alone doubles them.
pub const LATENCY_EXTRA_US: f64 = 50.0;
/// Share of a host's pairs that must be bad to blame the host.
pub const HOST_SHARE: f64 = 0.75;

/// One bad pair: why, in a few words, and the numbers a host's summary gathers.
#[derive(Debug, Clone)]
struct Bad {
    why: String,
    /// The cause's measure on this pair (a loss share in %, a path MTU, a round trip in µs).
    value: f64,
    /// What it is compared with (the MTU the interfaces allow, the median round trip).
    against: f64,
}

/// Sums up a host's bad pairs of one cause (`1.1-2.1 % of segments retransmitted`).
type Summary<'a> = &'a dyn Fn(&[&Bad]) -> String;

/// `lo-hi` of `values` with `digits` decimals, or one number when they are all alike.
fn range(values: impl Iterator<Item = f64>, digits: usize) -> String {
    let v: Vec<f64> = values.filter(|x| x.is_finite()).collect();
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (a, b) = (format!("{lo:.digits$}"), format!("{hi:.digits$}"));
    if v.is_empty() {
        "?".into()
    } else if a == b {
        a
    } else {
        format!("{a}-{b}")
    }
}

/// Pairs, lower rank first.
type PairKey = (u32, u32);

fn key(a: u32, b: u32) -> PairKey {
    (a.min(b), a.max(b))
}

/// What triangulating one cause found.
#[derive(Debug, Default)]
struct Found {
    hosts: Vec<(u32, String)>,
    links: Vec<(PairKey, String)>,
    /// Too many hosts to blame one: a fabric-wide fault, in words.
    widespread: Option<String>,
}

/// Blames hosts and links for the bad pairs of one cause. `measured` is every pair that could
/// have shown it; `what` names the cause in messages.
fn triangulate(
    ranks: u32,
    bad: &BTreeMap<PairKey, Bad>,
    measured: &BTreeSet<PairKey>,
    what: &str,
    summary: Summary<'_>,
) -> Found {
    let mut out = Found::default();
    if bad.is_empty() || ranks < 3 {
        if let Some(((a, b), why)) = bad.iter().next().filter(|_| ranks < 3) {
            out.widespread = Some(format!(
                "{what} between rank {a} and rank {b} ({}), but with 2 ranks a host cannot be \
                 told from the link between them",
                why.why
            ));
        }
        return out;
    }
    let mut blamed: Vec<u32> = Vec::new();
    for r in 0..ranks {
        let mine: Vec<&PairKey> = measured
            .iter()
            .filter(|(a, b)| *a == r || *b == r)
            .collect();
        let bad_mine: Vec<&PairKey> = mine
            .iter()
            .copied()
            .filter(|k| bad.contains_key(k))
            .collect();
        if bad_mine.len() >= 2 && bad_mine.len() as f64 >= HOST_SHARE * mine.len() as f64 {
            blamed.push(r);
        }
    }
    if 2 * blamed.len() > ranks as usize {
        out.widespread = Some(format!(
            "{what} on {} of {} pairs, at {} of {ranks} ranks: the whole fabric (or the machine \
             the ranks share), not one host",
            bad.len(),
            measured.len(),
            blamed.len()
        ));
        return out;
    }
    for &r in &blamed {
        let mine = measured.iter().filter(|(a, b)| *a == r || *b == r).count();
        let bad_mine: Vec<&Bad> = bad
            .iter()
            .filter(|((a, b), _)| *a == r || *b == r)
            .map(|(_, w)| w)
            .collect();
        out.hosts.push((
            r,
            format!(
                "{what} on {} of its {mine} pairs: {}",
                bad_mine.len(),
                summary(&bad_mine)
            ),
        ));
    }
    for (&(a, b), w) in bad {
        if blamed.contains(&a) || blamed.contains(&b) {
            continue;
        }
        let clean = |end: u32| {
            measured
                .iter()
                .filter(|k| (k.0 == end || k.1 == end) && **k != (a, b))
                .filter(|k| !bad.contains_key(k))
                .count()
        };
        out.links.push((
            (a, b),
            format!(
                "{what} between these two ({}), while rank {a} is clean with {} and rank {b} \
                 with {} other partners",
                w.why,
                clean(a),
                clean(b)
            ),
        ));
    }
    out
}

/// One entity's verdict as it is assembled: kind, causes, reasons and evidence.
#[derive(Debug, Default)]
struct Entry {
    causes: BTreeSet<Cause>,
    whys: Vec<String>,
    evidence: Vec<PairEvidence>,
}

/// What the first pass blames, cause by cause (bandwidth aside).
#[derive(Debug, Default)]
struct Entries {
    hosts: BTreeMap<u32, Entry>,
    links: BTreeMap<PairKey, Entry>,
    widespread: Vec<(Cause, String)>,
}

/// Causes a link is blamed for only when the second pass sees them again: one pair's
/// retransmissions, slow round trips or failed connection can be a moment's (a loaded host's
/// receive queue overflowing, a scheduler stall); a host's can hardly be, showing on most of
/// its pairs in rounds apart.
const TRANSIENT: [Cause; 3] = [Cause::Loss, Cause::Latency, Cause::Unreachable];

/// The culprits every cause but bandwidth names in the first pass: what the second pass must
/// not take for bandwidth suspects of its own (a host dropping packets makes all its links
/// slow). Hosts, then the links blamed for a cause that is not transient; a link blamed for
/// loss or latency is measured again either way, and stays a bandwidth suspect when slow.
pub fn named_before_second_pass(m: &PairMatrix) -> (Vec<u32>, Vec<(u32, u32)>) {
    let e = first_pass(m);
    (
        e.hosts.keys().copied().collect(),
        e.links
            .iter()
            .filter(|(_, x)| !x.causes.iter().any(|c| TRANSIENT.contains(c)))
            .map(|(k, _)| *k)
            .collect(),
    )
}

/// The pairs the second pass measures again besides the bandwidth suspects': every link the
/// first pass blames for a cause that may be transient.
pub fn pairs_to_confirm(m: &PairMatrix) -> Vec<(u32, u32)> {
    first_pass(m)
        .links
        .into_iter()
        .filter(|(_, e)| e.causes.iter().any(|c| TRANSIENT.contains(c)))
        .map(|(k, _)| k)
        .collect()
}

fn first_pass(m: &PairMatrix) -> Entries {
    let mut out = Entries::default();
    let measured = pairs_of(m);
    let take = |cause: Cause, found: Found, out: &mut Entries| {
        for (r, why) in found.hosts {
            let e = out.hosts.entry(r).or_default();
            e.causes.insert(cause);
            e.whys.push(why);
        }
        for (k, why) in found.links {
            let e = out.links.entry(k).or_default();
            e.causes.insert(cause);
            e.whys.push(why);
        }
        if let Some(w) = found.widespread {
            out.widespread.push((cause, w));
        }
    };

    if let Some((k, why)) = mtu_pair_mismatch(m) {
        let e = out.links.entry(k).or_default();
        e.causes.insert(Cause::Mtu);
        e.whys.push(why);
    }
    let mismatched = mtu_mismatch(m);
    for (r, why) in &mismatched {
        let e = out.hosts.entry(*r).or_default();
        e.causes.insert(Cause::Mtu);
        e.whys.push(why.clone());
    }
    let skip: Vec<u32> = mismatched.iter().map(|(r, _)| *r).collect();
    let (holes, probed) = black_holes(m, &skip);
    let holes_summary = |b: &[&Bad]| {
        format!(
            "packets above {} bytes to or from it vanish without notice, though the interfaces \
             allow {}",
            range(b.iter().map(|x| x.value), 0),
            range(b.iter().map(|x| x.against), 0)
        )
    };
    take(
        Cause::Mtu,
        triangulate(
            m.ranks,
            &holes,
            &probed,
            "an MTU black hole",
            &holes_summary,
        ),
        &mut out,
    );
    let (lossy, with_counts) = loss(m, "matrix");
    let loss_summary = |b: &[&Bad]| {
        if b.iter().all(|x| x.against > 0.0) {
            format!(
                "{} % of the segments sent to or from it retransmitted (TCP_INFO), on each pair",
                range(b.iter().map(|x| x.value), 1)
            )
        } else {
            format!(
                "{} RDMA retries or sequence errors per pair",
                range(b.iter().map(|x| x.value), 0)
            )
        }
    };
    take(
        Cause::Loss,
        triangulate(m.ranks, &lossy, &with_counts, "packet loss", &loss_summary),
        &mut out,
    );
    let failed = unreachable(m, &measured);
    let failed_summary = |b: &[&Bad]| {
        // `against` holds the stage's kind (see `unreachable`).
        let kinds = [
            "no connection",
            "the MTU probe failed",
            "a transfer stalled",
            "the latency test failed",
        ];
        let mut parts = Vec::new();
        for (i, kind) in kinds.iter().enumerate() {
            let of: Vec<&&Bad> = b.iter().filter(|x| x.against as usize == i).collect();
            if let Some(first) = of.first() {
                parts.push(format!("{kind} on {} ({})", of.len(), first.why));
            }
        }
        parts.join("; ")
    };
    take(
        Cause::Unreachable,
        triangulate(
            m.ranks,
            &failed,
            &measured,
            "no measurement",
            &failed_summary,
        ),
        &mut out,
    );
    for (r, why) in small_tcp_buffers(m) {
        let e = out.hosts.entry(r).or_default();
        e.causes.insert(Cause::TcpBuffers);
        e.whys.push(why);
    }
    let (slow_rtt, timed) = latency(m);
    let rtt_summary = |b: &[&Bad]| {
        format!(
            "round trips of {} µs against the matrix's median of {} µs",
            range(b.iter().map(|x| x.value), 0),
            range(b.iter().map(|x| x.against), 0)
        )
    };
    take(
        Cause::Latency,
        triangulate(m.ranks, &slow_rtt, &timed, "slow round trips", &rtt_summary),
        &mut out,
    );
    // A link whose end is already blamed for the same cause is that host's business.
    let hosts = &out.hosts;
    out.links.retain(|(a, b), e| {
        let covered = |r: &u32| hosts.get(r).is_some_and(|h| e.causes.is_subset(&h.causes));
        !(covered(a) || covered(b))
    });
    out
}

/// Whether the second pass saw `cause` again on the pair `k`: `Some(true)` or `Some(false)`
/// when it measured the pair, `None` when it has nothing on it.
fn seen_again(m: &PairMatrix, k: PairKey, cause: Cause) -> Option<bool> {
    let iso = m.isolation.as_ref()?;
    let failed = m
        .failures
        .iter()
        .any(|f| f.pass == "second" && key(f.a, f.b) == k);
    let measured = iso.links.iter().any(|l| key(l.src, l.dst) == k);
    if !failed && !measured {
        return None;
    }
    Some(match cause {
        Cause::Unreachable => failed,
        Cause::Loss => loss(m, "second").0.contains_key(&k),
        Cause::Latency => {
            let first: Vec<f64> = m.links.iter().filter_map(|l| l.latency_us).collect();
            let med = crate::pairs::median(&first);
            iso.links
                .iter()
                .filter(|l| key(l.src, l.dst) == k)
                .filter_map(|l| l.latency_us)
                .any(|us| us >= LATENCY_RATIO * med && us - med >= LATENCY_EXTRA_US)
        }
        _ => true,
    })
}

/// The matrix's culprits: every host and link blamed, once each, with all of its causes. A
/// link blamed for a cause that may be transient keeps that cause only when the second pass
/// saw it again (without a second pass it is kept, and says so).
pub fn culprits(m: &PairMatrix) -> Vec<Culprit> {
    let host = |r: u32| {
        m.hosts
            .get(r as usize)
            .cloned()
            .unwrap_or_else(|| format!("rank {r}"))
    };
    let Entries {
        mut hosts,
        mut links,
        widespread,
    } = first_pass(m);
    for (&k, e) in links.iter_mut() {
        let mut gone = Vec::new();
        for &c in e.causes.iter().filter(|c| TRANSIENT.contains(c)) {
            match seen_again(m, k, c) {
                Some(true) => e.whys.push(format!("{} again in the second pass", name(c))),
                Some(false) => gone.push(c),
                None if m.isolation.is_none() => {
                    e.whys.push("not measured again: no second pass".into());
                }
                None => e
                    .whys
                    .push("the second pass could not measure it again".into()),
            }
        }
        for c in gone {
            e.causes.remove(&c);
        }
    }
    links.retain(|_, e| !e.causes.is_empty());

    let mut undecided = Vec::new();
    bandwidth(m, &mut hosts, &mut links, &mut undecided);

    let mut out = Vec::new();
    for (r, e) in hosts {
        out.push(Culprit {
            kind: CulpritKind::Node,
            ranks: vec![r],
            hosts: vec![host(r)],
            why: format!("{}: {}", host(r), e.whys.join("; ")),
            evidence: e.evidence,
            causes: e.causes.into_iter().collect(),
        });
    }
    for ((a, b), e) in links {
        out.push(Culprit {
            kind: CulpritKind::Link,
            ranks: vec![a, b],
            hosts: vec![host(a), host(b)],
            why: format!("{} <-> {}: {}", host(a), host(b), e.whys.join("; ")),
            evidence: e.evidence,
            causes: e.causes.into_iter().collect(),
        });
    }
    out.extend(undecided);
    for (cause, why) in widespread {
        out.push(Culprit {
            kind: CulpritKind::Undecided,
            ranks: Vec::new(),
            hosts: Vec::new(),
            why,
            evidence: Vec::new(),
            causes: vec![cause],
        });
    }
    out
}

/// A cause in words, for messages.
fn name(c: Cause) -> &'static str {
    match c {
        Cause::Bandwidth => "slow",
        Cause::Loss => "packet loss",
        Cause::Latency => "slow round trips",
        Cause::Mtu => "MTU",
        Cause::Unreachable => "could not be measured",
        Cause::TcpBuffers => "small TCP buffers",
    }
}

/// Adds the bandwidth verdicts: the second pass's nodes and links, or without a second pass
/// the first pass's slow nodes (those with at least half their links slow) and slow links. A
/// host already blamed for another cause whose links are slow gets bandwidth as one more
/// cause, with the first pass's numbers.
fn bandwidth(
    m: &PairMatrix,
    hosts: &mut BTreeMap<u32, Entry>,
    links: &mut BTreeMap<PairKey, Entry>,
    undecided: &mut Vec<Culprit>,
) {
    let a = &m.analysis;
    for (&r, e) in hosts.iter_mut() {
        if let Some(n) = a.slow_nodes.iter().find(|n| n.rank == r) {
            e.causes.insert(Cause::Bandwidth);
            e.whys.push(format!(
                "the median of its links is {:.3} Gb/s, {:.0} % of the nodes' median",
                n.median_gbps,
                n.ratio_to_median * 100.0
            ));
        }
    }
    for (&(x, y), e) in links.iter_mut() {
        if let Some(l) = a.slow_links.iter().find(|l| key(l.src, l.dst) == (x, y)) {
            e.causes.insert(Cause::Bandwidth);
            e.whys.push(format!(
                "{} -> {} runs at {:.3} Gb/s, {:.0} % of the median link",
                l.src,
                l.dst,
                l.gbps,
                l.ratio_to_median * 100.0
            ));
        }
    }
    let verdicts: Vec<Culprit> = match &m.isolation {
        Some(iso) => iso.verdicts.clone(),
        None => first_pass_bandwidth(m),
    };
    for v in verdicts {
        match v.kind {
            CulpritKind::Node => {
                let r = v.ranks.first().copied().unwrap_or(u32::MAX);
                let e = hosts.entry(r).or_default();
                if e.causes.insert(Cause::Bandwidth) {
                    let numbers = a
                        .slow_nodes
                        .iter()
                        .find(|n| n.rank == r)
                        .map(|n| {
                            format!(
                                "the median of its links is {:.3} Gb/s, {:.0} % of the nodes' \
                                 median; ",
                                n.median_gbps,
                                n.ratio_to_median * 100.0
                            )
                        })
                        .unwrap_or_default();
                    e.whys.push(format!("{numbers}{}", v.why));
                }
                e.evidence.extend(v.evidence);
            }
            CulpritKind::Link if v.ranks.len() == 2 => {
                let k = key(v.ranks[0], v.ranks[1]);
                if hosts.contains_key(&k.0) || hosts.contains_key(&k.1) {
                    continue;
                }
                let e = links.entry(k).or_default();
                if e.causes.insert(Cause::Bandwidth) {
                    e.whys.push(v.why);
                }
                e.evidence.extend(v.evidence);
            }
            CulpritKind::Undecided => {
                let mut v = v;
                v.causes = vec![Cause::Bandwidth];
                undecided.push(v);
            }
            _ => {}
        }
    }
}

/// Bandwidth verdicts from the first pass alone (`--no-second-pass`): the dominant slow nodes,
/// and the slow links neither of whose ends is one.
fn first_pass_bandwidth(m: &PairMatrix) -> Vec<Culprit> {
    let a = &m.analysis;
    let per_node = 2 * m.ranks.saturating_sub(1) as usize;
    let slow_of = |r: u32| {
        a.slow_links
            .iter()
            .filter(|l| l.src == r || l.dst == r)
            .count()
    };
    let nodes: Vec<u32> = a
        .slow_nodes
        .iter()
        .map(|n| n.rank)
        .filter(|&r| 2 * slow_of(r) >= per_node)
        .collect();
    let mut out: Vec<Culprit> = a
        .slow_nodes
        .iter()
        .filter(|n| nodes.contains(&n.rank))
        .map(|n| Culprit {
            kind: CulpritKind::Node,
            ranks: vec![n.rank],
            hosts: vec![n.host.clone()],
            why: format!(
                "the median of its links is {:.3} Gb/s, {:.0} % of the nodes' median, and {} of \
                 its {per_node} directed links are slow (not measured again: no second pass)",
                n.median_gbps,
                n.ratio_to_median * 100.0,
                slow_of(n.rank)
            ),
            evidence: Vec::new(),
            causes: Vec::new(),
        })
        .collect();
    let mut seen = BTreeSet::new();
    for l in &a.slow_links {
        let k = key(l.src, l.dst);
        if nodes.contains(&k.0) || nodes.contains(&k.1) || !seen.insert(k) {
            continue;
        }
        out.push(Culprit {
            kind: CulpritKind::Link,
            ranks: vec![k.0, k.1],
            hosts: vec![l.src_host.clone(), l.dst_host.clone()],
            why: format!(
                "{} -> {} runs at {:.3} Gb/s, {:.0} % of the median link (not measured again: \
                 no second pass)",
                l.src,
                l.dst,
                l.gbps,
                l.ratio_to_median * 100.0
            ),
            evidence: Vec::new(),
            causes: Vec::new(),
        });
    }
    out
}

#[cfg(test)]
mod tests;
