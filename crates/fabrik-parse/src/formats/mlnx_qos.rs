//! `mlnx_qos -i IF` (Mellanox ofed-scripts / mstflint): trust state, dscp2prio map and PFC.

use std::collections::{BTreeMap, BTreeSet};

use fabrik_model::{Fact, FactTable, NetInterface, NetKind, Node, Pfc};
use serde::{Deserialize, Serialize};

use super::{lines, Format, Paste};

/// What one `mlnx_qos -i IF` printed. A paste holding several runs (a show, then a change,
/// which mlnx_qos answers with the new state) is read as its last one: the state it left.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MlnxQosFacts {
    /// The interface, when the paste shows the command line (`mlnx_qos -i eth2`).
    #[serde(default)]
    pub interface: Option<String>,
    /// `pcp` or `dscp`.
    pub trust: Option<String>,
    /// Priorities 0..=7 with PFC on; `None` when the PFC table is not in the text.
    pub pfc_enabled: Option<Vec<u8>>,
    /// DSCP value → priority from the `dscp2prio mapping:` block (`prio:6 dscp:30,55,...`; a
    /// priority may take several lines).
    pub dscp2prio: BTreeMap<u8, u8>,
    /// How many runs the text held.
    pub runs: u32,
}

impl MlnxQosFacts {
    /// DSCP values that land on a PFC priority: NCCL_IB_TC = DSCP << 2 for each.
    pub fn lossless_dscp(&self) -> Vec<u8> {
        let Some(pfc) = &self.pfc_enabled else {
            return Vec::new();
        };
        self.dscp2prio
            .iter()
            .filter(|(_, p)| pfc.contains(p))
            .map(|(d, _)| *d)
            .collect()
    }
}

/// `mlnx_qos -i IF`.
pub struct MlnxQos;

impl Format for MlnxQos {
    type Facts = MlnxQosFacts;
    const EXPECTED: &'static str =
        "`Priority trust state:` and a `PFC configuration:` table (`priority 0 1 ...`, `enabled 0 0 ...`)";

    fn parse(text: &str) -> Option<MlnxQosFacts> {
        parse(text)
    }
}

/// The interface of the last `mlnx_qos -i IF` command line in the paste.
fn interface(text: &str) -> Option<String> {
    lines(text)
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let at = w.iter().position(|x| x.ends_with("mlnx_qos"))?;
            let i = w[at..]
                .iter()
                .position(|x| *x == "-i" || *x == "--interface")?;
            w.get(at + i + 1).map(|s| s.to_string())
        })
        .last()
}

fn parse(raw: &str) -> Option<MlnxQosFacts> {
    let mut cur = MlnxQosFacts::default();
    let mut priorities: Option<Vec<u8>> = None;
    let mut in_pfc = false;
    let mut in_map = false;
    for line in lines(raw) {
        let t = line.trim();
        // A run starts with its DCBX line, or with a second trust line in builds without DCBX.
        let new_run =
            t.starts_with("DCBX mode:") || (t.starts_with("Priority trust") && cur.trust.is_some());
        if new_run {
            if cur.runs > 0 {
                cur = MlnxQosFacts {
                    runs: cur.runs,
                    ..MlnxQosFacts::default()
                };
                priorities = None;
                in_pfc = false;
                in_map = false;
            }
            cur.runs += 1;
        }
        // `Priority trust state:` is what MLNX_OFED 4.2+ prints (Mellanox DOC-2792); `mode` is
        // accepted as well, unconfirmed, since a wrong miss would hide the trust setting.
        if let Some(rest) = t
            .strip_prefix("Priority trust state:")
            .or_else(|| t.strip_prefix("Priority trust mode:"))
        {
            let v = rest.trim();
            if !v.is_empty() {
                cur.trust = Some(v.to_string());
            }
            continue;
        }
        if t.starts_with("dscp2prio mapping") {
            in_map = true;
            continue;
        }
        if in_map {
            if let Some(rest) = t.strip_prefix("prio:") {
                let (p, dscps) = rest.split_once("dscp:").unwrap_or((rest, ""));
                if let Ok(p) = p.trim().parse::<u8>() {
                    for d in dscps.split(',').filter_map(|d| d.trim().parse::<u8>().ok()) {
                        if d < 64 && p < 8 {
                            cur.dscp2prio.insert(d, p);
                        }
                    }
                }
                continue;
            }
            in_map = false;
        }
        if t.to_ascii_lowercase().starts_with("pfc configuration") {
            in_pfc = true;
            continue;
        }
        if !in_pfc {
            continue;
        }
        let mut words = t.split_whitespace();
        // Some versions write `priority:`/`enabled:` with a colon.
        match words.next().map(|w| w.trim_end_matches(':')) {
            Some("priority") if priorities.is_none() => {
                let p: Option<Vec<u8>> = words.map(|w| w.parse::<u8>().ok()).collect();
                priorities = p.filter(|v| !v.is_empty());
            }
            Some("enabled") if cur.pfc_enabled.is_none() => {
                let e: Option<Vec<bool>> = words
                    .map(|w| match w {
                        "0" => Some(false),
                        "1" => Some(true),
                        _ => None,
                    })
                    .collect();
                if let (Some(p), Some(e)) = (&priorities, e) {
                    if p.len() == e.len() {
                        let mut on: Vec<u8> = p
                            .iter()
                            .zip(e.iter())
                            .filter(|(_, on)| **on)
                            .map(|(p, _)| *p)
                            .filter(|p| *p < 8)
                            .collect();
                        on.sort_unstable();
                        on.dedup();
                        cur.pfc_enabled = Some(on);
                    }
                }
                in_pfc = false;
            }
            _ => {}
        }
    }
    cur.runs = cur.runs.max(1);
    cur.interface = interface(raw);
    (cur.trust.is_some() || cur.pfc_enabled.is_some()).then_some(cur)
}

