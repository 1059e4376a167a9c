//! The NIC tools whose facts no file holds: firmware settings (`mstconfig q`, or NVIDIA MFT's
//! `mlxconfig q`), physical link quality (`mstlink -c -m`, or `mlxlink`), and `ethtool`'s link
//! settings, NIC statistics and module diagnostics (`ethtool -m`) of RDMA netdevs. On a live root they run with the other tools
//! under one deadline and become captures (`fabrik/cmd/NAME.txt`); in a snapshot the captures
//! are read back through the same parsers a paste goes through.

use fabrik_model::{LinkQuality, NetInterface, NicFirmware, Transceiver};
use fabrik_parse::formats::{Ethtool, EthtoolModule, EthtoolStats, Format, Mstconfig, Mstlink};

use crate::captures::Captures;
use crate::fs::{base_name, join, RootFs};
use crate::live::Tool;

/// Capture-name prefix of a function's firmware settings (`mstconfig-0000:3b:00.0`).
pub const FIRMWARE: &str = "mstconfig-";
/// Capture-name prefix of a function's link quality (`mstlink-0000:3b:00.0`).
pub const LINK: &str = "mstlink-";
/// Capture-name prefix of a netdev's link settings (`ethtool-eth2`).
pub const ETHTOOL: &str = "ethtool-";
/// Capture-name prefix of a netdev's NIC statistics (`ethtool-S-eth2`).
pub const ETHTOOL_STATS: &str = "ethtool-S-";
/// Capture-name prefix of a netdev's module diagnostics (`ethtool-m-eth2`).
pub const ETHTOOL_MODULE: &str = "ethtool-m-";

/// NVIDIA (Mellanox) PCI vendor id: the devices mstflint's tools drive.
const MELLANOX: &str = "0x15b3";

/// Whether capture `name` is one of a NIC tool's, whose absence a snapshot reports.
pub fn is_nic_capture(name: &str) -> bool {
    name.starts_with(FIRMWARE) || name.starts_with(LINK) || name.starts_with(ETHTOOL)
}

