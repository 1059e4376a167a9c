//! `fabrik bench p2p --server`: accepts authenticated clients and plays the other end of their
//! rounds.

use std::io::Read;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use fabrik_model::P2pTest;
use fabrik_wire::{Channel, Pending, Ticket, Token, WireError};

use crate::data::{self, RecvPlan, SendPlan, SockOpts};
use crate::paths;
use crate::proto::{
    hex, same_session, AddrInfo, ClientMsg, DataHeader, RoundResult, RoundSpec, ServerMsg,
    StreamRecv, DATA_HEADER_LEN, PROTOCOL_VERSION,
};
use crate::BenchError;

/// Largest control message a server accepts: round specs are tiny.
const MAX_CONTROL_FRAME: u32 = 64 * 1024;
/// Control connections served at once; more are refused so a flood cannot exhaust threads.
const MAX_CONNECTIONS: usize = 64;
/// Of those, how many may still be in their handshake: when all are taken the oldest is closed
/// (see [`fabrik_wire::Pending`]), so strangers can never hold more than this many places and
/// never keep a real client out.
const MAX_HANDSHAKES: usize = 16;
/// The longest a connection may take from accept to an authenticated session.
const HANDSHAKE_LIMIT: Duration = Duration::from_secs(10);
/// The longest a data connection may take to present its header.
const HEADER_LIMIT: Duration = Duration::from_secs(5);
/// How often the receiving side samples its byte counter for the peak rate.
pub(crate) const SAMPLE_EVERY: Duration = Duration::from_millis(100);

/// Everything a server needs.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The control port's address.
    pub bind: SocketAddr,
    /// The shared token.
    pub token: Token,
    /// How long any step may wait for the client.
    pub timeout: Duration,
    /// Exit after the first authenticated session.
    pub once: bool,
    /// `SO_SNDBUF`/`SO_RCVBUF` for the data sockets; the kernel's default when `None`.
    pub sock_buf: Option<usize>,
}

/// A bound benchmark server.
pub struct Server {
    listener: TcpListener,
    cfg: ServerConfig,
}

impl Server {
    /// Binds the control port.
    pub fn bind(cfg: ServerConfig) -> Result<Server, BenchError> {
        let listener = TcpListener::bind(cfg.bind)
            .map_err(|e| BenchError::io(format!("listening on {}", cfg.bind), e))?;
        Ok(Server { listener, cfg })
    }

    /// The control port's address (the port the OS chose for port 0).
    pub fn local_addr(&self) -> Result<SocketAddr, BenchError> {
        self.listener
            .local_addr()
            .map_err(|e| BenchError::io("reading the listening address", e))
    }

    /// Serves until `stop` is set (or, with `once`, until the first session ends).
    pub fn serve(&self, stop: &AtomicBool) -> Result<(), BenchError> {
        self.listener
            .set_nonblocking(true)
            .map_err(|e| BenchError::io("setting the listener non-blocking", e))?;
        let done = Arc::new(AtomicBool::new(false));
        let pending = Pending::new(MAX_HANDSHAKES);
        let mut workers: Vec<thread::JoinHandle<()>> = Vec::new();
        while !stop.load(Ordering::Relaxed) && !done.load(Ordering::Relaxed) {
            match self.listener.accept() {
                Ok((sock, peer)) => {
                    workers.retain(|w| !w.is_finished());
                    if workers.len() >= MAX_CONNECTIONS {
                        crate::log::warn(format!(
                            "refused {peer}: {MAX_CONNECTIONS} connections are open"
                        ));
                        drop(sock);
                        continue;
                    }
                    let ticket = match pending.admit(&sock, peer) {
                        Ok((ticket, evicted)) => {
                            if let Some(e) = evicted {
                                crate::log::warn(format!("closed a stalled handshake from {e}"));
                            }
                            ticket
                        }
                        Err(e) => {
                            crate::log::warn(format!("refused {peer}: {e}"));
                            continue;
                        }
                    };
                    let cfg = self.cfg.clone();
                    let done = Arc::clone(&done);
                    workers.push(thread::spawn(move || {
                        handle(sock, peer, ticket, &cfg, &done);
                    }));
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    thread::sleep(Duration::from_millis(20));
                }
                Err(e) => {
                    // Out of descriptors and the like: pause rather than spin.
                    crate::log::warn(format!("accept failed: {e}"));
                    thread::sleep(Duration::from_millis(20));
                }
            }
        }
        // Nothing still proving itself is worth waiting for.
        pending.close_all();
        for w in workers {
            let _ = w.join();
        }
        Ok(())
    }
}

