//! One pair test of the matrix, on both of its ranks: the path MTU each way, bandwidth each way
//! (with the time of every transfer and the retransmissions it cost), then the latency of a
//! one-byte ping-pong.
//!
//! A pair test never takes the run down: whatever fails (no connection, a transfer that
//! stalls) becomes a failure row beside what was measured before it, and the matrix goes on
//! with the next round. Every wait is bounded by the pair's wait limit, and every transfer by
//! its share of the pair's time budget: a sender past its budget ends the transfer between two
//! chunks and the bandwidth is what arrived by then, so a pair of any speed ends in time.
//!
//! On the wire each direction is a stream of frames: a 4-byte length and that many payload
//! bytes, [`ITER_END`] after each transfer, [`END`] when the sender is done. The receiver times
//! the transfers (when each one's last byte arrived) and sends back the bandwidth it saw and the
//! time of each transfer.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use fabrik_model::{LinkEvidence, LinkMeasurement, PathMtu, Retransmits, Spread};
use serde::{Deserialize, Serialize};

use crate::link::Link;
use crate::{path_mtu, sockinfo, ClusterError};

/// Reads the RDMA device's retry and sequence-error counters (name → value), for a pair over
/// RDMA; `None` where there is nothing to read (TCP, whose sockets count their own).
pub type CounterSampler<'a> = dyn FnMut() -> Option<BTreeMap<String, u64>> + 'a;

/// Payload bytes per frame: small enough that a sender checks its budget often on a slow link
/// (a 1 MiB frame takes 0.4 s at 20 Mb/s), large enough that framing costs nothing.
pub(crate) const CHUNK: usize = 1 << 20;
/// Frame header of the end of one transfer.
const ITER_END: u32 = u32::MAX - 1;
/// Frame header of the end of a direction.
const END: u32 = u32::MAX;
/// Round trips of the latency test.
pub(crate) const LAT_ROUNDS: u32 = 50;
/// Round trips taken even past the budget, so that a latency is always reported.
const LAT_MIN_ROUNDS: u32 = 5;

/// The limits of one pair test.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// The most any one wait (a read, a write, a connection) may take.
    pub wait: Duration,
    /// The time the two transfers and the latency test may take together.
    pub budget: Duration,
}

/// What one pair test is, as this rank sees it.
pub(crate) struct Pair {
    pub me: u32,
    pub peer: u32,
    pub round: u32,
    pub pass: &'static str,
    pub size: u64,
    pub iters: u32,
    pub limits: Limits,
    /// This rank's data address and the peer's, for the path MTU probe (both or neither).
    pub addrs: Option<(IpAddr, IpAddr)>,
    /// Tags this pair's probes, so stray datagrams of another pair are not echoed.
    pub tag: u64,
}

/// A pair test that failed: at which stage, and why, as this rank saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Failed {
    pub peer: u32,
    pub stage: String,
    pub error: String,
}

/// What this rank reports of one pair test: its own sending direction and its own probe.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct PairRows {
    pub links: Vec<LinkMeasurement>,
    pub evidence: Vec<LinkEvidence>,
    pub path_mtu: Vec<PathMtu>,
    pub failure: Option<Failed>,
}

impl PairRows {
    pub(crate) fn failed(p: &Pair, stage: &str, e: &ClusterError) -> PairRows {
        PairRows {
            failure: Some(Failed {
                peer: p.peer,
                stage: stage.to_string(),
                error: e.to_string(),
            }),
            ..PairRows::default()
        }
    }
}

