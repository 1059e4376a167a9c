//! The doctor over one or more roots with every root's counters watched meanwhile
//! (`fabrik doctor --watch`): the static rules' findings and the counter findings in one report.

use std::path::{Path, PathBuf};
use std::time::Duration;

use fabrik_doctor::{diagnose, name_nodes, NamedNode, PlannedEnv, Report};
use fabrik_probe::open::OpenError;

use crate::{while_watching, Thresholds, Watched};

/// Probes `roots` and runs the doctor on them, judged with `env`; with `watch`, every root's
/// counters are sampled that far apart meanwhile and their findings added (each subject led by
/// its node's name when there are several nodes). A root that is not a node fails before any
/// interval is spent; a snapshot archive, whose counters cannot move, is handed to `frozen`
/// and not watched.
pub fn diagnose_roots(
    roots: &[PathBuf],
    env: Option<&PlannedEnv>,
    watch: Option<Duration>,
    thresholds: &Thresholds,
    frozen: &mut dyn FnMut(&Path),
) -> Result<(Vec<NamedNode>, Report), OpenError> {
    for root in roots {
        fabrik_probe::open::check_root(root)?;
    }
    let (nodes, watched) = while_watching(roots, watch, thresholds, || {
        roots
            .iter()
            .map(|root| fabrik_probe::open::load_node(root))
            .collect::<Result<Vec<_>, _>>()
    });
    let named = name_nodes(nodes?);
    let mut report = diagnose(&named, env);
    let many = named.len() > 1;
    for ((node, root), watched) in named.iter().zip(roots).zip(watched) {
        let mut findings = match watched {
            Watched::Findings(f) => f,
            Watched::Frozen => {
                frozen(root);
                continue;
            }
        };
        if many {
            for f in &mut findings {
                f.subject = format!("{}/{}", node.name, f.subject);
            }
        }
        report.add_findings(findings);
    }
    Ok((named, report))
}
