//! The exporter: its own sampling of the root, and the HTTP side (`/metrics`, `/healthz`).
//!
//! **Sampling.** A thread samples the root every [`Sampling::every`] and judges counter rates
//! between the newest sample and the one [`Sampling::window`] before it, so the counter
//! findings and the exported values are the exporter's, the same for every scraper: two
//! Prometheus replicas scraping at their own times see the same findings, and a finding stays
//! exported for a whole window, long enough for any scraper to see it. Each sample is encoded
//! once, in both text formats; a scrape answers the latest encoding and reads nothing, so its
//! cost is a copy whatever the root holds. `/healthz` answers the health the sampler found on
//! its last round, or 503 when no round has finished for several intervals (a counter read
//! that hangs).
//!
//! **Serving.** hyper's HTTP/1 on a current-thread tokio runtime: one thread multiplexes every
//! connection, so a client that never reads its answer waits alone, and a connection costs a
//! few kilobytes, not a thread. hyper was chosen over tiny_http (one request at a time, no
//! write or idle timeout) and over astra (a thread per connection); tokio is built with only
//! its current-thread scheduler, I/O and timers. Whatever clients do:
//! - connections are accepted in the order they arrive (a listen backlog of 1024) and served
//!   up to [`Limits::max_connections`]; past that a newcomer waits in a first-come queue for a
//!   free place rather than being closed, and is closed only if it waited
//!   [`Limits::max_wait`] or the queue ([`Limits::max_waiting`]) is full;
//! - a newcomer finds room at once when a client address holds more connections than the
//!   newcomer's (its idlest is closed: one host opening hundreds of connections cannot lock out
//!   another's scraper), or when a connection has been idle for a second;
//! - each connection serves at most [`Limits::max_requests`] requests (then `Connection:
//!   close`), so a busy keep-alive client takes its turn again in the queue;
//! - a connection on which no byte moves either way for [`Limits::idle`] while it is not
//!   waiting for its own answer is closed, and none lives past [`Limits::lifetime`].

use std::collections::VecDeque;
use std::convert::Infallible;
use std::io;
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use fabrik_model::Finding;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Method, Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::Notify;

use crate::metrics::{encode, to_prometheus_text, CONTENT_TYPE, PROMETHEUS_TEXT_CONTENT_TYPE};
use crate::read::{SampleOptions, Sampler};
use crate::rules::{report_findings, Thresholds};
use crate::sample::Sample;

mod conns;

use conns::{connection_budget, lock, make_room, raise_nofile, Busy, Open, Track, Watched};

/// Findings to export besides the counter rules: the CLI plugs the doctor in here.
pub type FindingsFn = Box<dyn Fn(&Path) -> Vec<Finding> + Send + Sync>;

/// Whether the root can still be read, for `/healthz`: `Err` says why not (503).
pub type HealthFn = Box<dyn Fn(&Path) -> Result<(), String> + Send + Sync>;

/// The doctor's node rules on the root, re-run at most every `every` (a probe reads far more
/// than a scrape does). A root that cannot be probed yields no doctor findings and
/// `on_probe_error` is told once (the counters are still served).
pub fn doctor_findings(
    every: Duration,
    on_probe_error: impl Fn(&Path, &fabrik_probe::ProbeError) + Send + Sync + 'static,
) -> FindingsFn {
    type Cache = Option<(Instant, Vec<Finding>)>;
    let cache: Mutex<Cache> = Mutex::new(None);
    let warned = AtomicBool::new(false);
    Box::new(move |root: &Path| {
        let Ok(mut guard) = cache.lock() else {
            return Vec::new();
        };
        if let Some((at, f)) = guard.as_ref() {
            if at.elapsed() < every {
                return f.clone();
            }
        }
        let findings = match fabrik_probe::probe(root) {
            Ok(node) => fabrik_doctor::check_node(&node, None),
            Err(e) => {
                if !warned.swap(true, Ordering::Relaxed) {
                    on_probe_error(root, &e);
                }
                Vec::new()
            }
        };
        *guard = Some((Instant::now(), findings.clone()));
        findings
    })
}

