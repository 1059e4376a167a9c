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

use fabrik_model::Source;
use serde::{Deserialize, Serialize};

mod firmware;
pub mod rules;

pub use rules::{plan_finding, remedy, table_markdown, Class, Planned, Remedy, Target, REMEDIES};

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

const IP_LINK: Source = Source {
    title: "ip-link(8): ip link set DEVICE mtu MTU",
    url: "https://man7.org/linux/man-pages/man8/ip-link.8.html",
};
const UDEV: Source = Source {
    title: "udev(7): NAME== match and ATTR{file}= assignment of sysfs attributes",
    url: "https://man7.org/linux/man-pages/man7/udev.7.html",
};
const SYSCTL_D: Source = Source {
    title: "sysctl.d(5): kernel parameters applied at boot from /etc/sysctl.d/*.conf",
    url: "https://man7.org/linux/man-pages/man5/sysctl.d.5.html",
};
const MODULES_LOAD_D: Source = Source {
    title: "modules-load.d(5): modules loaded at boot from /etc/modules-load.d/*.conf",
    url: "https://man7.org/linux/man-pages/man5/modules-load.d.5.html",
};
const LIMITS_CONF: Source = Source {
    title: "limits.conf(5): pam_limits; wildcard limits are not applied to root, which needs its own line",
    url: "https://man7.org/linux/man-pages/man5/limits.conf.5.html",
};
const SYSTEMD_SYSTEM_CONF: Source = Source {
    title: "systemd-system.conf(5): DefaultLimitMEMLOCK= for services",
    url: "https://man7.org/linux/man-pages/man5/systemd-system.conf.5.html",
};
const NCCL_ACS: Source = Source {
    title: "NCCL Troubleshooting: PCI Access Control Services (setpci -s BDF ECAP_ACS+0x6.w=0000)",
    url: "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#pci-access-control-services-acs",
};
const NCCL_LIMITS: Source = Source {
    title: "NCCL Troubleshooting: InfiniBand, memlock limits (ulimit -l unlimited)",
    url: "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html",
};
const MLNX_QOS: Source = Source {
    title: "NVIDIA MLNX_EN: Quality of Service, mlnx_qos (--pfc, --trust)",
    url: "https://docs.nvidia.com/networking/display/mlnxenv23106161lts/quality-of-service-(qos)",
};
const MLX5_ECN: Source = Source {
    title: "NVIDIA MLNX_OFED: ECN, echo 1 > /sys/class/net/<interface>/ecn/<roce_np|roce_rp>/enable/<priority>",
    url: "https://docs.nvidia.com/networking/display/mlnxofedv23041130/explicit+congestion+notification+(ecn)",
};
const MSTCONFIG: Source = Source {
    title: "mstflint: mstconfig -d DEVICE set PARAM=VALUE (firmware NV settings, applied at firmware reset)",
    url: "https://github.com/Mellanox/mstflint",
};
const GPU_OPERATOR_PEERMEM: Source = Source {
    title: "NVIDIA GPU Operator: GPUDirect RDMA, the nvidia-peermem module",
    url:
        "https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/gpu-operator-rdma.html",
};
const KERNEL_NEIGH: Source = Source {
    title: "Linux kernel: ip-sysctl, neigh/default/gc_thresh1-3",
    url: "https://docs.kernel.org/networking/ip-sysctl.html",
};

/// The limits.d file [`Change::Memlock`] writes.
pub const MEMLOCK_LIMITS_FILE: &str = "/etc/security/limits.d/90-fabrik-memlock.conf";
/// The systemd drop-in [`Change::Memlock`] writes, for services.
pub const MEMLOCK_SYSTEMD_FILE: &str = "/etc/systemd/system.conf.d/90-fabrik-memlock.conf";

