//! `fabrik exporter`: Prometheus metrics of this node's RDMA ports and netdevs.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use fabrik_monitor::server::{Exporter, ExporterConfig};
use fabrik_monitor::{SampleOptions, Thresholds};

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
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut options = SampleOptions::for_root(&args.root);
    options.all_netdevs = args.all_netdevs;
    let config = ExporterConfig {
        root: args.root.clone(),
        options,
        thresholds: Thresholds::default(),
        // The doctor's node rules plug in here once fabrik-doctor exposes them.
        findings: None,
    };
    let exporter = Exporter::bind(&args.listen, config).context("starting the exporter")?;
    eprintln!(
        "fabrik exporter: serving http://{}/metrics (root {})",
        exporter.local_addr(),
        args.root.display()
    );
    exporter.run();
    Ok(ExitCode::SUCCESS)
}
