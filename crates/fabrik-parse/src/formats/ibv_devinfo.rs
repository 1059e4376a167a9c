//! `ibv_devinfo` and `ibv_devinfo -v` (rdma-core `libibverbs/examples/devinfo.c`): `hca_id:`
//! blocks (`fw_ver`, `node_guid`, `sys_image_guid`, `vendor_id`, `vendor_part_id`, `board_id`)
//! with `port:` blocks (`state`, `max_mtu`, `active_mtu`, `sm_lid`, `port_lid`, `link_layer`;
//! with `-v` also `active_width`, `active_speed`, `phys_state` and the GID table:
//! `GID[  3]:  ::ffff:192.0.2.1, RoCE v2`).

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv6Addr;

use fabrik_model::facts::cell;
use fabrik_model::{Fact, FactTable, Gid, GidType, LinkLayer, LinkRate, Node, Port, RdmaDevice};
use serde::{Deserialize, Serialize};

use super::{lines, phys_state, port_state, Format, Paste};

/// The device name of a port whose `hca_id:` line was cut off the paste.
pub const UNNAMED: &str = "?";

/// One GID table entry of `ibv_devinfo -v`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DevinfoGid {
    /// The index.
    pub index: u32,
    /// The GID as sysfs writes it (eight groups of four hex digits), whatever form was printed.
    pub gid: String,
    /// `RoCE v1` or `RoCE v2`, printed for Ethernet ports by rdma-core 17 and later.
    pub gid_type: Option<String>,
}

/// One port as `ibv_devinfo` prints it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DevinfoPort {
    /// The RDMA device (`mlx5_0`; `?` when the paste starts after its `hca_id:` line).
    pub device: String,
    /// The port number; 0 where the paste cut its `port:` line.
    pub port: u32,
    /// `PORT_ACTIVE`, `PORT_DOWN`, `PORT_INIT`... without the number.
    pub state: Option<String>,
    /// `LINK_UP`, `POLLING`, `DISABLED`... (`-v` only).
    pub phys_state: Option<String>,
    /// `active_mtu` in bytes.
    pub active_mtu: Option<u32>,
    /// `max_mtu` in bytes.
    pub max_mtu: Option<u32>,
    /// `InfiniBand`, `Ethernet`; old libibverbs printed no link_layer line.
    pub link_layer: Option<String>,
    /// Width × speed from `active_width`/`active_speed` (`-v` only), in Gb/s.
    pub rate_gbps: Option<f64>,
    /// `active_width` (`4X`).
    #[serde(default)]
    pub width: Option<u32>,
    /// The lane speed's name from `active_speed`'s code (`EDR` for `25.0 Gbps (32)`).
    #[serde(default)]
    pub speed: Option<String>,
    /// `port_lid`.
    #[serde(default)]
    pub lid: Option<u32>,
    /// `sm_lid`.
    #[serde(default)]
    pub sm_lid: Option<u32>,
    /// The GID table (`-v` only).
    #[serde(default)]
    pub gids: Vec<DevinfoGid>,
    /// `fw_ver` of the device.
    pub fw_ver: Option<String>,
    /// `node_guid` of the device.
    #[serde(default)]
    pub node_guid: Option<String>,
    /// `sys_image_guid` of the device.
    #[serde(default)]
    pub sys_image_guid: Option<String>,
    /// `vendor_part_id` of the device (`4123` is a ConnectX-6).
    #[serde(default)]
    pub vendor_part_id: Option<u32>,
    /// `board_id` of the device.
    #[serde(default)]
    pub board_id: Option<String>,
}

/// Every port of an `ibv_devinfo` output.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DevinfoFacts {
    /// The ports, in the order printed.
    pub ports: Vec<DevinfoPort>,
}

impl DevinfoFacts {
    /// Active and maximum MTU per (device, port): what the probe takes from a captured
    /// `ibv_devinfo -v` (sysfs has no MTU).
    pub fn mtus(&self) -> BTreeMap<(String, u32), (Option<u32>, Option<u32>)> {
        self.ports
            .iter()
            .filter(|p| p.device != UNNAMED)
            .map(|p| ((p.device.clone(), p.port), (p.active_mtu, p.max_mtu)))
            .collect()
    }
}

/// `ibv_devinfo [-v]`.
pub struct IbvDevinfo;

impl Format for IbvDevinfo {
    type Facts = DevinfoFacts;
    const EXPECTED: &'static str =
        "`hca_id: mlx5_0` blocks with `port: 1` blocks (`state: PORT_ACTIVE (4)`...)";

    fn parse(text: &str) -> Option<DevinfoFacts> {
        let ports = parse(text);
        (!ports.is_empty()).then_some(DevinfoFacts { ports })
    }
}