impl Change {
    /// A short name of the setting, for tables (`mtu of eth2`).
    pub fn setting(&self) -> String {
        match self {
            Change::Mtu { netdev, .. } => format!("MTU of {netdev}"),
            Change::Sysctl { key, .. } => key.clone(),
            Change::Module { name } => format!("module {name}"),
            Change::NetdevAttr { netdev, attr, .. } => format!("{attr} of {netdev}"),
            Change::Memlock => "max locked memory of new sessions".into(),
            Change::Qos { netdev, .. } => format!("PFC and trust of {netdev}"),
            Change::AcsOff { bridge } => format!("ACS control of bridge {bridge}"),
            Change::Firmware { device, key, .. } => format!("firmware {key} of {device}"),
        }
    }

    /// The value the change sets, as shown beside the previous one.
    pub fn target(&self) -> String {
        match self {
            Change::Mtu { mtu, .. } => mtu.to_string(),
            Change::Sysctl { value, .. } | Change::NetdevAttr { value, .. } => value.clone(),
            Change::Module { .. } => "loaded".into(),
            Change::Memlock => "unlimited".into(),
            Change::Qos { pfc, trust, .. } => format!("pfc {} trust {trust}", pfc_vector(pfc)),
            Change::AcsOff { .. } => "0000".into(),
            Change::Firmware { value, .. } => value.clone(),
        }
    }

    /// Whether the change may be made while jobs run.
    pub fn risk(&self) -> Risk {
        match self {
            // An MTU change re-creates the NIC's queues (traffic stops for a moment) and a
            // peer or switch port still at the old MTU drops the larger frames.
            Change::Mtu { .. } => Risk::NeedsDrain,
            // New PFC or trust settings move traffic between queues while it flows.
            Change::Qos { .. } => Risk::NeedsDrain,
            // Peer-to-peer DMA in flight changes route under a running job.
            Change::AcsOff { .. } => Risk::NeedsDrain,
            // The firmware reset that applies it takes the NIC down.
            Change::Firmware { .. } => Risk::NeedsDrain,
            Change::Sysctl { .. }
            | Change::Module { .. }
            | Change::NetdevAttr { .. }
            | Change::Memlock => Risk::SafeLive,
        }
    }

    /// When the change takes effect.
    pub fn takes(&self) -> Takes {
        match self {
            Change::Memlock => Takes::NewSessions,
            Change::Firmware { .. } => Takes::FirmwareReset,
            _ => Takes::Now,
        }
    }

    /// How its current value is read back.
    pub fn read(&self) -> Read {
        match self {
            Change::Mtu { netdev, .. } => Read::File {
                path: format!("/sys/class/net/{netdev}/mtu"),
            },
            Change::Sysctl { key, .. } => Read::File {
                path: sysctl_path(key),
            },
            Change::Module { name } => Read::Exists {
                path: format!("/sys/module/{name}"),
            },
            Change::NetdevAttr { netdev, attr, .. } => Read::File {
                path: format!("/sys/class/net/{netdev}/{attr}"),
            },
            Change::Firmware { device, key, .. } => Read::Mstconfig {
                device: device.clone(),
                key: key.clone(),
            },
            Change::Memlock | Change::Qos { .. } | Change::AcsOff { .. } => Read::Probed,
        }
    }

    /// The operations that make the change now.
    pub fn apply(&self) -> Vec<Op> {
        match self {
            Change::Mtu { netdev, mtu } => {
                vec![Op::run(&[
                    "ip",
                    "link",
                    "set",
                    "dev",
                    netdev,
                    "mtu",
                    &mtu.to_string(),
                ])]
            }
            Change::Sysctl { key, value } => {
                vec![Op::run(&["sysctl", "-w", &format!("{key}={value}")])]
            }
            Change::Module { name } => vec![Op::run(&["modprobe", name])],
            Change::NetdevAttr {
                netdev,
                attr,
                value,
            } => vec![Op::Write {
                path: format!("/sys/class/net/{netdev}/{attr}"),
                value: value.clone(),
            }],
            // Limits are inherited: nothing running can be changed from outside it.
            Change::Memlock => vec![],
            Change::Qos { netdev, pfc, trust } => vec![Op::run(&[
                "mlnx_qos",
                "-i",
                netdev,
                "--pfc",
                &pfc_vector(pfc),
                "--trust",
                trust,
            ])],
            Change::AcsOff { bridge } => {
                vec![Op::run(&["setpci", "-s", bridge, "ECAP_ACS+0x6.w=0000"])]
            }
            Change::Firmware { device, key, value } => vec![Op::run(&[
                "mstconfig",
                "-y",
                "-d",
                device,
                "set",
                &format!("{key}={value}"),
            ])],
        }
    }