fn handle(
    sock: TcpStream,
    peer: SocketAddr,
    ticket: Ticket,
    cfg: &ServerConfig,
    done: &AtomicBool,
) {
    let _ = sock.set_nonblocking(false);
    let local_ip = sock.local_addr().map(|a| a.ip()).ok();
    let until = Instant::now() + cfg.timeout.min(HANDSHAKE_LIMIT);
    let mut ch = match Channel::accept_until(sock, &cfg.token, until, ticket.bytes()) {
        Ok(ch) => ch,
        Err(e) => {
            crate::log::warn(format!(
                "rejected control connection from {}: {e}",
                ticket.stall()
            ));
            return;
        }
    };
    drop(ticket);
    ch.set_deadline(None);
    if let Err(e) = ch.set_timeout(cfg.timeout) {
        crate::log::warn(format!("control connection from {peer}: {e}"));
        return;
    }
    ch.set_max_frame(MAX_CONTROL_FRAME);
    ch.set_peer_name(format!("client {peer}"));
    match session(&mut ch, cfg, local_ip) {
        Ok(()) => crate::log::info(format!("session with {peer} finished")),
        Err(e) => {
            crate::log::warn(format!("session with {peer} failed: {e}"));
            let _ = ch.send(&ServerMsg::Error {
                message: e.to_string(),
            });
        }
    }
    if cfg.once {
        done.store(true, Ordering::Relaxed);
    }
}

fn advertised(bind: IpAddr, local_ip: Option<IpAddr>) -> Vec<AddrInfo> {
    let table = paths::local_addrs().unwrap_or_default();
    if bind.is_unspecified() {
        return table;
    }
    let ip = local_ip.unwrap_or(bind);
    let prefix_len = table
        .iter()
        .find(|a| a.ip == ip)
        .map(|a| a.prefix_len)
        .unwrap_or(if ip.is_ipv4() { 32 } else { 128 });
    vec![AddrInfo {
        ip,
        prefix_len,
        iface: table
            .iter()
            .find(|a| a.ip == ip)
            .map(|a| a.iface.clone())
            .unwrap_or_default(),
    }]
}

fn session(
    ch: &mut Channel,
    cfg: &ServerConfig,
    local_ip: Option<IpAddr>,
) -> Result<(), BenchError> {
    let data_listener = TcpListener::bind(SocketAddr::new(cfg.bind.ip(), 0))
        .map_err(|e| BenchError::io("opening the data listener", e))?;
    let data_port = data_listener
        .local_addr()
        .map_err(|e| BenchError::io("reading the data listener address", e))?
        .port();
    // A fresh 128-bit secret per session: a random token's 32 hex digits are 16 random bytes.
    let session_id = crate::proto::unhex16(Token::random()?.as_str())
        .ok_or_else(|| BenchError::Config("the random session id is not 32 hex digits".into()))?;
    ch.send(&ServerMsg::Session {
        version: PROTOCOL_VERSION,
        session: hex(&session_id),
        data_port,
        addrs: advertised(cfg.bind.ip(), local_ip),
    })?;
    let opts = SockOpts {
        buf: cfg.sock_buf,
        nodelay: true,
        timeout: cfg.timeout,
    };
    loop {
        let msg: ClientMsg = ch.recv()?;
        let spec = match msg {
            ClientMsg::Finish => return Ok(()),
            ClientMsg::Round(spec) => spec,
        };
        if let Some(why) = spec.out_of_bounds() {
            return Err(BenchError::Config(format!("the client asked for {why}")));
        }
        ch.send(&ServerMsg::Go)?;
        let socks = accept_streams(&data_listener, &session_id, &spec, &opts, ch.peer())?;
        let result = run_round(socks, &spec);
        ch.send(&ServerMsg::RoundDone(result))?;
    }
}

