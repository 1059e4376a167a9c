//! The exporter under load: a scraper's success rate and latency beside busy and slow clients
//! (docs/benchmarks/monitor.md). Run it against a running `fabrik exporter`.
//!
//! usage: bench_load ADDR [BUSY SLOW SECONDS one|many]
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/load/mod.rs"]
mod load;

use std::time::Duration;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(addr) = args.first().and_then(|a| a.parse().ok()) else {
        eprintln!("usage: bench_load ADDR [BUSY SLOW SECONDS one|many]");
        std::process::exit(2);
    };
    let num = |i: usize, d: u64| args.get(i).and_then(|s| s.parse().ok()).unwrap_or(d);
    let spec = load::Load {
        busy: num(1, 200) as usize,
        slow: num(2, 100) as usize,
        duration: Duration::from_secs(num(3, 60)),
        busy_from_one_address: args.get(4).is_none_or(|s| s == "one"),
        scrape_every: Duration::from_secs(1),
        scrape_timeout: Duration::from_secs(10),
    };
    let out = load::run(addr, &spec);
    println!(
        "{{\"busy\":{},\"slow\":{},\"busy_from_one_address\":{},\"seconds\":{},\"scrapes\":{},\"succeeded\":{},\"p50_ms\":{:.2},\"p99_ms\":{:.2},\"max_ms\":{:.2},\"busy_answers\":{},\"busy_refused\":{}}}",
        spec.busy,
        spec.slow,
        spec.busy_from_one_address,
        spec.duration.as_secs(),
        out.scrapes,
        out.succeeded,
        out.percentile(50.0) * 1e3,
        out.percentile(99.0) * 1e3,
        out.percentile(100.0) * 1e3,
        out.busy_answers,
        out.busy_refused
    );
}
