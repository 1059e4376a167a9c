//! Scrape benchmark: reads ROOT and encodes the metrics N times in-process, then prints the
//! median and p90 scrape time and the resident memory at points along the way, as JSON.
//! Used by docs/benchmarks/monitor.md (run on a release build).
//!
//! usage: bench_scrape ROOT [N]
use std::time::Instant;

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(root) = args.next() else {
        eprintln!("usage: bench_scrape ROOT [N]");
        std::process::exit(2);
    };
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let root = std::path::PathBuf::from(root);
    let opts = fabrik_monitor::SampleOptions::for_root(&root);
    // Touched up front so that filling it does not show as memory growth of the scrapes.
    let mut times = vec![0.0f64; n];
    let mut rss = Vec::new();
    let mut bytes = 0usize;
    let mut files = 0usize;
    for (i, slot) in times.iter_mut().enumerate() {
        let t0 = Instant::now();
        let s = fabrik_monitor::sample_with(&root, &opts);
        if i == 0 {
            files = s
                .ports
                .iter()
                .map(|p| p.counters.len() + p.hw_counters.len())
                .sum::<usize>()
                + s.netdevs
                    .iter()
                    .map(|n| n.statistics.len() + n.ethtool.len())
                    .sum::<usize>();
        }
        let text = match fabrik_monitor::metrics::encode(s, &[], 0.0) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("encode: {e}");
                std::process::exit(1);
            }
        };
        bytes = text.len();
        *slot = t0.elapsed().as_secs_f64() * 1e3;
        if i == 0 || i == 99 || (i + 1) % 1000 == 0 {
            rss.push((i + 1, rss_kib()));
        }
    }
    times.sort_by(f64::total_cmp);
    let pct = |p: f64| times[((times.len() as f64 - 1.0) * p).round() as usize];
    let rss_json: Vec<String> = rss
        .iter()
        .map(|(i, r)| format!("{{\"after\":{i},\"rss_kib\":{r}}}"))
        .collect();
    println!(
        "{{\"scrapes\":{n},\"counter_values\":{files},\"metrics_bytes\":{bytes},\"median_ms\":{:.3},\"p90_ms\":{:.3},\"max_ms\":{:.3},\"rss\":[{}]}}",
        pct(0.5),
        pct(0.9),
        pct(1.0),
        rss_json.join(",")
    );
}