/// Runs the pair test over `link` (this rank is `p.me`). Never fails: a failure is a row.
pub(crate) fn run(p: &Pair, link: &dyn Link, counters: &mut CounterSampler<'_>) -> PairRows {
    let mut rows = PairRows::default();
    let first = p.me < p.peer;
    let (lo, hi) = (p.me.min(p.peer), p.me.max(p.peer));
    if let Some((mine, theirs)) = p.addrs {
        match exchange_mtu(link, first, mine, theirs, p.tag) {
            Ok(Some(f)) => rows.path_mtu.push(PathMtu {
                src: p.me,
                dst: p.peer,
                local_mtu: f.local_mtu,
                interface: f.interface,
                path_mtu: f.path_mtu,
                probes: f.probes,
            }),
            Ok(None) => {}
            Err(e) => {
                rows.failure = Some(Failed {
                    peer: p.peer,
                    stage: "path MTU".into(),
                    error: e.to_string(),
                });
                return rows;
            }
        }
    }
    let mut buf = vec![0u8; 4 + CHUNK.min(usize::try_from(p.size).unwrap_or(CHUNK)).max(1)];
    let share = p.limits.budget.mul_f64(0.4);
    for phase in 0..2 {
        let sending = (phase == 0) == first;
        // The lower rank sends first.
        let stage = if phase == 0 {
            format!("{lo} -> {hi}")
        } else {
            format!("{hi} -> {lo}")
        };
        let done = if sending {
            send(p, link, &mut buf, share, counters).map(|(l, e)| {
                rows.links.push(l);
                rows.evidence.push(e);
            })
        } else {
            receive(link, &mut buf, p.iters)
        };
        if let Err(e) = done {
            rows.failure = Some(Failed {
                peer: p.peer,
                stage,
                error: e.to_string(),
            });
            return rows;
        }
    }
    match latency(link, first, p.limits.budget.mul_f64(0.2)) {
        Ok(spread) => {
            for l in &mut rows.links {
                l.latency_us = Some(spread.median_us);
            }
            for e in &mut rows.evidence {
                e.latency = Some(spread.clone());
            }
        }
        Err(e) => {
            rows.failure = Some(Failed {
                peer: p.peer,
                stage: "latency".into(),
                error: e.to_string(),
            });
        }
    }
    rows
}

/// Each rank probes the path to the other while the other echoes, the lower rank first; the
/// echo socket's port travels over the link. Returns this rank's probe.
fn exchange_mtu(
    link: &dyn Link,
    first: bool,
    mine: IpAddr,
    theirs: IpAddr,
    tag: u64,
) -> Result<Option<path_mtu::Found>, ClusterError> {
    let sock = std::net::UdpSocket::bind(SocketAddr::new(mine, 0));
    let port = sock
        .as_ref()
        .ok()
        .and_then(|s| s.local_addr().ok())
        .map_or(0, |a| a.port());
    let peer_port = exchange_u16(link, first, port)?;
    let mut found = None;
    for phase in 0..2 {
        if (phase == 0) == first {
            if peer_port != 0 {
                found = path_mtu::probe(SocketAddr::new(theirs, peer_port), tag);
            }
            link.send_all(&[1])?;
        } else {
            let stop = AtomicBool::new(false);
            let mut done = [0u8; 1];
            std::thread::scope(|s| {
                if let Ok(sock) = &sock {
                    s.spawn(|| path_mtu::echo(sock, tag, theirs, &stop));
                }
                let got = link.recv_exact(&mut done);
                stop.store(true, Ordering::Relaxed);
                got
            })?;
        }
    }
    Ok(found)
}

fn exchange_u16(link: &dyn Link, first: bool, v: u16) -> Result<u16, ClusterError> {
    let mut b = [0u8; 2];
    if first {
        link.send_all(&v.to_be_bytes())?;
        link.recv_exact(&mut b)?;
    } else {
        link.recv_exact(&mut b)?;
        link.send_all(&v.to_be_bytes())?;
    }
    Ok(u16::from_be_bytes(b))
}

