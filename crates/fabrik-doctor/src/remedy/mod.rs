//! Remediations: for each rule whose fix is a configuration change, the change itself, typed.
//!
//! A [`Change`] is one setting on one node (an interface's MTU, a sysctl, a loaded module, a
//! sysfs value, the memlock limit of new sessions, PFC and trust, ACS on a bridge, a firmware
//! setting). It knows the commands that make it now, the files that keep it across reboots,
//! how its current value is read back, how it is undone given the value it replaced, the risk of
//! making it on a node that runs jobs, and when it takes effect. [`rules::REMEDIES`] maps a rule
//! to the changes its findings call for; a rule that is not there has no safe automatic fix and
//! keeps the sentence of its catalog page.
//!
//! Everything here is data and pure functions: `fabrik-fix` plans, renders and applies.
//! Commands and values come from the public sources each change cites.

use serde::{Deserialize, Serialize};

mod effects;
mod firmware;
mod plan;
pub mod rules;
mod safety;

pub use effects::{acs_word, pfc_vector, qos_value, service_marker, sysctl_path};
pub use plan::{Planned, Target};
pub use rules::{plan_finding, remedy, table_markdown, Class, Remedy, REMEDIES};
pub use safety::Unsafe;

/// Whether a change may be made while jobs run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    /// Safe on a node that runs jobs: nothing in flight notices.
    SafeLive,
    /// Drain the node first: the change interrupts traffic or DMA in flight.
    NeedsDrain,
}

/// When a change takes effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Takes {
    /// At once, for everything on the node.
    Now,
    /// For sessions and services started after it (limits are inherited from the parent).
    NewSessions,
    /// After the NIC's firmware is reset (`mstfwreset`) or the node reboots.
    FirmwareReset,
}

/// How a change's current value is read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Read {
    /// A one-value file (sysfs, procfs): its first line.
    File {
        /// Absolute path on the node.
        path: String,
    },
    /// Whether a directory exists (`/sys/module/NAME`): `loaded` or `not loaded`.
    Exists {
        /// Absolute path on the node.
        path: String,
    },
    /// `mstconfig -d DEVICE query KEY`: the number in parentheses after the value's name.
    Mstconfig {
        /// PCI address.
        device: String,
        /// Setting.
        key: String,
    },
    /// Only a tool shows it; the plan carries the value probed.
    Probed,
}

/// The value of `key` in `mstconfig -d DEV query KEY` output (`PCI_WR_ORDERING   per_mkey(0)`
/// gives `0`; a plain `False(0)` or a number alone likewise), as mstflint prints its
/// configuration table.
pub fn parse_mstconfig_query(text: &str, key: &str) -> Option<String> {
    for line in text.lines() {
        let mut words = line.split_whitespace();
        if words.next() != Some(key) {
            continue;
        }
        let value = words.next()?;
        let plain = |t: &str| t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        let inner = match (value.find('('), value.ends_with(')')) {
            (Some(open), true) if plain(&value[..open]) => &value[open + 1..value.len() - 1],
            (Some(_), _) => return None,
            _ => value,
        };
        return (!inner.is_empty() && plain(inner)).then(|| inner.to_string());
    }
    None
}

/// One operation of a change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Op {
    /// Run a program with these arguments (no shell).
    Run {
        /// Program and arguments.
        argv: Vec<String>,
    },
    /// Write `value` and a newline into a kernel file.
    Write {
        /// Absolute path on the node.
        path: String,
        /// What to write.
        value: String,
    },
}

impl Op {
    fn run(argv: &[&str]) -> Op {
        Op::Run {
            argv: argv.iter().map(|s| s.to_string()).collect(),
        }
    }
}

/// A file that makes a change last across reboots.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PersistFile {
    /// Absolute path on the node.
    pub path: String,
    /// Its lines.
    pub lines: Vec<String>,
    /// Commands that make the system read it (`udevadm control --reload`, `systemctl enable`).
    pub then: Vec<Vec<String>>,
    /// Commands that undo `then` before the file is removed (`systemctl disable`).
    pub undo_then: Vec<Vec<String>>,
}

/// One setting on one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    /// An interface's MTU.
    Mtu {
        /// The netdev.
        netdev: String,
        /// The MTU to set.
        mtu: u32,
    },
    /// A kernel parameter (`net.ipv4.neigh.default.gc_thresh3`).
    Sysctl {
        /// Dotted name.
        key: String,
        /// Value.
        value: String,
    },
    /// A kernel module loaded now and at boot.
    Module {
        /// Module name.
        name: String,
    },
    /// A one-value sysfs file of a netdev (the RoCE ECN enables).
    NetdevAttr {
        /// The netdev.
        netdev: String,
        /// The file under `/sys/class/net/<netdev>/` (`ecn/roce_np/enable/3`).
        attr: String,
        /// Value.
        value: String,
    },
    /// Locked memory unlimited for new sessions and services.
    Memlock,
    /// PFC priorities and trust state of a RoCE interface, through `mlnx_qos`.
    Qos {
        /// The netdev.
        netdev: String,
        /// Priorities with PFC on.
        pfc: Vec<u8>,
        /// `dscp` or `pcp`.
        trust: String,
    },
    /// ACS control of a PCIe bridge cleared (`setpci ... ECAP_ACS+0x6.w=0000`).
    AcsOff {
        /// The bridge's PCI address.
        bridge: String,
    },
    /// A firmware setting of a Mellanox/NVIDIA NIC through `mstconfig`.
    Firmware {
        /// The PCI address of the physical function.
        device: String,
        /// The setting (`PCI_WR_ORDERING`).
        key: String,
        /// Its value.
        value: String,
    },
}

