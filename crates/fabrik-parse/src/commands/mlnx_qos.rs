//! `mlnx_qos -i IF` (Mellanox ofed-scripts / mstflint): PFC priorities and the trust state.

use fabrik_model::Pfc;

/// `mlnx_qos -i IF`: PFC priorities from the `PFC configuration:` block and the trust state.
/// Returns `None` when the text has no PFC table.
pub fn parse_mlnx_qos(raw: &str, source: &str) -> Option<Pfc> {
    let mut trust = None;
    let mut priorities: Option<Vec<u8>> = None;
    let mut enabled: Option<Vec<bool>> = None;
    let mut in_pfc = false;
    for line in raw.lines().map(super::unquote) {
        let t = line.trim();
        // `Priority trust state:` is what MLNX_OFED 4.2+ prints (Mellanox DOC-2792); `mode` is
        // accepted as well, unconfirmed, since a wrong miss would hide the trust setting.
        if let Some(rest) = t
            .strip_prefix("Priority trust state:")
            .or_else(|| t.strip_prefix("Priority trust mode:"))
        {
            let v = rest.trim();
            if !v.is_empty() {
                trust = Some(v.to_string());
            }
            continue;
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
            Some("enabled") if enabled.is_none() => {
                let e: Option<Vec<bool>> = words
                    .map(|w| match w {
                        "0" => Some(false),
                        "1" => Some(true),
                        _ => None,
                    })
                    .collect();
                enabled = e;
            }
            _ => {}
        }
        if priorities.is_some() && enabled.is_some() {
            break;
        }
    }
    let (prios, en) = (priorities?, enabled?);
    if prios.len() != en.len() {
        return None;
    }
    let mut enabled_priorities: Vec<u8> = prios
        .iter()
        .zip(en.iter())
        .filter(|(_, on)| **on)
        .map(|(p, _)| *p)
        .filter(|p| *p < 8)
        .collect();
    enabled_priorities.sort_unstable();
    enabled_priorities.dedup();
    Some(Pfc {
        enabled_priorities,
        trust,
        source: source.to_string(),
    })
}
