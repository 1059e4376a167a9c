//! `mstconfig -d DEV q` and `mlxconfig -d DEV q` (mstflint `mlxconfig/mlxcfg_ui.cpp`): per
//! device a `Device #N:` block (`Device type:`, `Name:`, `Description:`, `Device:`; older
//! releases `PCI device:`), then `Configurations:` and a column per value kind (`Next Boot`; with
//! `-e` also `Default` and `Current`; releases before MFT 4.x labelled next boot `Current`). A
//! row is `[*][RO]     NAME   value...`, each value printed as `TEXT(NUMBER)` (`False(0)`,
//! `per_mkey(0)`) or a bare number; `*` marks a next-boot value that differs from the default
//! or the current one.

use std::collections::{BTreeMap, BTreeSet};

use fabrik_model::{Fact, FactTable, FirmwareSetting, NicFirmware, Node};
use serde::{Deserialize, Serialize};

use super::{lines, normalize_bdf, Format, Paste};

/// What `mstconfig q` printed: each device's configuration and the tool's own errors.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MstconfigFacts {
    /// The devices, in the order printed.
    pub devices: Vec<NicFirmware>,
    /// `-E-` lines (`-E- Failed to open device`).
    pub errors: Vec<String>,
}

/// `mstconfig q` / `mlxconfig q`.
pub struct Mstconfig;

impl Format for Mstconfig {
    type Facts = MstconfigFacts;
    const EXPECTED: &'static str =
        "`Device #1:` blocks with `Configurations:` and `NAME  value(n)` rows (`PCI_WR_ORDERING  per_mkey(0)`)";

    fn parse(text: &str) -> Option<MstconfigFacts> {
        let f = parse(text);
        (!f.devices.is_empty() || !f.errors.is_empty()).then_some(f)
    }
}

/// Which column a value belongs to.
#[derive(Clone, Copy, PartialEq)]
enum Column {
    Default,
    Current,
    NextBoot,
}

/// A setting name: upper case, digits, `_`, an array index in brackets.
fn is_name(w: &str) -> bool {
    w.len() > 1
        && w.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && w.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || "_[]".contains(c))
}

/// The device of an `mstconfig -d DEV q` (or `mlxconfig ... query | grep ...`, `set`) command
/// line.
fn command_device(line: &str) -> Option<String> {
    let w: Vec<&str> = line.split_whitespace().collect();
    let at = w
        .iter()
        .position(|x| x.ends_with("mlxconfig") || x.ends_with("mstconfig"))?;
    let d = w[at..].iter().position(|x| *x == "-d" || *x == "--dev")?;
    w.get(at + d + 1).map(|s| s.to_string())
}

