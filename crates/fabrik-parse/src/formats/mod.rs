//! Every text format fabrik reads, one module per format, each behind [`Format`]: the files the
//! kernel writes under a root (`/proc/net/route`, `ports/N/rate`...), which the probe reads
//! through the confined reader and hands over as text, and the outputs of the tools around an
//! RDMA node (`ibstat`, `lspci -vvv`, `mstconfig q`...), whether `fabrik snapshot` captured them
//! or a user pasted them. The probe and `fabrik parse` call the same parser for a format.
//!
//! Tool outputs a user may paste also implement [`Paste`]: the facts they give as a partial
//! [`fabrik_model::Node`] (for the doctor's rules) and as a [`fabrik_model::FactTable`]; they
//! are listed, once, in [`paste::Tool`].
//!
//! Parsers are pure functions of their text and never panic; what they cannot read they leave
//! out. They take text as people paste it: with the command line or a prompt in front, quoted
//! (`> `), commented (`# `, ` * `), inside Markdown fences, indented, cut at either end.

use fabrik_model::{FactTable, Node};
use serde::Serialize;

mod addresses;
mod attr;
mod cmdline;
mod fib_trie;
mod if_inet6;
mod limits;
mod modules;
mod nvidia;
mod ofed_info;
mod os_release;
mod pci;
mod proc_version;
mod rate;
mod route;

pub mod dcb;
pub mod dmesg;
pub mod ethtool;
pub mod ethtool_module;
pub mod ibdev2netdev;
pub mod ibdiagnet;
pub mod iblinkinfo;
pub mod ibstat;
pub mod ibstatus;
pub mod ibv_devinfo;
pub mod lspci;
pub mod mlnx_qos;
pub mod mst_status;
pub mod mstconfig;
pub mod mstlink;
pub mod nvidia_smi_topo;
pub mod nvlink;
pub mod paste;
pub mod pci_config;
pub mod rocm_topo;
pub mod show_gids;

pub use addresses::{AddressesFile, IpOAddr};
pub use attr::{Decimal, DecimalOrHex, NumaNode, SysctlTriple};
pub use cmdline::IommuCmdline;
pub use dmesg::Dmesg;
pub use ethtool::{Ethtool, EthtoolStats};
pub use ethtool_module::EthtoolModule;
pub use fib_trie::FibTrieLocal;
pub use ibdev2netdev::Ibdev2netdev;
pub use ibdiagnet::Ibdiagnet;
pub use iblinkinfo::Iblinkinfo;
pub use ibstat::Ibstat;
pub use ibstatus::Ibstatus;
pub use ibv_devinfo::IbvDevinfo;
pub use if_inet6::IfInet6;
pub use limits::ProcLimits;
pub use lspci::Lspci;
pub use mlnx_qos::MlnxQos;
pub use modules::ProcModules;
pub use mst_status::MstStatus;
pub use mstconfig::Mstconfig;
pub use mstlink::Mstlink;
pub use nvidia::{NvidiaGpuInformation, NvidiaVersion, NvidiaVersionFacts};
pub use nvidia_smi_topo::NvidiaSmiTopo;
pub use nvlink::NvlinkStatus;
pub use ofed_info::OfedInfo;
pub use os_release::OsRelease;
pub use pci::{is_bdf, normalize_bdf, AerCounts, AerFile, PciSpeed};
pub use proc_version::ProcVersion;
pub use rate::IbRate;
pub use rocm_topo::RocmTopo;
pub use route::{ProcRoute, RouteEntry};
pub use show_gids::ShowGids;

/// A text format: what a file or a tool's output says, read into `Facts`.
pub trait Format {
    /// What the text says.
    type Facts;
    /// What text of this format looks like, for the error when a text holds none.
    const EXPECTED: &'static str;
    /// Reads `text`; `None` when it holds nothing of this format. Never panics; a line it does
    /// not know is skipped.
    fn parse(text: &str) -> Option<Self::Facts>;
}

/// A tool's output users paste (and `fabrik snapshot` captures): registered in
/// [`paste::Tool`], read by `fabrik parse <NAME>`.
pub trait Paste: Format<Facts: Serialize> {
    /// The tool's name as fabrik reports it (`ibstat`, `ibv_devinfo`).
    const NAME: &'static str;
    /// `fabrik parse` subcommand: the name, `_` written `-`.
    const COMMAND: &'static str = Self::NAME;
    /// Other names the subcommand answers to (`mlxconfig` for `mstconfig`).
    const ALIASES: &'static [&'static str] = &[];
    /// One line of help: the command that prints the text and what fabrik reads in it.
    const ABOUT: &'static str;
    /// The node facts the output gives, for the doctor's rules: a partial node whose
    /// [`Node::known`] lists what it holds.
    fn node(facts: &Self::Facts) -> Node;
    /// The facts laid out for people.
    fn table(facts: &Self::Facts) -> FactTable;
}

/// Most text any of these tools prints for one node; longer input is cut (and said so).
pub const MAX_INPUT: usize = 16 << 20;

/// Removes what a paste puts before the tool's own text: Markdown/e-mail quotes (`> `), shell
/// or C comment markers (`# `, ` * `), in any nesting.
pub fn unquote(line: &str) -> &str {
    let mut t = line;
    // E-mail threads quote a message once per reply: `> > > > > ` is common.
    for _ in 0..8 {
        let s = t.trim_start();
        let next = if let Some(r) = s.strip_prefix('>') {
            r
        } else if let Some(r) = s.strip_prefix("# ").or_else(|| s.strip_prefix("#\t")) {
            r
        } else if s == "#" || s == "*" {
            ""
        } else if let Some(r) = s.strip_prefix("* ").or_else(|| s.strip_prefix("*\t")) {
            r
        } else {
            return t;
        };
        t = next;
    }
    t
}

