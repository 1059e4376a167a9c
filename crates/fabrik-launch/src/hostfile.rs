//! An MPI hostfile (`host slots=G`) and the `mpirun` line that uses it, with `-x` for every
//! variable so remote ranks get the same environment.

use fabrik_nccl::Env;

use crate::torchrun::script_head;
use crate::words::{shell_lines, Word};
use crate::{JobShape, LaunchError};

pub(crate) fn render(env: &Env, shape: &JobShape) -> Result<String, LaunchError> {
    let mut out = String::from("#!/usr/bin/env bash\n");
    let comment = format!(
        "fabrik launch hostfile: {} host(s) x {} slot(s), one MPI rank per GPU",
        shape.nodes, shape.gpus_per_node
    );
    script_head(&mut out, &comment, env)?;
    let body: String = shape
        .hosts
        .iter()
        .map(|h| format!("{h} slots={}\n", shape.gpus_per_node))
        .collect();
    let doc =
        fabrik_quote::sh::heredoc("HOSTFILE", &body).map_err(|e| LaunchError::Unquotable {
            what: "the hostfile".into(),
            reason: e.reason,
        })?;
    out.push_str("cat > hostfile ");
    out.push_str(&doc);
    out.push('\n');
    let mut w: Vec<Word> = vec![
        Word::lit("mpirun"),
        Word::lit("--hostfile"),
        Word::lit("hostfile"),
        Word::lit("-np"),
        Word::lit((shape.nodes * shape.gpus_per_node).to_string()),
        Word::lit("--map-by"),
        Word::lit(format!("ppr:{}:node", shape.gpus_per_node)),
        Word::lit("--bind-to"),
        Word::lit("numa"),
    ];
    for v in &env.vars {
        w.push(Word::lit("-x"));
        w.push(Word::lit(format!(
            "{}={}",
            crate::words::var_name(&v.name)?,
            v.value
        )));
    }
    if let Some(a) = shape.rendezvous_host() {
        for (k, v) in [
            ("MASTER_ADDR", a.to_string()),
            ("MASTER_PORT", shape.master_port.to_string()),
        ] {
            w.push(Word::lit("-x"));
            w.push(Word::lit(format!("{k}={v}")));
        }
    }
    w.extend(shape.command_words()?.into_iter().map(Word::Lit));
    out.push_str(&shell_lines(&w, &["-x"])?);
    out.push('\n');
    Ok(out)
}
