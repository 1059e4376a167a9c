//! `fabrik inventory`: one node's fabric, read from a root directory (the live `/` by default, a
//! snapshot directory, or a snapshot `.tar.gz`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use fabrik_model::Node;
use fabrik_render::Format;

#[derive(clap::Args)]
pub struct Args {
    /// Root to read: `/` for this machine, or a snapshot directory or .tar.gz.
    #[arg(long, default_value = "/")]
    pub root: PathBuf,
    #[arg(long, default_value = "text", value_parser = Format::text_or_json())]
    pub format: Format,
}

/// Probes a root, unpacking a snapshot tarball first when given one.
pub fn load_node(root: &std::path::Path) -> anyhow::Result<Node> {
    load_node_within(
        root,
        std::time::Instant::now() + fabrik_probe::DEFAULT_LIVE_WAIT,
    )
}

/// [`load_node`] with every fact of a live root (its tools included) gathered by `deadline`:
/// what `check`, `doctor`, `expect --from-root` and `inventory` all judge.
pub fn load_node_within(
    root: &std::path::Path,
    deadline: std::time::Instant,
) -> anyhow::Result<Node> {
    let opts = fabrik_probe::ProbeOptions::every_fact(deadline);
    if fabrik_probe::snapshot::is_snapshot_tarball(root) {
        let unpacked = fabrik_probe::snapshot::unpack(root)
            .with_context(|| format!("reading snapshot {}", root.display()))?;
        fabrik_probe::root::check_named(&unpacked.root, root)?;
        let mut node = fabrik_probe::probe_with(&unpacked.root, &opts)
            .with_context(|| format!("probing snapshot {}", root.display()))?;
        node.root = root.display().to_string();
        return Ok(node);
    }
    fabrik_probe::probe_with(root, &opts).with_context(|| format!("probing {}", root.display()))
}

/// Refuses a root that is neither a live root nor a finished snapshot (see
/// `fabrik_probe::root`), for the commands that read counters without probing. A tarball is
/// checked once it is unpacked, by whoever unpacks it.
pub fn check_root(root: &std::path::Path) -> anyhow::Result<()> {
    if !fabrik_probe::snapshot::is_snapshot_tarball(root) {
        fabrik_probe::root::check(root)?;
    }
    Ok(())
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let node = load_node(&args.root)?;
    match args.format {
        Format::Json => crate::output::print_json(&node)?,
        Format::Text | Format::Markdown => {
            crate::output::print_text(&fabrik_render::inventory::text(&node))?
        }
    }
    Ok(ExitCode::SUCCESS)
}
