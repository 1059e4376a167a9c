//! `fabrik cluster matrix`: every pair of ranks measures bandwidth both ways and latency, one
//! tournament round at a time, so each rank is in at most one test at once; rank 0 gathers the
//! measurements and analyses them.

use std::time::Instant;

use fabrik_model::{Isolation, LinkMeasurement, PairMatrix, SCHEMA_VERSION};

use crate::link::{Link, TcpLink};
use crate::pairs::{
    analyze, disjoint_rounds, good_threshold, isolation_plan, isolation_verdicts, partner,
    round_robin,
};
use crate::rendezvous::Group;
use crate::ClusterError;

const TAG_MATRIX: u32 = 2 << 16;
/// Tags of one rail's runs: `TAG_MATRIX + rail * RAIL_TAGS + round`, the second pass from
/// `SECOND_PASS_TAGS` on; so 64 rails and 511 rounds fit below the next user of the tag space.
const RAIL_TAGS: u32 = 1024;
const SECOND_PASS_TAGS: u32 = 512;
/// Rails a per-rail run may have (the tag space above).
pub const MAX_RAILS: u32 = 64;
const LAT_ROUNDS: u32 = 50;
const WRITE_CHUNK: usize = 4 << 20;

/// How `fabrik cluster matrix` measures each pair.
#[derive(Debug, Clone)]
pub struct MatrixConfig {
    /// Bytes per timed transfer.
    pub size: u64,
    /// Timed transfers per direction (after one warm-up).
    pub iters: u32,
    /// Which of each rank's data addresses the pairs use (0 unless per rail).
    pub rail: u32,
    /// Whether a second pass measures each suspect against good nodes (bad node or bad link).
    pub isolate: bool,
}

impl MatrixConfig {
    fn tag(&self, second: bool, round: u32) -> u32 {
        let base = TAG_MATRIX + self.rail.min(MAX_RAILS - 1) * RAIL_TAGS;
        if second {
            base + SECOND_PASS_TAGS + round.min(SECOND_PASS_TAGS - 1)
        } else {
            base + round.min(SECOND_PASS_TAGS - 1)
        }
    }
}

/// A TCP connection to `peer` on `rail` (the peer's `rail`-th data address): the lower rank
/// connects, the higher accepts.
pub fn rail_stream(
    group: &mut Group,
    peer: u32,
    tag: u32,
    rail: u32,
) -> Result<std::net::TcpStream, ClusterError> {
    if group.rank() < peer {
        group.connect_data(peer, tag, rail as usize)
    } else {
        group.accept_data(peer, tag)
    }
}

/// Opens the two-way link one pair test runs over: `(group, peer, tag)`.
pub type PairOpener<'a> =
    dyn FnMut(&mut Group, u32, u32) -> Result<Box<dyn Link>, ClusterError> + 'a;

/// Runs the matrix on this rank over TCP. Rank 0 returns the matrix; `on_round` sees each
/// round's index as it starts (for progress).
pub fn run_matrix(
    group: &mut Group,
    cfg: &MatrixConfig,
    on_round: &mut dyn FnMut(u32, u32),
) -> Result<Option<PairMatrix>, ClusterError> {
    let rail = cfg.rail;
    let mut tcp = |g: &mut Group, peer: u32, tag: u32| -> Result<Box<dyn Link>, ClusterError> {
        Ok(Box::new(TcpLink::new(rail_stream(g, peer, tag, rail)?)?))
    };
    run_matrix_over(group, cfg, "tcp", &mut tcp, on_round, &mut |_| {})
}