/// Sends one warm-up transfer and `iters` timed ones in frames, stopping between two frames
/// once `share` has passed; returns the receiver's measurement and this socket's
/// retransmissions.
fn send(
    p: &Pair,
    link: &dyn Link,
    buf: &mut [u8],
    share: Duration,
    counters: &mut CounterSampler<'_>,
) -> Result<(LinkMeasurement, LinkEvidence), ClusterError> {
    let tcp_before = link.polled().and_then(|p| sockinfo::tcp_counts(p.stream));
    let rdma_before = counters();
    let deadline = Instant::now() + share;
    let mut cut_short = false;
    'transfers: for _ in 0..=p.iters.max(1) {
        let mut left = p.size.max(1);
        while left > 0 {
            if Instant::now() >= deadline {
                cut_short = true;
                break 'transfers;
            }
            let n = (left.min(CHUNK as u64) as usize).min(buf.len() - 4);
            buf[..4].copy_from_slice(&(n as u32).to_be_bytes());
            link.send_all(&buf[..4 + n])?;
            left -= n as u64;
        }
        link.send_all(&ITER_END.to_be_bytes())?;
    }
    link.send_all(&END.to_be_bytes())?;
    let report = recv_report(link, p.iters)?;
    let retransmits = match (
        tcp_before,
        link.polled().and_then(|p| sockinfo::tcp_counts(p.stream)),
    ) {
        (Some(b), Some(a)) => Some(Retransmits {
            source: "tcp_info".into(),
            sent: a.sent.zip(b.sent).map(|(a, b)| a.saturating_sub(b)),
            retransmitted: a.retransmitted.saturating_sub(b.retransmitted),
            duplicates: a
                .duplicates
                .zip(b.duplicates)
                .map(|(a, b)| a.saturating_sub(b)),
            counters: BTreeMap::new(),
        }),
        _ => rdma_before.zip(counters()).map(|(b, a)| {
            let moved: BTreeMap<String, u64> = a
                .iter()
                .filter_map(|(k, v)| {
                    let d = v.saturating_sub(b.get(k).copied().unwrap_or(*v));
                    (d > 0).then(|| (k.clone(), d))
                })
                .collect();
            Retransmits {
                source: "rdma".into(),
                sent: None,
                retransmitted: moved.values().sum(),
                duplicates: None,
                counters: moved,
            }
        }),
    };
    Ok((
        LinkMeasurement {
            src: p.me,
            dst: p.peer,
            gbps: report.gbps,
            latency_us: None,
            round: p.round,
        },
        LinkEvidence {
            src: p.me,
            dst: p.peer,
            pass: p.pass.into(),
            transfers: spread(&report.transfers_us),
            latency: None,
            retransmits,
            cut_short,
        },
    ))
}

/// What the receiver saw of one direction.
#[derive(Debug, Clone, PartialEq)]
struct Report {
    gbps: f64,
    transfers_us: Vec<f64>,
}

/// Receives one direction's frames, then tells the sender what arrived and how fast.
fn receive(link: &dyn Link, buf: &mut [u8], iters: u32) -> Result<(), ClusterError> {
    let mut head = [0u8; 4];
    let mut first_byte: Option<Instant> = None;
    let mut ends: Vec<Instant> = Vec::new();
    let (mut total, mut after_warmup) = (0u64, 0u64);
    loop {
        link.recv_exact(&mut head)?;
        match u32::from_be_bytes(head) {
            END => break,
            ITER_END => ends.push(Instant::now()),
            n if n as usize <= buf.len() && n > 0 => {
                link.recv_exact(&mut buf[..n as usize])?;
                first_byte.get_or_insert_with(Instant::now);
                total += u64::from(n);
                if !ends.is_empty() {
                    after_warmup += u64::from(n);
                }
            }
            n => {
                return Err(ClusterError::Peer {
                    peer: "the pair's sender".into(),
                    why: format!("sent a frame of {n} bytes (at most {} expected)", buf.len()),
                })
            }
        }
    }
    let now = Instant::now();
    // Timed from the warm-up's end; a transfer cut short in its warm-up is timed whole.
    let (bytes, secs) = match (ends.first(), first_byte) {
        (Some(&t0), _) if after_warmup > 0 => (after_warmup, (now - t0).as_secs_f64()),
        (_, Some(t0)) => (
            total,
            (ends.last().copied().unwrap_or(now) - t0).as_secs_f64(),
        ),
        _ => (0, 0.0),
    };
    let gbps = if secs > 0.0 {
        bytes as f64 * 8.0 / secs / 1e9
    } else {
        0.0
    };
    let transfers: Vec<f64> = ends
        .windows(2)
        .map(|w| (w[1] - w[0]).as_secs_f64() * 1e6)
        .take(iters as usize)
        .collect();
    let mut out = Vec::with_capacity(12 + 8 * transfers.len());
    out.extend_from_slice(&gbps.to_be_bytes());
    out.extend_from_slice(&(transfers.len() as u32).to_be_bytes());
    for t in &transfers {
        out.extend_from_slice(&t.to_be_bytes());
    }
    link.send_all(&out)
}

