//! `fabrik exporter`: Prometheus metrics of this node's RDMA ports and netdevs.

use std::process::ExitCode;

use anyhow::Context;
use fabrik_monitor::options::ExporterOptions;
use fabrik_monitor::server::{Exporter, ExporterConfig};

pub fn run(args: ExporterOptions) -> anyhow::Result<ExitCode> {
    let sampling = args.sampling()?;
    let root = &args.source.root;
    let config = ExporterConfig {
        root: root.clone(),
        options: crate::cmd::top::source(&args.source)?,
        thresholds: args.thresholds,
        findings: args.doctor_every().map(|every| {
            fabrik_monitor::server::doctor_findings(every, |root, e| {
                eprintln!(
                    "fabrik exporter: doctor findings left out: probing {}: {e}",
                    root.display()
                );
            })
        }),
    };
    let mut exporter = Exporter::bind(&args.listen, config)
        .context("starting the exporter")?
        .with_sampling(sampling);
    exporter.set_health(fabrik_monitor::server::root_health());
    eprintln!(
        "fabrik exporter: serving http://{}/metrics (root {}, {}; a sample every {}, rates over {})",
        exporter.local_addr(),
        root.display(),
        if fabrik_monitor::is_live(root) {
            "live: this process reaches its interfaces"
        } else {
            "not live: values as the root holds them"
        },
        humantime::format_duration(sampling.every),
        humantime::format_duration(sampling.window),
    );
    exporter.run().context("serving the exporter")?;
    Ok(ExitCode::SUCCESS)
}
