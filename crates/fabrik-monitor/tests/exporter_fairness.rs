//! A well-behaved scraper keeps its scrapes while hundreds of clients connect: 200 busy
//! clients asking for `/metrics` back to back and 100 slow ones holding connections, in two
//! shapes (every busy client from one address, and each from its own). The latency figures of
//! a longer run on a release build are in docs/benchmarks/monitor.md
//! (`examples/bench_load.rs`); here the test asserts that no scrape is lost.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod load;

use std::path::Path;
use std::time::Duration;

use fabrik_monitor::server::{Exporter, ExporterConfig, Sampling};

#[test]
fn a_scraper_keeps_its_scrapes_beside_busy_and_slow_clients() {
    let root =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/counters/mlx5-roce/after");
    let exp = Exporter::bind("127.0.0.1:0", ExporterConfig::for_root(root.clone()))
        .unwrap()
        .with_sampling(Sampling {
            every: Duration::from_secs(1),
            window: Duration::from_secs(5),
        });
    let addr = exp.local_addr().parse().unwrap();
    let handle = exp.handle();
    let t = std::thread::spawn(move || exp.run());
    let secs: u64 = std::env::var("FABRIK_LOAD_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8);
    for one_address in [true, false] {
        let out = load::run(
            addr,
            &load::Load {
                busy: 200,
                slow: 100,
                busy_from_one_address: one_address,
                duration: Duration::from_secs(secs),
                scrape_every: Duration::from_millis(250),
                scrape_timeout: Duration::from_secs(10),
            },
        );
        eprintln!(
            "busy from {}: scraper {}/{} scrapes, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; busy clients got {} answers ({} refused or cut)",
            if one_address { "one address" } else { "200 addresses" },
            out.succeeded,
            out.scrapes,
            out.percentile(50.0) * 1e3,
            out.percentile(99.0) * 1e3,
            out.percentile(100.0) * 1e3,
            out.busy_answers,
            out.busy_refused
        );
        assert!(out.scrapes >= 10, "{out:?}");
        assert_eq!(out.succeeded, out.scrapes, "the scraper lost scrapes");
        assert!(out.busy_answers > 0, "the busy clients were never served");
    }
    handle.unblock();
    t.join().unwrap().unwrap();
}