/// `/healthz` for the root, not only for the process: a root that has become unreadable (an
/// unmounted snapshot, a /sys gone from a container) is unhealthy; a snapshot tarball is
/// read whole up front and stays healthy.
pub fn root_health() -> HealthFn {
    Box::new(|root: &Path| {
        if fabrik_probe::snapshot::is_snapshot_tarball(root) {
            return Ok(());
        }
        fabrik_probe::root::check(root)
            .map(|_| ())
            .map_err(|e| e.to_string())
    })
}

/// Why the exporter could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The listening socket could not be set up.
    #[error("cannot listen on {addr}: {reason}")]
    Bind {
        /// The address asked for.
        addr: String,
        /// The OS error, as text.
        reason: String,
    },
    /// The cause is part of the message rather than a `source`, so that a caller printing the
    /// chain (`{:#}`) prints it once.
    #[error("the exporter's server stopped: {0}")]
    Serve(io::Error),
}

/// What the exporter reads and how.
pub struct ExporterConfig {
    /// The root sampled.
    pub root: PathBuf,
    /// How to sample.
    pub options: SampleOptions,
    /// Thresholds of the counter rules run over each rate window.
    pub thresholds: Thresholds,
    /// Findings to export besides the counter rules, run on each sample.
    pub findings: Option<FindingsFn>,
}

impl ExporterConfig {
    /// `root` sampled as [`SampleOptions::for_root`] decides, default thresholds, no findings
    /// besides the counter rules.
    pub fn for_root(root: PathBuf) -> Self {
        ExporterConfig {
            options: SampleOptions::for_root(&root),
            root,
            thresholds: Thresholds::default(),
            findings: None,
        }
    }
}

/// How often the exporter samples, and over what window it judges counter rates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sampling {
    /// Time between two samples.
    pub every: Duration,
    /// Counter rules compare the newest sample with the newest one at least this old (or the
    /// oldest kept, right after the start); each finding stays exported about this long.
    pub window: Duration,
}

impl Default for Sampling {
    fn default() -> Self {
        // Prometheus scrapes every 15 to 60 s: a sample per 15 s keeps the values as fresh as
        // the fastest scraper, and a 60 s window shows each finding to the slowest.
        Sampling {
            every: Duration::from_secs(15),
            window: Duration::from_secs(60),
        }
    }
}

/// The bounds every connection is served under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections served at once; more wait in the queue.
    pub max_connections: usize,
    /// Connections that may wait for a place; one more is closed at once.
    pub max_waiting: usize,
    /// The longest a connection waits for a place before it is closed.
    pub max_wait: Duration,
    /// Requests one connection may make before it is asked to close (`Connection: close`).
    pub max_requests: u64,
    /// A connection on which no byte moves either way this long is closed.
    pub idle: Duration,
    /// No connection stays open longer (a keep-alive client simply reconnects).
    pub lifetime: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            // A connection costs a few KiB and a descriptor: 512 holds hundreds of clients
            // beside the counter files the sampler keeps open (see `Exporter::bind`).
            max_connections: 512,
            max_waiting: 1024,
            // Prometheus' default scrape timeout.
            max_wait: Duration::from_secs(10),
            max_requests: 100,
            idle: Duration::from_secs(30),
            lifetime: Duration::from_secs(300),
        }
    }
}

/// A bound, not yet serving, exporter.
pub struct Exporter {
    listener: TcpListener,
    shared: Arc<Shared>,
    limits: Limits,
    sampling: Sampling,
    stop: Arc<Notify>,
}

/// One sample as served: both encodings, when it was taken, and the root's health then.
struct Served {
    openmetrics: Bytes,
    prometheus: Bytes,
    at: Instant,
    health: Result<(), String>,
}