    /// The operations that put `previous` back (the value the change replaced, as [`Read`]
    /// or the probe gave it). `None` when it cannot be undone from that value.
    pub fn undo(&self, previous: &str) -> Option<Vec<Op>> {
        Some(match self {
            Change::Mtu { netdev, .. } => {
                let mtu: u32 = previous.trim().parse().ok()?;
                vec![Op::run(&[
                    "ip",
                    "link",
                    "set",
                    "dev",
                    netdev,
                    "mtu",
                    &mtu.to_string(),
                ])]
            }
            Change::Sysctl { key, .. } => {
                vec![Op::run(&[
                    "sysctl",
                    "-w",
                    &format!("{key}={}", previous.trim()),
                ])]
            }
            Change::Module { name } => match previous {
                "loaded" => vec![],
                _ => vec![Op::run(&["modprobe", "-r", name])],
            },
            Change::NetdevAttr { netdev, attr, .. } => vec![Op::Write {
                path: format!("/sys/class/net/{netdev}/{attr}"),
                value: previous.trim().to_string(),
            }],
            Change::Memlock => vec![],
            Change::Qos { netdev, .. } => {
                let (pfc, trust) = parse_qos_value(previous)?;
                vec![Op::run(&[
                    "mlnx_qos",
                    "-i",
                    netdev,
                    "--pfc",
                    &pfc_vector(&pfc),
                    "--trust",
                    &trust,
                ])]
            }
            Change::AcsOff { bridge } => {
                let word = u16::from_str_radix(previous.trim(), 16).ok()?;
                vec![Op::run(&[
                    "setpci",
                    "-s",
                    bridge,
                    &format!("ECAP_ACS+0x6.w={word:04x}"),
                ])]
            }
            Change::Firmware { device, key, .. } => {
                let v = previous.trim();
                if v.is_empty() || v.contains(char::is_whitespace) {
                    return None;
                }
                vec![Op::run(&[
                    "mstconfig",
                    "-y",
                    "-d",
                    device,
                    "set",
                    &format!("{key}={v}"),
                ])]
            }
        })
    }

