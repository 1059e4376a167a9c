//! `torchrun` command lines, one per node.

use fabrik_nccl::Env;

use crate::words::{quote, shell_line, Word};
use crate::{JobShape, LaunchError};

/// torchrun's own flags for this shape; `node_rank` and `master_addr` may be run-time variables.
pub(crate) fn torchrun_words(
    shape: &JobShape,
    node_rank: Word,
    master_addr: Word,
    master_port: Word,
) -> Result<Vec<Word>, LaunchError> {
    let mut w = vec![
        Word::lit("torchrun"),
        Word::lit(format!("--nnodes={}", shape.nodes)),
        Word::lit(format!("--nproc_per_node={}", shape.gpus_per_node)),
    ];
    w.push(match node_rank {
        Word::Lit(r) => Word::lit(format!("--node_rank={r}")),
        Word::Var { var, .. } => Word::var("--node_rank=", &var),
    });
    w.push(match master_addr {
        Word::Lit(a) => Word::lit(format!("--master_addr={a}")),
        Word::Var { var, .. } => Word::var("--master_addr=", &var),
    });
    w.push(match master_port {
        Word::Lit(p) => Word::lit(format!("--master_port={p}")),
        Word::Var { var, .. } => Word::var("--master_port=", &var),
    });
    w.extend(shape.command_words()?.into_iter().map(Word::Lit));
    Ok(w)
}

/// The `export` lines of the environment, each with its reason as a comment.
fn exports(env: &Env) -> Result<String, LaunchError> {
    fabrik_nccl::env::render::shell(env).map_err(|e| LaunchError::Unquotable {
        what: "the environment".into(),
        reason: e.to_string(),
    })
}

/// What every launch script says after its interpreter line (and Slurm's `#SBATCH` lines):
/// `comment` as a `#` line, strict mode, then the environment's exports.
pub(crate) fn script_head(out: &mut String, comment: &str, env: &Env) -> Result<(), LaunchError> {
    comment_line(out, comment);
    out.push_str("set -euo pipefail\n\n");
    out.push_str(&exports(env)?);
    out.push('\n');
    Ok(())
}

/// `text` as one `# ` comment line of a shell script, whatever it holds.
pub(crate) fn comment_line(out: &mut String, text: &str) {
    out.push_str("# ");
    out.push_str(&fabrik_quote::sh::comment(text));
    out.push('\n');
}

/// `fabrik launch LAUNCHER: N node(s) x G GPU(s)`, how a script's head comment begins.
pub(crate) fn job_line(launcher: &str, shape: &JobShape) -> String {
    format!(
        "fabrik launch {launcher}: {} node(s) x {} GPU(s)",
        shape.nodes, shape.gpus_per_node
    )
}

/// The `export` lines of torchrun's rendezvous address and port.
pub(crate) fn master_exports(
    out: &mut String,
    master: &str,
    shape: &JobShape,
) -> Result<(), LaunchError> {
    out.push_str(&format!("export MASTER_ADDR={}\n", quote(master)?));
    out.push_str(&format!("export MASTER_PORT={}\n", shape.master_port));
    Ok(())
}

pub(crate) fn render(env: &Env, shape: &JobShape) -> Result<String, LaunchError> {
    let master = shape.rendezvous_host().unwrap_or("127.0.0.1");
    let mut out = String::from("#!/usr/bin/env bash\n");
    let comment = format!(
        "{}; run this script on every node with NODE_RANK=0..{}",
        job_line("torchrun", shape),
        shape.nodes - 1
    );
    script_head(&mut out, &comment, env)?;
    master_exports(&mut out, master, shape)?;
    out.push('\n');
    out.push_str("case \"${NODE_RANK:?set NODE_RANK to the rank of this node}\" in\n");
    for rank in 0..shape.nodes {
        let host = shape
            .hosts
            .get(rank as usize)
            .map(|h| format!(" ({})", fabrik_quote::sh::comment(h)))
            .unwrap_or_default();
        let words = torchrun_words(
            shape,
            Word::lit(rank.to_string()),
            Word::lit(master),
            Word::lit(shape.master_port.to_string()),
        )?;
        out.push_str(&format!("  {rank})  # node {rank}{host}\n"));
        out.push_str(&format!("    exec {}\n    ;;\n", shell_line(&words)?));
    }
    out.push_str(&format!(
        "  *)\n    echo \"NODE_RANK must be 0..{}\" >&2\n    exit 2\n    ;;\nesac\n",
        shape.nodes - 1
    ));
    Ok(out)
}
