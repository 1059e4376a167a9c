//! The exporter's HTTP side: `/metrics` and `/healthz`.
//!
//! Served by hyper's HTTP/1 on a current-thread tokio runtime: one thread multiplexes every
//! connection, so a client that never reads a large `/metrics` answer waits alone while other
//! requests are answered, and a connection costs a few kilobytes, not a thread. hyper was chosen
//! over tiny_http (one request at a time, no write or idle timeout: the head-of-line stall this
//! replaces) and over astra (a thread per connection); tokio is built with only its
//! current-thread scheduler, I/O and timers, which keeps the binary and the build lean.
//! Scrapes read files (and may run `ethtool`), so they run on tokio's blocking pool, capped at
//! a few threads and serialised (each scrape compares with the previous one).
//! Three bounds hold whatever clients do: at most [`Limits::max_connections`] connections (when
//! full, the one idle longest is closed to make room, so a flood of idle connections cannot lock
//! a scraper out; if every one is busy the newcomer is closed), a connection on which no byte moves either way for [`Limits::idle`]
//! while it is not waiting for its own answer is closed (an idle client, or one that stopped
//! reading its answer), and no connection lives past [`Limits::lifetime`].

use std::convert::Infallible;
use std::io;
use std::net::TcpListener;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use fabrik_model::Finding;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Method, Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

use crate::metrics::{encode, to_prometheus_text, CONTENT_TYPE, PROMETHEUS_TEXT_CONTENT_TYPE};
use crate::read::{SampleOptions, Sampler};
use crate::rules::{report_findings, Thresholds};
use crate::sample::Sample;

/// Findings to export besides the counter rules: the CLI plugs the doctor in here.
pub type FindingsFn = Box<dyn Fn(&Path) -> Vec<Finding> + Send + Sync>;

/// Whether the root can still be read, for `/healthz`: `Err` says why not (503).
pub type HealthFn = Box<dyn Fn(&Path) -> Result<(), String> + Send + Sync>;

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
    /// The root sampled on each scrape.
    pub root: PathBuf,
    /// How to sample.
    pub options: SampleOptions,
    /// Thresholds of the counter rules run between two scrapes.
    pub thresholds: Thresholds,
    /// Findings to export besides the counter rules, run on each scrape.
    pub findings: Option<FindingsFn>,
}

/// The bounds every connection is served under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections open at once; one more is closed as soon as it is accepted.
    pub max_connections: usize,
    /// A connection on which no byte moves either way this long is closed.
    pub idle: Duration,
    /// No connection stays open longer (a keep-alive client simply reconnects).
    pub lifetime: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        // Prometheus scrapes every 15-60 s over one keep-alive connection per target; 64 leaves
        // room for several servers and people with curl.
        Limits {
            max_connections: 64,
            idle: Duration::from_secs(30),
            lifetime: Duration::from_secs(300),
        }
    }
}

/// Threads a scrape may run on at once (they queue on one lock anyway).
const SCRAPE_THREADS: usize = 2;

/// A bound, not yet serving, exporter.
pub struct Exporter {
    listener: TcpListener,
    shared: Arc<Shared>,
    limits: Limits,
    stop: Arc<Notify>,
}

struct Shared {
    config: ExporterConfig,
    last: Mutex<Option<(Sample, Instant)>>,
    /// Keeps the counter files open between scrapes; locked only inside `last`'s lock.
    sampler: Mutex<Sampler>,
    health: Option<HealthFn>,
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

impl Exporter {
    /// Binds `listen` (`host:port`) without serving yet; a failure is [`ServerError::Bind`].
    pub fn bind(listen: &str, config: ExporterConfig) -> Result<Exporter, ServerError> {
        let bind_err = |e: io::Error| ServerError::Bind {
            addr: listen.to_string(),
            reason: e.to_string(),
        };
        let listener = TcpListener::bind(listen).map_err(bind_err)?;
        listener.set_nonblocking(true).map_err(bind_err)?;
        Ok(Exporter {
            listener,
            shared: Arc::new(Shared {
                sampler: Mutex::new(Sampler::new(&config.root, config.options.clone())),
                config,
                last: Mutex::new(None),
                health: None,
            }),
            limits: Limits::default(),
            stop: Arc::new(Notify::new()),
        })
    }

    /// Serves under `limits` instead of the defaults.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
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

