//! `fabrik cluster matrix`: every pair of ranks is tested (path MTU, bandwidth both ways with
//! the time of every transfer and the retransmissions it cost, latency), one tournament round
//! at a time, so each rank is in at most one test at once; rank 0 gathers the measurements,
//! measures its suspects again against good nodes, and names the culprits.
//!
//! A pair that cannot be measured does not end the run: the pair is recorded as failed and the
//! matrix goes on, so that a bad host shows as failures with every partner rather than as the
//! one pair that happened to fail first. What does end the run is a rank that dies or goes
//! silent (its control connection closes, or it says nothing for the timeout): rank 0 then
//! names it and every rank fails.
//!
//! Time: a pair's every wait is bounded by an eighth of the timeout (0.5 to 10 s), and its
//! transfers and latency test by a quarter of it (less when `deadline` leaves less per round),
//! so a round always ends well inside the timeout rank 0 allows each rank to report in.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use fabrik_model::{Isolation, PairFailure, PairMatrix, RankSettings, TcpBuffers, SCHEMA_VERSION};

use crate::diagnose;
pub use crate::pair_test::CounterSampler;
use crate::pair_test::{self, Limits, Pair, PairRows};
use crate::pairs::{
    analyze, disjoint_rounds, good_threshold, isolation_plan, isolation_verdicts, partner,
    round_robin, slow_line, IsolationPlan,
};
use crate::rendezvous::Group;
use crate::transport::{Tcp, Transport};
use crate::ClusterError;

const TAG_MATRIX: u32 = 2 << 16;
/// Tags of one rail's runs: `TAG_MATRIX + rail * RAIL_TAGS + round`, the second pass from
/// `SECOND_PASS_TAGS` on; so 64 rails and 511 rounds fit below the next user of the tag space.
const RAIL_TAGS: u32 = 1024;
const SECOND_PASS_TAGS: u32 = 512;
/// Rails a per-rail run may have (the tag space above).
pub const MAX_RAILS: u32 = 64;

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
    /// The whole run's time limit: the pairs' budgets shrink so that the verdict comes within
    /// it (each pair still gets a few transfers' worth, and every wait its own limit).
    pub deadline: Option<Duration>,
    /// This rank's TCP buffer limits, sent to rank 0 as the matrix starts; [`run`] reads them
    /// from the namespace it runs in when they are `None`.
    pub tcp_buffers: Option<TcpBuffers>,
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

/// The most any one wait of a pair test may take, for a group whose timeout is `timeout`: an
/// eighth of it, from 0.5 s to 10 s.
pub fn pair_wait(timeout: Duration) -> Duration {
    (timeout / 8).clamp(Duration::from_millis(500), Duration::from_secs(10))
}

/// What a matrix run reports as it goes, and reads besides the sockets.
pub struct Hooks<'a> {
    /// Round `k` of `total` of the first pass starts.
    pub on_round: &'a mut dyn FnMut(u32, u32),
    /// Rank 0: the matrix so far (after each round, `analysis.note` saying how many rounds it
    /// holds), then the whole first pass before the second starts.
    pub on_rows: &'a mut dyn FnMut(&PairMatrix),
    /// The RDMA device's retry and sequence-error counters, read around each transfer this
    /// rank sends (nothing for TCP, whose sockets count their own retransmissions).
    pub counters: &'a mut CounterSampler<'a>,
}

/// Runs the matrix on this rank over TCP. Rank 0 returns the matrix; `on_round` sees each
/// round's index as it starts (for progress).
pub fn run_matrix(
    group: &mut Group,
    cfg: &MatrixConfig,
    on_round: &mut dyn FnMut(u32, u32),
) -> Result<Option<PairMatrix>, ClusterError> {
    run_matrix_over(
        group,
        cfg,
        &Tcp,
        &mut Hooks {
            on_round,
            on_rows: &mut |_| {},
            counters: &mut || None,
        },
    )
}

