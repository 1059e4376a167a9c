//! `fabrik env`: the NCCL environment for this node (or a snapshot, or a platform profile).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use fabrik_model::Node;
use fabrik_nccl::env::render::{render, EnvFormat};
use fabrik_nccl::{Env, Profile, Request};

/// Where the node's facts come from, shared with `fabrik launch`.
#[derive(clap::Args, Debug, Clone)]
pub struct NodeArgs {
    /// Root directory to probe (`/` or a snapshot). `--profile auto` probes `/` when omitted;
    /// named profiles use node facts only when this or --node is given.
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// A node as `fabrik inventory --format json` wrote it, instead of probing.
    #[arg(long, conflicts_with = "root")]
    pub node: Option<PathBuf>,
    /// auto, gcp-a3-tcpx, gcp-a3-mega-tcpxo, aws-efa, azure-nd-ib, alibaba-acs-rdma,
    /// alibaba-acs-rdma-type2, oci-roce, generic-ib, generic-roce, socket.
    #[arg(long, default_value = "auto")]
    pub profile: String,
    /// Keep NCCL_*/FI_*/UCX_* values already in the environment instead of replacing them
    /// (either way they are reported).
    #[arg(long)]
    pub keep_env: bool,
}

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub node: NodeArgs,
    #[arg(long, value_enum, default_value = "shell")]
    pub format: EnvFormat,
}

/// Builds the environment the way both `env` and `launch` do; also returns the node it was
/// built from, when one was read.
pub(crate) fn build_env(args: &NodeArgs) -> anyhow::Result<(Env, Option<Node>)> {
    let profile: Profile = args.profile.parse()?;
    let node = fabrik_probe::open::given_node(
        args.node.as_deref(),
        args.root.as_deref(),
        profile == Profile::Auto,
    )?;
    // A snapshot or a node document is someone else's data: names that can never be valid
    // are refused before they reach an environment or a launch file.
    node.as_ref().map(fabrik_launch::check_node).transpose()?;
    let existing: BTreeMap<String, String> = std::env::vars().collect();
    let env = fabrik_nccl::generate(&Request {
        profile,
        node: node.as_ref(),
        existing: &existing,
        keep_env: args.keep_env,
    })?;
    Ok((env, node))
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (env, _) = build_env(&args.node)?;
    crate::output::print_text(&render(&env, args.format)?)?;
    // People reading shell output see the warnings in its comments; the machine forms get the
    // summary and the warnings on stderr.
    if args.format.for_machines() {
        eprintln!("fabrik env: {}", env.summary);
        for w in env.warnings() {
            eprintln!("fabrik env: warning: {}", w.message);
        }
    }
    Ok(ExitCode::SUCCESS)
}