struct Shared {
    config: ExporterConfig,
    /// The sampler and the recent samples; locked by the sampling thread (and `scrape`).
    state: Mutex<SamplerState>,
    latest: Mutex<Option<Arc<Served>>>,
    /// Woken when a sample is served, for requests that arrive before the first.
    served: Notify,
    health: Option<HealthFn>,
    sampling: Mutex<Sampling>,
}

struct SamplerState {
    sampler: Sampler,
    /// Recent samples, oldest first, kept for one rate window.
    history: VecDeque<(Instant, Sample)>,
}

/// Makes [`Exporter::run`] return.
#[derive(Debug, Clone)]
pub struct StopHandle(Arc<Notify>);

impl StopHandle {
    /// Makes the server stop accepting and return.
    pub fn unblock(&self) {
        self.0.notify_one();
    }
}

/// Descriptors a listen socket keeps for connections the kernel has accepted but the server
/// has not: enough for hundreds of clients connecting at once.
const BACKLOG: i32 = 1024;

impl Exporter {
    /// Binds `listen` (`host:port`) without serving yet; a failure is [`ServerError::Bind`].
    /// The process's soft descriptor limit is raised to its hard limit (at most 65,536) first:
    /// the sampler keeps half of it for counter files, the connections use the rest.
    pub fn bind(listen: &str, config: ExporterConfig) -> Result<Exporter, ServerError> {
        let bind_err = |e: io::Error| ServerError::Bind {
            addr: listen.to_string(),
            reason: e.to_string(),
        };
        raise_nofile();
        let addr: SocketAddr = listen
            .parse()
            .or_else(|_| {
                std::net::ToSocketAddrs::to_socket_addrs(listen)?
                    .next()
                    .ok_or_else(|| io::Error::other("no address"))
            })
            .map_err(bind_err)?;
        let socket = socket2::Socket::new(
            socket2::Domain::for_address(addr),
            socket2::Type::STREAM,
            Some(socket2::Protocol::TCP),
        )
        .map_err(bind_err)?;
        socket.set_reuse_address(true).map_err(bind_err)?;
        socket.bind(&addr.into()).map_err(bind_err)?;
        socket.listen(BACKLOG).map_err(bind_err)?;
        socket.set_nonblocking(true).map_err(bind_err)?;
        let listener: TcpListener = socket.into();
        let limits = Limits {
            max_connections: connection_budget(Limits::default().max_connections),
            ..Limits::default()
        };
        Ok(Exporter {
            listener,
            shared: Arc::new(Shared {
                state: Mutex::new(SamplerState {
                    sampler: Sampler::new(&config.root, config.options.clone()),
                    history: VecDeque::new(),
                }),
                config,
                latest: Mutex::new(None),
                served: Notify::new(),
                health: None,
                sampling: Mutex::new(Sampling::default()),
            }),
            limits,
            sampling: Sampling::default(),
            stop: Arc::new(Notify::new()),
        })
    }

    /// Serves under `limits` instead of the defaults.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Samples as `sampling` says instead of the defaults.
    pub fn with_sampling(mut self, sampling: Sampling) -> Self {
        self.sampling = sampling;
        *self
            .shared
            .sampling
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = sampling;
        self
    }

    /// The address actually bound (useful with port 0).
    pub fn local_addr(&self) -> String {
        self.listener
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_else(|_| "?".into())
    }

    /// Makes `/healthz` answer 503 with the reason while `check` fails on the root.
    pub fn set_health(&mut self, check: HealthFn) {
        // Before `run` nothing else holds the shared state.
        if let Some(shared) = Arc::get_mut(&mut self.shared) {
            shared.health = Some(check);
        }
    }

    /// A handle whose `unblock()` makes [`Exporter::run`] return.
    pub fn handle(&self) -> StopHandle {
        StopHandle(Arc::clone(&self.stop))
    }

