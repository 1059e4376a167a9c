//! `ethtool -m IF` (`--module-info`): the decoded EEPROM of a pluggable module. ethtool prints
//! every field as `\t%-41s : value` (sff-common.c, sfpdiag.c for SFF-8472 SFP modules, qsfp.c
//! for SFF-8636 QSFP, cmis.c for CMIS QSFP-DD/OSFP). The diagnostics:
//!
//! - measurements: `Module temperature` (`30.14 degrees C / 86.25 degrees F`), `Module voltage`
//!   (`3.3440 V`), the laser's bias current (`Laser bias current` on SFP, `Laser tx bias
//!   current (Channel N)` per lane on QSFP/CMIS, in mA), the transmitted power (`Laser output
//!   power`, `Transmit avg optical power (Channel N)`) and the received power (`Receiver signal
//!   average optical power`, `Rcvr signal avg optical power(Channel N)`, or `Receiver signal
//!   OMA`), each `0.5734 mW / -2.42 dBm`;
//! - flags `On`/`Off`: `<quantity> high|low alarm|warning`, per lane on QSFP as `(Chan N)` or
//!   `(Channel N)`; the loss-of-signal and fault lines (`Rx loss of signal : None` or `Yes`);
//! - the module's own thresholds: `<quantity> high|low alarm|warning threshold`.
//!
//! A paste of several modules is split at each `Identifier` line or `ethtool -m IF` command
//! line, which names the interface.

use std::collections::BTreeSet;

use fabrik_model::facts::cell;
use fabrik_model::{Fact, FactTable, ModuleFlag, ModuleLane, Node, Transceiver};
use serde::{Deserialize, Serialize};

use super::{lines, Format, Paste};

/// Every module `ethtool -m` reported on, in the order printed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct EthtoolModuleFacts {
    /// One per module.
    pub modules: Vec<Transceiver>,
}

/// `ethtool -m IF`.
pub struct EthtoolModule;

impl Format for EthtoolModule {
    type Facts = EthtoolModuleFacts;
    const EXPECTED: &'static str =
        "`Identifier : 0x..`, `Vendor name : ...` or `Module temperature : ... degrees C` lines";

    fn parse(text: &str) -> Option<EthtoolModuleFacts> {
        let modules = parse(text);
        (!modules.is_empty()).then_some(EthtoolModuleFacts { modules })
    }
}

/// The quantity a field is about: `temperature`, `voltage`, `bias`, `tx_power`, `rx_power`.
fn quantity(name: &str) -> Option<&'static str> {
    let n = name.to_ascii_lowercase();
    if n.contains("temperature") {
        Some("temperature")
    } else if n.contains("voltage") || n.contains("vcc") {
        Some("voltage")
    } else if n.contains("bias") {
        Some("bias")
    } else if n.contains("rx power")
        || n.contains("rcvr")
        || n.contains("receiver")
        || n.contains("received")
    {
        Some("rx_power")
    } else if n.contains("tx power") || n.contains("output power") || n.contains("transmit") {
        Some("tx_power")
    } else {
        None
    }
}

/// `Laser bias current high alarm   (Chan 1)` → (`Laser bias current high alarm`, Some(1));
/// also `(Channel 1)`, `(Lane 1)`, and no space before the parenthesis.
fn split_lane(key: &str) -> (&str, Option<u32>) {
    let k = key.trim_end();
    if let Some(open) = k.rfind('(') {
        if let Some(inner) = k[open + 1..].strip_suffix(')') {
            let mut w = inner.split_whitespace();
            if let (Some(word), Some(n), None) = (w.next(), w.next(), w.next()) {
                let word = word.to_ascii_lowercase();
                if ["chan", "channel", "lane"].contains(&word.as_str()) {
                    if let Ok(n) = n.parse() {
                        return (k[..open].trim_end(), Some(n));
                    }
                }
            }
        }
    }
    (k, None)
}

/// The first number of a value (`7.934 mA`, `0.5734 mW / -2.42 dBm`, `-5.00 degrees C`).
fn number(v: &str) -> Option<f64> {
    v.split_whitespace()
        .next()?
        .trim_end_matches(|c: char| c.is_ascii_alphabetic() || c == '%')
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite())
}

/// A value in the unit fabrik keeps: mW where ethtool gives `mW / dBm` (dBm alone is
/// converted), the number otherwise.
fn measured(v: &str) -> Option<f64> {
    let mut w = v.split_whitespace();
    let n = w.next()?;
    match w.next() {
        Some("dBm") => {
            let dbm: f64 = n.parse().ok().filter(|x: &f64| x.is_finite())?;
            Some(10f64.powf(dbm / 10.0))
        }
        _ => number(v),
    }
}