    /// The files that keep the change across reboots.
    pub fn persist(&self) -> Vec<PersistFile> {
        let udev = |netdev: &str, what: &str, assign: String| PersistFile {
            path: format!("/etc/udev/rules.d/90-fabrik-{what}-{netdev}.rules"),
            lines: vec![
                "# Written by fabrik fix.".into(),
                format!("ACTION==\"add\", SUBSYSTEM==\"net\", NAME==\"{netdev}\", {assign}"),
            ],
            then: vec![argv(&["udevadm", "control", "--reload"])],
            undo_then: vec![argv(&["udevadm", "control", "--reload"])],
        };
        let unit = |name: String, description: &str, exec: Vec<String>| PersistFile {
            path: format!("/etc/systemd/system/{name}"),
            lines: vec![
                "# Written by fabrik fix.".into(),
                "[Unit]".into(),
                format!("Description={description}"),
                "After=network-pre.target".into(),
                String::new(),
                "[Service]".into(),
                "Type=oneshot".into(),
                format!("ExecStart={}", exec.join(" ")),
                String::new(),
                "[Install]".into(),
                "WantedBy=multi-user.target".into(),
            ],
            then: vec![
                argv(&["systemctl", "daemon-reload"]),
                argv(&["systemctl", "enable", &name]),
            ],
            undo_then: vec![argv(&["systemctl", "disable", &name])],
        };
        match self {
            Change::Mtu { netdev, mtu } => {
                vec![udev(netdev, "mtu", format!("ATTR{{mtu}}=\"{mtu}\""))]
            }
            Change::NetdevAttr {
                netdev,
                attr,
                value,
            } => vec![udev(
                netdev,
                &attr.replace('/', "-"),
                format!("ATTR{{{attr}}}=\"{value}\""),
            )],
            Change::Sysctl { key, value } => vec![PersistFile {
                path: format!("/etc/sysctl.d/90-fabrik-{key}.conf"),
                lines: vec![
                    "# Written by fabrik fix.".into(),
                    format!("{key} = {value}"),
                ],
                then: vec![],
                undo_then: vec![],
            }],
            Change::Module { name } => vec![PersistFile {
                path: format!("/etc/modules-load.d/fabrik-{name}.conf"),
                lines: vec!["# Written by fabrik fix.".into(), name.clone()],
                then: vec![],
                undo_then: vec![],
            }],
            Change::Memlock => vec![
                PersistFile {
                    path: MEMLOCK_LIMITS_FILE.into(),
                    lines: vec![
                        "# Written by fabrik fix: RDMA registration pins memory.".into(),
                        "*    soft memlock unlimited".into(),
                        "*    hard memlock unlimited".into(),
                        "root soft memlock unlimited".into(),
                        "root hard memlock unlimited".into(),
                    ],
                    then: vec![],
                    undo_then: vec![],
                },
                PersistFile {
                    path: MEMLOCK_SYSTEMD_FILE.into(),
                    lines: vec![
                        "# Written by fabrik fix: RDMA registration pins memory.".into(),
                        "[Manager]".into(),
                        "DefaultLimitMEMLOCK=infinity".into(),
                    ],
                    then: vec![],
                    undo_then: vec![],
                },
            ],
            Change::Qos { netdev, pfc, trust } => vec![unit(
                format!("fabrik-qos-{netdev}.service"),
                "PFC and trust for RoCE (fabrik fix)",
                vec![
                    "/usr/bin/mlnx_qos".into(),
                    "-i".into(),
                    netdev.clone(),
                    "--pfc".into(),
                    pfc_vector(pfc),
                    "--trust".into(),
                    trust.clone(),
                ],
            )],
            Change::AcsOff { bridge } => vec![unit(
                format!("fabrik-acs-{}.service", bridge.replace(':', "-")),
                "ACS redirect off between GPUs and NICs (fabrik fix)",
                vec![
                    "/usr/bin/setpci".into(),
                    "-s".into(),
                    bridge.clone(),
                    "ECAP_ACS+0x6.w=0000".into(),
                ],
            )],
            // The NIC keeps its NV configuration itself.
            Change::Firmware { .. } => vec![],
        }
    }

    /// What else the operator must do for the change to take effect.
    pub fn then(&self) -> Option<String> {
        match self {
            Change::Memlock => Some("log in again and restart the job launcher (slurmd, the container runtime) so new processes get the limit; `systemctl daemon-reexec` applies DefaultLimitMEMLOCK to services".into()),
            Change::Firmware { device, .. } => Some(format!("reset the NIC's firmware (`mstfwreset -d {device} -y reset`) or reboot the node")),
            Change::Mtu { .. } => Some("the switch ports and every peer must carry the same MTU".into()),
            Change::Qos { .. } => Some("the switches must use the same PFC priority and trust; set NCCL_IB_TC to the matching traffic class".into()),
            _ => None,
        }
    }

