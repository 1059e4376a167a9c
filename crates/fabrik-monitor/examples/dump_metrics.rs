//! Prints one scrape of ROOT (default `/`) in the exporter's format; used by the test script
//! to feed promtool and by the benchmark.
fn main() {
    let root = std::env::args().nth(1).unwrap_or_else(|| "/".to_string());
    let root = std::path::Path::new(&root);
    let t0 = std::time::Instant::now();
    let s = fabrik_monitor::sample(root);
    let took = t0.elapsed().as_secs_f64();
    match fabrik_monitor::metrics::encode(s, &[], took) {
        Ok(text) if std::env::var_os("OPENMETRICS").is_some() => print!("{text}"),
        Ok(text) => print!("{}", fabrik_monitor::metrics::to_prometheus_text(&text)),
        Err(e) => {
            eprintln!("encoding failed: {e}");
            std::process::exit(2);
        }
    }
}
