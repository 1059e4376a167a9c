//! `show_gids` (Mellanox ofed-scripts): one row per non-empty GID, `DEV PORT INDEX GID IPv4 VER
//! DEV`, read by the script from sysfs (`gids/N`, `gid_attrs/types/N`, `gid_attrs/ndevs/N`): the
//! last column is the netdev of that GID, which for VLAN or macvlan interfaces differs between
//! GIDs of one port.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use fabrik_model::facts::cell;
use fabrik_model::{Fact, FactTable, Gid, GidType, LinkLayer, Node, Port, RdmaDevice};
use serde::{Deserialize, Serialize};

use super::{lines, Format, Paste};

/// One row of `show_gids`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GidRow {
    /// The RDMA device (`mlx5_0`).
    pub device: String,
    /// The port number.
    pub port: u32,
    /// The GID index.
    pub index: u32,
    /// The GID as printed.
    pub gid: String,
    /// The IPv4 address of an IPv4-mapped GID.
    pub ipv4: Option<Ipv4Addr>,
    /// `v1` or `v2`.
    pub version: Option<String>,
    /// The network interface behind this GID.
    pub netdev: Option<String>,
}

/// Per device and port, the RoCE v2 GID index that carries an IPv4 address (the lowest if
/// several): what NCCL_IB_GID_INDEX and perftest `-x` want.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoceV2Index {
    /// The RDMA device.
    pub device: String,
    /// The port number.
    pub port: u32,
    /// The network interface of the chosen GID (of the port's first GID when none is chosen).
    pub netdev: Option<String>,
    /// The GID index, `None` when no RoCE v2 GID carries an IPv4 address.
    pub index: Option<u32>,
    /// The IPv4 address of that GID.
    pub ipv4: Option<Ipv4Addr>,
}

/// What `show_gids` printed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShowGidsFacts {
    /// Per port, the RoCE v2 GID carrying an IPv4 address.
    pub roce_v2_ipv4: Vec<RoceV2Index>,
    /// Every row.
    pub gids: Vec<GidRow>,
}

/// `show_gids`.
pub struct ShowGids;

impl Format for ShowGids {
    type Facts = ShowGidsFacts;
    const EXPECTED: &'static str =
        "`DEV PORT INDEX GID IPv4 VER DEV` rows (`mlx5_0 1 3 0000:...:c000:0201 192.0.2.1 v2 eth0`)";

    fn parse(text: &str) -> Option<ShowGidsFacts> {
        let gids = parse_rows(text);
        if gids.is_empty() {
            return None;
        }
        Some(ShowGidsFacts {
            roce_v2_ipv4: roce_v2_indices(&gids),
            gids,
        })
    }
}

fn parse_rows(text: &str) -> Vec<GidRow> {
    let mut out = Vec::new();
    for line in lines(text) {
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.len() < 4 {
            continue;
        }
        let (Ok(port), Ok(index)) = (w[1].parse::<u32>(), w[2].parse::<u32>()) else {
            continue;
        };
        if !w[3].contains(':') {
            continue;
        }
        let mut ipv4 = None;
        let mut version = None;
        let mut netdev = None;
        for tok in &w[4..] {
            if let Ok(ip) = tok.parse::<Ipv4Addr>() {
                ipv4 = Some(ip);
            } else if matches!(*tok, "v1" | "v2") {
                version = Some(tok.to_string());
            } else if version.is_some() && netdev.is_none() {
                netdev = Some(tok.to_string());
            }
        }
        // The script leaves the IPv4 column empty on some builds; the GID itself carries it.
        let ipv4 =
            ipv4.or_else(|| fabrik_model::gid::ipv4_of_text(w[3]).and_then(|a| a.parse().ok()));
        out.push(GidRow {
            device: w[0].to_string(),
            port,
            index,
            gid: w[3].to_string(),
            ipv4,
            version,
            netdev,
        });
    }
    out
}

