//! `fabrik bench p2p --client`: drives the rounds and builds the report.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

pub use fabrik_model::per_interface;
use fabrik_model::{BwRow, LatRow, P2pReport, P2pRows, P2pTest, ResultSource, StreamResult};
use fabrik_wire::{Channel, Token};

use crate::data::{self, Fault, RecvPlan, SendPlan, SockOpts};
use crate::paths::{self, PathSpec, StreamPath};
use crate::proto::{
    unhex16, ClientMsg, DataHeader, Mismatch, RoundResult, RoundSpec, ServerMsg, StreamRecv,
    PROTOCOL_VERSION,
};
use crate::server::{span_ns, SAMPLE_EVERY};
use crate::stats;
use crate::BenchError;

/// Version of the JSON report.
pub const SCHEMA_VERSION: u32 = 1;

/// How long each size runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Amount {
    /// Messages per stream (bandwidth) or round trips (latency).
    Iters(u64),
    /// A fixed time per size.
    Duration(Duration),
}

/// Everything a client run needs.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// `HOST:PORT` of the server's control port.
    pub server: String,
    /// The shared token.
    pub token: Token,
    /// Bandwidth or latency.
    pub test: P2pTest,
    /// Message sizes in bytes, one round each.
    pub sizes: Vec<u64>,
    /// How long each size runs.
    pub amount: Amount,
    /// Number of parallel TCP streams.
    pub streams: u32,
    /// Which local addresses or interfaces the streams leave from.
    pub paths: PathSpec,
    /// Server addresses to use, paired by position with the local addresses; empty: pick the
    /// server's address on each local address's subnet.
    pub peer_addrs: Vec<IpAddr>,
    /// Both ends send at once.
    pub bidir: bool,
    /// Check every payload against the pattern.
    pub verify: bool,
    /// How long any step may wait for the server.
    pub timeout: Duration,
    /// `SO_SNDBUF`/`SO_RCVBUF` for the data sockets; the kernel's default when `None`.
    pub sock_buf: Option<usize>,
    /// Latency round trips run before measuring.
    pub warmup: u64,
    #[doc(hidden)]
    pub fault: Option<Fault>,
}

impl ClientConfig {
    /// Sensible defaults for `test` against `server`.
    pub fn new(server: impl Into<String>, token: Token, test: P2pTest) -> ClientConfig {
        let (size, amount) = match test {
            P2pTest::Bw => (65536, Amount::Duration(Duration::from_secs(2))),
            P2pTest::Lat => (2, Amount::Iters(10_000)),
        };
        ClientConfig {
            server: server.into(),
            token,
            test,
            sizes: vec![size],
            amount,
            streams: 1,
            paths: PathSpec::Default,
            peer_addrs: Vec::new(),
            bidir: false,
            verify: false,
            timeout: fabrik_wire::DEFAULT_TIMEOUT,
            sock_buf: None,
            warmup: 100,
            fault: None,
        }
    }

    fn validate(&self) -> Result<(), BenchError> {
        let bad = |m: &str| Err(BenchError::Config(m.to_string()));
        if self.sizes.is_empty() {
            return bad("no message size");
        }
        if self.test == P2pTest::Lat && (self.streams != 1 || self.bidir) {
            return bad("the latency test is one ping-pong stream; drop --streams and --bidir");
        }
        for &size in &self.sizes {
            let spec = RoundSpec {
                round: 0,
                test: self.test,
                size,
                iters: None,
                duration_ms: None,
                streams: self.streams,
                bidir: self.bidir,
                verify: self.verify,
            };
            if let Some(why) = spec.out_of_bounds() {
                return Err(BenchError::Config(why));
            }
        }
        match self.amount {
            Amount::Iters(0) => bad("--iters must be at least 1"),
            Amount::Duration(d) if d.is_zero() => bad("--duration must be positive"),
            Amount::Duration(_) if self.test == P2pTest::Lat => {
                bad("the latency test counts round trips: use --iters")
            }
            _ => Ok(()),
        }
    }
}