/// Runs the matrix over the links `open` makes (one per pair and round), reported as
/// `transport`.
///
/// Each round's measurements reach rank 0 at the start of the next round (that gather is also
/// the barrier between rounds), and rank 0 hands the matrix so far to `on_rows` (its
/// `analysis.note` says how many rounds it holds), so a caller can keep finished rows when a
/// later round fails. The run ends with a verdict from rank 0 that every rank waits for: a rank
/// never reports success for a run that rank 0 aborted.
pub fn run_matrix_over(
    group: &mut Group,
    cfg: &MatrixConfig,
    transport: &str,
    open: &mut PairOpener<'_>,
    on_round: &mut dyn FnMut(u32, u32),
    on_rows: &mut dyn FnMut(&PairMatrix),
) -> Result<Option<PairMatrix>, ClusterError> {
    let rounds = round_robin(group.size());
    let total = rounds.len() as u32;
    let mut links: Vec<LinkMeasurement> = Vec::new();
    let mut mine: Vec<LinkMeasurement> = Vec::new();
    for (k, round) in rounds.iter().enumerate() {
        let k = k as u32;
        if collect(group, &mut mine, &mut links)? && k > 0 {
            let mut m = matrix(group, cfg, transport, total, links.clone());
            m.analysis.note = Some(partial_note(k, total, m.analysis.note.as_deref()));
            on_rows(&m);
        }
        on_round(k, total);
        play(group, cfg, open, round, k, false, &mut mine)?;
    }
    // The last round's rows, then the verdict.
    let root = collect(group, &mut mine, &mut links)?;
    let mut m = root.then(|| matrix(group, cfg, transport, total, links));
    if cfg.isolate {
        if let Some(m) = &m {
            // The whole first pass is kept should the second fail.
            on_rows(m);
        }
        second_pass(group, cfg, open, m.as_mut())?;
    }
    Ok(m)
}

/// The second pass: rank 0 plans it from the first pass's suspects (nothing when there are
/// none) and every rank runs the pairs it is in, one round of disjoint pairs at a time; rank 0
/// then writes the verdicts into `m.isolation`.
fn second_pass(
    group: &mut Group,
    cfg: &MatrixConfig,
    open: &mut PairOpener<'_>,
    m: Option<&mut PairMatrix>,
) -> Result<(), ClusterError> {
    let plan = m
        .as_ref()
        .and_then(|m| isolation_plan(&m.analysis, m.ranks));
    let rounds: Vec<Vec<(u32, u32)>> = group.broadcast(m.as_ref().map(|_| {
        plan.as_ref()
            .map(|p| disjoint_rounds(&p.pairs))
            .unwrap_or_default()
    }))?;
    let mut links = Vec::new();
    let mut mine = Vec::new();
    for (k, round) in rounds.iter().enumerate() {
        let k = k as u32;
        play(group, cfg, open, round, k, true, &mut mine)?;
        collect(group, &mut mine, &mut links)?;
    }
    if let (Some(m), Some(plan)) = (m, plan) {
        // Never more lenient than the first pass: among good nodes whose links vary widely
        // (a loaded host) the good-only line can fall below a link the first pass flagged,
        // which would then pass again unchanged.
        let first = m.analysis.link_threshold_gbps;
        let threshold = good_threshold(&m.links, &plan.good).map_or(first, |g| g.max(first));
        let verdicts =
            isolation_verdicts(&plan, &m.analysis, &m.links, &links, &m.hosts, threshold);
        m.isolation = Some(Isolation {
            good: plan.good,
            suspects: plan.suspects,
            threshold_gbps: threshold,
            rounds: rounds.len() as u32,
            links,
            verdicts,
        });
    }
    Ok(())
}

/// This rank's pair test of round `k` (of the second pass when `second`), if it plays; its
/// rows go to `mine`. A failure is reported to rank 0 before it is returned.
fn play(
    group: &mut Group,
    cfg: &MatrixConfig,
    open: &mut PairOpener<'_>,
    round: &[(u32, u32)],
    k: u32,
    second: bool,
    mine: &mut Vec<LinkMeasurement>,
) -> Result<(), ClusterError> {
    if let Some(p) = partner(round, group.rank()) {
        let measured = open(group, p, cfg.tag(second, k))
            .and_then(|link| measure_pair(group, &*link, p, k, cfg));
        match measured {
            Ok(got) => *mine = got,
            Err(e) => return Err(group.fail(&e)),
        }
    }
    Ok(())
}

