//! Joining the ranks: rank 0 listens, every other rank connects with the shared token and says
//! who it is; rank 0 checks the ranks are unique and complete and sends everyone the table.
//! The control connections stay open for barriers, gathers and failure reports; data moves on
//! separate connections opened from the table ([`Group::connect_data`], [`Group::accept_data`]).

use std::collections::HashMap;
use std::io::ErrorKind;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use fabrik_wire::{Channel, Pending, Stall, Ticket, Token, WireError};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::ClusterError;

/// How a rank joins.
#[derive(Debug, Clone)]
pub struct JoinConfig {
    /// This rank, from 0.
    pub rank: u32,
    /// Number of ranks.
    pub world_size: u32,
    /// `host:port` of rank 0's rendezvous.
    pub master: String,
    /// The shared secret every rank proves it holds.
    pub token: Token,
    /// Every wait (joining, each control and data read or write) gives up after this.
    pub timeout: Duration,
    /// This rank's host name, for the header and for error messages.
    pub host: String,
    /// Addresses peers should open data connections to (one per NIC to use); empty: the address
    /// this rank reaches rank 0 from.
    pub data_ips: Vec<IpAddr>,
}

/// One rank as the others see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerInfo {
    /// Its rank.
    pub rank: u32,
    /// Its host name (or `--name`).
    pub host: String,
    /// Its process id.
    pub pid: u32,
    /// `ip:port` data listeners, one per NIC.
    pub data_addrs: Vec<String>,
}