/// Lane speed names by the code `active_speed` prints in parentheses (`ibv_port_attr`).
fn speed_name(code: u32) -> Option<&'static str> {
    Some(match code {
        1 => "SDR",
        2 => "DDR",
        4 => "QDR",
        8 => "FDR10",
        16 => "FDR",
        32 => "EDR",
        64 => "HDR",
        128 => "NDR",
        256 => "XDR",
        _ => return None,
    })
}

/// A GID in either form devinfo prints (hex groups, or `inet_ntop` for RoCE v2), as sysfs
/// writes it.
fn sysfs_gid(text: &str) -> Option<String> {
    let t = text.trim();
    if let Some(raw) = fabrik_model::gid::parse(t) {
        return Some(fabrik_model::gid::format(&raw));
    }
    let a: Ipv6Addr = t.parse().ok()?;
    Some(fabrik_model::gid::format(&a.octets()))
}

/// `GID[  3]:  ::ffff:192.0.2.1, RoCE v2`.
fn gid_line(key: &str, value: &str) -> Option<DevinfoGid> {
    let index = key
        .strip_prefix("GID[")?
        .strip_suffix(']')?
        .trim()
        .parse()
        .ok()?;
    let (gid, ty) = match value.split_once(',') {
        Some((g, t)) => (g, Some(t.trim().to_string())),
        None => (value, None),
    };
    Some(DevinfoGid {
        index,
        gid: sysfs_gid(gid)?,
        gid_type: ty.filter(|t| !t.is_empty()),
    })
}

fn parse(text: &str) -> Vec<DevinfoPort> {
    let mut out: Vec<DevinfoPort> = Vec::new();
    // Device facts come before its ports; a fragment without `hca_id:` still has them.
    let mut dev = DevinfoPort::default();
    let mut in_device = false;
    for line in lines(text) {
        let t = line.trim();
        // `GID[  0]:` holds colons in its value: split at the first `:` after the key.
        let Some((key, value)) = t.split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        let first = value.split_whitespace().next();
        let num = || first.and_then(|n| n.parse::<u32>().ok());
        let mut in_port = out.last().is_some_and(|p| p.device == dev.device) && in_device;
        // A port key before any `port:` line of its device: the paste cut or elided that line.
        // The port's number is unknown (0).
        let port_only = matches!(
            key,
            "phys_state" | "active_mtu" | "max_mtu" | "port_lid" | "active_width" | "active_speed"
        ) || key.starts_with("GID[")
            || (key == "state" && value.starts_with("PORT_"));
        if port_only && !in_port {
            if !in_device {
                dev.device = UNNAMED.to_string();
                in_device = true;
            }
            out.push(DevinfoPort {
                port: 0,
                ..dev.clone()
            });
            in_port = true;
        }
        match key {
            "hca_id" => {
                dev = DevinfoPort {
                    device: first.unwrap_or(UNNAMED).to_string(),
                    ..DevinfoPort::default()
                };
                in_device = true;
                continue;
            }
            "fw_ver" => dev.fw_ver = first.map(str::to_string),
            "node_guid" => dev.node_guid = first.map(str::to_string),
            "sys_image_guid" => dev.sys_image_guid = first.map(str::to_string),
            "vendor_part_id" => dev.vendor_part_id = num(),
            "board_id" => dev.board_id = first.map(str::to_string),
            "port" => {
                let Some(p) = num() else { continue };
                if !in_device {
                    dev.device = UNNAMED.to_string();
                    in_device = true;
                }
                out.push(DevinfoPort {
                    port: p,
                    ..dev.clone()
                });
            }
            k if in_port || k.starts_with("GID[") => {
                if !in_port {
                    continue;
                }
                let Some(p) = out.last_mut() else { continue };
                match k {
                    "state" => p.state = Some(value.to_string()),
                    "phys_state" => p.phys_state = Some(value.to_string()),
                    "active_mtu" => p.active_mtu = num(),
                    "max_mtu" => p.max_mtu = num(),
                    "link_layer" => p.link_layer = first.map(str::to_string),
                    "port_lid" => p.lid = num(),
                    "sm_lid" => p.sm_lid = num(),
                    "active_width" => {
                        p.width = first
                            .and_then(|w| w.strip_suffix('X'))
                            .and_then(|w| w.parse().ok());
                    }
                    "active_speed" => {
                        // `25.0 Gbps (32)`: Gb/s per lane, and the kernel's speed code.
                        let speed: Option<f64> = first.and_then(|s| s.parse().ok());
                        let code = value
                            .split_once('(')
                            .and_then(|(_, c)| c.trim_end_matches(')').trim().parse().ok());
                        p.speed = code.and_then(speed_name).map(str::to_string);
                        if let (Some(w), Some(s)) = (p.width, speed) {
                            p.rate_gbps = Some(f64::from(w) * s);
                        }
                    }
                    g => {
                        if let Some(gid) = gid_line(g, value) {
                            p.gids.push(gid);
                        }
                    }
                }
            }
            // A fragment that starts inside a device block, before its first port.
            "transport" | "vendor_id" | "phys_port_cnt" if !in_device => {
                dev.device = UNNAMED.to_string();
                in_device = true;
            }
            _ => {}
        }
    }
    out
}