/// A row as soon as it is measured, for printing progress as perftest does.
#[derive(Debug, Clone, Copy)]
pub enum Row<'a> {
    /// A bandwidth row.
    Bw(&'a BwRow),
    /// A latency row.
    Lat(&'a LatRow),
}

/// Runs the whole test and returns the report.
pub fn run(cfg: &ClientConfig) -> Result<P2pReport, BenchError> {
    run_observed(cfg, &mut |_| {})
}

/// Runs the whole test, handing each row to `on_row` as soon as its size is done.
pub fn run_observed(
    cfg: &ClientConfig,
    on_row: &mut dyn FnMut(Row<'_>),
) -> Result<P2pReport, BenchError> {
    cfg.validate()?;
    let control_addr = resolve(&cfg.server)?;
    let mut ch = Channel::connect(control_addr, &cfg.token, cfg.timeout)?;
    ch.set_peer_name(format!("server {}", cfg.server));
    let (session, data_port, server_addrs) = match ch.recv::<ServerMsg>()? {
        ServerMsg::Session {
            version,
            session,
            data_port,
            addrs,
        } if version == PROTOCOL_VERSION => (session, data_port, addrs),
        ServerMsg::Session { version, .. } => {
            return Err(BenchError::Unexpected {
                peer: ch.peer().to_string(),
                detail: format!("protocol version {version}, this build speaks {PROTOCOL_VERSION}"),
            })
        }
        other => return Err(unexpected(&ch, &other)),
    };
    let session = unhex16(&session).ok_or_else(|| BenchError::Unexpected {
        peer: ch.peer().to_string(),
        detail: "a malformed session id".into(),
    })?;
    let local_table = paths::local_addrs().unwrap_or_default();
    let mut plan = paths::plan(
        cfg.streams,
        &cfg.paths,
        &local_table,
        &server_addrs,
        control_addr.ip(),
        &cfg.peer_addrs,
    )
    .map_err(BenchError::Config)?;
    let opts = SockOpts {
        buf: cfg.sock_buf,
        nodelay: true,
        timeout: cfg.timeout,
    };
    let peer = ch.peer().to_string();

    let mut bw_rows = Vec::new();
    let mut lat_rows = Vec::new();
    let mut per_stream = Vec::new();
    for (round, &size) in cfg.sizes.iter().enumerate() {
        let spec = RoundSpec {
            round: round as u32,
            test: cfg.test,
            size,
            iters: match cfg.amount {
                Amount::Iters(n) => Some(n),
                Amount::Duration(_) => None,
            },
            duration_ms: match cfg.amount {
                Amount::Duration(d) => Some(d.as_millis().max(1) as u64),
                Amount::Iters(_) => None,
            },
            streams: cfg.streams,
            bidir: cfg.bidir,
            verify: cfg.verify,
        };
        ch.send(&ClientMsg::Round(spec.clone()))?;
        match ch.recv::<ServerMsg>()? {
            ServerMsg::Go => {}
            other => return Err(unexpected(&ch, &other)),
        }
        let header = |stream| DataHeader {
            session,
            round: spec.round,
            stream,
        };
        let mut socks = Vec::with_capacity(plan.len());
        for p in &plan {
            let mut s = data::connect(p, data_port, &opts).map_err(|e| stream_err(p, &peer, e))?;
            header(p.stream)
                .write_to(&mut s)
                .map_err(|e| stream_err(p, &peer, e))?;
            socks.push(s);
        }
        // Name the interface the kernel chose for unbound streams, for the report.
        for (p, s) in plan.iter_mut().zip(&socks) {
            if p.iface.is_none() {
                let ip = s.local_addr().ok().map(|a| a.ip());
                p.iface = local_table
                    .iter()
                    .find(|a| Some(a.ip) == ip)
                    .map(|a| a.iface.clone());
            }
        }
        match cfg.test {
            P2pTest::Lat => {
                let mut sock = socks.remove(0);
                let p = &plan[0];
                let lat = data::ping(
                    &mut sock,
                    size as usize,
                    cfg.warmup,
                    iters(cfg),
                    cfg.verify,
                    cfg.fault,
                )
                .map_err(|e| stream_err(p, &peer, e))?
                .map_err(|m| corrupt(0, &m))?;
                let remote = round_done(&mut ch)?;
                check_remote(&remote, &peer)?;
                if let Some(row) = stats::lat_row(size, &lat) {
                    on_row(Row::Lat(&row));
                    lat_rows.push(row);
                }
            }
            P2pTest::Bw => {
                let local = bw_round(socks, &plan, &spec, cfg, &peer)?;
                let remote = round_done(&mut ch)?;
                check_remote(&remote, &peer)?;
                let (row, streams) = bw_result(&spec, &plan, &remote, local.as_ref());
                on_row(Row::Bw(&row));
                bw_rows.push(row);
                per_stream = streams;
            }
        }
    }
    let _ = ch.send(&ClientMsg::Finish);

    let mut interfaces: Vec<String> = Vec::new();
    for p in &plan {
        let name = p
            .iface
            .clone()
            .or_else(|| p.local.map(|ip| ip.to_string()))
            .unwrap_or_else(|| "default route".to_string());
        if !interfaces.contains(&name) {
            interfaces.push(name);
        }
    }
    let mut notes = vec![format!("server {}", cfg.server)];
    if let (P2pTest::Bw, Some(&last)) = (cfg.test, cfg.sizes.last()) {
        notes.push(format!("per_stream: {last}-byte messages"));
    }
    if cfg.bidir {
        notes.push("bidirectional: bandwidth is the sum of both directions".into());
    }
    if cfg.verify {
        notes.push("payload verified".into());
    }
    Ok(P2pReport {
        schema_version: SCHEMA_VERSION,
        source: ResultSource::Fabrik,
        test: cfg.test,
        transport: "tcp".into(),
        op: None,
        streams: cfg.streams,
        interfaces,
        device: None,
        link_type: None,
        mtu: None,
        gid_index: None,
        results: match cfg.test {
            P2pTest::Bw => P2pRows::Bw(bw_rows),
            P2pTest::Lat => P2pRows::Lat(lat_rows),
        },
        per_stream,
        notes,
        memory: None,
    })
}

fn iters(cfg: &ClientConfig) -> u64 {
    match cfg.amount {
        Amount::Iters(n) => n,
        Amount::Duration(_) => 0,
    }
}

fn resolve(server: &str) -> Result<SocketAddr, BenchError> {
    server
        .to_socket_addrs()
        .map_err(|e| BenchError::io(format!("resolving {server}"), e))?
        .next()
        .ok_or_else(|| BenchError::Config(format!("{server} resolves to no address")))
}

fn unexpected(ch: &Channel, msg: &ServerMsg) -> BenchError {
    match msg {
        ServerMsg::Error { message } => BenchError::Remote {
            peer: ch.peer().to_string(),
            message: message.clone(),
        },
        other => BenchError::Unexpected {
            peer: ch.peer().to_string(),
            detail: format!("{other:?}"),
        },
    }
}

fn stream_err(p: &StreamPath, peer: &str, e: std::io::Error) -> BenchError {
    let via = match (&p.bind_device, p.local) {
        (Some(d), _) => format!(" via {d}"),
        (None, Some(ip)) => format!(" from {ip}"),
        _ => String::new(),
    };
    let detail = match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
            "no progress within the timeout: the peer stalled or the path is down".to_string()
        }
        _ => e.to_string(),
    };
    BenchError::Stream {
        stream: p.stream,
        peer: format!("{peer} ({}{via})", p.remote),
        detail,
    }
}