/// Gathers this rank's rows of the round just finished at rank 0 (into `links`, kept sorted),
/// then waits for rank 0's word to go on: any failure at rank 0 (a rank died, went silent or
/// reported an error) comes back as an error on every rank. Returns whether this is rank 0.
fn collect(
    group: &mut Group,
    mine: &mut Vec<LinkMeasurement>,
    links: &mut Vec<LinkMeasurement>,
) -> Result<bool, ClusterError> {
    let root = match group.gather(std::mem::take(mine))? {
        Some(per_rank) => {
            links.extend(per_rank.into_iter().flatten());
            links.sort_by_key(|l| (l.src, l.dst));
            true
        }
        None => false,
    };
    group.broadcast(root.then_some(()))?;
    Ok(root)
}

fn matrix(
    group: &Group,
    cfg: &MatrixConfig,
    transport: &str,
    rounds: u32,
    links: Vec<LinkMeasurement>,
) -> PairMatrix {
    let hosts: Vec<String> = group.peers().iter().map(|p| p.host.clone()).collect();
    let analysis = analyze(&links, &hosts, group.size());
    PairMatrix {
        schema_version: SCHEMA_VERSION,
        transport: transport.into(),
        size: cfg.size,
        iterations: cfg.iters,
        ranks: group.size(),
        hosts,
        rounds,
        links,
        analysis,
        rail: None,
        isolation: None,
    }
}

/// `partial: 2 of 5 rounds done`, keeping what the analysis had to say.
fn partial_note(done: u32, rounds: u32, note: Option<&str>) -> String {
    match note {
        Some(n) => format!("partial: {done} of {rounds} rounds done; {n}"),
        None => format!("partial: {done} of {rounds} rounds done"),
    }
}

/// Measures this rank → `peer` (returned, as the sender measures it) and takes part in
/// `peer` → this rank; the lower rank goes first. Latency is measured by the lower rank and
/// reported on both directions.
fn measure_pair(
    group: &Group,
    s: &dyn Link,
    peer: u32,
    round: u32,
    cfg: &MatrixConfig,
) -> Result<Vec<LinkMeasurement>, ClusterError> {
    let label = group.label(peer);
    let me = group.rank();
    let first = me < peer;
    let mut out = Vec::new();
    let mut buf = vec![0u8; (cfg.size as usize).clamp(1, WRITE_CHUNK)];
    for phase in 0..2 {
        let sending = (phase == 0) == first;
        if sending {
            let gbps = send_timed(s, &mut buf, cfg, &label)?;
            out.push(LinkMeasurement {
                src: me,
                dst: peer,
                gbps,
                latency_us: None,
                round,
            });
        } else {
            recv_timed(s, &mut buf, cfg, &label)?;
        }
    }
    let lat = ping_pong(s, first, &label)?;
    let latency = if first { Some(lat) } else { None };
    // The follower learns the latency from the leader so both directions carry it.
    let latency = exchange_f64(s, first, latency, &label)?;
    for m in &mut out {
        m.latency_us = Some(latency);
    }
    Ok(out)
}

/// Names the peer on a link's error (one that already names a peer is kept).
fn io<'a>(peer: &'a str, doing: &str) -> impl Fn(ClusterError) -> ClusterError + 'a {
    let doing = doing.to_string();
    move |e| match e {
        ClusterError::Io { err: source, .. } => ClusterError::Peer {
            peer: peer.to_string(),
            why: format!("{doing}: {source}"),
        },
        e @ ClusterError::Peer { .. } => e,
        e => ClusterError::Peer {
            peer: peer.to_string(),
            why: format!("{doing}: {e}"),
        },
    }
}

fn stream_bytes(s: &dyn Link, buf: &[u8], total: u64, peer: &str) -> Result<(), ClusterError> {
    let mut left = total;
    while left > 0 {
        let n = left.min(buf.len() as u64) as usize;
        s.send_all(&buf[..n]).map_err(io(peer, "sending"))?;
        left -= n as u64;
    }
    Ok(())
}

fn drain_bytes(s: &dyn Link, buf: &mut [u8], total: u64, peer: &str) -> Result<(), ClusterError> {
    let mut left = total;
    while left > 0 {
        let n = left.min(buf.len() as u64) as usize;
        s.recv_exact(&mut buf[..n]).map_err(io(peer, "receiving"))?;
        left -= n as u64;
    }
    Ok(())
}