impl PeerInfo {
    /// `rank 3 (node-b, 10.0.0.4)`: how errors name a peer.
    pub fn label(&self) -> String {
        let ip = self
            .data_addrs
            .first()
            .and_then(|a| a.rsplit_once(':').map(|(h, _)| h.to_string()));
        match ip {
            Some(ip) if ip != self.host => format!("rank {} ({}, {})", self.rank, self.host, ip),
            _ => format!("rank {} ({})", self.rank, self.host),
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Hello {
    rank: u32,
    world_size: u32,
    host: String,
    pid: u32,
    data_port: u16,
    data_ips: Vec<String>,
}

#[derive(Debug, Serialize, Deserialize)]
enum Welcome {
    Table(Vec<PeerInfo>),
    Abort(String),
}

#[derive(Debug, Serialize, Deserialize)]
struct DataHello {
    rank: u32,
    tag: u32,
}

/// What a member sends up to rank 0 in a gather: its value, or why it failed.
#[derive(Debug, Serialize, Deserialize)]
enum Up<T> {
    Ok(T),
    Failed(String),
}

/// What rank 0 sends down: the value, or that the run is over.
#[derive(Debug, Serialize, Deserialize)]
enum Down<T> {
    Ok(T),
    Abort(String),
}

enum Ctrl {
    /// Rank 0: a control channel per rank (index = rank; `None` for itself).
    Root(Vec<Option<Channel>>),
    Member(Channel),
}

/// The joined ranks: the table, the control connections and this rank's data listener.
pub struct Group {
    rank: u32,
    peers: Vec<PeerInfo>,
    token: Token,
    timeout: Duration,
    ctrl: Ctrl,
    listener: TcpListener,
    stash: HashMap<(u32, u32), TcpStream>,
    /// What went wrong in a rendezvous that still succeeded (refused or stalled connections).
    notes: Vec<String>,
}

impl std::fmt::Debug for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group")
            .field("rank", &self.rank)
            .field("peers", &self.peers)
            .finish_non_exhaustive()
    }
}

/// Joins the job: rank 0 runs the rendezvous, the others connect to it.
pub fn join(cfg: &JoinConfig) -> Result<Group, ClusterError> {
    if cfg.world_size == 0 || cfg.rank >= cfg.world_size {
        return Err(ClusterError::NotARank {
            role: "rank",
            rank: cfg.rank,
            world_size: cfg.world_size,
        });
    }
    let listener = TcpListener::bind("0.0.0.0:0").map_err(|err| ClusterError::Io {
        what: "binding the data listener".into(),
        err,
    })?;
    let data_port = listener
        .local_addr()
        .map_err(|err| ClusterError::Io {
            what: "reading the data listener's port".into(),
            err,
        })?
        .port();
    if cfg.rank == 0 {
        root_join(cfg, listener, data_port)
    } else {
        member_join(cfg, listener, data_port)
    }
}

/// Unauthenticated connections rank 0 serves at once beyond the world size (see
/// [`fabrik_wire::Pending`] for what happens when they are all taken).
const SPARE_HANDSHAKES: usize = 64;
/// The longest one connection may take from accept to its hello, however long the job waits.
const HANDSHAKE_LIMIT: Duration = Duration::from_secs(10);
/// How long rank 0 still listens to the other ranks, all together, once one has failed.
const AFTER_FAILURE: Duration = Duration::from_secs(2);
/// At most this many stalled connections are listed one by one in an error.
const STALLS_LISTED: usize = 8;

/// A handshake thread's answer: the channel and hello, or why not.
type Arrival = (Ticket, Result<(Channel, Hello, Option<IpAddr>), WireError>);

fn root_join(
    cfg: &JoinConfig,
    listener: TcpListener,
    data_port: u16,
) -> Result<Group, ClusterError> {
    let n = cfg.world_size as usize;
    let port = cfg
        .master
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse::<u16>().ok())
        .ok_or_else(|| ClusterError::NotHostPort {
            addr: cfg.master.clone(),
        })?;
    let mut chans: Vec<Option<Channel>> = (0..n).map(|_| None).collect();
    let mut infos: Vec<Option<PeerInfo>> = (0..n).map(|_| None).collect();
    let mut problems: Vec<String> = Vec::new();
    let mut stalls: Vec<Stall> = Vec::new();
    let mut my_ip: Option<IpAddr> = None;
    if n > 1 {
        let rv = TcpListener::bind(("0.0.0.0", port)).map_err(|err| ClusterError::Io {
            what: format!("rank 0 listening for the rendezvous on port {port}"),
            err,
        })?;
        set_nonblocking(&rv, true)?;
        let deadline = Instant::now() + cfg.timeout;
        // Every connection gets its own thread and one deadline, so no peer, however slow,
        // holds up the others; the table bounds how many strangers can wait at once.
        let pending = Pending::new(n + SPARE_HANDSHAKES);
        let (tx, rx) = mpsc::channel::<Arrival>();
        while infos.iter().skip(1).any(Option::is_none) {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            let accepted = match rv.accept() {
                Ok((stream, from)) => {
                    let limit = deadline.min(now + HANDSHAKE_LIMIT);
                    match spawn_handshake(stream, from, &pending, &cfg.token, limit, &tx) {
                        Ok(Some(evicted)) => stalls.push(evicted),
                        Ok(None) => {}
                        Err(e) => problems.push(format!("a connection from {from} failed: {e}")),
                    }
                    true
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => false,
                Err(err) => {
                    return Err(ClusterError::Io {
                        what: "accepting rendezvous connections".into(),
                        err,
                    })
                }
            };
            // While connections keep coming, take one finished handshake per accept without
            // waiting, so a flood cannot starve the real ranks' arrivals; otherwise wait a little.
            let arrival = if accepted {
                rx.try_recv().ok()
            } else {
                let wait = deadline
                    .saturating_duration_since(Instant::now())
                    .min(Duration::from_millis(5));
                rx.recv_timeout(wait).ok()
            };
            let Some((ticket, arrived)) = arrival else {
                continue;
            };
            let from = ticket.from();
            let (mut ch, hello, local_ip) = match arrived {
                Ok(a) => a,
                Err(_) if ticket.evicted() => continue,
                Err(WireError::AuthFailed { .. }) => {
                    problems.push(format!("a rank from {from} was rejected: wrong token"));
                    continue;
                }
                Err(WireError::Timeout { .. }) => {
                    stalls.push(ticket.stall());
                    continue;
                }
                Err(e) => {
                    problems.push(format!("a connection from {from} failed: {e}"));
                    continue;
                }
            };
            drop(ticket);
            ch.set_deadline(None);
            let _ = ch.set_timeout(cfg.timeout.min(HANDSHAKE_LIMIT));
            let info = PeerInfo {
                rank: hello.rank,
                host: hello.host.clone(),
                pid: hello.pid,
                data_addrs: hello
                    .data_ips
                    .iter()
                    .map(|ip| join_addr(ip, hello.data_port))
                    .collect(),
            };
            let refuse = if hello.world_size != cfg.world_size {
                Some(format!(
                    "{} says the world size is {}, rank 0 says {}",
                    info.label(),
                    hello.world_size,
                    cfg.world_size
                ))
            } else if hello.rank == 0 || hello.rank >= cfg.world_size {
                Some(format!(
                    "{} from {from} has a rank outside 1..{}",
                    info.label(),
                    cfg.world_size
                ))
            } else if let Some(first) = &infos[hello.rank as usize] {
                Some(format!(
                    "rank {} joined twice: from {} and from {} ({from})",
                    hello.rank, first.host, hello.host
                ))
            } else {
                None
            };
            if let Some(why) = refuse {
                let _ = ch.send(&Welcome::Abort(why.clone()));
                problems.push(why);
                continue;
            }
            if my_ip.is_none() {
                my_ip = local_ip;
            }
            ch.set_peer_name(info.label());
            let r = hello.rank as usize;
            infos[r] = Some(info);
            chans[r] = Some(ch);
        }
        // Whoever is still in a handshake now is too late: the job has what it needs, or its
        // deadline passed.
        stalls.extend(pending.close_all());
        if !stalls.is_empty() {
            problems.push(describe_stalls(&stalls));
        }
        let missing: Vec<String> = (1..n)
            .filter(|&r| infos[r].is_none())
            .map(|r| r.to_string())
            .collect();
        if !missing.is_empty() {
            let mut why = format!(
                "rank{} {} never joined within {:.0} s (world size {})",
                if missing.len() > 1 { "s" } else { "" },
                missing.join(", "),
                cfg.timeout.as_secs_f64(),
                cfg.world_size
            );
            if !problems.is_empty() {
                why.push_str("; ");
                why.push_str(&problems.join("; "));
            }
            for ch in chans.iter_mut().flatten() {
                let _ = ch.send(&Welcome::Abort(why.clone()));
            }
            return Err(ClusterError::Rendezvous(why));
        }
        for p in &problems {
            tracing::warn!("rendezvous: {p}");
        }
    }
    let ips: Vec<String> = if cfg.data_ips.is_empty() {
        vec![my_ip.unwrap_or(IpAddr::from([127, 0, 0, 1])).to_string()]
    } else {
        cfg.data_ips.iter().map(ToString::to_string).collect()
    };
    infos[0] = Some(PeerInfo {
        rank: 0,
        host: cfg.host.clone(),
        pid: std::process::id(),
        data_addrs: ips.iter().map(|ip| join_addr(ip, data_port)).collect(),
    });
    let peers: Vec<PeerInfo> = infos.into_iter().flatten().collect();
    for ch in chans.iter_mut().flatten() {
        ch.send(&Welcome::Table(peers.clone()))?;
        ch.set_timeout(cfg.timeout)?;
    }
    Ok(Group {
        rank: 0,
        peers,
        token: cfg.token.clone(),
        timeout: cfg.timeout,
        ctrl: Ctrl::Root(chans),
        listener,
        stash: HashMap::new(),
        notes: problems,
    })
}

/// Starts the handshake of one accepted connection on its own thread; returns the connection
/// shut down to make room for it, if any.
fn spawn_handshake(
    stream: TcpStream,
    from: SocketAddr,
    pending: &Pending,
    token: &Token,
    until: Instant,
    tx: &mpsc::Sender<Arrival>,
) -> std::io::Result<Option<Stall>> {
    stream.set_nonblocking(false)?;
    let (ticket, evicted) = pending.admit(&stream, from)?;
    let token = token.clone();
    let tx = tx.clone();
    std::thread::Builder::new()
        .name("rendezvous-handshake".into())
        // The thread holds a handshake's few small buffers; the default 2 MiB stack times a
        // flood of connections is address space for nothing.
        .stack_size(256 << 10)
        .spawn(move || {
            let local_ip = stream.local_addr().ok().map(|a| a.ip());
            let arrived = Channel::accept_until(stream, &token, until, ticket.bytes())
                .and_then(|mut ch| ch.recv::<Hello>().map(|h| (ch, h, local_ip)));
            let _ = tx.send((ticket, arrived));
        })?;
    Ok(evicted)
}

/// `connections that stalled in their handshake: 10.0.0.9:4711 (3 bytes received in 10.0 s), …`
fn describe_stalls(stalls: &[Stall]) -> String {
    let mut list: Vec<String> = stalls
        .iter()
        .take(STALLS_LISTED)
        .map(ToString::to_string)
        .collect();
    if stalls.len() > STALLS_LISTED {
        list.push(format!("and {} more", stalls.len() - STALLS_LISTED));
    }
    format!(
        "{} connection{} stalled in the handshake and {} closed: {}",
        stalls.len(),
        if stalls.len() == 1 { "" } else { "s" },
        if stalls.len() == 1 { "was" } else { "were" },
        list.join(", ")
    )
}

fn member_join(
    cfg: &JoinConfig,
    listener: TcpListener,
    data_port: u16,
) -> Result<Group, ClusterError> {
    let deadline = Instant::now() + cfg.timeout;
    // Rank 0 may start later than we do: retry refused connections until the deadline.
    let mut ch = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match Channel::connect(
            cfg.master.as_str(),
            &cfg.token,
            left.max(Duration::from_millis(100)),
        ) {
            Ok(ch) => break ch,
            Err(e @ WireError::AuthFailed { .. }) => return Err(e.into()),
            Err(e) => {
                if Instant::now() >= deadline {
                    return Err(ClusterError::Rendezvous(format!(
                        "rank {} could not reach rank 0 at {} within {:.0} s: {e}",
                        cfg.rank,
                        cfg.master,
                        cfg.timeout.as_secs_f64()
                    )));
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    };
    ch.set_peer_name(format!("rank 0 ({})", cfg.master));
    let ips: Vec<String> = if cfg.data_ips.is_empty() {
        let ip = ch
            .stream()
            .local_addr()
            .map(|a| a.ip())
            .map_err(|err| ClusterError::Io {
                what: "reading the local address".into(),
                err,
            })?;
        vec![ip.to_string()]
    } else {
        cfg.data_ips.iter().map(ToString::to_string).collect()
    };
    ch.send(&Hello {
        rank: cfg.rank,
        world_size: cfg.world_size,
        host: cfg.host.clone(),
        pid: std::process::id(),
        data_port,
        data_ips: ips,
    })?;
    // Rank 0 waits up to the timeout for the last rank; wait a little longer than that.
    ch.set_timeout(cfg.timeout + Duration::from_secs(5))?;
    let peers = match ch.recv::<Welcome>()? {
        Welcome::Table(t) => t,
        Welcome::Abort(why) => return Err(ClusterError::Rendezvous(why)),
    };
    if peers.len() != cfg.world_size as usize
        || peers.iter().enumerate().any(|(i, p)| p.rank as usize != i)
    {
        return Err(ClusterError::Rendezvous(
            "rank 0 sent an inconsistent rank table".into(),
        ));
    }
    if let Some(p) = peers.first() {
        ch.set_peer_name(p.label());
    }
    ch.set_timeout(cfg.timeout)?;
    Ok(Group {
        rank: cfg.rank,
        peers,
        token: cfg.token.clone(),
        timeout: cfg.timeout,
        ctrl: Ctrl::Member(ch),
        listener,
        stash: HashMap::new(),
        notes: Vec::new(),
    })
}

fn join_addr(ip: &str, port: u16) -> String {
    if ip.contains(':') {
        format!("[{ip}]:{port}")
    } else {
        format!("{ip}:{port}")
    }
}

fn set_nonblocking(l: &TcpListener, on: bool) -> Result<(), ClusterError> {
    l.set_nonblocking(on).map_err(|err| ClusterError::Io {
        what: "configuring a listener".into(),
        err,
    })
}

impl Group {
    /// This rank.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// Number of ranks.
    pub fn size(&self) -> u32 {
        self.peers.len() as u32
    }

    /// Every rank, indexed by rank.
    pub fn peers(&self) -> &[PeerInfo] {
        &self.peers
    }

    /// The limit on every wait.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Rank 0: connections the rendezvous refused or closed on its way to success (each also
    /// logged as a warning).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Rank `rank`'s [`PeerInfo::label`]; `rank N` for a rank not in the group.
    pub fn label(&self, rank: u32) -> String {
        self.peers
            .get(rank as usize)
            .map(PeerInfo::label)
            .unwrap_or_else(|| format!("rank {rank}"))
    }

    /// Raises (or lowers) the largest control message accepted from now on, e.g. to gather
    /// whole node inventories.
    pub fn set_max_frame(&mut self, max: u32) {
        match &mut self.ctrl {
            Ctrl::Member(ch) => ch.set_max_frame(max),
            Ctrl::Root(chans) => chans
                .iter_mut()
                .flatten()
                .for_each(|c| c.set_max_frame(max)),
        }
    }

    /// Distinct host names in rank order.
    pub fn hosts(&self) -> Vec<String> {
        let mut hosts: Vec<String> = Vec::new();
        for p in &self.peers {
            if !hosts.contains(&p.host) {
                hosts.push(p.host.clone());
            }
        }
        hosts
    }

    /// Sends `value` to rank 0; rank 0 gets everyone's in rank order. A member that reported a
    /// failure, or whose connection dropped, makes this an error at rank 0 naming it.
    pub fn gather<T: Serialize + DeserializeOwned>(
        &mut self,
        value: T,
    ) -> Result<Option<Vec<T>>, ClusterError> {
        match &mut self.ctrl {
            Ctrl::Member(ch) => {
                ch.send(&Up::Ok(value))?;
                Ok(None)
            }
            Ctrl::Root(chans) => {
                let mut out = Vec::with_capacity(chans.len());
                let mut mine = Some(value);
                let mut failures = Vec::new();
                let mut quiet = Vec::new();
                // Once one rank failed, the rest share one short window rather than each
                // getting the full timeout (27 stuck ranks would otherwise take 27 timeouts).
                let mut window: Option<Instant> = None;
                for (r, slot) in chans.iter_mut().enumerate() {
                    let Some(ch) = slot else {
                        if let Some(v) = mine.take() {
                            out.push(v);
                        }
                        continue;
                    };
                    let full = failures.is_empty() && quiet.is_empty();
                    if !full {
                        let until = *window.get_or_insert_with(|| Instant::now() + AFTER_FAILURE);
                        let left = until.saturating_duration_since(Instant::now());
                        let _ = ch.set_timeout(left.max(Duration::from_millis(50)));
                    }
                    match ch.recv::<Up<T>>() {
                        Ok(Up::Ok(v)) => out.push(v),
                        Ok(Up::Failed(why)) => failures.push(format!("{}: {why}", ch.peer())),
                        Err(WireError::Closed { .. }) => failures.push(format!(
                            "{} died or exited (its control connection closed)",
                            self.peers[r].label()
                        )),
                        Err(WireError::Timeout { .. }) if !full => {
                            quiet.push((r, AFTER_FAILURE.as_secs_f64(), false))
                        }
                        Err(WireError::Timeout { secs, .. }) => quiet.push((r, secs, full)),
                        Err(e) => failures.push(fabrik_wire::with_causes(&e)),
                    }
                }
                let quiet = self.name_quiet(&quiet, &failures.join("; "));
                failures.splice(0..0, quiet);
                if failures.is_empty() {
                    Ok(Some(out))
                } else {
                    self.abort_all(&failures.join("; "));
                    Err(ClusterError::Aborted(failures.join("; ")))
                }
            }
        }
    }

    /// Rank 0 sends `value` to everyone; everyone returns it.
    pub fn broadcast<T: Serialize + DeserializeOwned + Clone>(
        &mut self,
        value: Option<T>,
    ) -> Result<T, ClusterError> {
        match &mut self.ctrl {
            Ctrl::Member(ch) => {
                // Rank 0 may itself wait a whole timeout on a silent rank (and a little more on
                // the rest) before it answers: outwait it, so that its verdict, which names the
                // silent rank, arrives rather than a timeout naming rank 0.
                let _ = ch.set_timeout(self.timeout * 2 + Duration::from_secs(5));
                let got = ch.recv::<Down<T>>();
                let _ = ch.set_timeout(self.timeout);
                match got? {
                    Down::Ok(v) => Ok(v),
                    Down::Abort(why) => Err(ClusterError::Aborted(why)),
                }
            }
            Ctrl::Root(chans) => {
                let v = value.ok_or(ClusterError::Misuse(
                    "rank 0 must supply the broadcast value",
                ))?;
                for ch in chans.iter_mut().flatten() {
                    ch.send(&Down::Ok(v.clone()))?;
                }
                Ok(v)
            }
        }
    }

    /// Everyone waits until everyone is here.
    pub fn barrier(&mut self) -> Result<(), ClusterError> {
        self.gather(())?;
        self.broadcast(Some(()))
    }

    /// Called on a failure: a member tells rank 0 why (best effort); rank 0 collects what the
    /// others say, so the error it prints names the rank that actually died rather than the
    /// neighbour whose connection closed in consequence.
    pub fn fail(&mut self, err: &ClusterError) -> ClusterError {
        match &mut self.ctrl {
            Ctrl::Member(ch) => {
                let _ = ch.send(&Up::<()>::Failed(err.to_string()));
                ClusterError::Aborted(err.to_string())
            }
            Ctrl::Root(chans) => {
                let mut dead = Vec::new();
                let mut said = Vec::new();
                let mut quiet = Vec::new();
                // One short window for all of them: ranks that are still blocked on a peer
                // will not report in time and must not stretch the failure out.
                let window = Duration::from_secs(3);
                let deadline = Instant::now() + window;
                for (r, slot) in chans.iter_mut().enumerate() {
                    let Some(ch) = slot else { continue };
                    let left = deadline.saturating_duration_since(Instant::now());
                    let _ = ch.set_timeout(left.max(Duration::from_millis(50)));
                    match ch.recv::<Up<serde_json::Value>>() {
                        Ok(Up::Failed(why)) => said.push(format!("{}: {why}", ch.peer())),
                        Ok(Up::Ok(_)) => {}
                        Err(WireError::Closed { .. }) => dead.push(format!(
                            "{} died or exited without a report",
                            self.peers[r].label()
                        )),
                        Err(WireError::Timeout { .. }) => {
                            quiet.push((r, window.as_secs_f64(), false))
                        }
                        Err(_) => {}
                    }
                }
                let blame = format!("{err}; {}", said.join("; "));
                let mut parts = self.name_quiet(&quiet, &blame);
                parts.extend(dead);
                parts.push(format!("rank 0: {err}"));
                parts.extend(said);
                let why = parts.join("; ");
                self.abort_all(&why);
                ClusterError::Aborted(why)
            }
        }
    }

    /// Names the ranks that sent rank 0 nothing: `(rank, seconds waited, whether that was the
    /// whole timeout)`. A rank is called silent when it kept quiet for the whole timeout, or when
    /// the failures already known (`blame`) name it, i.e. its peers gave up on it too: a
    /// stopped or hung process keeps its connections open, so only its silence gives it away.
    /// Any other rank is only late (still busy with a healthy peer, most likely).
    fn name_quiet(&self, quiet: &[(usize, f64, bool)], blame: &str) -> Vec<String> {
        quiet
            .iter()
            .map(|&(r, secs, full)| {
                let label = self.peers[r].label();
                // `rank 3 (` so that rank 3 is not found in rank 30's label.
                let short = format!("rank {r} (");
                if full {
                    format!(
                        "{label} is silent: its connection is open but it sent nothing in {secs:.0} s (stopped or hung)"
                    )
                } else if blame.contains(&short) {
                    format!(
                        "{label} is silent: its peers gave up on it and it sent no report within {secs:.0} s (stopped or hung)"
                    )
                } else {
                    format!("{label} sent no report within {secs:.0} s")
                }
            })
            .collect()
    }

    fn abort_all(&mut self, why: &str) {
        if let Ctrl::Root(chans) = &mut self.ctrl {
            for ch in chans.iter_mut().flatten() {
                let _ = ch.send(&Down::<()>::Abort(why.to_string()));
            }
        }
    }

    /// What opening data connections needs, detached so a thread can connect while this one
    /// accepts.
    pub fn connector(&self) -> Connector {
        Connector {
            rank: self.rank,
            peers: self.peers.clone(),
            token: self.token.clone(),
            timeout: self.timeout,
        }
    }

    /// [`Connector::connect_data`] from this thread.
    pub fn connect_data(
        &self,
        peer: u32,
        tag: u32,
        index: usize,
    ) -> Result<TcpStream, ClusterError> {
        self.connector().connect_data(peer, tag, index)
    }

    /// Opens `channels` (at least one) data connections to the next rank of the ring and
    /// accepts as many from the previous one, tagged `ring_tag + channel`; with `mesh`, one
    /// connection tagged `mesh_tag` to every other rank (the lower rank connects). Needs two
    /// ranks or more. `what` names the connecting thread if it panics.
    pub(crate) fn ring_streams(
        &mut self,
        channels: usize,
        mesh: bool,
        (ring_tag, mesh_tag): (u32, u32),
        what: &'static str,
    ) -> Result<RingStreams, ClusterError> {
        let (rank, n) = (self.rank, self.size());
        let next = (rank + 1) % n;
        let prev = (rank + n - 1) % n;
        let channels = channels.max(1);
        let connector = self.connector();
        // Connect from a thread while accepting here: every rank does both at once, and a
        // connection's handshake needs the other side to be accepting.
        std::thread::scope(|s| {
            let h = s.spawn(move || -> Result<_, ClusterError> {
                let mut out = Vec::with_capacity(channels);
                for c in 0..channels {
                    out.push(connector.connect_data(next, ring_tag + c as u32, c)?);
                }
                let mut m = Vec::new();
                if mesh {
                    for peer in rank + 1..n {
                        m.push((peer, connector.connect_data(peer, mesh_tag, 0)?));
                    }
                }
                Ok((out, m))
            });
            let accepted = (|| -> Result<_, ClusterError> {
                let mut inc = Vec::with_capacity(channels);
                for c in 0..channels {
                    inc.push(self.accept_data(prev, ring_tag + c as u32)?);
                }
                let mut m = Vec::new();
                if mesh {
                    for peer in 0..rank {
                        m.push((peer, self.accept_data(peer, mesh_tag)?));
                    }
                }
                Ok((inc, m))
            })();
            let connected = h
                .join()
                .unwrap_or_else(|_| Err(ClusterError::ThreadPanicked(what)));
            let (to_next, mut mesh) = connected?;
            let (from_prev, mesh_in) = accepted?;
            mesh.extend(mesh_in);
            Ok(RingStreams {
                next,
                prev,
                to_next,
                from_prev,
                mesh,
            })
        })
    }

    /// Waits for `peer`'s data connection labelled `tag`; connections for other (peer, tag)
    /// pairs that arrive first are kept for their own call.
    pub fn accept_data(&mut self, peer: u32, tag: u32) -> Result<TcpStream, ClusterError> {
        self.accept_data_within(peer, tag, self.timeout)
    }

    /// [`Group::accept_data`] with `limit` instead of the group's timeout, for the wait and for
    /// every read and write on the stream (a pair test that must end well inside the timeout
    /// rank 0 allows each round).
    pub fn accept_data_within(
        &mut self,
        peer: u32,
        tag: u32,
        limit: Duration,
    ) -> Result<TcpStream, ClusterError> {
        if let Some(s) = self.stash.remove(&(peer, tag)) {
            let t = Some(limit.max(Duration::from_millis(1)));
            let _ = s.set_read_timeout(t);
            let _ = s.set_write_timeout(t);
            return Ok(s);
        }
        set_nonblocking(&self.listener, true)?;
        let deadline = Instant::now() + limit;
        loop {
            let stream = match self.listener.accept() {
                Ok((s, _)) => s,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if Instant::now() >= deadline {
                        return Err(ClusterError::Peer {
                            peer: self.label(peer),
                            why: format!(
                                "did not open its data connection within {:.0} s",
                                limit.as_secs_f64()
                            ),
                        });
                    }
                    std::thread::sleep(Duration::from_millis(1));
                    continue;
                }
                Err(err) => {
                    return Err(ClusterError::Io {
                        what: "accepting data connections".into(),
                        err,
                    })
                }
            };
            let _ = stream.set_nonblocking(false);
            // The handshake and hello under one deadline inside the wait's own: a stranger
            // trickling bytes on the data port cannot hold this past either.
            let until = deadline.min(Instant::now() + HANDSHAKE_LIMIT);
            let mut ch = match Channel::accept_until(stream, &self.token, until, Default::default())
            {
                Ok(ch) => ch,
                Err(e) => {
                    tracing::warn!("refused a data connection: {e}");
                    continue;
                }
            };
            let hello: DataHello = match ch.recv() {
                Ok(h) => h,
                Err(e) => {
                    tracing::warn!("a data connection said no hello: {e}");
                    continue;
                }
            };
            let s = data_stream(&ch, limit)?;
            if (hello.rank, hello.tag) == (peer, tag) {
                return Ok(s);
            }
            self.stash.insert((hello.rank, hello.tag), s);
        }
    }

    /// A connection to `peer` for pair tests: the lower rank connects, the higher accepts.
    pub fn pair_stream(&mut self, peer: u32, tag: u32) -> Result<TcpStream, ClusterError> {
        if self.rank < peer {
            self.connect_data(peer, tag, 0)
        } else {
            self.accept_data(peer, tag)
        }
    }
}

/// The data connections [`Group::ring_streams`] opened.
pub(crate) struct RingStreams {
    /// The next rank of the ring.
    pub next: u32,
    /// The previous rank of the ring.
    pub prev: u32,
    /// One connection to `next` per channel, in channel order.
    pub to_next: Vec<TcpStream>,
    /// One connection from `prev` per channel, in channel order.
    pub from_prev: Vec<TcpStream>,
    /// With a mesh, (peer, connection) for every other rank: the higher ranks, then the lower.
    pub mesh: Vec<(u32, TcpStream)>,
}

/// Opens data connections on behalf of a [`Group`], from another thread.
#[derive(Debug, Clone)]
pub struct Connector {
    rank: u32,
    peers: Vec<PeerInfo>,
    token: Token,
    timeout: Duration,
}

impl Connector {
    /// The same connector with `limit` instead of the group's timeout, for connecting and for
    /// every read and write on the streams it opens.
    pub fn within(mut self, limit: Duration) -> Connector {
        self.timeout = limit;
        self
    }

    /// Opens an authenticated data connection to `peer`, labelled `tag`; `index` picks which of
    /// the peer's data addresses (NICs) to use.
    pub fn connect_data(
        &self,
        peer: u32,
        tag: u32,
        index: usize,
    ) -> Result<TcpStream, ClusterError> {
        let info = self
            .peers
            .get(peer as usize)
            .ok_or(ClusterError::NotARank {
                role: "peer",
                rank: peer,
                world_size: self.peers.len() as u32,
            })?;
        let addrs = &info.data_addrs;
        let addr = addrs
            .get(index % addrs.len().max(1))
            .ok_or_else(|| ClusterError::NoDataAddress { peer: info.label() })?;
        let mut ch = Channel::connect(addr.as_str(), &self.token, self.timeout)
            .map_err(|e| peer_err(info, e))?;
        ch.set_peer_name(info.label());
        ch.send(&DataHello {
            rank: self.rank,
            tag,
        })?;
        data_stream(&ch, self.timeout).map_err(|e| peer_err(info, e))
    }
}

fn peer_err(info: &PeerInfo, e: WireError) -> ClusterError {
    ClusterError::Peer {
        peer: info.label(),
        why: fabrik_wire::with_causes(&e),
    }
}

fn data_stream(ch: &Channel, timeout: Duration) -> Result<TcpStream, WireError> {
    let s = ch.stream().try_clone().map_err(|source| WireError::Io {
        peer: ch.peer().to_string(),
        source,
    })?;
    let _ = s.set_nodelay(true);
    let t = Some(timeout.max(Duration::from_millis(1)));
    let _ = s.set_read_timeout(t);
    let _ = s.set_write_timeout(t);
    Ok(s)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::thread;

    pub(crate) fn cfg(rank: u32, n: u32, port: u16, token: &str, secs: u64) -> JoinConfig {
        JoinConfig {
            rank,
            world_size: n,
            master: format!("127.0.0.1:{port}"),
            token: Token::new(token).unwrap(),
            timeout: Duration::from_secs(secs),
            host: format!("host{rank}"),
            data_ips: vec![],
        }
    }

    #[test]
    fn four_ranks_join_gather_and_broadcast() {
        let port = fabrik_testbed::free_port().unwrap();
        let handles: Vec<_> = (0..4)
            .map(|r| {
                thread::spawn(move || {
                    let mut g = join(&cfg(r, 4, port, "tok", 10)).unwrap();
                    assert_eq!(g.size(), 4);
                    assert_eq!(g.peers()[2].host, "host2");
                    let all = g.gather(r * 10).unwrap();
                    let v = g.broadcast(all.map(|a| a.iter().sum::<u32>())).unwrap();
                    g.barrier().unwrap();
                    v
                })
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().unwrap(), 60);
        }
    }

    #[test]
    fn a_rank_that_never_arrives_is_named() {
        let port = fabrik_testbed::free_port().unwrap();
        let r1 = thread::spawn(move || join(&cfg(1, 3, port, "tok", 2)));
        let err = join(&cfg(0, 3, port, "tok", 1)).unwrap_err();
        assert!(err.to_string().contains("rank 2 never joined"), "{err}");
        let err1 = r1.join().unwrap().unwrap_err();
        assert!(err1.to_string().contains("rank 2"), "{err1}");
    }

    #[test]
    fn a_wrong_token_is_rejected_and_reported() {
        let port = fabrik_testbed::free_port().unwrap();
        let bad = thread::spawn(move || join(&cfg(1, 2, port, "wrong", 3)));
        let err = join(&cfg(0, 2, port, "right", 1)).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("rank 1 never joined"), "{text}");
        assert!(text.contains("wrong token"), "{text}");
        let bad_err = bad.join().unwrap().unwrap_err();
        assert!(bad_err.to_string().contains("token differs"), "{bad_err}");
    }

    /// Starts ranks 1..n (all but those in `skip`) joining `port`; each returns whether it
    /// joined.
    fn members(n: u32, port: u16, secs: u64, skip: &[u32]) -> Vec<thread::JoinHandle<bool>> {
        (1..n)
            .filter(|r| !skip.contains(r))
            .map(|r| thread::spawn(move || join(&cfg(r, n, port, "tok", secs)).is_ok()))
            .collect()
    }

    /// Connects to the rendezvous port once it listens (rank 0 may not have bound it yet).
    fn connect_when_up(port: u16) -> std::net::TcpStream {
        let until = Instant::now() + Duration::from_secs(5);
        loop {
            match std::net::TcpStream::connect(("127.0.0.1", port)) {
                Ok(s) => return s,
                Err(e) if Instant::now() > until => panic!("rendezvous never listened: {e}"),
                Err(_) => thread::sleep(Duration::from_millis(5)),
            }
        }
    }

    /// A well-formed greeting's first `k` bytes (length prefix, then the protocol magic).
    fn greeting_prefix(k: usize) -> Vec<u8> {
        let mut g = 45u32.to_be_bytes().to_vec();
        g.extend_from_slice(b"FABRIK-WIRE/1");
        g.resize(49, 0);
        g.truncate(k);
        g
    }

    #[test]
    fn a_slow_loris_neither_holds_rank_0_nor_hides_from_the_error() {
        use std::io::Write;
        let port = fabrik_testbed::free_port().unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stop2 = stop.clone();
        // One byte every 200 ms: a per-read timer would never fire.
        let loris = thread::spawn(move || {
            let mut s = connect_when_up(port);
            let mut sent = 0;
            for b in greeting_prefix(49) {
                if stop2.load(std::sync::atomic::Ordering::Relaxed) || s.write_all(&[b]).is_err() {
                    break;
                }
                sent += 1;
                thread::sleep(Duration::from_millis(200));
            }
            sent
        });
        let root = thread::spawn(move || join(&cfg(0, 3, port, "tok", 10)));
        // The slow connection is well into its greeting before the real ranks come.
        thread::sleep(Duration::from_millis(700));
        // Everyone came: the rendezvous ends at once and names the slow connection.
        let t0 = Instant::now();
        let ms = members(3, port, 10, &[]);
        assert!(ms.into_iter().all(|h| h.join().unwrap()));
        let g = root.join().unwrap().unwrap();
        let took = t0.elapsed();
        eprintln!("slow loris: the real ranks joined in {took:?}");
        assert!(took < Duration::from_secs(2), "{took:?}");
        let notes = g.notes().join("; ");
        assert!(notes.contains("1 connection stalled"), "{notes}");
        assert!(notes.contains("bytes received"), "{notes}");
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(loris.join().unwrap() < 49);

        // A rank is missing: the job's deadline holds whatever the slow connection does, and the
        // error names the missing rank apart from the stalled connection.
        let port = fabrik_testbed::free_port().unwrap();
        let loris = thread::spawn(move || {
            let mut s = connect_when_up(port);
            let from = s.local_addr().unwrap();
            for b in greeting_prefix(49) {
                if s.write_all(&[b]).is_err() {
                    break;
                }
                thread::sleep(Duration::from_millis(200));
            }
            from
        });
        let ms = members(3, port, 4, &[2]);
        let t0 = Instant::now();
        let err = join(&cfg(0, 3, port, "tok", 2)).unwrap_err().to_string();
        let took = t0.elapsed();
        eprintln!("slow loris, rank 2 missing: rejected after {took:?} against a 2 s deadline");
        assert!(took < Duration::from_millis(2500), "{took:?}");
        assert!(err.contains("rank 2 never joined within 2 s"), "{err}");
        let from = loris.join().unwrap();
        assert!(
            err.contains(&format!(
                "stalled in the handshake and was closed: {from} ("
            )),
            "{err}"
        );
        assert!(ms.into_iter().all(|h| !h.join().unwrap()));
    }

    #[test]
    fn two_hundred_idle_connections_do_not_keep_rank_0_waiting() {
        let port = fabrik_testbed::free_port().unwrap();
        let root = thread::spawn(move || {
            let t0 = Instant::now();
            let g = join(&cfg(0, 4, port, "tok", 20));
            (g.map(|g| g.notes().join("; ")), t0.elapsed())
        });
        let idle: Vec<_> = (0..200).map(|_| connect_when_up(port)).collect();
        let t0 = Instant::now();
        let ms = members(4, port, 20, &[]);
        assert!(ms.into_iter().all(|h| h.join().unwrap()));
        let members_took = t0.elapsed();
        let (notes, took) = root.join().unwrap();
        eprintln!("200 idle connections: members joined in {members_took:?}, rank 0 in {took:?}");
        let notes = notes.unwrap();
        // Far inside the 20 s deadline: the idle ones neither block nor outlast the job.
        assert!(members_took < Duration::from_secs(3), "{members_took:?}");
        assert!(took < Duration::from_secs(5), "{took:?}");
        assert!(notes.contains("200 connections stalled"), "{notes}");
        assert!(notes.contains("and 192 more"), "{notes}");
        drop(idle);
    }

    #[test]
    fn a_partial_frame_does_not_delay_the_job() {
        use std::io::Write;
        let port = fabrik_testbed::free_port().unwrap();
        let part = thread::spawn(move || {
            let mut s = connect_when_up(port);
            s.write_all(&greeting_prefix(6)).unwrap();
            // Hold the connection open past the rendezvous.
            thread::sleep(Duration::from_secs(3));
        });
        let root = thread::spawn(move || join(&cfg(0, 2, port, "tok", 10)));
        // The partial frame is in before the real rank comes.
        thread::sleep(Duration::from_millis(500));
        let t0 = Instant::now();
        let ms = members(2, port, 10, &[]);
        let g = root.join().unwrap().unwrap();
        let took = t0.elapsed();
        eprintln!("partial frame: the rendezvous ended {took:?} after the real rank started");
        assert!(ms.into_iter().all(|h| h.join().unwrap()));
        assert!(took < Duration::from_secs(1), "{took:?}");
        assert!(
            g.notes().join("").contains("(6 bytes received"),
            "{:?}",
            g.notes()
        );
        part.join().unwrap();
    }

    #[test]
    fn after_one_failure_the_quiet_ranks_share_one_short_window() {
        let (port, n) = (fabrik_testbed::free_port().unwrap(), 6);
        let hs: Vec<_> = (1..n)
            .map(|r| {
                thread::spawn(move || {
                    let mut g = join(&cfg(r, n, port, "tok", 10)).unwrap();
                    if r == 1 {
                        let _ = g.fail(&ClusterError::Invalid("broken".into()));
                    } else {
                        // Quiet for longer than the window, then gone.
                        thread::sleep(Duration::from_secs(4));
                    }
                })
            })
            .collect();
        let mut g = join(&cfg(0, n, port, "tok", 10)).unwrap();
        let t0 = Instant::now();
        let err = g.gather(0u32).unwrap_err().to_string();
        let took = t0.elapsed();
        // One 2 s window for ranks 2-5 together, not 2 s (or the full 10 s) each.
        assert!(took < Duration::from_millis(3500), "{took:?}");
        assert!(err.contains("rank 1 (host1"), "{err}");
        assert!(err.contains("broken"), "{err}");
        assert!(err.contains("rank 5 (host5"), "{err}");
        assert!(err.contains("sent no report within 2 s"), "{err}");
        for h in hs {
            h.join().unwrap();
        }
    }

    #[test]
    fn duplicate_ranks_are_refused() {
        let port = fabrik_testbed::free_port().unwrap();
        let a = thread::spawn(move || join(&cfg(1, 2, port, "tok", 3)));
        let b = thread::spawn(move || join(&cfg(1, 2, port, "tok", 3)));
        let root = join(&cfg(0, 2, port, "tok", 2));
        let results = [a.join().unwrap().is_ok(), b.join().unwrap().is_ok()];
        // Exactly one of the two claimants gets in; the other is told why.
        assert!(root.is_ok());
        assert_eq!(results.iter().filter(|ok| **ok).count(), 1);
    }

    #[test]
    fn a_member_that_dies_is_named_at_rank_0() {
        let port = fabrik_testbed::free_port().unwrap();
        let m = thread::spawn(move || {
            let g = join(&cfg(1, 2, port, "tok", 5)).unwrap();
            drop(g);
        });
        let mut g = join(&cfg(0, 2, port, "tok", 5)).unwrap();
        m.join().unwrap();
        let err = g.gather(1u32).unwrap_err();
        assert!(err.to_string().contains("rank 1 (host1"), "{err}");
        assert!(err.to_string().contains("died"), "{err}");
    }

    #[test]
    fn data_connections_find_their_peer_and_tag() {
        let port = fabrik_testbed::free_port().unwrap();
        let m = thread::spawn(move || {
            let g = join(&cfg(1, 2, port, "tok", 5)).unwrap();
            use std::io::Write;
            let mut b = g.connect_data(0, 7, 0).unwrap();
            let mut a = g.connect_data(0, 3, 0).unwrap();
            a.write_all(b"three").unwrap();
            b.write_all(b"seven").unwrap();
        });
        let mut g = join(&cfg(0, 2, port, "tok", 5)).unwrap();
        use std::io::Read;
        let mut buf = [0u8; 5];
        g.accept_data(1, 3).unwrap().read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"three");
        g.accept_data(1, 7).unwrap().read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"seven");
        m.join().unwrap();
    }
}