/// Strips the state number: `PORT_ACTIVE (4)` → `PORT_ACTIVE`.
fn word(v: &Option<String>) -> Option<String> {
    v.as_deref()
        .and_then(|s| s.split_whitespace().next())
        .map(str::to_string)
}

impl Paste for IbvDevinfo {
    const NAME: &'static str = "ibv_devinfo";
    const COMMAND: &'static str = "ibv-devinfo";
    const ALIASES: &'static [&'static str] = &["ibv_devinfo"];
    const ABOUT: &'static str =
        "`ibv_devinfo [-v]` output: port states, MTUs, link layers, GUIDs, the GID table; `-` reads stdin";

    fn node(facts: &DevinfoFacts) -> Node {
        let mut devices: Vec<RdmaDevice> = Vec::new();
        let mut known = BTreeSet::from([Fact::PortState, Fact::Mtu]);
        let (mut rated, mut typed_gids, mut untyped_gids) = (false, false, false);
        for p in &facts.ports {
            let i = match devices.iter().position(|d| d.name == p.device) {
                Some(i) => i,
                None => {
                    devices.push(RdmaDevice {
                        name: p.device.clone(),
                        fw_ver: p.fw_ver.clone(),
                        node_guid: p.node_guid.clone(),
                        sys_image_guid: p.sys_image_guid.clone(),
                        board_id: p.board_id.clone(),
                        // sysfs `hca_type` of mlx4/mlx5 devices is `MT` and the part id.
                        hca_type: p.vendor_part_id.map(|v| format!("MT{v}")),
                        ..RdmaDevice::default()
                    });
                    devices.len() - 1
                }
            };
            rated |= p.rate_gbps.is_some();
            let gids: Vec<Gid> = p
                .gids
                .iter()
                .map(|g| {
                    typed_gids |= g.gid_type.is_some();
                    untyped_gids |= g.gid_type.is_none();
                    Gid {
                        index: g.index,
                        gid: g.gid.clone(),
                        gid_type: g.gid_type.as_deref().map(|t| match t {
                            "RoCE v1" => GidType::IbRoceV1,
                            other => GidType::parse(other),
                        }),
                        netdev: None,
                        ipv4: fabrik_model::gid::ipv4_of_text(&g.gid),
                    }
                })
                .collect();
            devices[i].ports.push(Port {
                number: p.port,
                state: word(&p.state).map(|s| port_state(&s)),
                phys_state: word(&p.phys_state).map(|s| phys_state(&s)),
                rate: p.rate_gbps.map(|g| LinkRate {
                    text: format!(
                        "{g} Gb/sec ({}X{})",
                        p.width.unwrap_or(0),
                        p.speed
                            .as_deref()
                            .map(|s| format!(" {s}"))
                            .unwrap_or_default()
                    ),
                    gbps: Some(g),
                    width: p.width,
                    speed: p.speed.clone(),
                }),
                link_layer: p.link_layer.as_deref().map(LinkLayer::parse),
                lid: p.lid.map(|l| format!("{l:#x}")),
                sm_lid: p.sm_lid.map(|l| format!("{l:#x}")),
                active_mtu: p.active_mtu,
                max_mtu: p.max_mtu,
                gids,
                ..Port::default()
            });
        }
        if rated {
            known.insert(Fact::PortRate);
        }
        // Older ibv_devinfo printed no GID type: which GID is RoCE v2 is then unknown, and
        // the GID rules must not read "no type" as "no RoCE v2 GID".
        if typed_gids && !untyped_gids {
            known.insert(Fact::Gids);
        }
        Node {
            rdma_devices: devices,
            known: Some(known),
            ..Node::default()
        }
    }

    fn table(facts: &DevinfoFacts) -> FactTable {
        let mut t = FactTable::new([
            "port",
            "state",
            "physical",
            "mtu",
            "max",
            "rate",
            "link layer",
            "GIDs",
        ]);
        for p in &facts.ports {
            t.row([
                format!("{}:{}", p.device, p.port),
                cell(&word(&p.state)),
                cell(&word(&p.phys_state)),
                cell(&p.active_mtu),
                cell(&p.max_mtu),
                cell(&p.rate_gbps),
                cell(&p.link_layer),
                if p.gids.is_empty() {
                    String::new()
                } else {
                    p.gids.len().to_string()
                },
            ]);
            for g in &p.gids {
                t.note(format!(
                    "{}:{} GID[{}] {}{}",
                    p.device,
                    p.port,
                    g.index,
                    g.gid,
                    g.gid_type
                        .as_deref()
                        .map(|t| format!(" {t}"))
                        .unwrap_or_default()
                ));
            }
        }
        if facts.ports.iter().any(|p| p.device == UNNAMED) {
            t.note("the text starts after a device's `hca_id:` line: its name is unknown (`?`)");
        }
        t
    }
}
