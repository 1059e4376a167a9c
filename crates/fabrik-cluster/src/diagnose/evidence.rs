//! What each kind of evidence says of each pair or rank of the first pass: retransmissions,
//! round trips, pairs that could not be measured, interface and path MTUs, and the TCP buffer
//! limits each rank runs with. [`super`] triangulates these into hosts and links.

use std::collections::{BTreeMap, BTreeSet};

use fabrik_model::PairMatrix;

use super::{key, Bad, PairKey, LATENCY_EXTRA_US, LATENCY_RATIO, LOSS_MIN, LOSS_SHARE};

/// Every pair of the first pass that got as far as measuring anything, or failed trying.
pub(super) fn pairs_of(m: &PairMatrix) -> BTreeSet<PairKey> {
    m.links
        .iter()
        .map(|l| key(l.src, l.dst))
        .chain(
            m.failures
                .iter()
                .filter(|f| f.pass == "matrix")
                .map(|f| key(f.a, f.b)),
        )
        .chain(m.path_mtu.iter().map(|p| key(p.src, p.dst)))
        .filter(|(a, b)| a != b && *b < m.ranks)
        .collect()
}

pub(super) fn loss(m: &PairMatrix, pass: &str) -> (BTreeMap<PairKey, Bad>, BTreeSet<PairKey>) {
    let mut bad: BTreeMap<PairKey, Bad> = BTreeMap::new();
    let mut measured = BTreeSet::new();
    for e in m.evidence.iter().filter(|e| e.pass == pass) {
        let Some(r) = &e.retransmits else { continue };
        let k = key(e.src, e.dst);
        measured.insert(k);
        // Retransmissions the receiver reported as duplicates were not losses.
        let lost = r.retransmitted.saturating_sub(r.duplicates.unwrap_or(0));
        let share = r.sent.filter(|&s| s > 0).map(|s| lost as f64 / s as f64);
        let lossy = lost >= LOSS_MIN && share.is_none_or(|s| s >= LOSS_SHARE);
        if !lossy {
            continue;
        }
        let text = match share {
            Some(s) => format!(
                "{} -> {} retransmitted {lost} of {} segments ({:.1} %{})",
                e.src,
                e.dst,
                r.sent.unwrap_or(0),
                s * 100.0,
                match r.duplicates {
                    Some(d) if d > 0 => format!("; {d} more needlessly"),
                    _ => String::new(),
                }
            ),
            None => format!(
                "{} RDMA retries or sequence errors {} -> {} ({})",
                r.retransmitted,
                e.src,
                e.dst,
                r.counters
                    .iter()
                    .map(|(k, v)| format!("{k} +{v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let value = share.map_or(lost as f64, |s| s * 100.0);
        // Keep the worse direction's words.
        if bad.get(&k).is_none_or(|b| b.value < value) {
            bad.insert(
                k,
                Bad {
                    why: text,
                    value,
                    against: if share.is_some() { 1.0 } else { 0.0 },
                },
            );
        }
    }
    (bad, measured)
}

pub(super) fn latency(m: &PairMatrix) -> (BTreeMap<PairKey, Bad>, BTreeSet<PairKey>) {
    let mut per_pair: BTreeMap<PairKey, f64> = BTreeMap::new();
    for l in &m.links {
        if let Some(us) = l.latency_us.filter(|u| u.is_finite() && *u > 0.0) {
            per_pair.insert(key(l.src, l.dst), us);
        }
    }
    let values: Vec<f64> = per_pair.values().copied().collect();
    let med = crate::pairs::median(&values);
    let bad = per_pair
        .iter()
        .filter(|(_, &us)| us >= LATENCY_RATIO * med && us - med >= LATENCY_EXTRA_US)
        .map(|(&k, &us)| {
            (
                k,
                Bad {
                    why: format!(
                        "round trip {:.0} µs against the matrix's median {:.0} µs",
                        2.0 * us,
                        2.0 * med
                    ),
                    value: 2.0 * us,
                    against: 2.0 * med,
                },
            )
        })
        .collect();
    (bad, per_pair.keys().copied().collect())
}

pub(super) fn unreachable(m: &PairMatrix, measured: &BTreeSet<PairKey>) -> BTreeMap<PairKey, Bad> {
    m.failures
        .iter()
        .filter(|f| f.pass == "matrix" && measured.contains(&key(f.a, f.b)))
        .map(|f| {
            let err = f.errors.first().map(String::as_str).unwrap_or("no report");
            (
                key(f.a, f.b),
                Bad {
                    why: format!("failed at {}: {err}", f.stage),
                    value: 0.0,
                    against: match f.stage.as_str() {
                        "connecting" => 0.0,
                        "path MTU" => 1.0,
                        "latency" => 3.0,
                        _ => 2.0,
                    },
                },
            )
        })
        .collect()
}

/// Each rank's interface MTU towards its partners: the most common MTU of its probes.
pub(super) fn interface_mtus(m: &PairMatrix) -> BTreeMap<u32, (u32, Option<String>)> {
    let mut per: BTreeMap<u32, BTreeMap<u32, usize>> = BTreeMap::new();
    let mut names: BTreeMap<u32, String> = BTreeMap::new();
    for p in &m.path_mtu {
        *per.entry(p.src)
            .or_default()
            .entry(p.local_mtu)
            .or_default() += 1;
        if let Some(i) = &p.interface {
            names.entry(p.src).or_insert_with(|| i.clone());
        }
    }
    per.into_iter()
        .filter_map(|(r, counts)| {
            let (&mtu, _) = counts.iter().max_by_key(|(mtu, n)| (**n, **mtu))?;
            Some((r, (mtu, names.get(&r).cloned())))
        })
        .collect()
}

/// Hosts whose interface MTU differs from the majority's.
pub(super) fn mtu_mismatch(m: &PairMatrix) -> Vec<(u32, String)> {
    let mtus = interface_mtus(m);
    let mut groups: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for (&r, &(mtu, _)) in &mtus {
        groups.entry(mtu).or_default().push(r);
    }
    if groups.len() < 2 || mtus.len() < 3 {
        return Vec::new();
    }
    let (&major, members) = match groups.iter().max_by_key(|(_, v)| v.len()) {
        Some(g) => g,
        None => return Vec::new(),
    };
    if 2 * members.len() <= mtus.len() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (&mtu, ranks) in groups.iter().filter(|(&mtu, _)| mtu != major) {
        for &r in ranks {
            let iface = mtus
                .get(&r)
                .and_then(|(_, n)| n.clone())
                .map(|n| format!(" ({n})"))
                .unwrap_or_default();
            let towards: Vec<u32> = m
                .path_mtu
                .iter()
                .filter(|p| p.src == r)
                .filter_map(|p| p.path_mtu)
                .collect();
            let paths = if towards.is_empty() {
                String::new()
            } else {
                let lo = towards.iter().min().copied().unwrap_or(0);
                let hi = towards.iter().max().copied().unwrap_or(0);
                let range = if lo == hi {
                    lo.to_string()
                } else {
                    format!("{lo}-{hi}")
                };
                format!("; its probes reached its peers with packets of at most {range} bytes")
            };
            out.push((
                r,
                format!(
                    "its interface MTU{iface} is {mtu} where {} of {} ranks have {major}{paths}{}",
                    members.len(),
                    mtus.len(),
                    if mtu > major {
                        ": what it sends above their MTU is dropped on the way (UDP and RDMA \
                         traffic; TCP negotiates around it)"
                    } else {
                        ""
                    }
                ),
            ));
        }
    }
    out
}

/// Two ranks whose interface MTUs differ: with no third to take a majority from, the pair is
/// named, with both MTUs.
pub(super) fn mtu_pair_mismatch(m: &PairMatrix) -> Option<(PairKey, String)> {
    let mtus = interface_mtus(m);
    if mtus.len() != 2 || m.ranks != 2 {
        return None;
    }
    let v: Vec<(&u32, &(u32, Option<String>))> = mtus.iter().collect();
    let ((&a, (ma, ia)), (&b, (mb, ib))) = (v[0], v[1]);
    if ma == mb {
        return None;
    }
    let name = |r: u32, i: &Option<String>| match i {
        Some(i) => format!("rank {r}'s {i}"),
        None => format!("rank {r}'s interface"),
    };
    let (hi, lo) = if ma > mb { (a, b) } else { (b, a) };
    Some((
        key(a, b),
        format!(
            "the MTU differs between the two ends: {} {ma}, {} {mb}; what rank {hi} sends above \
             {} is dropped on the way to rank {lo} (UDP and RDMA traffic; TCP negotiates around \
             it); with two ranks fabrik cannot tell which end is the odd one",
            name(a, ia),
            name(b, ib),
            ma.min(mb)
        ),
    ))
}

/// Ranks whose largest TCP receive or send buffer is below the limits most ranks share (a
/// strict majority of at least three ranks that read theirs): no TCP flow to or from them may
/// keep more than that in flight.
pub(super) fn small_tcp_buffers(m: &PairMatrix) -> Vec<(u32, String)> {
    let limits: Vec<(u32, (u64, u64))> = m
        .settings
        .iter()
        .filter_map(|s| {
            let b = s.tcp_buffers?;
            Some((s.rank, (b.rmem?[2], b.wmem?[2])))
        })
        .collect();
    let mut counts: BTreeMap<(u64, u64), usize> = BTreeMap::new();
    for (_, l) in &limits {
        *counts.entry(*l).or_default() += 1;
    }
    let Some((&(rmem, wmem), &n)) = counts.iter().max_by_key(|(_, n)| **n) else {
        return Vec::new();
    };
    if limits.len() < 3 || 2 * n <= limits.len() {
        return Vec::new();
    }
    limits
        .iter()
        .filter(|(_, (r, w))| *r < rmem || *w < wmem)
        .map(|&(rank, (r, w))| {
            (
                rank,
                format!(
                    "its largest TCP receive / send buffers are {r} / {w} bytes \
                     (net.ipv4.tcp_rmem / tcp_wmem max) where {n} of {} ranks have {rmem} / \
                     {wmem}: no TCP flow to or from it keeps more than {} bytes in flight \
                     (FAB-X-014)",
                    limits.len(),
                    r.min(w)
                ),
            )
        })
        .collect()
}

/// Pairs whose probed path MTU is below what both ends' interfaces allow: packets that fit
/// every interface vanish on the way, without the ICMP that would tell the sender.
pub(super) fn black_holes(
    m: &PairMatrix,
    skip: &[u32],
) -> (BTreeMap<PairKey, Bad>, BTreeSet<PairKey>) {
    let mtus = interface_mtus(m);
    let mut bad: BTreeMap<PairKey, Bad> = BTreeMap::new();
    let mut measured = BTreeSet::new();
    for p in &m.path_mtu {
        if skip.contains(&p.src) || skip.contains(&p.dst) {
            continue;
        }
        let Some(path) = p.path_mtu else { continue };
        let k = key(p.src, p.dst);
        measured.insert(k);
        let dst_mtu = mtus.get(&p.dst).map_or(p.local_mtu, |(m, _)| *m);
        let allowed = p.local_mtu.min(dst_mtu);
        if path < allowed {
            bad.entry(k).or_insert(Bad {
                why: format!(
                    "packets above {path} bytes from rank {} to rank {} vanish though both \
                     interfaces allow {allowed}",
                    p.src, p.dst
                ),
                value: f64::from(path),
                against: f64::from(allowed),
            });
        }
    }
    (bad, measured)
}
