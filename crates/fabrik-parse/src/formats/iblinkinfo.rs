//! `iblinkinfo` (rdma-core `infiniband-diags/iblinkinfo.c`): per node a header (`Switch: 0xGUID
//! NAME:` or `CA: NAME:`) and one line per port,
//! `LID PORT[EXT] ==(WIDTH SPEED STATE/PHYS)==>  RLID RPORT[EXT] "REMOTE" (MSG)`, where a down
//! port prints only its state (`==(  Down/ Polling)==>`) and MSG says what the link could run at
//! when both ends support more (`Could be 4X`, `Could be 25.78125 Gbps`). With `-l` each line
//! starts with the port's GUID and the node's quoted name instead of a header.

use std::collections::BTreeSet;

use fabrik_model::facts::cell;
use fabrik_model::{Fabric, FabricLink, Fact, FactTable, Node};
use serde::{Deserialize, Serialize};

use super::{lines, Format, Paste};

/// Every port line of the output.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct IblinkinfoFacts {
    /// The ports, in the order printed.
    pub links: Vec<FabricLink>,
}

/// `iblinkinfo`.
pub struct Iblinkinfo;

impl Format for Iblinkinfo {
    type Facts = IblinkinfoFacts;
    const EXPECTED: &'static str =
        "port lines `LID PORT[ ] ==( 4X 25.78125 Gbps Active/  LinkUp)==>  LID PORT[ ] \"NAME\" ( )`";

    fn parse(text: &str) -> Option<IblinkinfoFacts> {
        let mut links = Vec::new();
        let mut node = String::new();
        for line in lines(text) {
            let t = line.trim();
            if let Some(rest) = t
                .strip_prefix("Switch:")
                .or_else(|| t.strip_prefix("CA:"))
                .or_else(|| t.strip_prefix("Router:"))
            {
                if !t.contains("==(") {
                    node = header_name(rest);
                    continue;
                }
            }
            if let Some(l) = port_line(t, &node) {
                links.push(l);
            }
        }
        (!links.is_empty()).then_some(IblinkinfoFacts { links })
    }
}

/// `0x0002c90200482d1c Infiniscale-IV Mellanox Technologies:` → the name; a CA has no GUID.
fn header_name(rest: &str) -> String {
    let r = rest.trim().trim_end_matches(':').trim();
    match r.split_once(' ') {
        Some((guid, name)) if guid.starts_with("0x") => name.trim().to_string(),
        _ => r.to_string(),
    }
}

/// `LID PORT[EXT]` before `==(` (the last `[` marks the port).
fn lid_port(left: &str) -> (Option<u32>, Option<u32>) {
    let Some(open) = left.rfind('[') else {
        return (None, None);
    };
    let before = left[..open].trim_end();
    let port_digits: String = before
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit())
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let rest = before[..before.len() - port_digits.len()].trim_end();
    let lid = rest
        .rsplit(char::is_whitespace)
        .next()
        .and_then(|w| w.parse().ok());
    (lid, port_digits.parse().ok())
}

fn port_line(t: &str, node: &str) -> Option<FabricLink> {
    let (left, rest) = t.split_once("==(")?;
    let (link, right) = rest.split_once(")==>")?;
    let (lid, port) = lid_port(left);
    let port = port?;
    // `-l`: `0xGUID "NAME" LID PORT[..]`.
    let node = match left.split_once('"') {
        Some((_, r)) => r.split('"').next().unwrap_or("").trim().to_string(),
        None => node.to_string(),
    };
    let mut l = FabricLink {
        node,
        lid,
        port,
        ..FabricLink::default()
    };
    // `4X 25.78125 Gbps Active/  LinkUp` or `  Down/ Polling`.
    if let Some((head, phys)) = link.rsplit_once('/') {
        l.phys_state = Some(phys.trim().to_string()).filter(|s| !s.is_empty());
        let words: Vec<&str> = head.split_whitespace().collect();
        if let Some((state, front)) = words.split_last() {
            l.state = Some(state.to_string());
            if let Some((w, speed)) = front.split_first() {
                if w.ends_with('X') {
                    l.width = Some(w.to_string());
                    l.speed = Some(speed.join(" ")).filter(|s| !s.is_empty());
                } else {
                    l.speed = Some(front.join(" "));
                }
            }
        }
    }
    // `  2    1[  ] "H-1" ( Could be 4X)`, `[  ] "" ( )`, `"Port not available"`.
    let right = right.trim();
    if let Some(q) = right.find('"') {
        let (r_left, after) = right.split_at(q);
        let name = after[1..].split('"').next().unwrap_or("");
        l.peer = Some(name.to_string()).filter(|n| !n.is_empty());
        if !r_left.trim().is_empty() {
            // `-l` puts the remote GUID first.
            let (rlid, rport) = lid_port(r_left);
            l.peer_lid = rlid;
            l.peer_port = rport;
        }
        let msg = after[1..]
            .split_once('"')
            .map(|(_, m)| {
                m.trim()
                    .trim_start_matches('(')
                    .trim_end_matches(')')
                    .trim()
            })
            .unwrap_or("");
        l.could_be = (!msg.is_empty()).then(|| msg.to_string());
    }
    Some(l)
}

impl Paste for Iblinkinfo {
    const NAME: &'static str = "iblinkinfo";
    const ABOUT: &'static str =
        "`iblinkinfo` output: every fabric link's width, speed and state, and the links that could run faster; `-` reads stdin";

    fn node(facts: &IblinkinfoFacts) -> Node {
        Node {
            fabric: Some(Fabric {
                links: facts.links.clone(),
                ..Fabric::default()
            }),
            known: Some(BTreeSet::from([Fact::Fabric])),
            ..Node::default()
        }
    }

    fn table(facts: &IblinkinfoFacts) -> FactTable {
        let active = facts
            .links
            .iter()
            .filter(|l| l.state.as_deref() == Some("Active"))
            .count();
        let mut t = FactTable::new(["node", "port", "width", "speed", "state", "peer", "note"]);
        // Down ports of a switch are its unused ports: counted, not listed.
        for l in facts
            .links
            .iter()
            .filter(|l| l.state.as_deref() != Some("Down") || l.peer.is_some())
        {
            t.row([
                l.node.clone(),
                format!(
                    "{}{}",
                    l.lid.map(|x| format!("{x}/")).unwrap_or_default(),
                    l.port
                ),
                cell(&l.width),
                cell(&l.speed),
                format!(
                    "{}/{}",
                    l.state.as_deref().unwrap_or("-"),
                    l.phys_state.as_deref().unwrap_or("-")
                ),
                cell(&l.peer),
                cell(&l.could_be),
            ]);
        }
        t.note(format!(
            "{} ports, {active} active, {} down",
            facts.links.len(),
            facts
                .links
                .iter()
                .filter(|l| l.state.as_deref() == Some("Down"))
                .count()
        ));
        t
    }
}