    /// Samples and serves until the handle is unblocked. A request that fails to be answered
    /// (client gone, too slow) is dropped; nothing a counter file holds can stop the loop.
    pub fn run(self) -> Result<(), ServerError> {
        let (stop_sampling, stopped) = mpsc::channel::<()>();
        let shared = Arc::clone(&self.shared);
        let every = self.sampling.every.max(Duration::from_millis(10));
        let sampler = std::thread::Builder::new()
            .name("fabrik-sampler".into())
            .spawn(move || {
                // A round that fails leaves the previous sample served; each new reason is
                // said once on stderr.
                let mut said = String::new();
                loop {
                    match shared.refresh() {
                        Err(e) if e != said => {
                            eprintln!(
                                "fabrik exporter: sampling {}: {e}",
                                shared.config.root.display()
                            );
                            said = e;
                        }
                        Err(_) => {}
                        Ok(()) => said.clear(),
                    }
                    match stopped.recv_timeout(every) {
                        Err(mpsc::RecvTimeoutError::Timeout) => continue,
                        _ => return,
                    }
                }
            })
            .map_err(ServerError::Serve)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(ServerError::Serve)?;
        let result = rt.block_on(self.serve());
        drop(stop_sampling);
        // The sampler ends at its next wake-up; a sample stuck in a hung read ends with the
        // process rather than hold the caller.
        drop(sampler);
        result
    }

