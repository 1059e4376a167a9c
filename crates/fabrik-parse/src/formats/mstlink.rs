//! `mstlink -d DEV [-c] [-m] [-e]` and `mlxlink` (mstflint `mlxlink/modules/mlxlink_commander.cpp`):
//! titled sections (`Operational Info`, `Troubleshooting Info`, `Physical Counters and BER
//! Info`, `Module Info`...) underlined with dashes, each a list of `Key : value` lines padded
//! to one column. A paste of several runs (one per device, often `for i in ...; do mlxlink -d
//! mlx5_$i ...; done`) is split at each `Operational Info` title or `-d DEV` command line.

use std::collections::BTreeSet;

use fabrik_model::facts::cell;
use fabrik_model::{Fact, FactTable, LinkQuality, Node, TransceiverModule};
use serde::{Deserialize, Serialize};

use super::{lines, Format, Paste};

/// Every port `mstlink` reported on, in the order printed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct MstlinkFacts {
    /// One per run.
    pub links: Vec<LinkQuality>,
}

/// `mstlink` / `mlxlink`.
pub struct Mstlink;

impl Format for Mstlink {
    type Facts = MstlinkFacts;
    const EXPECTED: &'static str =
        "`Operational Info` and `Physical Counters and BER Info` sections of `Key : value` lines";

    fn parse(text: &str) -> Option<MstlinkFacts> {
        let links = parse(text);
        (!links.is_empty()).then_some(MstlinkFacts { links })
    }
}

/// `15E-255`, `1.5E-12`, `0`, `N/A`.
fn ber(v: &str) -> Option<f64> {
    v.split_whitespace()
        .next()?
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x >= 0.0)
}

fn int(v: &str) -> Option<u64> {
    v.split_whitespace().next()?.parse().ok()
}

/// `46 [-5..75]`, `46C`.
fn temperature(v: &str) -> (Option<f64>, Option<(f64, f64)>) {
    let value = v
        .split(|c: char| c.is_whitespace() || c == '[' || c == 'C')
        .next()
        .and_then(|n| n.parse().ok());
    let range = v
        .split_once('[')
        .and_then(|(_, r)| r.split_once(']'))
        .and_then(|(r, _)| r.split_once(".."))
        .and_then(|(lo, hi)| Some((lo.trim().parse().ok()?, hi.trim().parse().ok()?)));
    (value, range)
}

/// The device of an `mlxlink -d DEV` or `mstlink -d DEV` command line.
fn command_device(line: &str) -> Option<String> {
    let w: Vec<&str> = line.split_whitespace().collect();
    let at = w
        .iter()
        .position(|x| x.ends_with("mlxlink") || x.ends_with("mstlink"))?;
    let d = w[at..]
        .iter()
        .position(|x| *x == "-d" || *x == "--device")?;
    w.get(at + d + 1).map(|s| s.to_string())
}

/// The section titles mlxlink prints; a title seen again starts the next run.
const TITLES: [&str; 6] = [
    "Operational Info",
    "Supported Info",
    "Troubleshooting Info",
    "Tool Information",
    "Physical Counters and BER Info",
    "Module Info",
];

fn has_data(l: &LinkQuality) -> bool {
    l.state.is_some()
        || l.effective_errors.is_some()
        || l.raw_ber.is_some()
        || l.module.is_some()
        || l.fec.is_some()
}