/// The lines of a paste with quote and comment markers removed (see [`unquote`]); Markdown
/// fences (```` ``` ````, `~~~`) become empty lines.
pub(crate) fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().map(unquote).map(|l| {
        let t = l.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            ""
        } else {
            l
        }
    })
}

/// The value of a `Key: value` line up to a trailing shell comment (`Active # note`).
pub(crate) fn value_word(v: &str) -> Option<&str> {
    let v = v.split(" #").next().unwrap_or(v);
    v.split_whitespace().next()
}

/// A logical port state as a tool prints it (`Active`, `PORT_ACTIVE (4)`, `4: ACTIVE`), with the
/// number the kernel gives it (rdma-core `ibstat.c` and `devinfo.c`, `ib_port_state`).
pub(crate) fn port_state(text: &str) -> fabrik_model::StateValue {
    const NAMES: [(&str, u32, &str); 6] = [
        ("DOWN", 1, "DOWN"),
        ("INIT", 2, "INIT"),
        ("INITIALIZING", 2, "INIT"),
        ("ARMED", 3, "ARMED"),
        ("ACTIVE", 4, "ACTIVE"),
        ("ACTIVE_DEFER", 5, "ACTIVE_DEFER"),
    ];
    state_value(text, "PORT_", &NAMES)
}

/// A physical port state as a tool prints it (`LinkUp`, `LINK_UP (5)`, `5: LinkUp`), with the
/// kernel's number (`ib_port_phys_state`).
pub(crate) fn phys_state(text: &str) -> fabrik_model::StateValue {
    const NAMES: [(&str, u32, &str); 8] = [
        ("SLEEP", 1, "Sleep"),
        ("POLLING", 2, "Polling"),
        ("DISABLED", 3, "Disabled"),
        ("PORTCONFIGURATIONTRAINING", 4, "PortConfigurationTraining"),
        ("LINKUP", 5, "LinkUp"),
        ("LINKERRORRECOVERY", 6, "LinkErrorRecovery"),
        ("PHYTEST", 7, "PhyTest"),
        ("PHY TEST", 7, "PhyTest"),
    ];
    state_value(text, "", &NAMES)
}

fn state_value(text: &str, prefix: &str, names: &[(&str, u32, &str)]) -> fabrik_model::StateValue {
    let t = text.trim();
    if t.split_once(':')
        .is_some_and(|(n, _)| n.trim().parse::<u32>().is_ok())
    {
        return fabrik_model::StateValue::parse(t);
    }
    // `PORT_ACTIVE (4)`: the number in parentheses is the kernel's.
    let (word, code) = match t.split_once('(') {
        Some((w, rest)) => (
            w.trim(),
            rest.trim_end_matches(')').trim().parse::<u32>().ok(),
        ),
        None => (t, None),
    };
    let key = word.to_ascii_uppercase().replace('_', "");
    let key = key.strip_prefix(&prefix.replace('_', "")).unwrap_or(&key);
    let known = names.iter().find(|(n, _, _)| n.replace('_', "") == key);
    match known {
        Some((_, c, name)) => fabrik_model::StateValue {
            code: code.or(Some(*c)),
            name: name.to_string(),
        },
        None => fabrik_model::StateValue {
            code,
            name: word.to_string(),
        },
    }
}

/// `Some(v)` when `v` is not empty: a list a parser found nothing for is no facts.
pub(crate) fn non_empty<T>(v: Vec<T>) -> Option<Vec<T>> {
    (!v.is_empty()).then_some(v)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn quotes_and_comment_markers() {
        assert_eq!(unquote("> GPU0\tX"), " GPU0\tX");
        assert_eq!(unquote(" * mlx5_0\t1\t3"), "mlx5_0\t1\t3");
        assert_eq!(unquote("# GPU0 X"), "GPU0 X");
        assert_eq!(unquote("CA 'mlx5_0'"), "CA 'mlx5_0'");
        assert_eq!(value_word(" Active # comment"), Some("Active"));
        use fabrik_model::{PhysState, PortState};
        for (t, want) in [
            ("Active", PortState::Active),
            ("PORT_ACTIVE (4)", PortState::Active),
            ("4: ACTIVE", PortState::Active),
            ("Initializing", PortState::Init),
            ("PORT_INIT (2)", PortState::Init),
            ("Down", PortState::Down),
            ("Armed", PortState::Armed),
            ("weird", PortState::Unknown),
        ] {
            assert_eq!(port_state(t).port_state(), want, "{t}");
        }
        for (t, want) in [
            ("LinkUp", PhysState::LinkUp),
            ("LINK_UP (5)", PhysState::LinkUp),
            ("5: LinkUp", PhysState::LinkUp),
            ("Polling", PhysState::Polling),
            ("DISABLED (3)", PhysState::Disabled),
            ("LinkErrorRecovery", PhysState::LinkErrorRecovery),
        ] {
            assert_eq!(phys_state(t).phys_state(), want, "{t}");
        }
        let l: Vec<&str> = lines("```\n> a\n~~~text\n").collect();
        assert_eq!(l, ["", " a", ""]);
    }
}