    async fn serve(self) -> Result<(), ServerError> {
        let listener =
            tokio::net::TcpListener::from_std(self.listener).map_err(ServerError::Serve)?;
        let limits = self.limits;
        let open: Open = Arc::default();
        let freed = Arc::new(Notify::new());
        let mut waiting: VecDeque<(tokio::net::TcpStream, IpAddr, Instant)> = VecDeque::new();
        let mut next = 0u64;
        loop {
            // While connections wait, look again every quarter second (a connection may have
            // become idle enough to make room) and drop those that waited too long.
            let sleep_until = if waiting.is_empty() {
                Instant::now() + Duration::from_secs(3600)
            } else {
                Instant::now() + Duration::from_millis(250)
            };
            tokio::select! {
                _ = self.stop.notified() => return Ok(()),
                accepted = listener.accept() => match accepted {
                    Ok((sock, peer)) => {
                        if waiting.len() >= limits.max_waiting.max(1) {
                            // The queue is full: the newcomer is closed, the queue keeps its order.
                            drop(sock);
                        } else {
                            waiting.push_back((sock, peer.ip(), Instant::now()));
                        }
                    }
                    // Out of file descriptors and the like: pause rather than spin.
                    Err(e) => {
                        eprintln!("fabrik exporter: accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                },
                _ = freed.notified() => {}
                _ = tokio::time::sleep_until(tokio::time::Instant::from_std(sleep_until)) => {}
            }
            let now = Instant::now();
            while waiting
                .front()
                .is_some_and(|(_, _, at)| now.duration_since(*at) >= limits.max_wait)
            {
                waiting.pop_front();
            }
            // First come, first served: the queue's head is admitted before anyone behind it.
            while let Some((_, ip, _)) = waiting.front() {
                if !make_room(&open, *ip, limits.max_connections.max(1)) {
                    break;
                }
                let Some((sock, ip, _)) = waiting.pop_front() else {
                    break;
                };
                next += 1;
                let (id, track) = (next, Arc::new(Track::new(ip)));
                lock(&open).push((id, Arc::clone(&track)));
                let shared = Arc::clone(&self.shared);
                let open = Arc::clone(&open);
                let freed = Arc::clone(&freed);
                tokio::spawn(async move {
                    // A connection's errors are its client's business (it went away or was
                    // too slow): not worth a line in a DaemonSet's log.
                    let _ = connection(sock, shared, limits, track).await;
                    lock(&open).retain(|(i, _)| *i != id);
                    freed.notify_one();
                });
            }
        }
    }

    /// Samples now, judges the counter rates against the recent samples, and returns the
    /// OpenMetrics text it now serves (a panic while sampling becomes an error).
    pub fn scrape(&mut self) -> Result<String, String> {
        self.shared.refresh()?;
        let latest = lock_latest(&self.shared).clone();
        latest
            .map(|s| String::from_utf8_lossy(&s.openmetrics).into_owned())
            .ok_or_else(|| "no sample".to_string())
    }
}

fn lock_latest(shared: &Shared) -> std::sync::MutexGuard<'_, Option<Arc<Served>>> {
    // Replaced whole: a poisoned value is still one sample's.
    shared.latest.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Serves one connection until it ends, breaks a bound or is told to make room.
async fn connection(
    sock: tokio::net::TcpStream,
    shared: Arc<Shared>,
    limits: Limits,
    track: Arc<Track>,
) -> Result<(), hyper::Error> {
    let io = Watched {
        inner: sock,
        track: Arc::clone(&track),
    };
    let busy = Arc::clone(&track);
    let service = hyper::service::service_fn(move |req| {
        let shared = Arc::clone(&shared);
        let busy = Busy::start(&busy);
        let last = busy.0.requests.fetch_add(1, Ordering::Relaxed) + 1 >= limits.max_requests;
        async move {
            let mut resp = answer(shared, req).await;
            if last {
                // Its share is spent: the client reconnects and queues like everyone else.
                resp.headers_mut().insert(
                    hyper::header::CONNECTION,
                    hyper::header::HeaderValue::from_static("close"),
                );
            }
            drop(busy);
            Ok::<_, Infallible>(resp)
        }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.idle)
        // A request is a line and a few headers: hyper's smallest buffer holds any real one.
        .max_buf_size(8192)
        .serve_connection(TokioIo::new(io), service);
    let mut conn = std::pin::pin!(conn);
    loop {
        let idle_for = track.idle_for();
        let lived = track.born.elapsed();
        if idle_for >= limits.idle || lived >= limits.lifetime {
            // Dropping the connection closes the socket, whatever it was waiting on.
            return Ok(());
        }
        let wait = (limits.idle - idle_for).min(limits.lifetime - lived);
        tokio::select! {
            r = tokio::time::timeout(wait, conn.as_mut()) => match r {
                Ok(r) => return r,
                Err(_) => continue,
            },
            _ = track.close.notified() => return Ok(()),
        }
    }
}

type Body = Full<Bytes>;

/// How long a request made before the first sample waits for it.
const FIRST_SAMPLE_WAIT: Duration = Duration::from_secs(10);

/// The latest sample, waiting for the first one when the exporter has just started.
async fn latest(shared: &Shared) -> Option<Arc<Served>> {
    let deadline = tokio::time::Instant::now() + FIRST_SAMPLE_WAIT;
    loop {
        let notified = shared.served.notified();
        if let Some(s) = lock_latest(shared).clone() {
            return Some(s);
        }
        if tokio::time::timeout_at(deadline, notified).await.is_err() {
            return None;
        }
    }
}

async fn answer(shared: Arc<Shared>, req: Request<Incoming>) -> Response<Body> {
    let text = "text/plain; charset=utf-8";
    let (status, ctype, body): (u16, &str, Bytes) = match (req.method(), req.uri().path()) {
        (&Method::GET, "/metrics") => match latest(&shared).await {
            Some(s) if wants_openmetrics(&req) => (200, CONTENT_TYPE, s.openmetrics.clone()),
            Some(s) => (200, PROMETHEUS_TEXT_CONTENT_TYPE, s.prometheus.clone()),
            None => (
                503,
                text,
                "the first sample of the root has not finished yet\n".into(),
            ),
        },
        (&Method::GET, "/healthz") => {
            let (status, body) = health(&shared).await;
            (status, text, body.into())
        }
        (&Method::GET, "/") => (
            200,
            "text/html; charset=utf-8",
            Bytes::from_static(
                b"<html><body><h1>fabrik exporter</h1><a href=\"/metrics\">/metrics</a> \
                  <a href=\"/healthz\">/healthz</a></body></html>\n",
            ),
        ),
        _ => (404, text, Bytes::from_static(b"not found\n")),
    };
    let mut resp = Response::new(Full::new(body));
    *resp.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or_default();
    if let Ok(v) = hyper::header::HeaderValue::from_str(ctype) {
        resp.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
    }
    resp
}

/// `/healthz`: the health the sampler found on its latest round; 503 with the reason while
/// the root is not a readable node, and when no round finished for three intervals and a
/// minute (a counter read or the root check hangs). It never reads the root itself.
async fn health(shared: &Shared) -> (u16, String) {
    let every = shared
        .sampling
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .every;
    let stalled_after = every * 3 + Duration::from_secs(60);
    match latest(shared).await {
        None => (
            503,
            "the first sample of the root has not finished yet\n".into(),
        ),
        Some(s) if s.at.elapsed() > stalled_after => (
            503,
            format!(
                "no sample of the root finished for {} s (a counter read hangs?)\n",
                s.at.elapsed().as_secs()
            ),
        ),
        Some(s) => match &s.health {
            Ok(()) => (200, "ok\n".into()),
            Err(why) => (503, format!("{why}\n")),
        },
    }
}

impl Shared {
    /// One round of the sampler: sample, judge the counter rates over the window, add the
    /// plugged findings, check the root's health, encode both formats, serve the result. A
    /// panic anywhere below leaves the previous sample served and is an error.
    fn refresh(&self) -> Result<(), String> {
        let window = self
            .sampling
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .window;
        let cfg = &self.config;
        // A round that panicked left the history as it was (samples are pushed whole), so a
        // poisoned lock is still good.
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let result = catch_unwind(AssertUnwindSafe(|| {
            let t0 = Instant::now();
            let now = state.sampler.sample();
            let took = t0.elapsed().as_secs_f64();
            // The newest sample at least a window old, else the oldest kept.
            let base = state
                .history
                .iter()
                .rev()
                .find(|(at, _)| t0.duration_since(*at) >= window)
                .or_else(|| state.history.front());
            let mut findings = Vec::new();
            if let Some((at, prev)) = base {
                let interval = Some(t0.duration_since(*at)).filter(|d| *d > Duration::ZERO);
                let report = crate::delta::compare(prev, &now, interval);
                findings.extend(report_findings(&report, &cfg.thresholds));
            }
            if let Some(f) = &cfg.findings {
                findings.extend(f(&cfg.root));
            }
            let health = self.health.as_ref().map_or(Ok(()), |h| h(&cfg.root));
            let openmetrics = encode(now.clone(), &findings, took)
                .map_err(|e| format!("encoding metrics: {e}"))?;
            let prometheus = to_prometheus_text(&openmetrics);
            // Keep what the next window needs: every sample younger than the window and the
            // newest older one.
            state.history.push_back((t0, now));
            while state.history.len() > 1
                && state
                    .history
                    .get(1)
                    .is_some_and(|(at, _)| t0.duration_since(*at) >= window)
            {
                state.history.pop_front();
            }
            Ok::<_, String>(Served {
                openmetrics: Bytes::from(openmetrics),
                prometheus: Bytes::from(prometheus),
                at: Instant::now(),
                health,
            })
        }));
        match result {
            Ok(Ok(served)) => {
                *lock_latest(self) = Some(Arc::new(served));
                self.served.notify_waiters();
                Ok(())
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err("internal error while sampling; see the exporter's stderr".into()),
        }
    }
}

/// Prometheus asks for OpenMetrics in its Accept header; curl and older clients do not.
fn wants_openmetrics(req: &Request<Incoming>) -> bool {
    req.headers()
        .get_all(hyper::header::ACCEPT)
        .iter()
        .any(|v| {
            v.to_str()
                .is_ok_and(|s| s.contains("application/openmetrics-text"))
        })
}

#[cfg(test)]
mod tests;