    /// The public pages the commands and files come from.
    pub fn sources(&self) -> &'static [Source] {
        match self {
            Change::Mtu { .. } => &[IP_LINK, UDEV],
            Change::Sysctl { .. } => &[KERNEL_NEIGH, SYSCTL_D],
            Change::Module { .. } => &[GPU_OPERATOR_PEERMEM, MODULES_LOAD_D],
            Change::NetdevAttr { .. } => &[MLX5_ECN, UDEV],
            Change::Memlock => &[NCCL_LIMITS, LIMITS_CONF, SYSTEMD_SYSTEM_CONF],
            Change::Qos { .. } => &[MLNX_QOS],
            Change::AcsOff { .. } => &[NCCL_ACS],
            Change::Firmware { .. } => &[MSTCONFIG],
        }
    }

    /// The texts of the change that come from the node (names, paths, values), which every
    /// renderer must carry as data: the quoting layers check them.
    pub fn data(&self) -> Vec<&str> {
        match self {
            Change::Mtu { netdev, .. } => vec![netdev],
            Change::Sysctl { key, value } => vec![key, value],
            Change::Module { name } => vec![name],
            Change::NetdevAttr {
                netdev,
                attr,
                value,
            } => vec![netdev, attr, value],
            Change::Memlock => vec![],
            Change::Qos { netdev, trust, .. } => vec![netdev, trust],
            Change::AcsOff { bridge } => vec![bridge],
            Change::Firmware { device, key, value } => vec![device, key, value],
        }
    }
}

/// Why a change cannot be written into a command, a file name, a udev rule or a unit file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} `{}` holds characters fabrik does not write into commands or configuration files", .value.escape_debug())]
pub struct Unsafe {
    /// Which field.
    pub what: &'static str,
    /// Its value.
    pub value: String,
}

/// A name (netdev, module, PCI address, firmware key) fabrik writes into file names, udev rules
/// and unit files: Linux netdev names are at most 15 bytes without `/`, whitespace or `:`
/// (`dev_valid_name`), module names are identifiers, PCI addresses hex with `:` and `.`.
fn name_ok(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s != "."
        && s != ".."
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-:@+".contains(c))
}

fn value_ok(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
}

impl Change {
    /// Refuses a change whose names or values could be read as syntax by a shell, udev,
    /// systemd or a path: only the plain characters real names use pass.
    pub fn check(&self) -> Result<(), Unsafe> {
        let bad = |what: &'static str, value: &str| Unsafe {
            what,
            value: value.to_string(),
        };
        let name = |what, v: &str| {
            if name_ok(v) {
                Ok(())
            } else {
                Err(bad(what, v))
            }
        };
        let value = |what, v: &str| {
            if value_ok(v) {
                Ok(())
            } else {
                Err(bad(what, v))
            }
        };
        match self {
            Change::Mtu { netdev, .. } => name("netdev", netdev),
            Change::Sysctl { key, value: v } => {
                if !(key.starts_with("net.")
                    && key
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._".contains(c)))
                {
                    return Err(bad("sysctl", key));
                }
                // A vector sysctl (`tcp_rmem`: min default max) is numbers and single spaces.
                let numbers = v.len() <= 64
                    && v.split(' ')
                        .all(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_digit()));
                if numbers {
                    Ok(())
                } else {
                    value("sysctl value", v)
                }
            }
            Change::Module { name: m } => {
                if m.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !m.is_empty() {
                    Ok(())
                } else {
                    Err(bad("module", m))
                }
            }
            Change::NetdevAttr {
                netdev,
                attr,
                value: v,
            } => {
                name("netdev", netdev)?;
                let parts: Vec<&str> = attr.split('/').collect();
                let ok = matches!(parts.as_slice(), ["ecn", "roce_np" | "roce_rp", "enable", p] if p.len() == 1 && p.as_bytes()[0].is_ascii_digit() && p.as_bytes()[0] < b'8');
                if !ok {
                    return Err(bad("attribute", attr));
                }
                value("value", v)
            }
            Change::Memlock => Ok(()),
            Change::Qos { netdev, pfc, trust } => {
                name("netdev", netdev)?;
                if pfc.iter().any(|p| *p > 7) || !matches!(trust.as_str(), "dscp" | "pcp") {
                    return Err(bad("trust", trust));
                }
                Ok(())
            }
            Change::AcsOff { bridge } => name("PCI address", bridge),
            Change::Firmware {
                device,
                key,
                value: v,
            } => {
                name("PCI address", device)?;
                value("firmware setting", key)?;
                value("firmware value", v)
            }
        }
    }
}

