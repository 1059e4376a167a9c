//! `fabrik exporter`: Prometheus metrics of this node's RDMA ports and netdevs.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

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
        findings: (!args.doctor_every.is_zero()).then(|| {
            fabrik_monitor::server::doctor_findings(args.doctor_every, |root, e| {
                eprintln!(
                    "fabrik exporter: doctor findings left out: probing {}: {e}",
                    root.display()
                );
            })
        }),
    };
    let mut exporter = Exporter::bind(&args.listen, config)
        .context("starting the exporter")?
        .with_sampling(Sampling {
            every: args.sample_every,
            window: args.rate_window,
        });
    exporter.set_health(fabrik_monitor::server::root_health());
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