/// One warm-up transfer, then `iters` timed ones; the receiver's one-byte acknowledgement
/// closes the clock, so the time covers delivery, not just handing bytes to the kernel.
fn send_timed(
    s: &dyn Link,
    buf: &mut [u8],
    cfg: &MatrixConfig,
    peer: &str,
) -> Result<f64, ClusterError> {
    let mut ack = [0u8; 1];
    stream_bytes(s, buf, cfg.size, peer)?;
    s.recv_exact(&mut ack)
        .map_err(io(peer, "waiting for the acknowledgement"))?;
    let t0 = Instant::now();
    for _ in 0..cfg.iters.max(1) {
        stream_bytes(s, buf, cfg.size, peer)?;
    }
    s.recv_exact(&mut ack)
        .map_err(io(peer, "waiting for the acknowledgement"))?;
    let secs = t0.elapsed().as_secs_f64();
    let bits = cfg.size as f64 * 8.0 * f64::from(cfg.iters.max(1));
    Ok(if secs > 0.0 { bits / secs / 1e9 } else { 0.0 })
}

fn recv_timed(
    s: &dyn Link,
    buf: &mut [u8],
    cfg: &MatrixConfig,
    peer: &str,
) -> Result<(), ClusterError> {
    drain_bytes(s, buf, cfg.size, peer)?;
    s.send_all(&[1]).map_err(io(peer, "acknowledging"))?;
    drain_bytes(s, buf, cfg.size * u64::from(cfg.iters.max(1)), peer)?;
    s.send_all(&[1]).map_err(io(peer, "acknowledging"))?;
    Ok(())
}

/// Median half round trip of one byte, in microseconds (the leader's measurement).
fn ping_pong(s: &dyn Link, leader: bool, peer: &str) -> Result<f64, ClusterError> {
    let mut b = [0u8; 1];
    let mut rtts = Vec::with_capacity(LAT_ROUNDS as usize);
    for _ in 0..LAT_ROUNDS {
        if leader {
            let t0 = Instant::now();
            s.send_all(&b).map_err(io(peer, "ping"))?;
            s.recv_exact(&mut b).map_err(io(peer, "pong"))?;
            rtts.push(t0.elapsed().as_secs_f64() * 1e6 / 2.0);
        } else {
            s.recv_exact(&mut b).map_err(io(peer, "ping"))?;
            s.send_all(&b).map_err(io(peer, "pong"))?;
        }
    }
    Ok(crate::pairs::median(&rtts))
}