    /// Serves until the handle is unblocked. A request that fails to be answered (client gone,
    /// too slow) is dropped; nothing a counter file holds can stop the loop.
    pub fn run(self) -> Result<(), ServerError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .max_blocking_threads(SCRAPE_THREADS)
            .build()
            .map_err(ServerError::Serve)?;
        rt.block_on(self.serve())
    }

    async fn serve(self) -> Result<(), ServerError> {
        let listener =
            tokio::net::TcpListener::from_std(self.listener).map_err(ServerError::Serve)?;
        let open: Open = Arc::default();
        let mut next = 0u64;
        loop {
            let (sock, _) = tokio::select! {
                _ = self.stop.notified() => return Ok(()),
                accepted = listener.accept() => match accepted {
                    Ok(a) => a,
                    // Out of file descriptors and the like: pause rather than spin.
                    Err(e) => {
                        eprintln!("fabrik exporter: accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                },
            };
            if !make_room(&open, self.limits.max_connections.max(1)) {
                // Every connection is waiting for an answer: closing this one keeps the bound.
                drop(sock);
                continue;
            }
            next += 1;
            let (id, track) = (next, Arc::new(Track::new()));
            lock(&open).push((id, Arc::clone(&track)));
            let shared = Arc::clone(&self.shared);
            let limits = self.limits;
            let open = Arc::clone(&open);
            tokio::spawn(async move {
                // A connection's errors are its client's business (it went away or was too
                // slow): not worth a line in a DaemonSet's log.
                let _ = connection(sock, shared, limits, track).await;
                lock(&open).retain(|(i, _)| *i != id);
            });
        }
    }

    /// One scrape: read, compute counter findings against the previous scrape, add the plugged
    /// findings, encode. A panic anywhere below becomes a 500 for this scrape only.
    pub fn scrape(&mut self) -> Result<String, String> {
        self.shared.scrape()
    }
}

/// The connections being served, each with what the bound needs to know of it.
type Open = Arc<Mutex<Vec<(u64, Arc<Track>)>>>;

fn lock(open: &Open) -> std::sync::MutexGuard<'_, Vec<(u64, Arc<Track>)>> {
    // Every change is one push or retain: a poisoned list is still consistent.
    open.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Keeps the number of connections under `max` for one more: when full, the connection that
/// has been idle longest (not waiting for its own answer) is told to close, so a flood of idle
/// connections cannot lock a scraper out. Returns false when every connection is busy.
fn make_room(open: &Open, max: usize) -> bool {
    let list = lock(open);
    let live: Vec<&Arc<Track>> = list
        .iter()
        .map(|(_, t)| t)
        .filter(|t| !t.closing.load(Ordering::Relaxed))
        .collect();
    if live.len() < max {
        return true;
    }
    let Some(victim) = live
        .iter()
        .filter(|t| t.busy.load(Ordering::Relaxed) == 0)
        .max_by_key(|t| t.idle_for())
    else {
        return false;
    };
    victim.closing.store(true, Ordering::Relaxed);
    victim.close.notify_one();
    true
}

/// What is known of one connection: when a byte last moved, whether an answer is being made,
/// and the signal that closes it.
struct Track {
    born: Instant,
    /// Milliseconds after `born` when a byte last moved.
    last: AtomicU64,
    busy: AtomicUsize,
    closing: std::sync::atomic::AtomicBool,
    close: Notify,
}

impl Track {
    fn new() -> Self {
        Track {
            born: Instant::now(),
            last: AtomicU64::new(0),
            busy: AtomicUsize::new(0),
            closing: Default::default(),
            close: Notify::new(),
        }
    }

    fn moved(&self) {
        let ms = u64::try_from(self.born.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last.store(ms, Ordering::Relaxed);
    }

    /// How long nothing has moved; a connection waiting for its own answer (a scrape can take
    /// a while) is not idle.
    fn idle_for(&self) -> Duration {
        if self.busy.load(Ordering::Relaxed) > 0 {
            self.moved();
        }
        let moved = Duration::from_millis(self.last.load(Ordering::Relaxed));
        self.born.elapsed().saturating_sub(moved)
    }
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
        async move {
            let resp = answer(shared, req).await;
            drop(busy);
            Ok::<_, Infallible>(resp)
        }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.idle)
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

/// Counts a request in progress for as long as it lives (dropped futures included).
struct Busy(Arc<Track>);

impl Busy {
    fn start(t: &Arc<Track>) -> Busy {
        t.busy.fetch_add(1, Ordering::Relaxed);
        Busy(Arc::clone(t))
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::Relaxed);
        self.0.moved();
    }
}

type Body = Full<Bytes>;

async fn answer(shared: Arc<Shared>, req: Request<Incoming>) -> Response<Body> {
    let text = "text/plain; charset=utf-8";
    let (status, ctype, body) = match (req.method(), req.uri().path()) {
        (&Method::GET, "/metrics") => {
            let openmetrics = wants_openmetrics(&req);
            let scraped = tokio::task::spawn_blocking(move || shared.scrape()).await;
            match scraped {
                Ok(Ok(b)) if openmetrics => (200, CONTENT_TYPE, b),
                Ok(Ok(b)) => (200, PROMETHEUS_TEXT_CONTENT_TYPE, to_prometheus_text(&b)),
                Ok(Err(e)) => (500, text, format!("{e}\n")),
                Err(e) => (500, text, format!("the scrape did not finish: {e}\n")),
            }
        }
        (&Method::GET, "/healthz") => {
            let (status, body) = health(shared).await;
            (status, text, body)
        }
        (&Method::GET, "/") => (
            200,
            "text/html; charset=utf-8",
            "<html><body><h1>fabrik exporter</h1><a href=\"/metrics\">/metrics</a> \
             <a href=\"/healthz\">/healthz</a></body></html>\n"
                .into(),
        ),
        _ => (404, text, "not found\n".into()),
    };
    let mut resp = Response::new(Full::new(Bytes::from(body)));
    *resp.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or_default();
    if let Ok(v) = hyper::header::HeaderValue::from_str(ctype) {
        resp.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
    }
    resp
}

/// How long `/healthz` waits for the root check before saying the root does not answer.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(5);

/// `/healthz`: the status and body to answer: 503 with the reason while the root is not a
/// readable node. It never waits for a scrape, so a scrape that is slow (or stuck on a file)
/// cannot make the exporter look dead, and the root check runs off the event loop, bounded.
async fn health(shared: Arc<Shared>) -> (u16, String) {
    if shared.health.is_none() {
        return (200, "ok\n".into());
    }
    let check = tokio::task::spawn_blocking(move || {
        shared
            .health
            .as_ref()
            .map_or(Ok(()), |h| h(&shared.config.root))
    });
    match tokio::time::timeout(HEALTH_TIMEOUT, check).await {
        Ok(Ok(Ok(()))) => (200, "ok\n".into()),
        Ok(Ok(Err(why))) => (503, format!("{why}\n")),
        Ok(Err(e)) => (503, format!("the root check failed: {e}\n")),
        Err(_) => (
            503,
            format!(
                "the root check did not answer within {} s\n",
                HEALTH_TIMEOUT.as_secs()
            ),
        ),
    }
}

impl Shared {
    fn scrape(&self) -> Result<String, String> {
        let cfg = &self.config;
        // A scrape that panicked left the previous sample as it was (it is replaced whole), so
        // a poisoned lock is still good.
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        let result = catch_unwind(AssertUnwindSafe(|| {
            let t0 = Instant::now();
            let now = self
                .sampler
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .sample();
            let took = t0.elapsed().as_secs_f64();
            let mut findings = Vec::new();
            if let Some((prev, at)) = last.as_ref() {
                let interval = Some(t0.duration_since(*at)).filter(|d| *d > Duration::ZERO);
                let report = crate::delta::compare(prev, &now, interval);
                findings.extend(report_findings(&report, &cfg.thresholds));
            }
            if let Some(f) = &cfg.findings {
                findings.extend(f(&cfg.root));
            }
            *last = Some((now.clone(), t0));
            encode(now, &findings, took).map_err(|e| format!("encoding metrics: {e}"))
        }));
        match result {
            Ok(r) => r,
            Err(_) => Err("internal error while scraping; see the exporter's stderr".into()),
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

/// A socket that notes when a byte last moved, for the idle bound.
struct Watched {
    inner: tokio::net::TcpStream,
    track: Arc<Track>,
}

impl Watched {
    fn moved(&self) {
        self.track.moved();
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.moved();
        }
        r
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.moved();
        }
        r
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CLI prints errors as anyhow's chain (`{:#}`): the OS message must appear once.
    #[test]
    fn the_chain_names_the_os_error_once() {
        let os = io::Error::from_raw_os_error(24);
        let text = os.to_string();
        let chain = format!("{:#}", anyhow::Error::new(ServerError::Serve(os)));
        assert!(
            chain.starts_with("the exporter's server stopped: "),
            "{chain}"
        );
        assert_eq!(chain.matches(&text).count(), 1, "{chain}");
    }
}