fn corrupt(stream: u32, m: &Mismatch) -> BenchError {
    BenchError::Corrupt {
        stream,
        message: m.message,
        offset: m.offset,
        global_offset: m.global_offset,
    }
}

fn round_done(ch: &mut Channel) -> Result<RoundResult, BenchError> {
    match ch.recv::<ServerMsg>()? {
        ServerMsg::RoundDone(r) => Ok(r),
        other => Err(unexpected(ch, &other)),
    }
}

fn check_remote(r: &RoundResult, peer: &str) -> Result<(), BenchError> {
    if let Some(s) = r.streams.iter().find(|s| s.corrupt.is_some()) {
        if let Some(m) = &s.corrupt {
            return Err(corrupt(s.stream, m));
        }
    }
    if let Some(e) = &r.error {
        return Err(BenchError::Remote {
            peer: peer.to_string(),
            message: e.clone(),
        });
    }
    Ok(())
}

/// What this end received in a bidirectional round.
struct LocalRecv {
    streams: Vec<StreamRecv>,
    samples: Vec<(f64, u64)>,
}

fn bw_round(
    socks: Vec<TcpStream>,
    plan: &[StreamPath],
    spec: &RoundSpec,
    cfg: &ClientConfig,
    peer: &str,
) -> Result<Option<LocalRecv>, BenchError> {
    let start = Instant::now();
    let deadline = spec.duration_ms.map(|ms| start + Duration::from_millis(ms));
    let total = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    thread::scope(|scope| -> Result<Option<LocalRecv>, BenchError> {
        let sampler = spec
            .bidir
            .then(|| scope.spawn(|| data::sample(&total, start, SAMPLE_EVERY, &stop)));
        let mut senders = Vec::new();
        let mut receivers = Vec::new();
        for (p, sock) in plan.iter().zip(socks) {
            if spec.bidir {
                let mut rx = sock.try_clone().map_err(|e| stream_err(p, peer, e))?;
                let total = &total;
                receivers.push(scope.spawn(move || {
                    let plan = RecvPlan::for_round(p.stream, spec, start, total);
                    (p, data::recv(&mut rx, &plan))
                }));
            }
            let send_plan = SendPlan {
                fault: cfg.fault,
                ..SendPlan::for_round(p.stream, spec, deadline)
            };
            senders.push(scope.spawn(move || {
                let mut sock = sock;
                (p, data::send(&mut sock, &send_plan))
            }));
        }
        let mut first_err = None;
        for s in senders {
            match s.join() {
                Ok((_, Ok(_))) => {}
                Ok((p, Err(e))) => {
                    first_err.get_or_insert(stream_err(p, peer, e));
                }
                Err(_) => {
                    first_err.get_or_insert(BenchError::Config("a sender thread panicked".into()));
                }
            }
        }
        let mut streams = Vec::new();
        for r in receivers {
            match r.join() {
                Ok((_, Ok(s))) => streams.push(s),
                Ok((p, Err(e))) => {
                    first_err.get_or_insert(stream_err(p, peer, e));
                }
                Err(_) => {
                    first_err
                        .get_or_insert(BenchError::Config("a receiver thread panicked".into()));
                }
            }
        }
        stop.store(true, Ordering::Relaxed);
        let samples = sampler
            .map(|s| s.join().unwrap_or_default())
            .unwrap_or_default();
        if let Some(e) = first_err {
            return Err(e);
        }
        if let Some(s) = streams.iter().find(|s| s.corrupt.is_some()) {
            if let Some(m) = &s.corrupt {
                return Err(corrupt(s.stream, m));
            }
        }
        Ok(spec.bidir.then_some(LocalRecv { streams, samples }))
    })
}