fn exchange_f64(
    s: &dyn Link,
    leader: bool,
    v: Option<f64>,
    peer: &str,
) -> Result<f64, ClusterError> {
    if leader {
        let v = v.unwrap_or(0.0);
        s.send_all(&v.to_be_bytes()).map_err(io(peer, "sending"))?;
        Ok(v)
    } else {
        let mut b = [0u8; 8];
        s.recv_exact(&mut b).map_err(io(peer, "receiving"))?;
        Ok(f64::from_be_bytes(b))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::rendezvous::{join, JoinConfig};
    use fabrik_wire::Token;
    use std::time::Duration;

    fn rank_cfg(rank: u32, n: u32, port: u16, secs: u64) -> JoinConfig {
        JoinConfig {
            rank,
            world_size: n,
            master: format!("127.0.0.1:{port}"),
            token: Token::new("t").unwrap(),
            timeout: Duration::from_secs(secs),
            host: format!("node{rank}"),
            data_ips: vec![],
        }
    }

    const SMALL: MatrixConfig = MatrixConfig {
        size: 1 << 14,
        iters: 1,
        rail: 0,
        isolate: true,
    };

    #[test]
    fn a_rank_that_dies_in_the_last_round_fails_every_rank() {
        // A rank that finishes its last pair before the death is known must not send its rows
        // and exit 0 from a run rank 0 then aborts: every rank waits for rank 0's verdict.
        let (port, n) = (fabrik_testbed::free_port().unwrap(), 4);
        let hs: Vec<_> = (0..n)
            .map(|rank| {
                std::thread::spawn(move || {
                    let mut g = join(&rank_cfg(rank, n, port, 5)).unwrap();
                    let mut rows_seen = 0;
                    let mut on_round = |k: u32, total: u32| {
                        if rank == 3 && k + 1 == total {
                            // Dies: the thread ends, its sockets close.
                            panic!("rank 3 killed");
                        }
                    };
                    let r = run_matrix_over(
                        &mut g,
                        &SMALL,
                        "tcp",
                        &mut |g, p, t| Ok(Box::new(TcpLink::new(g.pair_stream(p, t)?)?)),
                        &mut on_round,
                        &mut |m| rows_seen = m.links.len(),
                    );
                    (r.map(|m| m.is_some()).map_err(|e| e.to_string()), rows_seen)
                })
            })
            .collect();
        let results: Vec<_> = hs.into_iter().map(|h| h.join()).collect();
        assert!(results[3].is_err(), "rank 3 was to die");
        for (rank, r) in results[..3].iter().enumerate() {
            let (r, _) = r.as_ref().unwrap();
            assert!(r.is_err(), "rank {rank} reported success: {r:?}");
        }
        let (root, rows_seen) = results[0].as_ref().unwrap();
        let why = root.as_ref().unwrap_err();
        assert!(
            why.contains("rank 3 (node3, 127.0.0.1) died or exited"),
            "{why}"
        );
        // Two of three rounds finished before the death; their 8 directed links reached rank 0.
        assert_eq!(*rows_seen, 8);
    }

    #[test]
    fn a_silent_rank_is_named_silent_and_every_rank_fails() {
        let (port, n) = (fabrik_testbed::free_port().unwrap(), 4);
        let hs: Vec<_> = (0..n)
            .map(|rank| {
                std::thread::spawn(move || {
                    let mut g = join(&rank_cfg(rank, n, port, 2)).unwrap();
                    if rank == 2 {
                        // Stopped: connections open, nothing said (as under SIGSTOP).
                        std::thread::sleep(Duration::from_secs(4));
                        return Err("stopped".to_string());
                    }
                    run_matrix(&mut g, &SMALL, &mut |_, _| {})
                        .map(|m| m.is_some())
                        .map_err(|e| e.to_string())
                })
            })
            .collect();
        let results: Vec<_> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        assert!(results.iter().all(Result::is_err), "{results:?}");
        let why = results[0].as_ref().unwrap_err();
        assert!(
            why.contains(
                "rank 2 (node2, 127.0.0.1) is silent: its connection is open but it sent nothing in 2 s"
            ),
            "{why}"
        );
        for r in [1, 3] {
            let e = results[r].as_ref().unwrap_err();
            assert!(
                e.contains("rank 2 (node2, 127.0.0.1) is silent"),
                "rank {r}: {e}"
            );
        }
    }

    #[test]
    fn five_ranks_measure_every_directed_link_once() {
        let port = fabrik_testbed::free_port().unwrap();
        let n = 5;
        let hs: Vec<_> = (0..n)
            .map(|rank| {
                std::thread::spawn(move || {
                    let mut g = join(&JoinConfig {
                        rank,
                        world_size: n,
                        master: format!("127.0.0.1:{port}"),
                        token: Token::new("t").unwrap(),
                        timeout: Duration::from_secs(20),
                        host: format!("node{rank}"),
                        data_ips: vec![],
                    })
                    .unwrap();
                    run_matrix(
                        &mut g,
                        &MatrixConfig {
                            size: 1 << 16,
                            iters: 2,
                            rail: 0,
                            isolate: true,
                        },
                        &mut |_, _| {},
                    )
                    .unwrap()
                })
            })
            .collect();
        let results: Vec<_> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        let m = results[0].clone().unwrap();
        assert!(results[1..].iter().all(Option::is_none));
        assert_eq!(m.rounds, 5);
        assert_eq!(m.links.len(), 20);
        let mut seen: Vec<(u32, u32)> = m.links.iter().map(|l| (l.src, l.dst)).collect();
        seen.dedup();
        assert_eq!(seen.len(), 20);
        assert!(m
            .links
            .iter()
            .all(|l| l.gbps > 0.0 && l.latency_us.unwrap() > 0.0));
        assert_eq!(m.hosts[3], "node3");
    }
}
