//! `ethtool IF` (ethtool `ethtool.c`, `netlink/settings.c`): `Settings for IF:` then tab-indented
//! `Key: value` lines; the link-mode lists (`Supported link modes:`, `Advertised link modes:`,
//! `Link partner advertised link modes:`) continue on lines of their own, indented with spaces;
//! `Speed: 100000Mb/s` or `Speed: Unknown!` without link; `Lanes:` since ethtool 5.10.
//!
//! `ethtool -S IF` (`ethtool.c`, `do_gnicstats`): `NIC statistics:` then one `name: value` line per
//! counter, as the driver names them (`rx_crc_errors_phy`, `rx_prio3_pause`).

use std::collections::{BTreeMap, BTreeSet};

use fabrik_model::facts::cell;
use fabrik_model::{EthLinkSettings, Fact, FactTable, NetInterface, NetKind, Node};
use serde::{Deserialize, Serialize};

use super::{lines, Format, Paste};

/// One interface's `ethtool` settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EthtoolInterface {
    /// The interface (`Settings for eth0:`).
    pub interface: String,
    /// The settings read.
    #[serde(flatten)]
    pub settings: EthLinkSettings,
}

/// Every `Settings for IF:` block.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct EthtoolFacts {
    /// The interfaces, in the order printed.
    pub interfaces: Vec<EthtoolInterface>,
}

/// `ethtool IF`.
pub struct Ethtool;

impl Format for Ethtool {
    type Facts = EthtoolFacts;
    const EXPECTED: &'static str =
        "`Settings for IF:` blocks (`Speed: 100000Mb/s`, `Link detected: yes`...)";

    fn parse(text: &str) -> Option<EthtoolFacts> {
        let interfaces = parse_settings(text);
        (!interfaces.is_empty()).then_some(EthtoolFacts { interfaces })
    }
}

/// The fastest link mode of a list: `100000baseCR4/Full` is 100000 Mb/s.
fn fastest(modes: &str) -> Option<u64> {
    modes
        .split_whitespace()
        .filter_map(|m| {
            m.split_once("base")
                .and_then(|(n, _)| n.parse::<u64>().ok())
        })
        .max()
}

fn parse_settings(text: &str) -> Vec<EthtoolInterface> {
    let mut out: Vec<EthtoolInterface> = Vec::new();
    let mut key = String::new();
    let mut modes: BTreeMap<String, String> = BTreeMap::new();
    let finish = |out: &mut Vec<EthtoolInterface>, modes: &mut BTreeMap<String, String>| {
        if let Some(i) = out.last_mut() {
            let s = &mut i.settings;
            s.max_supported_mbps = modes.get("Supported link modes").and_then(|m| fastest(m));
            s.max_partner_mbps = modes
                .get("Link partner advertised link modes")
                .and_then(|m| fastest(m));
        }
        modes.clear();
    };
    for line in lines(text) {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("Settings for ") {
            finish(&mut out, &mut modes);
            out.push(EthtoolInterface {
                interface: rest.trim_end_matches(':').trim().to_string(),
                ..EthtoolInterface::default()
            });
            key.clear();
            continue;
        }
        let Some(i) = out.last_mut() else { continue };
        let (k, v) = match t.split_once(':') {
            Some((k, v)) if !k.contains('/') => (k.trim().to_string(), v.trim()),
            // A continuation of a link-mode list (`25000baseCR/Full`); any other line without
            // a key is not ethtool's.
            _ if key.ends_with("link modes") => (key.clone(), t),
            _ => continue,
        };
        key.clone_from(&k);
        let s = &mut i.settings;
        match k.as_str() {
            "Supported link modes"
            | "Advertised link modes"
            | "Link partner advertised link modes" => {
                let e = modes.entry(k).or_default();
                e.push(' ');
                e.push_str(v);
            }
            "Speed" => s.speed_mbps = v.strip_suffix("Mb/s").and_then(|n| n.parse().ok()),
            "Lanes" => s.lanes = v.parse().ok(),
            "Duplex" => s.duplex = (!v.is_empty()).then(|| v.to_string()),
            "Auto-negotiation" => {
                s.autoneg = match v {
                    "on" => Some(true),
                    "off" => Some(false),
                    _ => None,
                }
            }
            "Port" => s.port = (!v.is_empty()).then(|| v.to_string()),
            "Link detected" => {
                s.link_detected = match v {
                    "yes" => Some(true),
                    "no" => Some(false),
                    _ => None,
                }
            }
            "Advertised FEC modes" | "Active FEC encoding" if !v.is_empty() => {
                s.fec = Some(v.split_whitespace().collect::<Vec<_>>().join(" "));
            }
            _ => {}
        }
    }
    finish(&mut out, &mut modes);
    out
}