/// Everything rank 0 holds of a run so far.
#[derive(Default)]
struct Acc {
    rows: Vec<PairRows>,
    /// Each rank's settings, in rank order.
    settings: Vec<RankSettings>,
    /// (rank that reported, round, pass) of each row, for the failures.
    from: Vec<(u32, u32, &'static str)>,
}

impl Acc {
    fn links(&self) -> Vec<fabrik_model::LinkMeasurement> {
        let mut v: Vec<_> = self.rows.iter().flat_map(|r| r.links.clone()).collect();
        v.sort_by_key(|l| (l.src, l.dst));
        v
    }

    fn evidence(&self) -> Vec<fabrik_model::LinkEvidence> {
        let mut v: Vec<_> = self.rows.iter().flat_map(|r| r.evidence.clone()).collect();
        v.sort_by(|a, b| (&a.pass, a.src, a.dst).cmp(&(&b.pass, b.src, b.dst)));
        v
    }

    fn path_mtu(&self) -> Vec<fabrik_model::PathMtu> {
        let mut v: Vec<_> = self.rows.iter().flat_map(|r| r.path_mtu.clone()).collect();
        v.sort_by_key(|p| (p.src, p.dst));
        v
    }

    /// One failure per pair and pass, with what each end said (the lower rank first).
    fn failures(&self) -> Vec<PairFailure> {
        let mut by: BTreeMap<(&str, u32, u32), PairFailure> = BTreeMap::new();
        let mut reports: Vec<(u32, u32, &str, &pair_test::Failed)> = self
            .rows
            .iter()
            .zip(&self.from)
            .filter_map(|(r, &(me, round, pass))| r.failure.as_ref().map(|f| (me, round, pass, f)))
            .collect();
        reports.sort_by_key(|(me, ..)| *me);
        for (me, round, pass, f) in reports {
            let (a, b) = (me.min(f.peer), me.max(f.peer));
            let entry = by.entry((pass, a, b)).or_insert_with(|| PairFailure {
                a,
                b,
                pass: pass.to_string(),
                round,
                stage: f.stage.clone(),
                errors: Vec::new(),
            });
            entry.errors.push(format!("rank {me}: {}", f.error));
        }
        by.into_values().collect()
    }
}

/// Runs the matrix over `transport` (a link per pair and round).
///
/// Each round's measurements reach rank 0 at the start of the next round (that gather is also
/// the barrier between rounds), and rank 0 hands the matrix so far to `on_rows`, so a caller can
/// keep finished rows when a later round fails. The run ends with a verdict from rank 0 that
/// every rank waits for: a rank never reports success for a run that rank 0 aborted.
pub fn run_matrix_over(
    group: &mut Group,
    cfg: &MatrixConfig,
    transport: &dyn Transport,
    hooks: &mut Hooks<'_>,
) -> Result<Option<PairMatrix>, ClusterError> {
    let started = Instant::now();
    let rounds = round_robin(group.size());
    let total = rounds.len() as u32;
    let mut acc = Acc::default();
    if let Some(all) = group.gather(cfg.tcp_buffers)? {
        acc.settings = (0..)
            .zip(all)
            .map(|(rank, tcp_buffers)| RankSettings { rank, tcp_buffers })
            .collect();
    }
    let mut mine: Option<PairRows> = None;
    for (k, round) in rounds.iter().enumerate() {
        let k = k as u32;
        if collect(group, &mut mine, &mut acc, k.saturating_sub(1), "matrix")? && k > 0 {
            let mut m = matrix(group, cfg, transport.name(), total, &acc);
            m.analysis.note = Some(partial_note(k, total, m.analysis.note.as_deref()));
            (hooks.on_rows)(&m);
        }
        (hooks.on_round)(k, total);
        let limits = limits(group, cfg, started, total - k + 1);
        mine = play(group, cfg, transport, round, k, false, limits, hooks);
    }
    // The last round's rows, then the verdict.
    let root = collect(
        group,
        &mut mine,
        &mut acc,
        total.saturating_sub(1),
        "matrix",
    )?;
    let mut m = root.then(|| matrix(group, cfg, transport.name(), total, &acc));
    if cfg.isolate {
        if let Some(m) = &m {
            // The whole first pass is kept should the second fail.
            (hooks.on_rows)(m);
        }
        second_pass(group, cfg, transport, m.as_mut(), started, hooks)?;
    }
    if let Some(m) = &mut m {
        m.culprits = diagnose::culprits(m);
        m.elapsed_s = Some(started.elapsed().as_secs_f64());
    }
    Ok(m)
}

/// The limits of a pair test starting now, with `rounds_left` rounds (this one included) and
/// perhaps a second pass still to run.
fn limits(group: &Group, cfg: &MatrixConfig, started: Instant, rounds_left: u32) -> Limits {
    let t = group.timeout();
    let mut budget = t / 4;
    if let Some(d) = cfg.deadline {
        // One round's worth is kept back for the second pass.
        let left = d.saturating_sub(started.elapsed());
        budget = budget.min(left / (rounds_left + 1));
    }
    Limits {
        wait: pair_wait(t),
        budget: budget.max(Duration::from_millis(200)),
    }
}

/// The second pass: rank 0 plans it from the first pass's bandwidth suspects that no other
/// cause already explains, adds the links the first pass blamed for a cause that may be
/// transient (nothing when there is neither), and every rank runs the pairs it is in, one round
/// of disjoint pairs at a time; rank 0 then writes the verdicts into `m.isolation`.
fn second_pass(
    group: &mut Group,
    cfg: &MatrixConfig,
    transport: &dyn Transport,
    m: Option<&mut PairMatrix>,
    started: Instant,
    hooks: &mut Hooks<'_>,
) -> Result<(), ClusterError> {
    let planned = m.as_ref().and_then(|m| {
        let (hosts, links) = diagnose::named_before_second_pass(m);
        let mut a = m.analysis.clone();
        let named = |x: u32, y: u32| {
            hosts.contains(&x) || hosts.contains(&y) || links.contains(&(x.min(y), x.max(y)))
        };
        a.slow_links.retain(|l| !named(l.src, l.dst));
        a.slow_nodes.retain(|n| !hosts.contains(&n.rank));
        let confirm = diagnose::pairs_to_confirm(m);
        let plan = match isolation_plan(&a, m.ranks) {
            Some(p) => p,
            None if confirm.is_empty() => return None,
            None => IsolationPlan {
                suspects: Vec::new(),
                good: (0..m.ranks).collect(),
                pairs: Vec::new(),
            },
        };
        let mut pairs = plan.pairs.clone();
        for p in confirm {
            if !pairs.contains(&p) {
                pairs.push(p);
            }
        }
        Some((a, plan, pairs))
    });
    let rounds: Vec<Vec<(u32, u32)>> = group.broadcast(m.as_ref().map(|_| {
        planned
            .as_ref()
            .map(|(_, plan, pairs)| with_controls(disjoint_rounds(pairs), &plan.good))
            .unwrap_or_default()
    }))?;
    let mut acc = Acc::default();
    let n = rounds.len() as u32;
    for (k, round) in rounds.iter().enumerate() {
        let k = k as u32;
        let limits = limits(group, cfg, started, n - k);
        let mut mine = play(group, cfg, transport, round, k, true, limits, hooks);
        collect(group, &mut mine, &mut acc, k, "second")?;
    }
    if let (Some(m), Some((analysis, plan, _))) = (m, planned) {
        let first = m.analysis.link_threshold_gbps;
        let links = acc.links();
        // Never more lenient than the first pass: among good nodes whose links vary widely (a
        // loaded host) the good-only line can fall below a link the first pass flagged, which
        // would then pass again unchanged. But the control pairs measured beside the suspects
        // met the second pass's own load: where their line (four links or more) is lower, a
        // second pass noisier than the first does not make slow links of its own.
        let line = good_threshold(&m.links, &plan.good).map_or(first, |g| g.max(first));
        let controls: Vec<f64> = links
            .iter()
            .filter(|l| plan.good.contains(&l.src) && plan.good.contains(&l.dst))
            .filter(|l| !plan.pairs.contains(&(l.src.min(l.dst), l.src.max(l.dst))))
            .map(|l| l.gbps)
            .collect();
        let threshold = if controls.len() >= 4 {
            line.min(slow_line(&controls))
        } else {
            line
        };
        let verdicts = isolation_verdicts(&plan, &analysis, &m.links, &links, &m.hosts, threshold);
        m.evidence.extend(acc.evidence());
        m.failures.extend(acc.failures());
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

/// Fills each round with control pairs of good ranks that are free in it, so that the
/// suspects are measured under the load the first pass had (on hosts that share CPUs or a
/// switch, a round with fewer pairs runs faster) and beside a baseline of their own: what
/// good nodes reach in the same round. The pairs of good ranks rotate from round to round.
fn with_controls(rounds: Vec<Vec<(u32, u32)>>, good: &[u32]) -> Vec<Vec<(u32, u32)>> {
    rounds
        .into_iter()
        .enumerate()
        .map(|(k, mut round)| {
            let busy = |r: &u32| round.iter().any(|&(a, b)| a == *r || b == *r);
            let mut free: Vec<u32> = good.iter().copied().filter(|r| !busy(r)).collect();
            if !free.is_empty() {
                let shift = k % free.len();
                free.rotate_left(shift);
            }
            for pair in free.chunks_exact(2) {
                round.push((pair[0].min(pair[1]), pair[0].max(pair[1])));
            }
            round
        })
        .collect()
}

/// This rank's pair test of round `k` (of the second pass when `second`), if it plays. A pair
/// that fails is a row of its own; nothing here ends the run.
#[allow(clippy::too_many_arguments)]
fn play(
    group: &mut Group,
    cfg: &MatrixConfig,
    transport: &dyn Transport,
    round: &[(u32, u32)],
    k: u32,
    second: bool,
    limits: Limits,
    hooks: &mut Hooks<'_>,
) -> Option<PairRows> {
    let peer = partner(round, group.rank())?;
    let me = group.rank();
    let addr = |r: u32| -> Option<IpAddr> {
        let info = group.peers().get(r as usize)?;
        let a = info
            .data_addrs
            .get(cfg.rail as usize % info.data_addrs.len().max(1))?;
        a.parse::<std::net::SocketAddr>().ok().map(|s| s.ip())
    };
    let (lo, hi) = (me.min(peer), me.max(peer));
    let pass = if second { "second" } else { "matrix" };
    let p = Pair {
        me,
        peer,
        round: k,
        pass,
        size: cfg.size,
        iters: cfg.iters.max(1),
        limits,
        addrs: addr(me).zip(addr(peer)),
        tag: (u64::from(cfg.tag(second, k)) << 40) | (u64::from(lo) << 20) | u64::from(hi),
    };
    Some(
        match transport.pair_link(group, peer, cfg.tag(second, k), cfg.rail, limits.wait) {
            Ok(link) => pair_test::run(&p, &*link, hooks.counters),
            Err(e) => PairRows::failed(&p, "connecting", &e),
        },
    )
}

/// Gathers this rank's rows of the round just finished at rank 0 (into `acc`), then waits for
/// rank 0's word to go on: any failure at rank 0 (a rank died, went silent or reported an
/// error) comes back as an error on every rank. Returns whether this is rank 0.
fn collect(
    group: &mut Group,
    mine: &mut Option<PairRows>,
    acc: &mut Acc,
    round: u32,
    pass: &'static str,
) -> Result<bool, ClusterError> {
    let root = match group.gather(mine.take())? {
        Some(per_rank) => {
            for (r, rows) in per_rank.into_iter().enumerate() {
                if let Some(rows) = rows {
                    acc.rows.push(rows);
                    acc.from.push((r as u32, round, pass));
                }
            }
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
    acc: &Acc,
) -> PairMatrix {
    let hosts: Vec<String> = group.peers().iter().map(|p| p.host.clone()).collect();
    let links = acc.links();
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
        evidence: acc.evidence(),
        path_mtu: acc.path_mtu(),
        settings: acc.settings.clone(),
        failures: acc.failures(),
        culprits: Vec::new(),
        elapsed_s: None,
    }
}

/// `partial: 2 of 5 rounds done`, keeping what the analysis had to say.
fn partial_note(done: u32, rounds: u32, note: Option<&str>) -> String {
    match note {
        Some(n) => format!("partial: {done} of {rounds} rounds done; {n}"),
        None => format!("partial: {done} of {rounds} rounds done"),
    }
}

/// Whether a matrix names anything: a culprit, or (when no second pass judged them) a link or
/// node below the rest. A slow link that the second pass found at pace again is not flagged.
pub fn flagged(m: &PairMatrix) -> bool {
    let unjudged = m.isolation.is_none()
        && (!m.analysis.slow_links.is_empty() || !m.analysis.slow_nodes.is_empty());
    !m.culprits.is_empty() || unjudged
}

/// What [`run`] reports as it goes: as [`Hooks`], with the rail each matrix runs on.
pub struct RunHooks<'a> {
    /// `(rail, round, rounds)`: a round of the first pass starts.
    pub on_round: &'a mut dyn FnMut(Option<u32>, u32, u32),
    /// Rank 0: a matrix so far (its `rail` set), after each round; on a failure, the rows so
    /// far with an `aborted: ...` note.
    pub on_rows: &'a mut dyn FnMut(&PairMatrix),
    /// As [`Hooks::counters`].
    pub counters: &'a mut CounterSampler<'a>,
}

/// `fabrik cluster matrix` on this rank: one matrix, or with `per_rail` one per rail (rail i
/// pairs every rank's i-th data address), over `transport`. Rank 0 gets the matrices.
pub fn run(
    group: &mut Group,
    cfg: &MatrixConfig,
    per_rail: bool,
    transport: &dyn Transport,
    hooks: &mut RunHooks<'_>,
) -> Result<Vec<PairMatrix>, ClusterError> {
    let rails = if per_rail {
        if !transport.follows_rails() {
            return Err(ClusterError::Misuse(
                "--per-rail runs over TCP only (use --transport tcp)",
            ));
        }
        Some(rail_count(group)?)
    } else {
        None
    };
    let mut out = Vec::new();
    // One namespace, one reading: every rail's matrix reports the same limits.
    let tcp_buffers = cfg.tcp_buffers.or_else(local_tcp_buffers);
    for rail in 0..rails.unwrap_or(1) {
        let cfg = MatrixConfig {
            rail,
            tcp_buffers,
            ..cfg.clone()
        };
        let shown = rails.map(|_| rail);
        let mut partial: Option<PairMatrix> = None;
        let result = {
            let mut keep = |m: &PairMatrix| {
                let mut m = m.clone();
                m.rail = shown;
                (hooks.on_rows)(&m);
                partial = Some(m);
            };
            run_matrix_over(
                group,
                &cfg,
                transport,
                &mut Hooks {
                    on_round: &mut |k, total| (hooks.on_round)(shown, k, total),
                    on_rows: &mut keep,
                    counters: &mut *hooks.counters,
                },
            )
        };
        match result {
            Ok(Some(mut m)) => {
                m.rail = shown;
                (hooks.on_rows)(&m);
                out.push(m);
            }
            Ok(None) => {}
            Err(e) => {
                if let Some(mut m) = partial {
                    let done = m.analysis.note.take();
                    m.analysis.note = Some(format!(
                        "aborted: {e}{}",
                        done.map(|d| format!(" ({d})")).unwrap_or_default()
                    ));
                    (hooks.on_rows)(&m);
                }
                return Err(e);
            }
        }
    }
    Ok(out)
}

/// The TCP buffer limits of the network namespace this process runs in, as every connection
/// it opens gets them.
pub fn local_tcp_buffers() -> Option<TcpBuffers> {
    let mut fs = fabrik_probe::fs::RootFs::new(std::path::Path::new("/")).ok()?;
    fabrik_probe::system::tcp_buffers(&mut fs)
}

/// Each rank's data NIC rate on each of `rails` rails, gathered at rank 0 in rank order:
/// `rates[rail][rank]` (empty on the other ranks). Every rank calls it; `rate_of` gives this
/// rank's rate (Gb/s) of the NIC holding an address, `None` where it is unknown. The matrix's
/// pass line comes from the rate most ranks share.
pub fn gather_rail_rates(
    group: &mut Group,
    rails: u32,
    rate_of: impl Fn(IpAddr) -> Option<f64>,
) -> Result<Vec<Vec<Option<f64>>>, ClusterError> {
    let me = group.rank() as usize;
    let addrs = group
        .peers()
        .get(me)
        .map(|p| p.data_addrs.clone())
        .unwrap_or_default();
    let mine: Vec<Option<f64>> = (0..rails as usize)
        .map(|r| rate_of(addrs.get(r)?.parse::<std::net::SocketAddr>().ok()?.ip()))
        .collect();
    let per_rank = group.gather(mine)?.unwrap_or_default();
    Ok((0..rails as usize)
        .map(|r| {
            per_rank
                .iter()
                .map(|v| v.get(r).copied().flatten())
                .collect()
        })
        .collect())
}

/// The rails of a per-rail run: every rank must name the same number of data addresses, one per
/// rail, so that rail i pairs NIC i of every node.
pub fn rail_count(group: &Group) -> Result<u32, ClusterError> {
    let counts: Vec<usize> = group.peers().iter().map(|p| p.data_addrs.len()).collect();
    let n = counts.iter().copied().min().unwrap_or(0);
    if counts.iter().any(|&c| c != n) {
        let list: Vec<String> = counts
            .iter()
            .enumerate()
            .map(|(r, c)| format!("rank {r}: {c}"))
            .collect();
        return Err(ClusterError::Invalid(format!(
            "--per-rail needs the same number of --data-ip addresses on every rank (one per rail); got {}",
            list.join(", ")
        )));
    }
    if n == 0 || n as u64 > u64::from(MAX_RAILS) {
        return Err(ClusterError::Invalid(format!(
            "--per-rail needs 1 to {MAX_RAILS} data addresses per rank, got {n}"
        )));
    }
    Ok(n as u32)
}

/// Writes `m` as JSON to `path`, or for a per-rail run's matrix to its rail's file
/// ([`rail_path`]).
pub fn write_matrix(
    path: &std::path::Path,
    m: &fabrik_model::PairMatrix,
) -> Result<(), ClusterError> {
    let path = match m.rail {
        Some(rail) => rail_path(path, rail),
        None => path.to_path_buf(),
    };
    Ok(fabrik_probe::output::write_json(&path, m)?)
}

/// `m.json` for rail 2 is `m-rail2.json`: one pair matrix per file, as `fabrik report` reads.
pub fn rail_path(path: &std::path::Path, rail: u32) -> std::path::PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match path.extension() {
        Some(ext) => format!("{stem}-rail{rail}.{}", ext.to_string_lossy()),
        None => format!("{stem}-rail{rail}"),
    };
    path.with_file_name(name)
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
        deadline: None,
        tcp_buffers: None,
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
                        &Tcp,
                        &mut Hooks {
                            on_round: &mut on_round,
                            on_rows: &mut |m| rows_seen = m.links.len(),
                            counters: &mut || None,
                        },
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
                            deadline: None,
                            tcp_buffers: None,
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