/// A flag's state: `On`/`Off`, `Yes`/`No`, `True`/`False`; for loss-of-signal and fault lines,
/// `None` is clear and anything else (`Yes`, `Yes (Chan 1,2)`) is set.
fn flag_state(v: &str) -> Option<bool> {
    let w = v.split_whitespace().next()?.to_ascii_lowercase();
    match w.as_str() {
        "on" | "yes" | "true" => Some(true),
        "off" | "no" | "false" | "none" => Some(false),
        _ => None,
    }
}

/// The interface of an `ethtool -m IF` (or `--module-info`, `--dump-module-eeprom`) command.
fn command_interface(line: &str) -> Option<String> {
    let w: Vec<&str> = line.split_whitespace().collect();
    let at = w.iter().position(|x| x.ends_with("ethtool"))?;
    let mut it = w[at + 1..].iter();
    let mut module = false;
    for x in it.by_ref() {
        if ["-m", "--module-info", "--dump-module-eeprom"].contains(x) {
            module = true;
            break;
        }
    }
    if !module {
        return None;
    }
    it.find(|x| !x.starts_with('-'))
        .map(|x| x.to_string())
        .filter(|x| {
            x.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.:@".contains(c))
        })
}

fn has_data(t: &Transceiver) -> bool {
    t.identifier.is_some()
        || t.vendor.is_some()
        || t.temperature_c.is_some()
        || !t.lanes.is_empty()
        || t.flags_read > 0
}

fn lane(t: &mut Transceiver, n: u32) -> &mut ModuleLane {
    let at = match t.lanes.iter().position(|l| l.lane == n) {
        Some(i) => i,
        None => {
            t.lanes.push(ModuleLane {
                lane: n,
                ..ModuleLane::default()
            });
            t.lanes.len() - 1
        }
    };
    &mut t.lanes[at]
}

fn parse(text: &str) -> Vec<Transceiver> {
    let mut out = vec![];
    let mut cur = Transceiver::default();
    let mut flush = |cur: &mut Transceiver, interface: String| {
        let mut done = std::mem::replace(
            cur,
            Transceiver {
                interface,
                ..Transceiver::default()
            },
        );
        if has_data(&done) {
            done.lanes.sort_by_key(|l| l.lane);
            out.push(done);
        }
    };
    for line in lines(text) {
        let t = line.trim();
        if let Some(i) = command_interface(t) {
            flush(&mut cur, i);
            continue;
        }
        let Some((key, value)) = t.split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        if key.is_empty() || key.len() > 64 {
            continue;
        }
        let text = (!value.is_empty()).then(|| value.to_string());
        match key {
            "Identifier" => {
                // A second module in one paste.
                if cur.identifier.is_some() || cur.temperature_c.is_some() {
                    flush(&mut cur, String::new());
                }
                cur.identifier = text;
                continue;
            }
            "Transceiver type" => {
                cur.transceiver_type.get_or_insert(value.to_string());
                continue;
            }
            "Vendor name" => {
                cur.vendor = text;
                continue;
            }
            "Vendor PN" => {
                cur.part_number = text;
                continue;
            }
            "Vendor SN" => {
                cur.serial = text;
                continue;
            }
            "Alarm/warning flags implemented" => {
                cur.flags_implemented = flag_state(value);
                continue;
            }
            _ => {}
        }
        let (name, lane_no) = split_lane(key);
        let lower = name.to_ascii_lowercase();
        if let Some(base) = lower.strip_suffix(" threshold") {
            let Some(q) = quantity(base) else { continue };
            let v = measured(value);
            let th = cur.thresholds.entry(q.to_string()).or_default();
            if base.ends_with("high alarm") {
                th.high_alarm = v;
            } else if base.ends_with("low alarm") {
                th.low_alarm = v;
            } else if base.ends_with("high warning") {
                th.high_warning = v;
            } else if base.ends_with("low warning") {
                th.low_warning = v;
            }
            continue;
        }
        let is_level = lower.ends_with(" alarm") || lower.ends_with(" warning");
        let is_signal = lower.contains("loss of signal")
            || lower.ends_with(" fault")
            || lower == "tx fault"
            || lower.contains("loss of lock");
        if is_level || is_signal {
            let Some(on) = flag_state(value) else {
                continue;
            };
            cur.flags_read += 1;
            if on {
                cur.flags_set.push(ModuleFlag {
                    name: name.to_string(),
                    lane: lane_no,
                    alarm: !lower.ends_with(" warning"),
                });
            }
            continue;
        }
        // Measurements: the module's, or one lane's.
        match (lower.as_str(), quantity(name)) {
            ("module temperature", _) => cur.temperature_c = number(value),
            ("module voltage", _) => cur.voltage_v = number(value),
            (_, Some(q))
                if ["bias", "tx_power", "rx_power"].contains(&q)
                    && value
                        .split_whitespace()
                        .nth(1)
                        .is_some_and(|u| ["mA", "mW", "dBm"].contains(&u)) =>
            {
                let v = measured(value);
                let l = lane(&mut cur, lane_no.unwrap_or(0));
                match q {
                    "bias" => l.bias_ma = v,
                    "tx_power" => l.tx_power_mw = v,
                    _ => l.rx_power_mw = v,
                }
            }
            _ => {}
        }
    }
    flush(&mut cur, String::new());
    out
}