/// The row and the per-stream breakdown of one bandwidth round.
fn bw_result(
    spec: &RoundSpec,
    plan: &[StreamPath],
    remote: &RoundResult,
    local: Option<&LocalRecv>,
) -> (BwRow, Vec<StreamResult>) {
    let direction = |streams: &[StreamRecv], samples: &[(f64, u64)]| {
        let (first, last) = span_ns(streams);
        let secs = (last.saturating_sub(first)) as f64 / 1e9;
        let bytes: u64 = streams.iter().map(|s| s.bytes).sum();
        let msgs: u64 = streams.iter().map(|s| s.messages).sum();
        (bytes, msgs, secs, stats::peak_gbps(samples))
    };
    let (b1, m1, s1, p1) = direction(&remote.streams, &remote.samples);
    let mut row = stats::bw_row(spec.size, m1, b1, s1, p1);
    if let Some(l) = local {
        let (b2, m2, s2, p2) = direction(&l.streams, &l.samples);
        let back = stats::bw_row(spec.size, m2, b2, s2, p2);
        row = BwRow {
            bytes: spec.size,
            iterations: row.iterations + back.iterations,
            bw_peak_gbps: row.bw_peak_gbps + back.bw_peak_gbps,
            bw_avg_gbps: row.bw_avg_gbps + back.bw_avg_gbps,
            msg_rate_mpps: row.msg_rate_mpps + back.msg_rate_mpps,
        };
    }
    let mut by_stream: BTreeMap<u32, (u64, f64)> = BTreeMap::new();
    let all = remote
        .streams
        .iter()
        .chain(local.map(|l| l.streams.as_slice()).unwrap_or(&[]));
    for s in all {
        let secs = s.last_ns.saturating_sub(s.first_ns) as f64 / 1e9;
        let e = by_stream.entry(s.stream).or_insert((0, 0.0));
        e.0 += s.bytes;
        e.1 += stats::gbps(s.bytes, secs);
    }
    let per_stream = plan
        .iter()
        .map(|p| {
            let (bytes, gbps) = by_stream.get(&p.stream).copied().unwrap_or((0, 0.0));
            // The source address the server saw proves which path the stream took.
            let seen = remote
                .streams
                .iter()
                .find(|s| s.stream == p.stream)
                .and_then(|s| s.from.clone());
            StreamResult {
                stream: p.stream,
                interface: p.iface.clone(),
                local_addr: seen.or_else(|| p.local.map(|ip| ip.to_string())),
                bytes,
                bw_avg_gbps: gbps,
            }
        })
        .collect();
    (row, per_stream)
}

/// `HOST` gets the default port; `HOST:PORT` and `[V6]:PORT` are kept; a bare IPv6 address is
/// bracketed.
pub fn with_port(host: &str, port: u16) -> String {
    if host.parse::<SocketAddr>().is_ok() {
        return host.to_string();
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        return SocketAddr::new(ip, port).to_string();
    }
    if host.contains(':') {
        host.to_string()
    } else {
        format!("{host}:{port}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_get_the_default_port() {
        assert_eq!(with_port("node-b", 18800), "node-b:18800");
        assert_eq!(with_port("node-b:99", 18800), "node-b:99");
        assert_eq!(with_port("10.0.0.2", 5), "10.0.0.2:5");
        assert_eq!(with_port("fe80::1", 5), "[fe80::1]:5");
    }
}
