//! Ranks as threads for the integration tests: each joins one group over loopback TCP and runs
//! the test's body.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::thread;
use std::time::Duration;

use fabrik_cluster::rendezvous::{join, Group, JoinConfig};
use fabrik_wire::Token;

/// Runs `body(rank, group)` on `n` threads, each with its own rank joined into one group
/// (rendezvous on a free loopback port, `timeout` to join), and returns what each returned, in
/// rank order. A panic in any rank fails the test.
pub fn on_ranks<T, F>(n: u32, timeout: Duration, body: F) -> Vec<T>
where
    T: Send + 'static,
    F: Fn(u32, Group) -> T + Send + Sync + 'static,
{
    let port = fabrik_testbed::free_port().unwrap();
    let body = std::sync::Arc::new(body);
    let handles: Vec<_> = (0..n)
        .map(|rank| {
            let body = body.clone();
            thread::spawn(move || {
                let g = join(&JoinConfig {
                    rank,
                    world_size: n,
                    master: format!("127.0.0.1:{port}"),
                    token: Token::new("t").unwrap(),
                    timeout,
                    host: format!("h{rank}"),
                    data_ips: vec![],
                })
                .unwrap_or_else(|e| {
                    panic!("rank {rank} of {n} could not join on port {port}: {e:#}")
                });
                body(rank, g)
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}
