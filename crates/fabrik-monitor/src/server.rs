//! The exporter's HTTP side: `/metrics` and `/healthz` on a small blocking server (tiny_http).
//! One request at a time is plenty for a Prometheus scraping every few seconds, and it keeps
//! the exporter's CPU and memory flat.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fabrik_model::Finding;
use tiny_http::{Header, Method, Response, Server};

use crate::metrics::{encode, to_prometheus_text, CONTENT_TYPE, PROMETHEUS_TEXT_CONTENT_TYPE};
use crate::read::{sample_with, SampleOptions};
use crate::rules::{report_findings, Thresholds};
use crate::sample::Sample;

/// Findings to export besides the counter rules: the CLI plugs the doctor in here.
pub type FindingsFn = Box<dyn Fn(&Path) -> Vec<Finding> + Send + Sync>;

/// Whether the root can still be read, for `/healthz`: `Err` says why not (503).
pub type HealthFn = Box<dyn Fn(&Path) -> Result<(), String> + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot listen on {addr}: {reason}")]
    Bind { addr: String, reason: String },
}

/// What the exporter reads and how.
pub struct ExporterConfig {
    pub root: PathBuf,
    pub options: SampleOptions,
    pub thresholds: Thresholds,
    pub findings: Option<FindingsFn>,
}

/// A bound, not yet serving, exporter.
pub struct Exporter {
    server: Arc<Server>,
    config: ExporterConfig,
    last: Option<(Sample, Instant)>,
    health: Option<HealthFn>,
}

impl Exporter {
    pub fn bind(listen: &str, config: ExporterConfig) -> Result<Exporter, ServerError> {
        let server = Server::http(listen).map_err(|e| ServerError::Bind {
            addr: listen.to_string(),
            reason: e.to_string(),
        })?;
        Ok(Exporter {
            server: Arc::new(server),
            config,
            last: None,
            health: None,
        })
    }

    /// The address actually bound (useful with port 0).
    pub fn local_addr(&self) -> String {
        self.server.server_addr().to_string()
    }

    /// Makes `/healthz` answer 503 with the reason while `check` fails on the root.
    pub fn set_health(&mut self, check: HealthFn) {
        self.health = Some(check);
    }

    /// A handle whose `unblock()` makes [`Exporter::run`] return.
    pub fn handle(&self) -> Arc<Server> {
        Arc::clone(&self.server)
    }

    /// Serves until the server is unblocked. A request that fails to be answered (client gone)
    /// is dropped; nothing a counter file holds can stop the loop.
    pub fn run(mut self) {
        let server = Arc::clone(&self.server);
        for request in server.incoming_requests() {
            let (status, ctype, body) = match (request.method(), request.url()) {
                (Method::Get, "/metrics") => match self.scrape() {
                    Ok(b) if wants_openmetrics(&request) => (200, CONTENT_TYPE, b),
                    Ok(b) => (200, PROMETHEUS_TEXT_CONTENT_TYPE, to_prometheus_text(&b)),
                    Err(e) => (500, "text/plain; charset=utf-8", format!("{e}\n")),
                },
                (Method::Get, "/healthz") => {
                    match self.health.as_ref().map(|h| h(&self.config.root)) {
                        Some(Err(why)) => (503, "text/plain; charset=utf-8", format!("{why}\n")),
                        _ => (200, "text/plain; charset=utf-8", "ok\n".into()),
                    }
                }
                (Method::Get, "/") => (
                    200,
                    "text/html; charset=utf-8",
                    "<html><body><h1>fabrik exporter</h1><a href=\"/metrics\">/metrics</a> \
                     <a href=\"/healthz\">/healthz</a></body></html>\n"
                        .into(),
                ),
                _ => (404, "text/plain; charset=utf-8", "not found\n".into()),
            };
            let mut resp = Response::from_string(body).with_status_code(status);
            if let Ok(h) = Header::from_bytes(&b"Content-Type"[..], ctype.as_bytes()) {
                resp = resp.with_header(h);
            }
            let _ = request.respond(resp);
        }
    }

    /// One scrape: read, compute counter findings against the previous scrape, add the plugged
    /// findings, encode. A panic anywhere below becomes a 500 for this scrape only.
    pub fn scrape(&mut self) -> Result<String, String> {
        let cfg = &self.config;
        let last = &mut self.last;
        let result = catch_unwind(AssertUnwindSafe(|| {
            let t0 = Instant::now();
            let now = sample_with(&cfg.root, &cfg.options);
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
fn wants_openmetrics(request: &tiny_http::Request) -> bool {
    request.headers().iter().any(|h| {
        h.field.equiv("Accept") && h.value.as_str().contains("application/openmetrics-text")
    })
}
