//! What a [`Change`] does: the commands that make it now, the files that keep it across
//! reboots, how its value is read back and put back, its risk, when it takes effect and the
//! sources that say so.

use fabrik_model::Source;

use super::*;

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
            Change::Mtu { netdev, mtu } => vec![set_mtu(netdev, *mtu)],
            Change::Sysctl { key, value } => vec![set_sysctl(key, value)],
            Change::Module { name } => vec![Op::run(&["modprobe", name])],
            Change::NetdevAttr {
                netdev,
                attr,
                value,
            } => vec![write_attr(netdev, attr, value)],
            // Limits are inherited: nothing running can be changed from outside it.
            Change::Memlock => vec![],
            Change::Qos { netdev, pfc, trust } => vec![set_qos(netdev, pfc, trust)],
            Change::AcsOff { bridge } => {
                vec![Op::run(&["setpci", "-s", bridge, "ECAP_ACS+0x6.w=0000"])]
            }
            Change::Firmware { device, key, value } => vec![set_firmware(device, key, value)],
        }
    }

    /// The operations that put `previous` back (the value the change replaced, as [`Read`]
    /// or the probe gave it). `None` when it cannot be undone from that value.
    pub fn undo(&self, previous: &str) -> Option<Vec<Op>> {
        Some(match self {
            Change::Mtu { netdev, .. } => {
                let mtu: u32 = previous.trim().parse().ok()?;
                vec![set_mtu(netdev, mtu)]
            }
            Change::Sysctl { key, .. } => vec![set_sysctl(key, previous.trim())],
            Change::Module { name } => match previous {
                "loaded" => vec![],
                _ => vec![Op::run(&["modprobe", "-r", name])],
            },
            Change::NetdevAttr { netdev, attr, .. } => {
                vec![write_attr(netdev, attr, previous.trim())]
            }
            Change::Memlock => vec![],
            Change::Qos { netdev, .. } => {
                let (pfc, trust) = parse_qos_value(previous)?;
                vec![set_qos(netdev, &pfc, &trust)]
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
                vec![set_firmware(device, key, v)]
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

// One home per command line: a change is made and undone by the same command with another value.
fn set_mtu(netdev: &str, mtu: u32) -> Op {
    Op::run(&["ip", "link", "set", "dev", netdev, "mtu", &mtu.to_string()])
}

fn set_sysctl(key: &str, value: &str) -> Op {
    Op::run(&["sysctl", "-w", &format!("{key}={value}")])
}

fn write_attr(netdev: &str, attr: &str, value: &str) -> Op {
    Op::Write {
        path: format!("/sys/class/net/{netdev}/{attr}"),
        value: value.to_string(),
    }
}

fn set_qos(netdev: &str, pfc: &[u8], trust: &str) -> Op {
    Op::run(&[
        "mlnx_qos",
        "-i",
        netdev,
        "--pfc",
        &pfc_vector(pfc),
        "--trust",
        trust,
    ])
}

fn set_firmware(device: &str, key: &str, value: &str) -> Op {
    Op::run(&[
        "mstconfig",
        "-y",
        "-d",
        device,
        "set",
        &format!("{key}={value}"),
    ])
}