/// Accepts the round's data connections, dropping any that do not present this session's id.
fn accept_streams(
    listener: &TcpListener,
    session_id: &[u8; 16],
    spec: &RoundSpec,
    opts: &SockOpts,
    peer: &str,
) -> Result<Vec<(u32, TcpStream)>, BenchError> {
    let deadline = Instant::now() + opts.timeout;
    listener
        .set_nonblocking(true)
        .map_err(|e| BenchError::io("setting the data listener non-blocking", e))?;
    let mut socks: Vec<(u32, TcpStream)> = Vec::new();
    while socks.len() < spec.streams as usize {
        if Instant::now() >= deadline {
            return Err(BenchError::Wire(WireError::Timeout {
                peer: format!(
                    "{peer} (data streams: {} of {} opened)",
                    socks.len(),
                    spec.streams
                ),
                secs: opts.timeout.as_secs_f64(),
            }));
        }
        let (sock, from) = match listener.accept() {
            Ok(s) => s,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                thread::sleep(Duration::from_millis(2));
                continue;
            }
            Err(e) => return Err(BenchError::io("accepting a data connection", e)),
        };
        let _ = sock.set_nonblocking(false);
        // One short deadline for the whole header (not a timer each trickled byte resets): a
        // stranger must not stall the round.
        let until = deadline.min(Instant::now() + HEADER_LIMIT);
        match read_header_until(&sock, until) {
            Ok(Some(h))
                if same_session(&h.session, session_id)
                    && h.round == spec.round
                    && h.stream < spec.streams
                    && !socks.iter().any(|(s, _)| *s == h.stream) =>
            {
                data::tune(&sock, opts)
                    .map_err(|e| BenchError::io(format!("tuning data socket from {from}"), e))?;
                socks.push((h.stream, sock));
            }
            _ => crate::log::warn(format!(
                "dropped a data connection from {from}: not this session's"
            )),
        }
    }
    socks.sort_by_key(|(s, _)| *s);
    Ok(socks)
}

/// Reads a data header, all of it before `until`.
fn read_header_until(sock: &TcpStream, until: Instant) -> std::io::Result<Option<DataHeader>> {
    let mut b = [0u8; DATA_HEADER_LEN];
    let mut got = 0;
    while got < b.len() {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        sock.set_read_timeout(Some(left))?;
        let mut s = sock;
        match s.read(&mut b[got..]) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(DataHeader::decode(&b))
}

fn run_round(socks: Vec<(u32, TcpStream)>, spec: &RoundSpec) -> RoundResult {
    let from: Vec<(u32, Option<String>)> = socks
        .iter()
        .map(|(s, sock)| (*s, sock.peer_addr().ok().map(|a| a.ip().to_string())))
        .collect();
    let mut r = match spec.test {
        P2pTest::Lat => lat_round(socks, spec),
        P2pTest::Bw => bw_round(socks, spec),
    };
    for s in &mut r.streams {
        s.from = from
            .iter()
            .find(|(n, _)| *n == s.stream)
            .and_then(|(_, f)| f.clone());
    }
    r
}

fn lat_round(socks: Vec<(u32, TcpStream)>, spec: &RoundSpec) -> RoundResult {
    let mut out = RoundResult::default();
    for (stream, mut sock) in socks {
        match data::echo(&mut sock, spec.size as usize, spec.verify) {
            Ok(mut r) => {
                r.stream = stream;
                out.streams.push(r);
            }
            Err(e) => out.error = Some(format!("stream {stream}: {e}")),
        }
    }
    out
}

fn bw_round(socks: Vec<(u32, TcpStream)>, spec: &RoundSpec) -> RoundResult {
    let start = Instant::now();
    let total = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let deadline = spec.duration_ms.map(|ms| start + Duration::from_millis(ms));
    thread::scope(|scope| {
        let sampler = scope.spawn(|| data::sample(&total, start, SAMPLE_EVERY, &stop));
        let mut receivers = Vec::new();
        let mut senders = Vec::new();
        for (stream, sock) in socks {
            if spec.bidir {
                if let Ok(mut tx) = sock.try_clone() {
                    let plan = SendPlan::for_round(stream, spec, deadline);
                    senders.push(scope.spawn(move || (stream, data::send(&mut tx, &plan))));
                }
            }
            let total = &total;
            receivers.push(scope.spawn(move || {
                let mut sock = sock;
                let plan = RecvPlan::for_round(stream, spec, start, total);
                (stream, data::recv(&mut sock, &plan))
            }));
        }
        let mut out = RoundResult::default();
        for r in receivers {
            match r.join() {
                Ok((_, Ok(s))) => out.streams.push(s),
                Ok((stream, Err(e))) => {
                    out.error
                        .get_or_insert(format!("receiving stream {stream}: {e}"));
                }
                Err(_) => {
                    out.error.get_or_insert("a receiver thread panicked".into());
                }
            }
        }
        for s in senders {
            if let Ok((stream, Err(e))) = s.join() {
                out.error
                    .get_or_insert(format!("sending stream {stream}: {e}"));
            }
        }
        stop.store(true, Ordering::Relaxed);
        out.samples = sampler.join().unwrap_or_default();
        out
    })
}

/// Streams that received nothing have no timing; keep them out of spans.
pub(crate) fn span_ns(streams: &[StreamRecv]) -> (u64, u64) {
    let active: Vec<&StreamRecv> = streams.iter().filter(|s| s.bytes > 0).collect();
    let first = active.iter().map(|s| s.first_ns).min().unwrap_or(0);
    let last = active.iter().map(|s| s.last_ns).max().unwrap_or(0);
    (first, last)
}
