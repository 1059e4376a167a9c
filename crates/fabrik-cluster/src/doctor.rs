//! `fabrik cluster doctor`: every rank takes its node's inventory and sends it to rank 0, which
//! runs the cross-node rules over all of them.

use fabrik_model::{ClusterDoctorReport, Finding, Node, RankNode, SCHEMA_VERSION};

use crate::rendezvous::Group;
use crate::ClusterError;

/// Inventories are larger than ordinary control messages.
const MAX_INVENTORY_BYTES: u32 = 64 << 20;

/// Cross-node rules: all inventories in, findings and notes (what could not be checked) out.
pub type CrossNodeRules<'a> = &'a dyn Fn(&[Node]) -> (Vec<Finding>, Vec<String>);

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
        let plain: Vec<Node> = nodes.iter().map(|n| n.node.clone()).collect();
        let (findings, notes) = rules(&plain);
        ClusterDoctorReport {
            schema_version: SCHEMA_VERSION,
            ranks: nodes.len() as u32,
            nodes,
            findings,
            notes,
        }
    }))
}