impl Paste for Ethtool {
    const NAME: &'static str = "ethtool";
    const ABOUT: &'static str =
        "`ethtool IF` output: link speed, lanes, the fastest supported and partner modes, link detected; `-` reads stdin";

    fn node(facts: &EthtoolFacts) -> Node {
        Node {
            net_interfaces: facts
                .interfaces
                .iter()
                .map(|i| NetInterface {
                    speed_mbps: i.settings.speed_mbps,
                    link_settings: Some(i.settings.clone()),
                    ..NetInterface::new(&i.interface, NetKind::Ethernet)
                })
                .collect(),
            known: Some(BTreeSet::from([Fact::LinkQuality])),
            ..Node::default()
        }
    }

    fn table(facts: &EthtoolFacts) -> FactTable {
        let mut t = FactTable::new([
            "interface",
            "link",
            "speed Mb/s",
            "lanes",
            "fastest supported",
            "partner's fastest",
            "port",
        ]);
        for i in &facts.interfaces {
            let s = &i.settings;
            t.row([
                i.interface.clone(),
                s.link_detected
                    .map(|l| if l { "yes" } else { "no" }.to_string())
                    .unwrap_or_default(),
                cell(&s.speed_mbps),
                cell(&s.lanes),
                cell(&s.max_supported_mbps),
                cell(&s.max_partner_mbps),
                cell(&s.port),
            ]);
        }
        t
    }
}

/// One interface's `ethtool -S` counters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NicStatistics {
    /// The interface, when the paste shows the command line (`ethtool -S eth0`).
    pub interface: Option<String>,
    /// `name: value` lines whose value is a number.
    pub stats: BTreeMap<String, u64>,
    /// `name: value` lines whose value is not a number, as printed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unreadable: BTreeMap<String, String>,
    /// What ethtool said instead of counters (`no stats available`,
    /// `Cannot get stats strings information: Operation not supported`).
    pub complaints: Vec<String>,
}

/// Every `ethtool -S` run of a paste.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct EthtoolStatsFacts {
    /// One per run (`NIC statistics:` block).
    pub interfaces: Vec<NicStatistics>,
}

/// `ethtool -S IF`.
pub struct EthtoolStats;

impl Format for EthtoolStats {
    type Facts = EthtoolStatsFacts;
    const EXPECTED: &'static str = "`NIC statistics:` followed by `name: value` lines";

    fn parse(text: &str) -> Option<EthtoolStatsFacts> {
        let facts = EthtoolStats::read(text);
        facts
            .interfaces
            .iter()
            .any(|i| !i.stats.is_empty())
            .then_some(facts)
    }
}

impl EthtoolStats {
    /// Every run of the text, counters or not: what a reader of one captured `ethtool -S IF`
    /// (the monitor's `ROOT/fabrik/cmd/ethtool-S-IF.txt`) needs, complaints included.
    pub fn read(text: &str) -> EthtoolStatsFacts {
        EthtoolStatsFacts {
            interfaces: parse_stats(text),
        }
    }
}

/// ethtool's own messages when it has no counters to print (ethtool.c `do_gstats`).
fn is_complaint(line: &str) -> bool {
    line.eq_ignore_ascii_case("no stats available") || line.starts_with("Cannot get ")
}

/// The interface of an `ethtool -S IF` command line.
fn stats_command(line: &str) -> Option<String> {
    let w: Vec<&str> = line.split_whitespace().collect();
    let at = w.iter().position(|x| x.ends_with("ethtool"))?;
    let s = w[at..]
        .iter()
        .position(|x| *x == "-S" || *x == "--statistics")?;
    w.get(at + s + 1)
        .filter(|i| !i.starts_with('-') && !i.starts_with('|'))
        .map(|s| s.to_string())
}

