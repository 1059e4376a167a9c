//! `fabrik cluster doctor`: every rank takes its node's inventory and sends it to rank 0, which
//! runs the cross-node rules over all of them.

use fabrik_model::{ClusterDoctorReport, Finding, Node, RankNode, SCHEMA_VERSION};

use crate::rendezvous::Group;
use crate::ClusterError;

/// Inventories are larger than ordinary control messages.
const MAX_INVENTORY_BYTES: u32 = 64 << 20;

/// The rules: every rank's inventory in, findings and notes (what could not be checked) out.
pub type CrossNodeRules<'a> = &'a dyn Fn(&[RankNode]) -> (Vec<Finding>, Vec<String>);

/// How findings name each rank's node: its host name when all differ, else `rank N`.
pub fn node_names(nodes: &[RankNode]) -> Vec<String> {
    let mut hosts: Vec<&str> = nodes.iter().map(|n| n.host.as_str()).collect();
    hosts.sort_unstable();
    hosts.dedup();
    let distinct = hosts.len() == nodes.len();
    nodes
        .iter()
        .map(|n| {
            if distinct {
                n.host.clone()
            } else {
                format!("rank{}", n.rank)
            }
        })
        .collect()
}

/// The rules `fabrik cluster doctor` runs: every node rule on each inventory and the
/// cross-node rules over all of them (fabrik-doctor's `diagnose`), naming nodes by
/// [`node_names`]. Nothing is left unchecked, so the notes are empty.
pub fn diagnose(nodes: &[RankNode]) -> (Vec<Finding>, Vec<String>) {
    let named: Vec<fabrik_doctor::NamedNode> = nodes
        .iter()
        .zip(node_names(nodes))
        .map(|(n, name)| fabrik_doctor::NamedNode {
            name,
            node: n.node.clone(),
        })
        .collect();
    (fabrik_doctor::diagnose(&named, None).findings, Vec::new())
}

/// The file a rank's saved inventory goes to: `rank-N-HOST.json`, the host made safe for a
/// file name (a name read from a node cannot add a directory).
pub fn inventory_file_name(node: &RankNode) -> String {
    let safe = fabrik_probe::snapshot::file_name_part(&node.host);
    format!("rank-{}-{safe}.json", node.rank)
}

/// Writes every rank's inventory as `dir/rank-N-HOST.json` ([`inventory_file_name`]).
pub fn save_inventories(
    dir: &std::path::Path,
    report: &ClusterDoctorReport,
) -> Result<(), ClusterError> {
    std::fs::create_dir_all(dir).map_err(|err| ClusterError::Io {
        what: format!("creating {}", dir.display()),
        err,
    })?;
    for n in &report.nodes {
        fabrik_probe::output::write_json(&dir.join(inventory_file_name(n)), &n.node)?;
    }
    Ok(())
}

/// Sends `node` to rank 0; rank 0 returns everyone's, with `rules` applied to the whole set.
pub fn gather_nodes(
    group: &mut Group,
    node: Node,
    rules: CrossNodeRules<'_>,
) -> Result<Option<ClusterDoctorReport>, ClusterError> {
    group.set_max_frame(MAX_INVENTORY_BYTES);
    let host = group.peers()[group.rank() as usize].host.clone();
    let mine = RankNode {
        rank: group.rank(),
        host,
        node,
    };
    let all = group.gather(mine)?;
    Ok(all.map(|nodes| {
        let (findings, notes) = rules(&nodes);
        ClusterDoctorReport {
            schema_version: SCHEMA_VERSION,
            ranks: nodes.len() as u32,
            nodes,
            findings,
            notes,
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rn(rank: u32, host: &str) -> RankNode {
        let node = Node::default();
        RankNode {
            rank,
            host: host.into(),
            node,
        }
    }

    #[test]
    fn nodes_are_named_by_host_unless_hosts_repeat() {
        assert_eq!(node_names(&[rn(0, "a"), rn(1, "b")]), ["a", "b"]);
        assert_eq!(node_names(&[rn(0, "vm"), rn(1, "vm")]), ["rank0", "rank1"]);
    }
}