/// The path that exists while the service a `then` command talks to runs: udevd's control
/// socket (what `udevadm control` connects to), and systemd's runtime directory (`sd_booted(3)`:
/// systemd is the init). Where it is absent the command would fail and there is nothing to tell:
/// the file written takes effect when the service starts, at boot.
pub fn service_marker(program: &str) -> Option<&'static str> {
    match program {
        "udevadm" => Some("/run/udev/control"),
        "systemctl" => Some("/run/systemd/system"),
        _ => None,
    }
}

fn argv(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

/// `/proc/sys/` path of a dotted sysctl name, as sysctl(8) maps it.
pub fn sysctl_path(key: &str) -> String {
    format!("/proc/sys/{}", key.replace('.', "/"))
}

/// mlnx_qos's `--pfc` argument: eight 0/1 flags, priority 0 first.
pub fn pfc_vector(pfc: &[u8]) -> String {
    (0..8u8)
        .map(|p| if pfc.contains(&p) { "1" } else { "0" })
        .collect::<Vec<_>>()
        .join(",")
}

/// The previous-value text of a [`Change::Qos`]: `pfc 0,0,0,1,0,0,0,0 trust dscp`.
pub fn qos_value(pfc: &[u8], trust: &str) -> String {
    format!("pfc {} trust {trust}", pfc_vector(pfc))
}

fn parse_qos_value(text: &str) -> Option<(Vec<u8>, String)> {
    let mut words = text.split_whitespace();
    if words.next()? != "pfc" {
        return None;
    }
    let flags = words.next()?;
    if words.next()? != "trust" {
        return None;
    }
    let trust = words.next()?.to_string();
    let mut pfc = vec![];
    for (i, f) in flags.split(',').enumerate() {
        match (i, f) {
            (0..=7, "1") => pfc.push(i as u8),
            (0..=7, "0") => {}
            _ => return None,
        }
    }
    Some((pfc, trust))
}

/// The ACS control word (`ECAP_ACS+0x6.w`) of the flags `lspci -vvv` prints enabled on its
/// ACSCtl line (pciutils' ls-ecaps.c prints the bits of PCI_ACS_CTRL in this order).
pub fn acs_word(enabled: &[String]) -> u16 {
    const BITS: [(&str, u16); 7] = [
        ("SrcValid", 0x01),
        ("TransBlk", 0x02),
        ("ReqRedir", 0x04),
        ("CmpltRedir", 0x08),
        ("UpstreamFwd", 0x10),
        ("EgressCtrl", 0x20),
        ("DirectTrans", 0x40),
    ];
    BITS.iter()
        .filter(|(name, _)| enabled.iter().any(|e| e == name))
        .map(|(_, bit)| bit)
        .fold(0, |a, b| a | b)
}

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
        assert!(ok.check().is_ok());
        for bad in [
            "x\\", "a\"b", "x\nRUN", "../x", "a b", "$(id)", "", "x;y", "..",
        ] {
            let c = Change::Mtu {
                netdev: bad.into(),
                mtu: 9000,
            };
            assert!(c.check().is_err(), "{bad:?}");
        }
        let attr = Change::NetdevAttr {
            netdev: "eth0".into(),
            attr: "ecn/roce_np/enable/8".into(),
            value: "1".into(),
        };
        assert!(attr.check().is_err());
        let sysctl = Change::Sysctl {
            key: "kernel.core_pattern".into(),
            value: "x".into(),
        };
        assert!(sysctl.check().is_err());
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