fn parse(text: &str) -> MstconfigFacts {
    let mut out = MstconfigFacts::default();
    let mut columns: Vec<Column> = Vec::new();
    let mut in_table = false;
    // A device begun by its command line, before its own `Device #1:` header.
    let mut from_command = false;
    for line in lines(text) {
        let t = line.trim();
        if let Some(e) = t.strip_prefix("-E-") {
            if out.errors.len() < 64 {
                out.errors.push(e.trim().to_string());
            }
            continue;
        }
        if let Some(d) = command_device(t) {
            // `mlxconfig -d DEV query | grep LINK_TYPE` prints rows with no header.
            if from_command && out.devices.last().is_some_and(|d| d.settings.is_empty()) {
                out.devices.pop();
            }
            out.devices.push(NicFirmware {
                pci: normalize_bdf(&d),
                device: d,
                ..NicFirmware::default()
            });
            columns = vec![Column::NextBoot];
            in_table = true;
            from_command = true;
            continue;
        }
        if t.starts_with("Device #") && t.ends_with(':') {
            if !(from_command && out.devices.last().is_some_and(|d| d.settings.is_empty())) {
                out.devices.push(NicFirmware::default());
            }
            from_command = false;
            in_table = false;
            continue;
        }
        if let Some(rest) = t.strip_prefix("Configurations:") {
            // `Default  Current  Next Boot`; old releases print `Current` for next boot.
            let words: Vec<&str> = rest.split_whitespace().collect();
            columns = words
                .iter()
                .filter_map(|w| match *w {
                    "Default" => Some(Column::Default),
                    "Current" => Some(Column::Current),
                    "Next" => Some(Column::NextBoot),
                    _ => None,
                })
                .collect();
            if !columns.contains(&Column::NextBoot) {
                if let Some(c) = columns.last_mut() {
                    *c = Column::NextBoot;
                }
            }
            if columns.is_empty() {
                columns.push(Column::NextBoot);
            }
            if out.devices.is_empty() {
                out.devices.push(NicFirmware::default());
            }
            in_table = true;
            continue;
        }
        let Some(dev) = out.devices.last_mut() else {
            continue;
        };
        if !in_table {
            if let Some((k, v)) = t.split_once(':') {
                let v = v.trim();
                let v = (!v.is_empty()).then(|| v.to_string());
                match k.trim() {
                    "Device type" => dev.device_type = v,
                    "Name" => dev.part = v,
                    "Device" | "PCI device" => {
                        if let Some(v) = v {
                            dev.pci = normalize_bdf(&v);
                            dev.device = v;
                        }
                    }
                    _ => {}
                }
            }
            continue;
        }
        let mut words: Vec<&str> = t.split_whitespace().collect();
        if words.first() == Some(&"*") {
            words.remove(0);
        }
        if words.first() == Some(&"RO") {
            words.remove(0);
        }
        let Some((name, values)) = words.split_first() else {
            continue;
        };
        // The table ends at the first line that is no setting row (`The '*' shows ...`).
        if !is_name(name) || values.is_empty() {
            if !t.is_empty() {
                in_table = false;
            }
            continue;
        }
        let mut setting = FirmwareSetting::default();
        // A row has one value per column; a row with fewer keeps the last as next boot.
        for (i, v) in values.iter().enumerate().take(columns.len()) {
            let col = if values.len() < columns.len() && i + 1 == values.len() {
                Column::NextBoot
            } else {
                columns[i]
            };
            match col {
                Column::Default => setting.default = Some(v.to_string()),
                Column::Current => setting.current = Some(v.to_string()),
                Column::NextBoot => setting.next_boot = v.to_string(),
            }
        }
        if !setting.next_boot.is_empty() {
            dev.settings.insert(name.to_string(), setting);
        }
    }
    // One device queried twice (a `query | grep`, then a `set`) is one device.
    let mut merged: Vec<NicFirmware> = Vec::new();
    for d in out.devices.drain(..).filter(|d| !d.settings.is_empty()) {
        match merged
            .iter_mut()
            .find(|m| !d.device.is_empty() && m.device == d.device)
        {
            Some(m) => {
                m.settings.extend(d.settings);
                m.device_type = d.device_type.or(m.device_type.take());
                m.part = d.part.or(m.part.take());
            }
            None => merged.push(d),
        }
    }
    out.devices = merged;
    out
}

impl Paste for Mstconfig {
    const NAME: &'static str = "mstconfig";
    const ALIASES: &'static [&'static str] = &["mlxconfig"];
    const ABOUT: &'static str =
        "`mstconfig q` / `mlxconfig q` output: NIC firmware settings (PCI_WR_ORDERING, ATS_ENABLED, SRIOV_EN, LINK_TYPE...); `-` reads stdin";

    fn node(facts: &MstconfigFacts) -> Node {
        Node {
            nic_firmware: facts.devices.clone(),
            known: Some(BTreeSet::from([Fact::Firmware])),
            ..Node::default()
        }
    }

    fn table(facts: &MstconfigFacts) -> FactTable {
        const SHOWN: [&str; 9] = [
            "PCI_WR_ORDERING",
            "ATS_ENABLED",
            "ADVANCED_PCI_SETTINGS",
            "MAX_ACC_OUT_READ",
            "SRIOV_EN",
            "NUM_OF_VFS",
            "LINK_TYPE_P1",
            "LINK_TYPE_P2",
            "ROCE_CC_PRIO_MASK_P1",
        ];
        let mut t = FactTable::new(["device", "type", "setting", "value", "pending"]);
        for d in &facts.devices {
            let label = if d.device.is_empty() { "?" } else { &d.device };
            let mut shown: BTreeMap<&str, &FirmwareSetting> = BTreeMap::new();
            for name in SHOWN {
                if let Some(s) = d.settings.get(name) {
                    shown.insert(name, s);
                }
            }
            for (name, s) in &d.settings {
                if s.current.as_ref().is_some_and(|c| *c != s.next_boot) {
                    shown.insert(name, s);
                }
            }
            for (name, s) in shown {
                t.row([
                    label.to_string(),
                    d.device_type.clone().unwrap_or_default(),
                    name.to_string(),
                    s.effective().to_string(),
                    match &s.current {
                        Some(c) if *c != s.next_boot => format!("{} at next boot", s.next_boot),
                        _ => String::new(),
                    },
                ]);
            }
            t.note(format!("{label}: {} settings read", d.settings.len()));
        }
        for e in &facts.errors {
            t.note(format!("mstconfig error: {e}"));
        }
        t
    }
}
