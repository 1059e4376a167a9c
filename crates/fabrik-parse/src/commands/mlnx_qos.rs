//! `mlnx_qos -i IF` (Mellanox ofed-scripts / mstflint): trust state, dscp2prio map and PFC.

use std::collections::BTreeMap;

use fabrik_model::Pfc;
use serde::{Deserialize, Serialize};

/// What one `mlnx_qos -i IF` printed. A paste holding several runs (a show, then a change,
/// which mlnx_qos answers with the new state) is read as its last one: the state it left.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MlnxQos {
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

impl MlnxQos {
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

/// Reads everything `mlnx_qos -i IF` printed; `None` when the text has no PFC table.
pub fn parse_mlnx_qos_full(raw: &str) -> Option<MlnxQos> {
    let mut cur = MlnxQos::default();
    let mut priorities: Option<Vec<u8>> = None;
    let mut in_pfc = false;
    let mut in_map = false;
    for line in raw.lines().map(super::unquote) {
        let t = line.trim();
        // A run starts with its DCBX line, or with a second trust line in builds without DCBX.
        let new_run =
            t.starts_with("DCBX mode:") || (t.starts_with("Priority trust") && cur.trust.is_some());
        if new_run {
            if cur.runs > 0 {
                cur = MlnxQos {
                    runs: cur.runs,
                    ..MlnxQos::default()
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
    (cur.trust.is_some() || cur.pfc_enabled.is_some()).then_some(cur)
}

/// `mlnx_qos -i IF`: PFC priorities from the `PFC configuration:` block and the trust state.
/// Returns `None` when the text has no PFC table.
pub fn parse_mlnx_qos(raw: &str, source: &str) -> Option<Pfc> {
    let q = parse_mlnx_qos_full(raw)?;
    Some(Pfc {
        enabled_priorities: q.pfc_enabled?,
        trust: q.trust,
        source: source.to_string(),
    })
}