/// What is wrong with a module by its own account: each alarm flag it raises (with its lane),
/// or, where it prints no flags, each reading beyond the alarm thresholds it declares. A lane
/// whose laser is off and that receives nothing (an unused lane of a breakout) is not judged on
/// its readings.
pub fn alarms(t: &Transceiver) -> Vec<String> {
    let mut out: Vec<String> = t
        .flags_set
        .iter()
        .filter(|f| f.alarm)
        .map(|f| match f.lane {
            Some(l) => format!("{} (lane {l})", f.name),
            None => f.name.clone(),
        })
        .collect();
    if t.flags_read > 0 {
        return out;
    }
    let beyond = |q: &str, v: Option<f64>, what: &str, unit: &str, out: &mut Vec<String>| {
        let (Some(v), Some(th)) = (v, t.thresholds.get(q)) else {
            return;
        };
        let (hi, lo) = (th.high_alarm, th.low_alarm);
        // A module that does not implement a threshold leaves it zero.
        if let (Some(h), Some(l)) = (hi, lo) {
            if h <= l {
                return;
            }
        }
        if let Some(h) = hi.filter(|h| *h > 0.0 && v > *h) {
            out.push(format!(
                "{what} {v} {unit} above the high alarm threshold {h} {unit}"
            ));
        }
        if let Some(l) = lo.filter(|l| *l > 0.0 && v < *l) {
            out.push(format!(
                "{what} {v} {unit} below the low alarm threshold {l} {unit}"
            ));
        }
    };
    beyond(
        "temperature",
        t.temperature_c,
        "temperature",
        "°C",
        &mut out,
    );
    beyond("voltage", t.voltage_v, "voltage", "V", &mut out);
    for l in &t.lanes {
        let dark = l.bias_ma.is_some_and(|b| b == 0.0) && l.rx_power_mw.is_some_and(|p| p == 0.0);
        if dark {
            continue;
        }
        let name = |what: &str| {
            if l.lane == 0 {
                what.to_string()
            } else {
                format!("{what} (lane {})", l.lane)
            }
        };
        beyond(
            "bias",
            l.bias_ma,
            &name("laser bias current"),
            "mA",
            &mut out,
        );
        beyond(
            "tx_power",
            l.tx_power_mw,
            &name("transmit power"),
            "mW",
            &mut out,
        );
        beyond(
            "rx_power",
            l.rx_power_mw,
            &name("receive power"),
            "mW",
            &mut out,
        );
    }
    out
}

/// mW as dBm, the unit optics are usually judged in: a model conversion, here where readers of
/// `ethtool -m` look for it.
pub use fabrik_model::units::dbm;

impl Paste for EthtoolModule {
    const NAME: &'static str = "ethtool-m";
    const COMMAND: &'static str = "ethtool-m";
    const ALIASES: &'static [&'static str] = &["ethtool_m", "module-info"];
    const ABOUT: &'static str =
        "`ethtool -m IF` output: module identity, temperature, voltage, per-lane bias and optical power, alarm flags and thresholds; `-` reads stdin";

    fn node(facts: &EthtoolModuleFacts) -> Node {
        Node {
            transceivers: facts.modules.clone(),
            known: Some(BTreeSet::from([Fact::LinkQuality])),
            ..Node::default()
        }
    }

    fn table(facts: &EthtoolModuleFacts) -> FactTable {
        let mut t = FactTable::new([
            "interface",
            "module",
            "vendor",
            "part",
            "temperature C",
            "lane",
            "bias mA",
            "tx mW",
            "rx mW (dBm)",
        ]);
        for m in &facts.modules {
            let iface = if m.interface.is_empty() {
                "?".to_string()
            } else {
                m.interface.clone()
            };
            let head = [
                iface,
                cell(&m.identifier),
                cell(&m.vendor),
                cell(&m.part_number),
                cell(&m.temperature_c),
            ];
            if m.lanes.is_empty() {
                t.row(head.iter().cloned().chain([
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                ]));
            }
            for l in &m.lanes {
                let rx = l
                    .rx_power_mw
                    .map(|p| match dbm(p) {
                        Some(d) => format!("{p} ({d:.2})"),
                        None => format!("{p}"),
                    })
                    .unwrap_or_default();
                t.row(head.clone().into_iter().chain([
                    l.lane.to_string(),
                    cell(&l.bias_ma),
                    cell(&l.tx_power_mw),
                    rx,
                ]));
            }
            for a in alarms(m) {
                t.note(format!(
                    "{}: {a}",
                    if m.interface.is_empty() {
                        "?"
                    } else {
                        &m.interface
                    }
                ));
            }
        }
        t
    }
}