fn parse(text: &str) -> Vec<LinkQuality> {
    let mut out: Vec<LinkQuality> = Vec::new();
    let mut cur = LinkQuality::default();
    let mut sections: BTreeSet<&str> = BTreeSet::new();
    let mut flush = |cur: &mut LinkQuality, device: String| {
        let done = std::mem::replace(
            cur,
            LinkQuality {
                device,
                ..LinkQuality::default()
            },
        );
        if has_data(&done) {
            out.push(done);
        }
    };
    for line in lines(text) {
        let t = line.trim();
        if let Some(d) = command_device(t) {
            flush(&mut cur, d);
            sections.clear();
            continue;
        }
        if t.starts_with("====") {
            // `========== mlx5_0 FEC Counters ==========`: a loop's banner naming the device.
            let name = t.trim_matches('=').split_whitespace().next();
            if let Some(n) = name.filter(|n| n.starts_with("mlx") || n.contains("pciconf")) {
                flush(&mut cur, n.to_string());
                sections.clear();
            }
            continue;
        }
        let Some((key, value)) = t.split_once(':') else {
            if let Some(title) = TITLES.iter().find(|x| **x == t) {
                let again = sections.contains(title);
                if again || (*title == "Operational Info" && !sections.is_empty()) {
                    flush(&mut cur, String::new());
                    sections.clear();
                }
                sections.insert(title);
            }
            continue;
        };
        // Only inside a run: `State: Active` alone is ibstat's, not mlxlink's.
        if sections.is_empty() && cur.device.is_empty() {
            continue;
        }
        let (key, value) = (key.trim(), value.trim());
        let l = &mut cur;
        let text = (!value.is_empty() && value != "N/A").then(|| value.to_string());
        match key {
            "State" => l.state = text,
            "Physical state" => l.physical_state = text,
            "Speed" => l.speed = text,
            "Width" => l.width = value.trim_end_matches(['x', 'X']).parse().ok(),
            "FEC" => l.fec = text,
            "Recommendation" => l.recommendation = text,
            "Time Since Last Clear [Min]" => l.minutes_since_clear = ber(value),
            "Effective Physical Errors" => l.effective_errors = int(value),
            "Effective Physical BER" => l.effective_ber = ber(value),
            "Raw Physical BER" => l.raw_ber = ber(value),
            "Raw Physical Errors Per Lane" => {
                l.raw_errors_per_lane = value
                    .split(',')
                    .filter_map(|n| n.trim().parse().ok())
                    .collect();
            }
            "Symbol Errors" => l.symbol_errors = int(value),
            "Link Down Counter" => l.link_down = int(value),
            "Link Error Recovery Counter" => l.link_error_recovery = int(value),
            "Cable Type"
            | "Vendor Name"
            | "Vendor Part Number"
            | "Vendor Serial Number"
            | "Temperature [C]" => {
                let m = l.module.get_or_insert_with(TransceiverModule::default);
                match key {
                    "Cable Type" => m.cable_type = text,
                    "Vendor Name" => m.vendor = text,
                    "Vendor Part Number" => m.part_number = text,
                    "Vendor Serial Number" => m.serial = text,
                    _ => (m.temperature_c, m.temperature_range_c) = temperature(value),
                }
            }
            _ => {}
        }
    }
    flush(&mut cur, String::new());
    out
}

impl Paste for Mstlink {
    const NAME: &'static str = "mstlink";
    const ALIASES: &'static [&'static str] = &["mlxlink"];
    const ABOUT: &'static str =
        "`mstlink`/`mlxlink [-c] [-m]` output: link state, FEC, effective and raw BER, module and temperature; `-` reads stdin";

    fn node(facts: &MstlinkFacts) -> Node {
        Node {
            link_quality: facts.links.clone(),
            known: Some(BTreeSet::from([Fact::LinkQuality])),
            ..Node::default()
        }
    }

    fn table(facts: &MstlinkFacts) -> FactTable {
        let mut t = FactTable::new([
            "device",
            "state",
            "speed",
            "FEC",
            "effective errors",
            "effective BER",
            "raw BER",
            "raw errors per lane",
            "module",
        ]);
        for l in &facts.links {
            t.row([
                if l.device.is_empty() {
                    "?".to_string()
                } else {
                    l.device.clone()
                },
                cell(&l.state),
                cell(&l.speed),
                cell(&l.fec),
                cell(&l.effective_errors),
                l.effective_ber
                    .map(|b| format!("{b:e}"))
                    .unwrap_or_default(),
                l.raw_ber.map(|b| format!("{b:e}")).unwrap_or_default(),
                l.raw_errors_per_lane
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
                l.module
                    .as_ref()
                    .map(|m| {
                        format!(
                            "{} {}{}",
                            m.vendor.as_deref().unwrap_or(""),
                            m.part_number.as_deref().unwrap_or(""),
                            m.temperature_c
                                .map(|c| format!(" {c}C"))
                                .unwrap_or_default()
                        )
                        .trim()
                        .to_string()
                    })
                    .unwrap_or_default(),
            ]);
            if let Some(r) = &l.recommendation {
                t.note(format!(
                    "{}: {r}",
                    if l.device.is_empty() { "?" } else { &l.device }
                ));
            }
        }
        t
    }
}
