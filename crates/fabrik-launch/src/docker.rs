//! `docker run` for each node, running torchrun inside the container.

use fabrik_nccl::Env;

use crate::torchrun::{comment_line, job_line, master_exports, script_head, torchrun_words};
use crate::words::{quote, shell_lines, Word};
use crate::{JobShape, LaunchError};

/// `16Gi` (Kubernetes quantity) as docker's `16g`.
pub(crate) fn docker_size(q: &str) -> String {
    let lower = q.trim().to_ascii_lowercase();
    for (suffix, unit) in [("ki", "k"), ("mi", "m"), ("gi", "g"), ("ti", "t")] {
        if let Some(n) = lower.strip_suffix(suffix) {
            return format!("{n}{unit}");
        }
    }
    lower
}

/// GPU device flags: `--gpus all`, or device nodes where the platform documents them.
fn gpu_flags(env: &Env, shape: &JobShape, flags: &mut Vec<Word>) {
    if env.runtime.gpu_device_nodes {
        // GCP documents device nodes and driver mounts for Container-Optimized OS, which has no
        // NVIDIA container toolkit for --gpus.
        for i in 0..shape.gpus_per_node {
            flags.push(Word::lit("--device"));
            flags.push(Word::lit(format!("/dev/nvidia{i}:/dev/nvidia{i}")));
        }
        for d in ["/dev/nvidia-uvm", "/dev/nvidiactl"] {
            flags.push(Word::lit("--device"));
            flags.push(Word::lit(format!("{d}:{d}")));
        }
    } else {
        flags.push(Word::lit("--gpus"));
        flags.push(Word::lit("all"));
    }
}

/// `docker run --detach` of the platform's receive-datapath manager (GCP TCPX/TCPXO), built
/// from the same sidecar the Kubernetes pod runs: image, entrypoint, arguments, capabilities,
/// mounts and environment, on the host network beside the trainer.
pub(crate) fn sidecar_words(env: &Env, shape: &JobShape) -> Option<(String, Vec<Word>)> {
    let s = env.runtime.k8s_sidecar.as_ref()?;
    let mut w: Vec<Word> = ["docker", "run", "--detach", "--rm", "--name"]
        .into_iter()
        .map(Word::lit)
        .collect();
    w.push(Word::lit(s.name.clone()));
    w.extend(["--network", "host"].into_iter().map(Word::lit));
    gpu_flags(env, shape, &mut w);
    for c in &s.capabilities {
        w.push(Word::lit("--cap-add"));
        w.push(Word::lit(c.clone()));
    }
    for m in &s.mounts {
        w.push(Word::lit("--volume"));
        w.push(Word::lit(format!("{}:{}", m.host_path, m.container_path)));
    }
    for (k, v) in &s.env {
        // The profile's own constants: `-e K=V` with the value quoted as the word it is in.
        w.push(Word::lit("-e"));
        w.push(Word::lit(format!("{k}={v}")));
    }
    let mut cmd = s.command.iter();
    if let Some(entry) = cmd.next() {
        w.push(Word::lit("--entrypoint"));
        w.push(Word::lit(entry.clone()));
    }
    w.push(Word::lit(s.image.clone()));
    w.extend(cmd.cloned().map(Word::Lit));
    w.extend(s.args.iter().cloned().map(Word::Lit));
    Some((s.name.clone(), w))
}

pub(crate) fn render(env: &Env, shape: &JobShape) -> Result<String, LaunchError> {
    let rt = &env.runtime;
    let master = shape.rendezvous_host().unwrap_or("127.0.0.1");
    let image = shape.image.as_deref().unwrap_or_default();
    let mut flags: Vec<Word> = [
        "docker",
        "run",
        "--rm",
        "--network",
        "host",
        "--ipc",
        "host",
        "--ulimit",
        "memlock=-1",
    ]
    .into_iter()
    .map(Word::lit)
    .collect();
    flags.push(Word::lit("--shm-size"));
    flags.push(Word::lit(docker_size(&rt.shm_size)));
    gpu_flags(env, shape, &mut flags);
    if rt.ipc_lock {
        flags.push(Word::lit("--cap-add"));
        flags.push(Word::lit("IPC_LOCK"));
    }
    if rt.needs_rdma_devices {
        flags.push(Word::lit("--device"));
        flags.push(Word::lit("/dev/infiniband"));
    }
    for d in &rt.devices {
        flags.push(Word::lit("--device"));
        flags.push(Word::lit(d.clone()));
    }
    for m in &rt.mounts {
        flags.push(Word::lit("--volume"));
        flags.push(Word::lit(format!("{}:{}", m.host_path, m.container_path)));
    }
    flags.extend(rt.docker_extra_args.iter().cloned().map(Word::Lit));
    // The variables are exported above; `-e NAME` passes each through without repeating values.
    for v in &env.vars {
        flags.push(Word::lit("-e"));
        flags.push(Word::lit(crate::words::var_name(&v.name)?));
    }
    for v in ["MASTER_ADDR", "MASTER_PORT", "NODE_RANK"] {
        flags.push(Word::lit("-e"));
        flags.push(Word::lit(v));
    }
    flags.push(Word::lit(image));
    flags.extend(torchrun_words(
        shape,
        Word::var("", "NODE_RANK"),
        Word::var("", "MASTER_ADDR"),
        Word::var("", "MASTER_PORT"),
    )?);

    let mut out = String::from("#!/usr/bin/env bash\n");
    let comment = format!(
        "{}; run on every node with NODE_RANK=0..{}",
        job_line("docker", shape),
        shape.nodes - 1
    );
    script_head(&mut out, &comment, env)?;
    master_exports(&mut out, master, shape)?;
    out.push_str("export NODE_RANK=\"${NODE_RANK:?set NODE_RANK to the rank of this node}\"\n\n");
    if let Some((name, words)) = sidecar_words(env, shape) {
        let src = env
            .runtime
            .k8s_sidecar
            .as_ref()
            .map_or("", |s| s.source.as_str());
        comment_line(
            &mut out,
            &format!(
                "The receive-datapath manager ({name}) runs beside the trainer on this VM, as the Kubernetes pod's sidecar does ({src}); stopped when this script exits."
            ),
        );
        out.push_str(&shell_lines(
            &words,
            &["-e", "--volume", "--device", "--cap-add"],
        )?);
        out.push('\n');
        out.push_str(&format!(
            "trap {} EXIT\n\n",
            quote(&format!("docker stop {name} >/dev/null"))?
        ));
    }
    out.push_str(&shell_lines(
        &flags,
        &["-e", "--volume", "--device", "torchrun"],
    )?);
    out.push('\n');
    Ok(out)
}