impl MlnxQosFacts {
    /// PFC as the node holds it, `source` naming where it was read; `None` when the text held
    /// no PFC table.
    pub fn pfc(&self, source: &str) -> Option<Pfc> {
        Some(Pfc {
            enabled_priorities: self.pfc_enabled.clone()?,
            trust: self.trust.clone(),
            source: source.to_string(),
        })
    }
}

impl Paste for MlnxQos {
    const NAME: &'static str = "mlnx_qos";
    const COMMAND: &'static str = "mlnx-qos";
    const ALIASES: &'static [&'static str] = &["mlnx_qos"];
    const ABOUT: &'static str =
        "`mlnx_qos -i IF` output: PFC priorities and trust mode; `-` reads stdin";

    fn node(facts: &MlnxQosFacts) -> Node {
        let name = facts
            .interface
            .clone()
            .unwrap_or_else(|| Self::NAME.to_string());
        Node {
            net_interfaces: vec![NetInterface {
                pfc: facts.pfc(Self::NAME),
                ..NetInterface::new(name, NetKind::Ethernet)
            }],
            known: Some(BTreeSet::from([Fact::Pfc])),
            ..Node::default()
        }
    }

    fn table(facts: &MlnxQosFacts) -> FactTable {
        let mut t = FactTable::new(["interface", "trust", "PFC priorities", "runs"]);
        t.row([
            facts.interface.clone().unwrap_or_default(),
            facts.trust.clone().unwrap_or_default(),
            match &facts.pfc_enabled {
                None => "not shown".to_string(),
                Some(p) if p.is_empty() => "none".to_string(),
                Some(p) => p.iter().map(u8::to_string).collect::<Vec<_>>().join(","),
            },
            facts.runs.to_string(),
        ]);
        let lossless = facts.lossless_dscp();
        match facts.trust.as_deref() {
            Some("dscp") if !lossless.is_empty() => t.note(format!(
                "lossless with trust dscp only for DSCP {}: NCCL_IB_TC = DSCP x 4 ({})",
                lossless.iter().map(u8::to_string).collect::<Vec<_>>().join(","),
                lossless.iter().map(|d| (u32::from(*d) * 4).to_string()).collect::<Vec<_>>().join(",")
            )),
            Some("pcp") => t.note(
                "trust pcp: the priority comes from the VLAN PCP bits (NCCL_IB_SL); untagged traffic gets none",
            ),
            _ => {}
        }
        if facts.runs > 1 {
            t.note(format!(
                "{} runs in the text: the state the last one left",
                facts.runs
            ));
        }
        t
    }
}