/// The first of `programs` installed, else the first (so that "not installed" names it).
fn pick(programs: &[&'static str]) -> &'static str {
    programs
        .iter()
        .copied()
        .find(|p| crate::run::find_program(p).is_some())
        .or_else(|| programs.first().copied())
        .unwrap_or_default()
}

/// A netdev or PCI name as it may appear in an argument: sysfs names hold no separators, but a
/// root is outside input, so anything else is not run.
fn plain(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.:@".contains(c))
}

/// The tools to run for the hardware RDMA functions and their netdevs found under the root.
pub(crate) fn live_tools(fs: &mut RootFs) -> Vec<Tool> {
    let mut functions = std::collections::BTreeSet::new();
    let mut netdevs = std::collections::BTreeSet::new();
    for dev in fs.list_opt(crate::rdma::CLASS_DIR) {
        let link = join(&join(crate::rdma::CLASS_DIR, &dev), "device");
        let Some(dir) = fs
            .resolve(&link)
            .ok()
            .and_then(|r| crate::pci::pci_dir_of(&r))
        else {
            continue;
        };
        for n in fs.list_opt(&join(&dir, "net")) {
            if plain(&n) {
                netdevs.insert(n);
            }
        }
        let vendor = fs.attr_quiet(&join(&dir, "vendor")).unwrap_or_default();
        // mstflint's tools refuse virtual functions: their settings are the physical one's.
        if vendor == MELLANOX && !fs.exists(&join(&dir, "physfn")) {
            let bdf = base_name(&dir).to_ascii_lowercase();
            if plain(&bdf) {
                functions.insert(bdf);
            }
        }
    }
    let mut tools = vec![];
    if !functions.is_empty() {
        let config = pick(&["mstconfig", "mlxconfig"]);
        let link = pick(&["mstlink", "mlxlink"]);
        for bdf in &functions {
            tools.push(Tool {
                name: format!("{FIRMWARE}{bdf}"),
                program: config,
                args: vec!["-d".into(), bdf.clone(), "q".into()],
            });
            // `-c` adds the counters and BER, `-m` the module: what the parser reads.
            tools.push(Tool {
                name: format!("{LINK}{bdf}"),
                program: link,
                args: vec!["-d".into(), bdf.clone(), "-c".into(), "-m".into()],
            });
        }
    }
    for n in &netdevs {
        tools.push(Tool {
            name: format!("{ETHTOOL}{n}"),
            program: "ethtool",
            args: vec![n.clone()],
        });
        tools.push(Tool {
            name: format!("{ETHTOOL_STATS}{n}"),
            program: "ethtool",
            args: vec!["-S".into(), n.clone()],
        });
        // The module's EEPROM: temperature, per-lane power, the module's own alarms.
        tools.push(Tool {
            name: format!("{ETHTOOL_MODULE}{n}"),
            program: "ethtool",
            args: vec!["-m".into(), n.clone()],
        });
    }
    tools
}

/// The module of every netdev with an `ethtool-m-IF` capture, named by that netdev.
pub(crate) fn transceivers(caps: &Captures, nets: &[NetInterface]) -> Vec<Transceiver> {
    let mut out = vec![];
    for nif in nets {
        let Some(text) = caps.get(&format!("{ETHTOOL_MODULE}{}", nif.name)) else {
            continue;
        };
        for mut m in EthtoolModule::parse(text)
            .map(|f| f.modules)
            .unwrap_or_default()
        {
            m.interface = nif.name.clone();
            out.push(m);
        }
    }
    out
}

/// The firmware settings of every `mstconfig-BDF` capture, each device knowing its PCI address.
pub(crate) fn firmware(caps: &Captures) -> Vec<NicFirmware> {
    let mut out = vec![];
    for (name, text) in caps.with_prefix(FIRMWARE) {
        let bdf = &name[FIRMWARE.len()..];
        for mut d in Mstconfig::parse(text)
            .map(|f| f.devices)
            .unwrap_or_default()
        {
            if d.pci.is_none() {
                d.pci = fabrik_parse::formats::normalize_bdf(bdf);
            }
            if d.device.is_empty() {
                d.device = bdf.to_string();
            }
            out.push(d);
        }
    }
    out
}

/// The link quality of every `mstlink-BDF` capture, named by the address it was asked for.
pub(crate) fn link_quality(caps: &Captures) -> Vec<LinkQuality> {
    let mut out = vec![];
    for (name, text) in caps.with_prefix(LINK) {
        let bdf = &name[LINK.len()..];
        for mut l in Mstlink::parse(text).map(|f| f.links).unwrap_or_default() {
            if l.device.is_empty() {
                l.device = bdf.to_string();
            }
            out.push(l);
        }
    }
    out
}

/// Each netdev's `ethtool IF` link settings and `ethtool -S IF` statistics, where captured.
pub(crate) fn netdev_facts(caps: &Captures, nets: &mut [NetInterface]) {
    for nif in nets.iter_mut() {
        if let Some(text) = caps.get(&format!("{ETHTOOL}{}", nif.name)) {
            nif.link_settings = Ethtool::parse(text)
                .and_then(|f| f.interfaces.into_iter().next())
                .map(|i| i.settings);
        }
        if let Some(text) = caps.get(&format!("{ETHTOOL_STATS}{}", nif.name)) {
            if let Some(i) = EthtoolStats::parse(text).and_then(|f| f.interfaces.into_iter().next())
            {
                nif.nic_stats = i.stats;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_names_become_arguments() {
        assert!(plain("0000:3b:00.0"));
        assert!(plain("ens1f0np0"));
        assert!(plain("eth0.100@eth0"));
        assert!(!plain("-S"));
        assert!(!plain("a b"));
        assert!(!plain("x;rm"));
        assert!(!plain(""));
        assert!(is_nic_capture("mstconfig-0000:3b:00.0"));
        assert!(is_nic_capture("ethtool-S-eth0"));
        assert!(!is_nic_capture("ibstat"));
    }
}
