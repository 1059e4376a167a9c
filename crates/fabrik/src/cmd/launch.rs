//! `fabrik launch KIND`: a runnable job (torchrun, docker, k8s, slurm, hostfile) carrying the
//! environment `fabrik env` would print.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use fabrik_launch::{JobShape, K8sKind, Kind};
use serde::Serialize;

use super::env::{build_env, NodeArgs};
use fabrik_render::Format;

/// `KIND` as fabrik-launch names its targets ([`Kind::ALL`]), so a new target needs no change
/// here.
fn kind_parser() -> impl clap::builder::TypedValueParser<Value = Kind> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(Kind::ALL.map(Kind::as_str))
        .try_map(|s| s.parse::<Kind>())
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum K8sKindArg {
    Job,
    Jobset,
    Pytorchjob,
}

#[derive(clap::Args)]
pub struct Args {
    /// What to render.
    #[arg(value_parser = kind_parser())]
    pub kind: Kind,
    #[arg(long, default_value_t = 1)]
    pub nodes: u32,
    /// GPUs (ranks) per node; defaults to the GPUs found on the probed node, else 8.
    #[arg(long)]
    pub gpus_per_node: Option<u32>,
    /// Container image (docker and k8s).
    #[arg(long)]
    pub image: Option<String>,
    /// What torchrun runs on each node (`train.py --lr 3e-4`); for hostfile, the program each
    /// MPI rank runs.
    #[arg(long)]
    pub command: String,
    #[arg(long, default_value_t = 29500)]
    pub master_port: u16,
    /// Rank 0's address; defaults to the first of --hosts (k8s and slurm derive it).
    #[arg(long)]
    pub master_addr: Option<String>,
    /// Comma-separated host names, one per node.
    #[arg(long, value_delimiter = ',')]
    pub hosts: Vec<String>,
    #[arg(long, value_enum, default_value = "job")]
    pub k8s_kind: K8sKindArg,
    /// Job name (Kubernetes object names, Slurm job name).
    #[arg(long, default_value = "fabrik-job")]
    pub name: String,
    /// Kubernetes device-plugin resource for RDMA devices (`rdma/hca_shared_devices_a`, or
    /// NAME=COUNT such as `vpc.amazonaws.com/efa=32`) instead of a privileged /dev/infiniband
    /// host path.
    #[arg(long)]
    pub rdma_resource: Option<String>,
    /// Cloud instance type (`p5.48xlarge`): with --profile aws-efa and no probed node, how many
    /// EFA interfaces the pods request.
    #[arg(long)]
    pub instance_type: Option<String>,
    #[command(flatten)]
    pub env: NodeArgs,
    /// Write to this file (atomically) instead of stdout.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    #[arg(long, default_value = "text", value_parser = Format::text_or_json())]
    pub format: Format,
}

#[derive(Serialize)]
struct LaunchDoc<'a> {
    schema_version: u32,
    kind: &'a str,
    k8s_kind: Option<&'a str>,
    profile: &'a str,
    text: &'a str,
    env: &'a fabrik_nccl::Env,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (env, node) = build_env(&args.env)?;
    let found_gpus = node
        .as_ref()
        .map(|n| n.gpus.len())
        .and_then(|g| u32::try_from(g).ok())
        .filter(|g| *g > 0);
    let gpus_per_node = args.gpus_per_node.or(found_gpus).unwrap_or(8);
    let k8s_kind = match args.k8s_kind {
        K8sKindArg::Job => K8sKind::Job,
        K8sKindArg::Jobset => K8sKind::JobSet,
        K8sKindArg::Pytorchjob => K8sKind::PyTorchJob,
    };
    let shape = JobShape {
        name: args.name.clone(),
        nodes: args.nodes,
        gpus_per_node,
        image: args.image.clone(),
        command: args.command.clone(),
        master_port: args.master_port,
        master_addr: args.master_addr.clone(),
        hosts: args.hosts.clone(),
        k8s_kind,
        rdma_resource: args.rdma_resource.clone(),
        instance_type: args.instance_type.clone(),
    };
    let kind = args.kind;
    let text = fabrik_launch::render(kind, &env, &shape)?;
    let out = match args.format {
        Format::Text | Format::Markdown => text,
        Format::Json => {
            let doc = LaunchDoc {
                schema_version: fabrik_model::SCHEMA_VERSION,
                kind: kind.as_str(),
                k8s_kind: (kind == Kind::K8s).then(|| k8s_kind.as_str()),
                profile: &env.profile,
                text: &text,
                env: &env,
            };
            let mut s = serde_json::to_string_pretty(&doc).context("serializing")?;
            s.push('\n');
            s
        }
    };
    match &args.output {
        Some(path) => {
            crate::output::write_atomically(path, out.as_bytes())?;
            eprintln!("fabrik launch: wrote {} ({})", path.display(), env.summary);
        }
        None => std::io::stdout()
            .lock()
            .write_all(out.as_bytes())
            .context("writing to stdout")?,
    }
    Ok(ExitCode::SUCCESS)
}
