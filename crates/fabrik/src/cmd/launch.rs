//! `fabrik launch KIND`: a runnable job (torchrun, docker, k8s, slurm, hostfile) carrying the
//! environment `fabrik env` would print.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::builder::TypedValueParser;
use fabrik_launch::{JobShape, K8sKind, Kind, LaunchDoc};

use super::env::{build_env, NodeArgs};
use fabrik_render::Format;

/// A value among the names fabrik-launch gives its targets ([`Kind::ALL`]) and Kubernetes
/// objects ([`K8sKind::ALL`]), so a new one needs no change here.
fn named<T>(names: impl IntoIterator<Item = &'static str>) -> impl TypedValueParser<Value = T>
where
    T: std::str::FromStr<Err = fabrik_launch::LaunchError> + Clone + Send + Sync + 'static,
{
    clap::builder::PossibleValuesParser::new(names).try_map(|s| s.parse::<T>())
}

#[derive(clap::Args)]
pub struct Args {
    /// What to render.
    #[arg(value_parser = named::<Kind>(Kind::ALL.map(Kind::as_str)))]
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
    #[arg(long, default_value = "job", value_parser = named::<K8sKind>(K8sKind::ALL.map(K8sKind::as_str)))]
    pub k8s_kind: K8sKind,
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

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (env, node) = build_env(&args.env)?;
    let shape = JobShape {
        name: args.name.clone(),
        nodes: args.nodes,
        gpus_per_node: fabrik_launch::gpus_per_node(args.gpus_per_node, node.as_ref()),
        image: args.image.clone(),
        command: args.command.clone(),
        master_port: args.master_port,
        master_addr: args.master_addr.clone(),
        hosts: args.hosts.clone(),
        k8s_kind: args.k8s_kind,
        rdma_resource: args.rdma_resource.clone(),
        instance_type: args.instance_type.clone(),
    };
    let text = fabrik_launch::render(args.kind, &env, &shape)?;
    let out = match args.format {
        Format::Text | Format::Markdown => text,
        Format::Json => {
            let doc = LaunchDoc::new(args.kind, &shape, &env, &text);
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
        None => crate::output::print_text(&out)?,
    }
    Ok(ExitCode::SUCCESS)
}