fn parse_stats(text: &str) -> Vec<NicStatistics> {
    let mut out: Vec<NicStatistics> = Vec::new();
    let mut pending: Option<String> = None;
    for line in lines(text) {
        let t = line.trim();
        if let Some(i) = stats_command(t) {
            pending = Some(i);
            continue;
        }
        if t.eq_ignore_ascii_case("NIC statistics:") {
            out.push(NicStatistics {
                interface: pending.take(),
                ..NicStatistics::default()
            });
            continue;
        }
        if t.is_empty() {
            continue;
        }
        // A grepped paste (`ethtool -S eth0 | grep err`) has no header: a run starts at its
        // first counter (or complaint).
        let mut current = |out: &mut Vec<NicStatistics>| {
            if out.is_empty() || pending.is_some() {
                out.push(NicStatistics {
                    interface: pending.take(),
                    ..NicStatistics::default()
                });
            }
        };
        if is_complaint(t) {
            current(&mut out);
            if let Some(cur) = out.last_mut().filter(|c| c.complaints.len() < 16) {
                cur.complaints.push(t.chars().take(120).collect());
            }
            continue;
        }
        // Names may hold `.`, `-`, `[`; the split is at the last `:` so a value is never
        // taken for part of a name.
        let Some((name, value)) = t.rsplit_once(':') else {
            continue;
        };
        let (name, value) = (name.trim(), value.trim());
        // Prose (`Missing counters are zero: see below`) and section headers (`Queue stats:`);
        // bnxt's per-ring names hold a space (`[0]: rx_ucast_packets: 5`) but a number.
        if name.is_empty()
            || value.is_empty()
            || name.contains(' ') && value.parse::<u64>().is_err()
        {
            continue;
        }
        current(&mut out);
        let Some(cur) = out.last_mut() else { continue };
        match value.parse::<u64>() {
            Ok(v) => {
                cur.stats.insert(name.to_string(), v);
            }
            Err(_) if cur.unreadable.len() < 64 => {
                cur.unreadable
                    .insert(name.to_string(), value.chars().take(40).collect());
            }
            Err(_) => {}
        }
    }
    out
}

impl Paste for EthtoolStats {
    const NAME: &'static str = "ethtool-S";
    const COMMAND: &'static str = "ethtool-stats";
    const ALIASES: &'static [&'static str] = &["ethtool-S", "ethtool_S"];
    const ABOUT: &'static str =
        "`ethtool -S IF` output: the NIC's physical-layer errors, discards and pause frames; `-` reads stdin";

    fn node(facts: &EthtoolStatsFacts) -> Node {
        Node {
            net_interfaces: facts
                .interfaces
                .iter()
                .enumerate()
                .map(|(n, i)| NetInterface {
                    nic_stats: i.stats.clone(),
                    ..NetInterface::new(
                        i.interface.clone().unwrap_or_else(|| {
                            if facts.interfaces.len() == 1 {
                                "(unnamed)".to_string()
                            } else {
                                format!("(unnamed #{})", n + 1)
                            }
                        }),
                        NetKind::Ethernet,
                    )
                })
                .collect(),
            known: Some(BTreeSet::from([Fact::Counters])),
            ..Node::default()
        }
    }

    fn table(facts: &EthtoolStatsFacts) -> FactTable {
        let mut t = FactTable::new(["interface", "counter", "value"]);
        for i in &facts.interfaces {
            let name = i.interface.clone().unwrap_or_else(|| "?".to_string());
            let shown = i.stats.iter().filter(|(k, v)| {
                **v > 0
                    && (k.contains("err")
                        || k.contains("discard")
                        || k.contains("drop")
                        || k.contains("pause")
                        || k.contains("out_of_buffer")
                        || k.contains("link_down"))
            });
            for (k, v) in shown {
                t.row([name.clone(), k.clone(), v.to_string()]);
            }
            t.note(format!(
                "{name}: {} counters read (non-zero error, discard, drop, pause and link counters shown)",
                i.stats.len()
            ));
            for c in &i.complaints {
                t.note(format!("{name}: {c}"));
            }
        }
        t
    }
}