fn recv_report(link: &dyn Link, iters: u32) -> Result<Report, ClusterError> {
    let mut b8 = [0u8; 8];
    let mut b4 = [0u8; 4];
    link.recv_exact(&mut b8)?;
    let gbps = f64::from_be_bytes(b8);
    link.recv_exact(&mut b4)?;
    let n = u32::from_be_bytes(b4);
    if n > iters {
        return Err(ClusterError::Peer {
            peer: "the pair's receiver".into(),
            why: format!("reported {n} transfers of {iters}"),
        });
    }
    let mut transfers_us = Vec::with_capacity(n as usize);
    for _ in 0..n {
        link.recv_exact(&mut b8)?;
        transfers_us.push(f64::from_be_bytes(b8));
    }
    Ok(Report {
        gbps: if gbps.is_finite() && gbps >= 0.0 {
            gbps
        } else {
            0.0
        },
        transfers_us,
    })
}

/// Half round trips of one byte: the leader pings until [`LAT_ROUNDS`] are done or `share`
/// has passed (at least [`LAT_MIN_ROUNDS`]), then tells the follower what it measured.
fn latency(link: &dyn Link, leader: bool, share: Duration) -> Result<Spread, ClusterError> {
    let mut b = [0u8; 1];
    if leader {
        let deadline = Instant::now() + share;
        let mut halves = Vec::with_capacity(LAT_ROUNDS as usize);
        for i in 0..LAT_ROUNDS {
            if i >= LAT_MIN_ROUNDS && Instant::now() >= deadline {
                break;
            }
            let t0 = Instant::now();
            link.send_all(&[1])?;
            link.recv_exact(&mut b)?;
            halves.push(t0.elapsed().as_secs_f64() * 1e6 / 2.0);
        }
        link.send_all(&[0])?;
        let s = spread(&halves).unwrap_or(Spread {
            count: 0,
            min_us: 0.0,
            median_us: 0.0,
            p90_us: 0.0,
            max_us: 0.0,
        });
        let mut out = Vec::with_capacity(40);
        for v in [
            f64::from(s.count),
            s.min_us,
            s.median_us,
            s.p90_us,
            s.max_us,
        ] {
            out.extend_from_slice(&v.to_be_bytes());
        }
        link.send_all(&out)?;
        Ok(s)
    } else {
        loop {
            link.recv_exact(&mut b)?;
            if b[0] == 0 {
                break;
            }
            link.send_all(&b)?;
        }
        let mut v = [0f64; 5];
        let mut b8 = [0u8; 8];
        for x in &mut v {
            link.recv_exact(&mut b8)?;
            *x = f64::from_be_bytes(b8);
        }
        Ok(Spread {
            count: v[0].clamp(0.0, f64::from(LAT_ROUNDS)) as u32,
            min_us: v[1],
            median_us: v[2],
            p90_us: v[3],
            max_us: v[4],
        })
    }
}

