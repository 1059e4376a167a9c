//! `fabrik exporter`: Prometheus metrics of this node's RDMA ports and netdevs.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::Context;
use fabrik_monitor::server::{Exporter, ExporterConfig, Sampling};

#[derive(clap::Args)]
pub struct Args {
    /// Address to serve /metrics and /healthz on; loopback unless you mean otherwise.
    #[arg(long, default_value = "127.0.0.1:9879")]
    pub listen: String,
    /// Root to read (`/` for this machine, or a snapshot directory).
    #[arg(long, default_value = "/")]
    pub root: PathBuf,
    /// Export every netdev except lo, not only RDMA-backed and physical ones.
    #[arg(long)]
    pub all_netdevs: bool,
    /// Do not run `ethtool -S` (per-priority pause and phy discard counters) on a live root.
    #[arg(long)]
    pub no_ethtool: bool,
    /// How often to re-run the doctor's node rules for `fabrik_findings` (a full probe, so not
    /// on every scrape); `0s` leaves them out.
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    pub doctor_every: Duration,
    #[command(flatten)]
    pub thresholds: fabrik_monitor::Thresholds,
    /// How often the exporter samples the counters; every scrape is answered from the latest
    /// sample, so all scrapers see the same values and findings.
    #[arg(long, default_value = "15s", value_parser = humantime::parse_duration)]
    pub sample_every: Duration,
    /// The counter rules judge rates over this window of the exporter's own samples; a finding
    /// stays exported about this long, so every scraper sees it.
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    pub rate_window: Duration,
}

/// The doctor's node rules on `root`, re-run at most every `every` (a probe reads far more
/// than a scrape does). A root that cannot be probed yields no doctor findings, said once on
/// stderr, and the counters are still served.
fn doctor_findings(every: Duration) -> fabrik_monitor::server::FindingsFn {
    type Cache = Option<(Instant, Vec<fabrik_model::Finding>)>;
    let cache: Mutex<Cache> = Mutex::new(None);
    let warned = std::sync::atomic::AtomicBool::new(false);
    Box::new(move |root: &Path| {
        let Ok(mut guard) = cache.lock() else {
            return Vec::new();
        };
        if let Some((at, f)) = guard.as_ref() {
            if at.elapsed() < every {
                return f.clone();
            }
        }
        let findings = match fabrik_probe::probe(root) {
            Ok(node) => fabrik_doctor::check_node(&node, None),
            Err(e) => {
                if !warned.swap(true, std::sync::atomic::Ordering::Relaxed) {
                    eprintln!(
                        "fabrik exporter: doctor findings left out: probing {}: {e}",
                        root.display()
                    );
                }
                Vec::new()
            }
        };
        *guard = Some((Instant::now(), findings.clone()));
        findings
    })
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.sample_every.is_zero() || args.rate_window < args.sample_every {
        anyhow::bail!("--sample-every must be more than zero and --rate-window at least as long");
    }
    fabrik_probe::open::check_root(&args.root)?;
    let options = crate::cmd::top::sample_options(&args.root, args.all_netdevs, args.no_ethtool);
    let config = ExporterConfig {
        root: args.root.clone(),
        options,
        thresholds: args.thresholds,
        findings: (!args.doctor_every.is_zero()).then(|| doctor_findings(args.doctor_every)),
    };
    let mut exporter = Exporter::bind(&args.listen, config)
        .context("starting the exporter")?
        .with_sampling(Sampling {
            every: args.sample_every,
            window: args.rate_window,
        });
    // /healthz answers for the root, not only for the process: a root that has become
    // unreadable (an unmounted snapshot, a /sys gone from a container) is unhealthy.
    exporter.set_health(Box::new(|root: &Path| {
        if fabrik_probe::snapshot::is_snapshot_tarball(root) {
            return Ok(());
        }
        fabrik_probe::root::check(root)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }));
    eprintln!(
        "fabrik exporter: serving http://{}/metrics (root {}, {}; a sample every {}, rates over {})",
        exporter.local_addr(),
        args.root.display(),
        if fabrik_monitor::is_live(&args.root) {
            "live: this process reaches its interfaces"
        } else {
            "not live: values as the root holds them"
        },
        humantime::format_duration(args.sample_every),
        humantime::format_duration(args.rate_window),
    );
    exporter.run().context("serving the exporter")?;
    Ok(ExitCode::SUCCESS)
}