/// The limits.d file [`Change::Memlock`] writes.
pub const MEMLOCK_LIMITS_FILE: &str = "/etc/security/limits.d/90-fabrik-memlock.conf";
/// The systemd drop-in [`Change::Memlock`] writes, for services.
pub const MEMLOCK_SYSTEMD_FILE: &str = "/etc/systemd/system.conf.d/90-fabrik-memlock.conf";

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn undo_puts_back_the_value_read() {
        let c = Change::Mtu {
            netdev: "eth2".into(),
            mtu: 9000,
        };
        assert_eq!(
            c.undo("1500\n").unwrap(),
            vec![Op::run(&[
                "ip", "link", "set", "dev", "eth2", "mtu", "1500"
            ])]
        );
        assert!(c.undo("garbage").is_none());
        let q = Change::Qos {
            netdev: "eth2".into(),
            pfc: vec![3],
            trust: "dscp".into(),
        };
        assert_eq!(q.target(), "pfc 0,0,0,1,0,0,0,0 trust dscp");
        assert_eq!(
            q.undo(&qos_value(&[], "pcp")).unwrap(),
            vec![Op::run(&[
                "mlnx_qos",
                "-i",
                "eth2",
                "--pfc",
                "0,0,0,0,0,0,0,0",
                "--trust",
                "pcp"
            ])]
        );
        let m = Change::Module {
            name: "ib_uverbs".into(),
        };
        assert!(m.undo("loaded").unwrap().is_empty());
        assert_eq!(
            m.undo("not loaded").unwrap(),
            vec![Op::run(&["modprobe", "-r", "ib_uverbs"])]
        );
    }

    #[test]
    fn acs_word_follows_pciutils_bit_order() {
        let flags: Vec<String> = ["SrcValid", "ReqRedir", "CmpltRedir", "UpstreamFwd"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(acs_word(&flags), 0x1d);
        let a = Change::AcsOff {
            bridge: "0000:02:00.0".into(),
        };
        assert_eq!(
            a.undo("001d").unwrap(),
            vec![Op::run(&[
                "setpci",
                "-s",
                "0000:02:00.0",
                "ECAP_ACS+0x6.w=001d"
            ])]
        );
    }

    #[test]
    fn mstconfig_query_values() {
        let out = "Device #1:\n----------\n\nDevice type:    ConnectX7\nConfigurations:                              Next Boot\n         PCI_WR_ORDERING                     per_mkey(0)\n";
        assert_eq!(parse_mstconfig_query(out, "PCI_WR_ORDERING").unwrap(), "0");
        assert!(parse_mstconfig_query(out, "ATS_ENABLED").is_none());
        assert!(
            parse_mstconfig_query("         PCI_WR_ORDERING   $(x)\n", "PCI_WR_ORDERING").is_none()
        );
    }

    #[test]
    fn check_refuses_syntax_in_names() {
        let ok = Change::Mtu {
            netdev: "ens1f0np0".into(),
            mtu: 9000,
        };
        assert_eq!(ok.check(), Ok(()));
        for bad in [
            "x\\", "a\"b", "x\nRUN", "../x", "a b", "$(id)", "", "x;y", "..",
        ] {
            let c = Change::Mtu {
                netdev: bad.into(),
                mtu: 9000,
            };
            let refused = c.check().unwrap_err();
            assert_eq!((refused.what, refused.value.as_str()), ("netdev", bad));
        }
        let attr = Change::NetdevAttr {
            netdev: "eth0".into(),
            attr: "ecn/roce_np/enable/8".into(),
            value: "1".into(),
        };
        assert_eq!(attr.check().unwrap_err().what, "attribute");
        let sysctl = Change::Sysctl {
            key: "kernel.core_pattern".into(),
            value: "x".into(),
        };
        let refused = sysctl.check().unwrap_err();
        assert_eq!(
            (refused.what, refused.value.as_str()),
            ("sysctl", "kernel.core_pattern")
        );
    }

    #[test]
    fn root_gets_its_own_memlock_lines() {
        let f = &Change::Memlock.persist()[0];
        assert!(f
            .lines
            .iter()
            .any(|l| l.starts_with("root soft memlock unlimited")));
        assert!(f
            .lines
            .iter()
            .any(|l| l.starts_with("*    hard memlock unlimited")));
    }
}
