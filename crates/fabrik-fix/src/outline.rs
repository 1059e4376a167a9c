//! What the script and the playbook both write the same way: the opening line naming the
//! nodes, and a node's manual steps as comments.

use std::fmt::Write as _;

use crate::quote::comment;
use crate::Plan;

/// `# fabrik fix: configuration changes for NODES.`, a comment line.
pub(crate) fn title(out: &mut String, plan: &Plan) {
    let _ = writeln!(
        out,
        "# fabrik fix: configuration changes for {}.",
        comment(&plan.nodes.join(", "))
    );
}

/// The manual steps of `node`, one comment line each, indented by `indent`.
pub(crate) fn manual(out: &mut String, plan: &Plan, node: &str, indent: &str) {
    for item in plan.manual_of(node) {
        for m in &item.manual {
            let _ = writeln!(
                out,
                "{indent}# manual, {} {}: {}",
                comment(&item.rule),
                comment(&item.subject),
                comment(m)
            );
        }
    }
}
