//! A plan as an idempotent bash script: each change checks the current value first and runs
//! only when it differs; files are rewritten only when their content differs. Steps that need a
//! drained node run only with `FABRIK_FIX_DRAINED=1`. Every value is a single-quoted word.
//!
//! Environment the script reads: `FABRIK_FIX_DRAINED=1` (run drain steps too),
//! `FABRIK_FIX_ROOT=DIR` (read and write files under DIR, for an image or a test tree),
//! `FABRIK_FIX_DRY_RUN=FILE` (append each command to FILE, its words separated by the unit
//! separator 0x1f, instead of running it), `FABRIK_FIX_NODE=NAME` (which node's steps to run in
//! a plan of several nodes; the host name by default).

use std::fmt::Write as _;

use fabrik_doctor::remedy::{Op, Read, Risk};

use crate::quote::{comment, word, words, Refused};
use crate::{Plan, Step};

const PRELUDE: &str = r#"set -euo pipefail
fabrik_root=${FABRIK_FIX_ROOT:-}
# shellcheck disable=SC2034 # read by the steps that need a drained node, when there are any
fabrik_drained=${FABRIK_FIX_DRAINED:-0}
fabrik_dry=${FABRIK_FIX_DRY_RUN:-}
fabrik_run() {
  if [ -n "$fabrik_dry" ]; then
    local IFS=$'\x1f'
    printf '%s\n' "$*" >>"$fabrik_dry"
  else
    "$@"
  fi
}
fabrik_read() {
  if [ -r "$fabrik_root$1" ]; then head -n 1 -- "$fabrik_root$1"; fi
}
fabrik_write() {
  if [ -n "$fabrik_dry" ]; then
    fabrik_run fabrik-write "$1" "$2"
  else
    printf '%s\n' "$2" >"$fabrik_root$1"
  fi
}
# fabrik_file PATH LINE...: writes the file when its content differs; 0 when it wrote.
fabrik_file() {
  local path=$fabrik_root$1
  shift
  if [ -f "$path" ] && [ "$(cat -- "$path")" = "$(printf '%s\n' "$@")" ]; then
    return 1
  fi
  mkdir -p -- "$(dirname -- "$path")"
  printf '%s\n' "$@" >"$path"
}
fabrik_skip() {
  printf 'fabrik fix: skipped %s (%s)\n' "$1" "$2" >&2
}
"#;

/// The script for every node with steps (a plan of one node runs its steps; with several, the
/// node is picked by `FABRIK_FIX_NODE` or the host name). Fails on a value it cannot quote.
pub fn render(plan: &Plan) -> Result<String, Refused> {
    let mut s = String::new();
    s.push_str("#!/usr/bin/env bash\n");
    crate::outline::title(&mut s, plan);
    s.push_str("# Idempotent: each step runs only when the value differs. Steps that need a drained\n# node run only with FABRIK_FIX_DRAINED=1. FABRIK_FIX_DRY_RUN=FILE logs commands instead.\n");
    s.push_str(PRELUDE);
    let nodes = plan.nodes_with_steps();
    for (i, node) in nodes.iter().enumerate() {
        let _ = writeln!(s, "\n# node {}", comment(node));
        let _ = writeln!(s, "fabrik_node_{}() {{", i + 1);
        s.push_str("  :\n");
        for step in plan.steps_of(node) {
            step_lines(&mut s, step)?;
        }
        crate::outline::manual(&mut s, plan, node, "  ");
        s.push_str("}\n");
    }
    match nodes.as_slice() {
        [] => s.push_str("\nprintf 'fabrik fix: nothing to change\\n' >&2\n"),
        [_] => s.push_str("\nfabrik_node_1\n"),
        many => {
            s.push_str("\ncase \"${FABRIK_FIX_NODE:-$(hostname)}\" in\n");
            for (i, node) in many.iter().enumerate() {
                let _ = writeln!(s, "  {}) fabrik_node_{} ;;", word(node)?, i + 1);
            }
            s.push_str("  *) printf 'fabrik fix: no steps for node %s\\n' \"${FABRIK_FIX_NODE:-$(hostname)}\" >&2; exit 1 ;;\nesac\n");
        }
    }
    Ok(s)
}

fn op_line(op: &Op) -> Result<String, Refused> {
    Ok(match op {
        Op::Run { argv } => format!("fabrik_run {}", words(argv)?),
        Op::Write { path, value } => format!("fabrik_write {} {}", word(path)?, word(value)?),
    })
}

fn step_lines(s: &mut String, step: &Step) -> Result<(), Refused> {
    let _ = writeln!(
        s,
        "  # {} {}: {} -> {}",
        step.id,
        comment(&step.rules.join(" ")),
        comment(&step.setting),
        comment(&step.target)
    );
    let mut body = String::new();
    let apply = step.change.apply();
    if !apply.is_empty() {
        let ops: Result<Vec<String>, Refused> = apply.iter().map(op_line).collect();
        let ops = ops?;
        match step.change.read() {
            Read::File { path } => {
                let _ = writeln!(
                    body,
                    "if [ \"$(fabrik_read {})\" != {} ]; then",
                    word(&path)?,
                    word(&read_target(step))?
                );
                for o in &ops {
                    let _ = writeln!(body, "  {o}");
                }
                body.push_str("fi\n");
            }
            Read::Exists { path } => {
                let _ = writeln!(body, "if [ ! -e \"$fabrik_root\"{} ]; then", word(&path)?);
                for o in &ops {
                    let _ = writeln!(body, "  {o}");
                }
                body.push_str("fi\n");
            }
            Read::Mstconfig { .. } | Read::Probed => {
                for o in &ops {
                    let _ = writeln!(body, "{o}");
                }
            }
        }
    }
    for f in step.change.persist() {
        let mut args = vec![f.path.clone()];
        args.extend(f.lines.iter().cloned());
        if f.then.is_empty() {
            let _ = writeln!(body, "fabrik_file {} || true", words(&args)?);
        } else {
            let _ = writeln!(body, "if fabrik_file {}; then", words(&args)?);
            for t in &f.then {
                // Where the program is missing or its service is not running, there is nothing
                // to tell: the file acts when the service starts.
                let program = t.first().map(String::as_str).unwrap_or("");
                let prog = word(program)?;
                let running = match fabrik_doctor::remedy::service_marker(program) {
                    Some(m) => format!(" && [ -e \"$fabrik_root\"{} ]", word(m)?),
                    None => String::new(),
                };
                let _ = writeln!(
                    body,
                    "  if command -v {prog} >/dev/null 2>&1{running}; then fabrik_run {}; fi",
                    words(t)?
                );
            }
            body.push_str("fi\n");
        }
    }
    if let Some(then) = &step.then {
        let _ = writeln!(body, "# then: {}", comment(then));
    }
    let indent =
        |text: &str, by: &str| -> String { text.lines().map(|l| format!("{by}{l}\n")).collect() };
    if step.risk == Risk::NeedsDrain {
        s.push_str("  if [ \"$fabrik_drained\" = 1 ]; then\n");
        s.push_str(&indent(&body, "    "));
        s.push_str("  else\n");
        let _ = writeln!(
            s,
            "    fabrik_skip {} 'needs a drained node: FABRIK_FIX_DRAINED=1'",
            word(&format!("{} ({})", step.id, step.setting))?
        );
        s.push_str("  fi\n");
    } else {
        s.push_str(&indent(&body, "  "));
    }
    Ok(())
}

/// The text the read file holds once the change is made (what the idempotency check compares).
pub(crate) fn read_target(step: &Step) -> String {
    step.target.clone()
}