/// One entry per (device, port) seen, in the order first seen.
fn roce_v2_indices(rows: &[GidRow]) -> Vec<RoceV2Index> {
    let mut out: Vec<RoceV2Index> = Vec::new();
    for r in rows {
        let i = match out
            .iter()
            .position(|e| e.device == r.device && e.port == r.port)
        {
            Some(i) => i,
            None => {
                out.push(RoceV2Index {
                    device: r.device.clone(),
                    port: r.port,
                    netdev: r.netdev.clone(),
                    index: None,
                    ipv4: None,
                });
                out.len() - 1
            }
        };
        let e = &mut out[i];
        if r.version.as_deref() == Some("v2")
            && r.ipv4.is_some()
            && e.index.is_none_or(|x| r.index < x)
        {
            e.index = Some(r.index);
            e.ipv4 = r.ipv4;
            // The chosen GID's own netdev: another GID of the port may sit on a VLAN or a
            // second interface with the same address.
            e.netdev = r.netdev.clone();
        } else if e.index.is_none() && e.netdev.is_none() {
            e.netdev = r.netdev.clone();
        }
    }
    out
}

impl Paste for ShowGids {
    const NAME: &'static str = "show_gids";
    const COMMAND: &'static str = "show-gids";
    const ALIASES: &'static [&'static str] = &["show_gids"];
    const ABOUT: &'static str =
        "`show_gids` output: the RoCE v2 GID index with an IPv4 address per port; `-` reads stdin";

    fn node(facts: &ShowGidsFacts) -> Node {
        let mut devices: Vec<RdmaDevice> = Vec::new();
        for e in &facts.roce_v2_ipv4 {
            let rows: Vec<&GidRow> = facts
                .gids
                .iter()
                .filter(|r| r.device == e.device && r.port == e.port)
                .collect();
            // show_gids prints a netdev for RoCE GIDs only: an InfiniBand port's is empty.
            let roce = rows.iter().any(|r| r.netdev.is_some());
            let port = Port {
                number: e.port,
                link_layer: roce.then_some(LinkLayer::Ethernet),
                netdev: e.netdev.clone(),
                gids: rows
                    .iter()
                    .filter_map(|r| {
                        Some(Gid {
                            index: r.index,
                            gid: fabrik_model::gid::parse(&r.gid)
                                .map(|g| fabrik_model::gid::format(&g))?,
                            gid_type: r.version.as_deref().map(|v| match v {
                                "v2" => GidType::RoceV2,
                                _ => GidType::IbRoceV1,
                            }),
                            netdev: r.netdev.clone(),
                            ipv4: r.ipv4.map(|a| a.to_string()),
                        })
                    })
                    .collect(),
                ..Port::default()
            };
            match devices.iter_mut().find(|d| d.name == e.device) {
                Some(d) => d.ports.push(port),
                None => devices.push(RdmaDevice {
                    name: e.device.clone(),
                    ports: vec![port],
                    ..RdmaDevice::default()
                }),
            }
        }
        Node {
            rdma_devices: devices,
            known: Some(BTreeSet::from([Fact::Gids])),
            ..Node::default()
        }
    }

    fn table(facts: &ShowGidsFacts) -> FactTable {
        let mut t = FactTable::new(["port", "netdev", "RoCE v2 IPv4 GID index", "IPv4"]);
        for e in &facts.roce_v2_ipv4 {
            t.row([
                format!("{}:{}", e.device, e.port),
                cell(&e.netdev),
                cell(&e.index),
                cell(&e.ipv4),
            ]);
        }
        let indices: BTreeSet<u32> = facts.roce_v2_ipv4.iter().filter_map(|e| e.index).collect();
        if let (Some(i), 1) = (indices.first(), indices.len()) {
            t.note(format!(
                "the RoCE v2 GID carrying an IPv4 address is index {i} on every port that has one: NCCL_IB_GID_INDEX={i}, perftest -x {i}"
            ));
        }
        t
    }
}
