//! The exporter under mutated requests, in the mutation campaign (docs/benchmarks/fuzz.md):
//! real requests (Prometheus', curl's, pipelined, HTTP/1.0) mutated by the byte mutator and
//! sent over one to three connections, some in fragments, some left open. After each input a
//! well-formed `/healthz` on a fresh connection must be answered 200 within 2 s: nothing a
//! client sends may stop the server. `FABRIK_FUZZ_SECS` sets the budget.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../fabrik-parse/tests/fuzz_support/mod.rs"]
mod fuzz_support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fabrik_monitor::server::{Exporter, ExporterConfig, Limits, Sampling};
use fuzz_support::{campaign, check, mutated};

const REQUESTS: &[&str] = &[
    // Prometheus 2.42's scrape request.
    "GET /metrics HTTP/1.1\r\nHost: gpu1:9879\r\nUser-Agent: Prometheus/2.42.0\r\nAccept: application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\nAccept-Encoding: gzip\r\nX-Prometheus-Scrape-Timeout-Seconds: 10\r\n\r\n",
    "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9879\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\n\r\n",
    "GET /healthz HTTP/1.0\r\n\r\n",
    "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n",
    "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
    "GET /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    "GET /nope?x=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
];

fn healthz(addr: &str) -> Result<String, String> {
    let mut s = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .map_err(|e| e.to_string())?;
    let mut out = String::new();
    s.read_to_string(&mut out).map_err(|e| e.to_string())?;
    Ok(out)
}

#[test]
fn exporter_under_mutated_requests() {
    let root =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/counters/mlx5-roce/after");
    let exp = Exporter::bind("127.0.0.1:0", ExporterConfig::for_root(root.clone()))
        .unwrap()
        .with_limits(Limits {
            max_connections: 32,
            idle: Duration::from_secs(2),
            ..Limits::default()
        })
        .with_sampling(Sampling {
            every: Duration::from_millis(200),
            window: Duration::from_secs(1),
        });
    let addr = exp.local_addr();
    let handle = exp.handle();
    let server = std::thread::spawn(move || exp.run());
    let corpus: Vec<Vec<u8>> = REQUESTS.iter().map(|r| r.as_bytes().to_vec()).collect();
    // Connections an input leaves open, closed a few inputs later.
    let held: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
    let a = addr.clone();
    let o = campaign(
        "exporter-requests",
        move |rng| {
            let d = mutated(rng, &corpus);
            let conns = 1 + rng.below(3);
            let fragment = rng.below(3) == 0;
            let keep = rng.below(4) == 0;
            ((d.clone(), conns, fragment, keep), d)
        },
        move |(bytes, conns, fragment, keep): &(Vec<u8>, usize, bool, bool)| {
            for _ in 0..*conns {
                let Ok(mut s) = TcpStream::connect(&a) else {
                    continue;
                };
                let _ = s.set_write_timeout(Some(Duration::from_millis(200)));
                let _ = s.set_read_timeout(Some(Duration::from_millis(50)));
                if *fragment {
                    for chunk in bytes.chunks(7).take(50) {
                        if s.write_all(chunk).is_err() {
                            break;
                        }
                    }
                } else {
                    let _ = s.write_all(bytes);
                }
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf);
                if *keep {
                    let mut h = held.lock().unwrap();
                    h.push(s);
                    if h.len() > 20 {
                        h.remove(0);
                    }
                }
            }
            let answer = healthz(&a).unwrap_or_else(|e| panic!("/healthz failed: {e}"));
            assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        },
    );
    check(&o);
    handle.unblock();
    server.join().unwrap().unwrap();
}
