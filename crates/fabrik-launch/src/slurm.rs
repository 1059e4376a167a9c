//! An sbatch script: one task per node, torchrun spawning the GPU ranks.

use fabrik_nccl::Env;

use crate::torchrun::{comment_line, job_line, script_head, torchrun_words};
use crate::words::{quote, shell_line, Word};
use crate::{JobShape, LaunchError};

pub(crate) fn render(env: &Env, shape: &JobShape) -> Result<String, LaunchError> {
    let sbatch = |option: &'static str, v: &str| -> Result<String, LaunchError> {
        fabrik_quote::sbatch::value(v)
            .map(str::to_string)
            .map_err(|refused| LaunchError::Name { option, refused })
    };
    let mut out = String::from("#!/bin/bash\n");
    out.push_str(&format!(
        "#SBATCH --job-name={}\n",
        sbatch("--name", &shape.name)?
    ));
    out.push_str(&format!("#SBATCH --nodes={}\n", shape.nodes));
    out.push_str("#SBATCH --ntasks-per-node=1\n");
    out.push_str(&format!(
        "#SBATCH --gpus-per-node={}\n",
        shape.gpus_per_node
    ));
    out.push_str("#SBATCH --exclusive\n");
    if !shape.hosts.is_empty() {
        out.push_str(&format!(
            "#SBATCH --nodelist={}\n",
            sbatch("--hosts", &shape.hosts.join(","))?
        ));
    }
    let comment = format!(
        "{}; one srun task per node runs torchrun",
        job_line("slurm", shape)
    );
    script_head(&mut out, &comment, env)?;
    match &shape.master_addr {
        Some(a) => out.push_str(&format!("export MASTER_ADDR={}\n", quote(a)?)),
        // Assigned before the export so that a failing scontrol stops the script under set -e.
        // `sed -n 1p` reads to the end: `head -n 1` exits after the first line, and under
        // pipefail the SIGPIPE scontrol may then take on its next write kills the job.
        None => out.push_str(
            "MASTER_ADDR=\"$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | sed -n 1p)\"\nexport MASTER_ADDR\n",
        ),
    }
    out.push_str(&format!("export MASTER_PORT={}\n\n", shape.master_port));
    if let Some((name, words)) = crate::docker::sidecar_words(env, shape) {
        let src = env
            .runtime
            .k8s_sidecar
            .as_ref()
            .map_or("", |s| s.source.as_str());
        let per_node = |cmd: String| {
            shell_line(&[
                Word::lit("srun"),
                Word::lit(format!("--nodes={}", shape.nodes)),
                Word::lit("--ntasks-per-node=1"),
                Word::lit("bash"),
                Word::lit("-c"),
                Word::lit(cmd),
            ])
        };
        comment_line(
            &mut out,
            &format!(
                "The receive-datapath manager ({name}) on every node before the job, as the Kubernetes pod's sidecar does ({src}); stopped when the job ends."
            ),
        );
        out.push_str(&per_node(shell_line(&words)?)?);
        out.push('\n');
        out.push_str(&format!(
            "trap {} EXIT\n\n",
            quote(&per_node(format!("docker stop {name} >/dev/null"))?)?
        ));
    }
    let inner = torchrun_words(
        shape,
        Word::var("", "SLURM_NODEID"),
        Word::var("", "MASTER_ADDR"),
        Word::var("", "MASTER_PORT"),
    )?;
    // SLURM_NODEID differs per task, so it must expand inside the task, not in the batch shell.
    let inner = shell_line(&inner)?;
    let srun = [
        Word::lit("srun"),
        Word::lit(format!("--nodes={}", shape.nodes)),
        Word::lit("--ntasks-per-node=1"),
        Word::lit("--export=ALL"),
        Word::lit("bash"),
        Word::lit("-c"),
        Word::lit(inner),
    ];
    out.push_str(&shell_line(&srun)?);
    out.push('\n');
    Ok(out)
}
