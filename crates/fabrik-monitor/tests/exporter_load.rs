//! What 400 idle connections cost the exporter (alone in this test binary so its thread count
//! is the exporter's).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use fabrik_monitor::server::{Exporter, ExporterConfig};

fn status(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

fn healthz(addr: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn four_hundred_idle_connections_cost_no_thread_each() {
    let root =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/counters/mlx5-roce/after");
    let exp = Exporter::bind("127.0.0.1:0", ExporterConfig::for_root(root.clone())).unwrap();
    let addr = exp.local_addr();
    let handle = exp.handle();
    let t = std::thread::spawn(move || exp.run());
    assert!(healthz(&addr).starts_with("HTTP/1.1 200"));
    let (threads0, rss0) = (status("Threads:"), status("VmRSS:"));
    let idle: Vec<TcpStream> = (0..400)
        .map(|_| TcpStream::connect(&addr).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let (threads1, rss1) = (status("Threads:"), status("VmRSS:"));
    // Beside them (held within the connection bound, or waiting for the idlest to give way)
    // a scraper is served.
    let t0 = std::time::Instant::now();
    assert!(healthz(&addr).starts_with("HTTP/1.1 200"));
    eprintln!("/healthz beside 400 idle connections: {:?}", t0.elapsed());
    eprintln!(
        "400 idle connections: threads {threads0} -> {threads1}, RSS {rss0} -> {rss1} kB (client and server in one process)"
    );
    assert!(threads1 <= threads0 + 1, "{threads0} -> {threads1}");
    drop(idle);
    std::thread::sleep(Duration::from_millis(200));
    assert!(healthz(&addr).starts_with("HTTP/1.1 200"));
    handle.unblock();
    t.join().unwrap().unwrap();
}
