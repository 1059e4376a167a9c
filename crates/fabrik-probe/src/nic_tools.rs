//! The NIC tools whose facts no file holds: firmware settings (`mstconfig q`, or NVIDIA MFT's
//! `mlxconfig q`), physical link quality (`mstlink -c -m`, or `mlxlink`), and `ethtool`'s link
//! settings, NIC statistics and module diagnostics (`ethtool -m`) of RDMA netdevs. On a live root they run with the other tools
//! under one deadline and become captures (`fabrik/cmd/NAME.txt`); in a snapshot the captures
//! are read back through the same parsers a paste goes through.

use fabrik_model::{LinkQuality, NetInterface, NicFirmware, NotRead, Transceiver};
use fabrik_parse::formats::{Ethtool, EthtoolModule, EthtoolStats, Format, Mstconfig, Mstlink};

use crate::captures::Captures;
use crate::fs::{base_name, join, RootFs};
use crate::live::{Tool, ToolOutcome};

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
    let mut physical = std::collections::BTreeSet::new();
    for dev in fs.list_opt(crate::rdma::CLASS_DIR) {
        let link = join(&join(crate::rdma::CLASS_DIR, &dev), "device");
        let Some(dir) = fs
            .resolve(&link)
            .ok()
            .and_then(|r| crate::pci::pci_dir_of(&r))
        else {
            continue;
        };
        // A virtual function has no module of its own: its physical function's is read.
        let virtual_fn = fs.exists(&join(&dir, "physfn"));
        for n in fs.list_opt(&join(&dir, "net")) {
            if plain(&n) {
                if !virtual_fn {
                    physical.insert(n.clone());
                }
                netdevs.insert(n);
            }
        }
        let vendor = fs.attr_quiet(&join(&dir, "vendor")).unwrap_or_default();
        // mstflint's tools refuse virtual functions: their settings are the physical one's.
        if vendor == MELLANOX && !virtual_fn {
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
    }
    for n in &physical {
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

/// Where the live probe records which NIC tools gave nothing, so a snapshot reads back the same
/// [`NotRead`]s: one `fact<TAB>subject<TAB>reason` line each.
pub const NOT_READ_RECORD: &str = "/fabrik/nic-tools-not-read.txt";

/// The fact a NIC tool's capture gives, as a [`NotRead`] names it, with its subject.
fn fact_of(name: &str) -> Option<(&'static str, &str)> {
    // Longest prefixes first: `ethtool-S-` and `ethtool-m-` also start with `ethtool-`.
    [
        (FIRMWARE, "nic_firmware"),
        (LINK, "link_quality"),
        (ETHTOOL_STATS, "nic_stats"),
        (ETHTOOL_MODULE, "transceiver"),
        (ETHTOOL, "link_settings"),
    ]
    .into_iter()
    .find_map(|(prefix, fact)| name.strip_prefix(prefix).map(|s| (fact, s)))
}

/// Whether the capture of NIC tool `name` holds what its parser reads.
fn readable(name: &str, text: &str) -> bool {
    match fact_of(name).map(|(f, _)| f) {
        Some("nic_firmware") => Mstconfig::parse(text).is_some(),
        Some("link_quality") => Mstlink::parse(text).is_some(),
        Some("nic_stats") => EthtoolStats::parse(text).is_some(),
        Some("transceiver") => EthtoolModule::parse(text).is_some(),
        Some("link_settings") => Ethtool::parse(text).is_some(),
        _ => true,
    }
}

/// The facts the NIC tools that ran should have given and did not: the tool is not installed,
/// failed, ran past the deadline, or printed nothing its parser reads.
pub(crate) fn unread_by(runs: &[(Tool, ToolOutcome)]) -> Vec<NotRead> {
    let mut out = vec![];
    for (tool, outcome) in runs {
        let Some((fact, subject)) = fact_of(&tool.name) else {
            continue;
        };
        let command = format!("`{} {}`", tool.program, tool.args.join(" "));
        let reason = match outcome {
            ToolOutcome::Missing => match fact {
                "nic_firmware" => format!(
                    "{command}: neither mstconfig (mstflint) nor mlxconfig (NVIDIA MFT) is installed"
                ),
                "link_quality" => format!(
                    "{command}: neither mstlink (mstflint) nor mlxlink (NVIDIA MFT) is installed"
                ),
                _ => format!("{command}: ethtool is not installed"),
            },
            ToolOutcome::Output { text, .. } => {
                if readable(&tool.name, text) {
                    continue;
                }
                let first = text
                    .lines()
                    .map(str::trim)
                    .find(|l| !l.is_empty())
                    .unwrap_or("");
                let first: String = first.chars().take(120).collect();
                format!("{command} printed nothing fabrik reads: {first}")
            }
            other => format!("{command}: {}", other.describe()),
        };
        out.push(NotRead {
            fact: fact.into(),
            subject: subject.into(),
            reason,
        });
    }
    out
}

/// [`unread_by`] of the live root's tool runs, recorded as [`NOT_READ_RECORD`]; in a snapshot,
/// read back from that record.
pub(crate) fn not_read(fs: &mut RootFs, out: &mut Vec<NotRead>) {
    if !fs.is_live() {
        if let Some(text) = fs.text_opt(NOT_READ_RECORD) {
            out.extend(parse_record(&text));
        }
        return;
    }
    let found = unread_by(&fs.tool_runs);
    if !found.is_empty() {
        fs.record_derived(NOT_READ_RECORD, format_record(&found).into_bytes());
    }
    out.extend(found);
}

fn format_record(items: &[NotRead]) -> String {
    items
        .iter()
        .map(|n| {
            format!(
                "{}\t{}\t{}\n",
                n.fact,
                n.subject,
                n.reason.replace(['\t', '\n'], " ")
            )
        })
        .collect()
}

fn parse_record(text: &str) -> Vec<NotRead> {
    text.lines()
        .filter_map(|line| {
            let mut f = line.splitn(3, '\t');
            Some(NotRead {
                fact: f.next()?.to_string(),
                subject: f.next()?.to_string(),
                reason: f.next()?.to_string(),
            })
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
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

    /// On a node with two ConnectX ports and a virtual function: the firmware and link tools
    /// per physical function and none for the virtual one, `ethtool`, `ethtool -S` and
    /// `ethtool -m` per netdev of a physical function.
    #[test]
    fn the_tools_run_for_each_function_and_netdev() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/nodes/roce-dualport");
        let mut fs = crate::open(&root).unwrap();
        let names: Vec<String> = live_tools(&mut fs).into_iter().map(|t| t.name).collect();
        for want in [
            "mstconfig-0000:3b:00.0",
            "mstlink-0000:3b:00.1",
            "ethtool-ens1f0np0",
            "ethtool-S-ens1f1np1",
            "ethtool-m-ens1f0np0",
            "ethtool-m-ens1f1np1",
        ] {
            assert!(names.iter().any(|n| n == want), "{want}: {names:?}");
        }
        assert!(!names.iter().any(|n| n.contains("3b:00.2")), "{names:?}");
        assert_eq!(
            names
                .iter()
                .filter(|n| n.starts_with(ETHTOOL_MODULE))
                .count(),
            2,
            "{names:?}"
        );
    }

    fn tool(name: &str, program: &'static str, args: &[&str]) -> Tool {
        Tool {
            name: name.into(),
            program,
            args: args.iter().map(|a| a.to_string()).collect(),
        }
    }

    /// Each NIC tool that gave nothing is a NotRead naming the fact, the function or netdev
    /// and why; a tool whose output its parser reads is not; the record a snapshot keeps reads
    /// back to the same list.
    #[test]
    fn a_missing_or_failing_nic_tool_is_a_fact_not_read() {
        let mstlink = include_str!(
            "../../../fixtures/commands/mstlink/01-bluefield3-two-ports-module-and-counters-prompts.txt"
        );
        let runs = vec![
            (
                tool(
                    "mstconfig-0000:3b:00.0",
                    "mstconfig",
                    &["-d", "0000:3b:00.0", "q"],
                ),
                ToolOutcome::Missing,
            ),
            (
                tool(
                    "mstlink-0000:3b:00.0",
                    "mstlink",
                    &["-d", "0000:3b:00.0", "-c", "-m"],
                ),
                ToolOutcome::Output {
                    text: mstlink.to_string(),
                    status: Some(0),
                },
            ),
            (
                tool(
                    "mstlink-0000:3b:00.1",
                    "mstlink",
                    &["-d", "0000:3b:00.1", "-c", "-m"],
                ),
                ToolOutcome::Output {
                    text: "-E- Failed to open device: 0000:3b:00.1, Permission denied\n".into(),
                    status: Some(1),
                },
            ),
            (
                tool("ethtool-m-ens1f0np0", "ethtool", &["-m", "ens1f0np0"]),
                ToolOutcome::Empty(Some(1)),
            ),
            (
                tool("ethtool-S-ens1f0np0", "ethtool", &["-S", "ens1f0np0"]),
                ToolOutcome::TimedOut(std::time::Duration::from_secs(5)),
            ),
            (
                tool("ofed_info-s", "ofed_info", &["-s"]),
                ToolOutcome::Missing,
            ),
        ];
        let got = unread_by(&runs);
        let short: Vec<(&str, &str)> = got
            .iter()
            .map(|n| (n.fact.as_str(), n.subject.as_str()))
            .collect();
        assert_eq!(
            short,
            [
                ("nic_firmware", "0000:3b:00.0"),
                ("link_quality", "0000:3b:00.1"),
                ("transceiver", "ens1f0np0"),
                ("nic_stats", "ens1f0np0"),
            ]
        );
        assert!(
            got[0]
                .reason
                .contains("neither mstconfig (mstflint) nor mlxconfig"),
            "{}",
            got[0].reason
        );
        assert!(
            got[1]
                .reason
                .contains("printed nothing fabrik reads: -E- Failed to open device"),
            "{}",
            got[1].reason
        );
        assert!(
            got[2].reason.contains("`ethtool -m ens1f0np0`: exit 1"),
            "{}",
            got[2].reason
        );
        assert!(got[3].reason.contains("timed out"), "{}", got[3].reason);
        assert_eq!(parse_record(&format_record(&got)), got);
    }
}
