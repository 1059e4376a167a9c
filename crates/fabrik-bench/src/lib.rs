//! Benchmarks: TCP point-to-point bandwidth and latency with multi-NIC striping.
//!
//! A server ([`Server`]) and a client ([`client::run`]) talk over fabrik's authenticated control
//! channel (`fabrik-wire`); the data moves on separate TCP connections, one per stream, each
//! opened with the session id the server issued so nobody else can join a test. Streams are
//! spread round-robin over local addresses or interfaces (multi-NIC striping), and results are
//! the [`fabrik_model::P2pReport`] that `fabrik parse perftest` also produces.
#![warn(missing_docs)]

pub mod client;
mod data;
mod error;
mod log;
pub mod options;
pub mod paths;
pub mod pattern;
pub mod proto;
pub mod server;
pub mod stats;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub use client::{Amount, ClientConfig, SCHEMA_VERSION};
pub use data::Fault;
pub use error::BenchError;
pub use options::P2pOptions;
pub use paths::PathSpec;
pub use server::{Server, ServerConfig};

/// Runs a server on `127.0.0.1` in a thread and the client against it (`--local`).
/// `cfg.server` and `cfg.token` are replaced.
pub fn run_local(cfg: &ClientConfig) -> Result<fabrik_model::P2pReport, BenchError> {
    run_local_observed(cfg, &mut |_| {})
}

/// [`run_local`], handing each row to `on_row` as soon as it is measured.
pub fn run_local_observed(
    cfg: &ClientConfig,
    on_row: &mut dyn FnMut(client::Row<'_>),
) -> Result<fabrik_model::P2pReport, BenchError> {
    let token = fabrik_wire::Token::random()?;
    let server = Server::bind(ServerConfig {
        bind: SocketAddr::from(([127, 0, 0, 1], 0)),
        token: token.clone(),
        timeout: cfg.timeout,
        once: true,
        sock_buf: cfg.sock_buf,
    })?;
    let addr = server.local_addr()?;
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = Arc::clone(&stop);
    let handle = std::thread::spawn(move || server.serve(&stop2));
    let mut c = cfg.clone();
    c.server = addr.to_string();
    c.token = token;
    let report = client::run_observed(&c, on_row);
    stop.store(true, Ordering::Relaxed);
    let _ = handle.join();
    report
}