/// The spread of `times` (µs); `None` when there are none.
pub(crate) fn spread(times: &[f64]) -> Option<Spread> {
    let mut v: Vec<f64> = times.iter().copied().filter(|t| t.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let rank = |q: f64| v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
    Some(Spread {
        count: v.len() as u32,
        min_us: v[0],
        median_us: crate::pairs::median(&v),
        p90_us: rank(0.9),
        max_us: v[v.len() - 1],
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::link::mem_pair;

    fn pair(me: u32, peer: u32, size: u64, iters: u32, budget: Duration) -> Pair {
        Pair {
            me,
            peer,
            round: 0,
            pass: "matrix",
            size,
            iters,
            limits: Limits {
                wait: Duration::from_secs(5),
                budget,
            },
            addrs: None,
            tag: 9,
        }
    }

    #[test]
    fn both_directions_are_measured_with_their_transfers_and_latency() {
        let (a, b) = mem_pair(1 << 20, Duration::from_secs(5));
        let h = std::thread::spawn(move || {
            run(
                &pair(1, 0, 3 << 20, 3, Duration::from_secs(10)),
                &b,
                &mut || None,
            )
        });
        let mine = run(
            &pair(0, 1, 3 << 20, 3, Duration::from_secs(10)),
            &a,
            &mut || None,
        );
        let theirs = h.join().unwrap();
        for (rows, (src, dst)) in [(&mine, (0, 1)), (&theirs, (1, 0))] {
            assert_eq!(rows.failure, None);
            assert_eq!(rows.links.len(), 1);
            let l = &rows.links[0];
            assert_eq!((l.src, l.dst), (src, dst));
            assert!(l.gbps > 0.0 && l.latency_us.unwrap() > 0.0, "{l:?}");
            let e = &rows.evidence[0];
            assert_eq!(e.transfers.as_ref().unwrap().count, 3);
            assert_eq!(e.latency.as_ref().unwrap().count, LAT_ROUNDS);
            assert!(!e.cut_short);
            // An in-memory link has no socket counters.
            assert_eq!(e.retransmits, None);
        }
        // Both ends report the latency the leader measured.
        assert_eq!(mine.evidence[0].latency, theirs.evidence[0].latency);
    }

    #[test]
    fn a_transfer_past_its_budget_ends_between_frames() {
        // 64 MiB x 100 through an in-memory pipe cannot finish in 50 ms.
        let (a, b) = mem_pair(1 << 20, Duration::from_secs(5));
        let budget = Duration::from_millis(50);
        let h =
            std::thread::spawn(move || run(&pair(1, 0, 64 << 20, 100, budget), &b, &mut || None));
        let t0 = Instant::now();
        let mine = run(&pair(0, 1, 64 << 20, 100, budget), &a, &mut || None);
        let theirs = h.join().unwrap();
        assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
        assert!(mine.evidence[0].cut_short && theirs.evidence[0].cut_short);
        assert!(mine.links[0].gbps > 0.0, "{mine:?}");
        // The latency test still ran its minimum.
        assert!(mine.evidence[0].latency.as_ref().unwrap().count >= LAT_MIN_ROUNDS);
    }

    #[test]
    fn a_peer_that_goes_away_is_a_failure_row_not_an_error() {
        let (a, b) = mem_pair(1 << 20, Duration::from_millis(300));
        drop(b);
        let rows = run(
            &pair(0, 1, 1 << 20, 2, Duration::from_secs(1)),
            &a,
            &mut || None,
        );
        let f = rows.failure.unwrap();
        assert_eq!((f.peer, f.stage.as_str()), (1, "0 -> 1"));
        assert!(rows.links.is_empty());
    }

    #[test]
    fn rdma_counters_that_moved_are_the_retransmissions() {
        let (a, b) = mem_pair(1 << 20, Duration::from_secs(5));
        let h = std::thread::spawn(move || {
            run(
                &pair(1, 0, 1 << 16, 1, Duration::from_secs(5)),
                &b,
                &mut || None,
            )
        });
        let mut calls = 0u64;
        let mut sampler = || {
            calls += 1;
            Some(BTreeMap::from([
                ("packet_seq_err".to_string(), 10 * calls),
                ("rnr_nak_retry_err".to_string(), 3),
            ]))
        };
        let mine = run(
            &pair(0, 1, 1 << 16, 1, Duration::from_secs(5)),
            &a,
            &mut sampler,
        );
        h.join().unwrap();
        let r = mine.evidence[0].retransmits.as_ref().unwrap();
        assert_eq!(r.source, "rdma");
        assert_eq!(r.retransmitted, 10);
        assert_eq!(
            r.counters,
            BTreeMap::from([("packet_seq_err".to_string(), 10)])
        );
    }

    #[test]
    fn spreads_use_nearest_rank_percentiles() {
        let s = spread(&[5.0, 1.0, 3.0, 2.0, 4.0, 100.0, 6.0, 7.0, 8.0, 9.0]).unwrap();
        assert_eq!((s.count, s.min_us, s.max_us), (10, 1.0, 100.0));
        assert_eq!(s.median_us, 5.5);
        assert_eq!(s.p90_us, 9.0);
        assert_eq!(spread(&[]), None);
        assert_eq!(spread(&[f64::NAN]), None);
    }
}
