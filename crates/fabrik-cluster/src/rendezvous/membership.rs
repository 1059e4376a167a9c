//! Membership: who is in the job. Rank 0 listens and checks that every rank arrives once,
//! within the deadline, with the token and the same world size; the others connect, say who
//! they are and receive the table of all ranks.

use std::collections::HashMap;
use std::io::ErrorKind;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use fabrik_wire::{Channel, Pending, Stall, Ticket, Token, WireError};

use super::deadlines::{describe_stalls, HANDSHAKE_LIMIT};
use super::wire::{join_addr, Hello, Welcome};
use super::{Ctrl, Group, JoinConfig, PeerInfo};
use crate::ClusterError;

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

pub(super) fn set_nonblocking(l: &TcpListener, on: bool) -> Result<(), ClusterError> {
    l.set_nonblocking(on).map_err(|err| ClusterError::Io {
        what: "configuring a listener".into(),
        err,
    })
}
