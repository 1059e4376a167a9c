//! `ibstat` (rdma-core `infiniband-diags/ibstat.c`): `CA 'mlx5_0'` blocks (`CA type`, `Firmware
//! version`, `Node GUID`, `System image GUID`) with `Port N:` blocks (`State`, `Physical state`,
//! `Rate`, `Base lid`, `SM lid`, `Port GUID`, `Link layer`).

use std::collections::BTreeSet;

use fabrik_model::{Fact, FactTable, LinkLayer, LinkRate, Node, Port, RdmaDevice};
use serde::{Deserialize, Serialize};

use super::{lines, phys_state, port_state, value_word, Format, Paste};

/// One `Port N:` block of an `ibstat` CA.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IbstatPort {
    /// The CA's name (`mlx5_0`).
    pub device: String,
    /// The port number.
    pub port: u32,
    /// `Active`, `Down`, `Initializing`, `Armed`.
    pub state: Option<String>,
    /// `LinkUp`, `Polling`, `Disabled`...
    pub phys_state: Option<String>,
    /// `Rate:` in Gb/s (`100`, `56`; a port that never trained reports 10 or 2.5).
    pub rate_gbps: Option<f64>,
    /// `Link layer:` (`InfiniBand`, `Ethernet`).
    pub link_layer: Option<String>,
    /// `Base lid:`.
    pub base_lid: Option<u32>,
    /// `SM lid:`.
    #[serde(default)]
    pub sm_lid: Option<u32>,
    /// `Port GUID:` as printed (`0x1070fd03001a2b3c`).
    #[serde(default)]
    pub port_guid: Option<String>,
    /// The CA's `CA type:` (`MT4123`).
    pub ca_type: Option<String>,
    /// The CA's `Firmware version:`.
    pub fw_ver: Option<String>,
    /// The CA's `Node GUID:`.
    #[serde(default)]
    pub node_guid: Option<String>,
    /// The CA's `System image GUID:`.
    #[serde(default)]
    pub sys_image_guid: Option<String>,
}

/// What `ibstat` printed: its ports and its own errors.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IbstatFacts {
    /// Every port of every CA, in the order printed.
    pub ports: Vec<IbstatPort>,
    /// ibstat's own errors (`ibpanic: ... stat of IB device 'mlx5_8' failed`).
    pub errors: Vec<String>,
}

/// `ibstat`.
pub struct Ibstat;

impl Format for Ibstat {
    type Facts = IbstatFacts;
    const EXPECTED: &'static str =
        "`CA 'mlx5_0'` blocks with `Port 1:` blocks (`State: Active`, `Rate: 100`...)";

    fn parse(text: &str) -> Option<IbstatFacts> {
        let st = parse(text);
        (!st.ports.is_empty() || !st.errors.is_empty()).then_some(st)
    }
}

/// A GUID as ibstat prints it, unless redacted (`...`, `0x...`).
fn guid(v: Option<&str>) -> Option<String> {
    v.filter(|g| {
        g.trim_start_matches("0x")
            .chars()
            .all(|c| c.is_ascii_hexdigit())
    })
    .filter(|g| g.len() > 2)
    .map(str::to_string)
}

fn parse(text: &str) -> IbstatFacts {
    let mut out = IbstatFacts::default();
    let mut ca: Option<String> = None;
    let mut ca_type: Option<String> = None;
    let mut fw: Option<String> = None;
    let mut node_guid: Option<String> = None;
    let mut sys_guid: Option<String> = None;
    let mut in_port = false;
    for line in lines(text) {
        let t = line.trim();
        if t.contains("ibpanic") || t.contains("ibwarn") {
            if out.errors.len() < 64 {
                out.errors.push(t.to_string());
            }
            continue;
        }
        if let Some(rest) = t.strip_prefix("CA '") {
            ca = rest.split('\'').next().map(str::to_string);
            (ca_type, fw, node_guid, sys_guid) = (None, None, None, None);
            in_port = false;
            continue;
        }
        let Some((key, value)) = t.split_once(':') else {
            continue;
        };
        let key = key.trim();
        // `Port 1:` opens a port; `Port GUID:` is one of its lines.
        if let Some(n) = key
            .strip_prefix("Port ")
            .filter(|n| n.trim().parse::<u32>().is_ok())
        {
            if let (Some(d), Ok(p)) = (&ca, n.trim().parse::<u32>()) {
                out.ports.push(IbstatPort {
                    device: d.clone(),
                    port: p,
                    ca_type: ca_type.clone(),
                    fw_ver: fw.clone(),
                    node_guid: node_guid.clone(),
                    sys_image_guid: sys_guid.clone(),
                    ..IbstatPort::default()
                });
                in_port = true;
            }
            continue;
        }
        let v = value_word(value).filter(|v| *v != "...");
        if !in_port {
            match key {
                "CA type" => ca_type = v.map(str::to_string),
                "Firmware version" => fw = v.map(str::to_string),
                "Node GUID" => node_guid = guid(v),
                "System image GUID" => sys_guid = guid(v),
                _ => {}
            }
            continue;
        }
        let Some(p) = out.ports.last_mut() else {
            continue;
        };
        match key {
            "State" => p.state = v.map(str::to_string),
            "Physical state" => p.phys_state = v.map(str::to_string),
            "Rate" => p.rate_gbps = v.and_then(|r| r.parse().ok()),
            "Link layer" => p.link_layer = v.map(str::to_string),
            "Base lid" => p.base_lid = v.and_then(|r| r.parse().ok()),
            "SM lid" => p.sm_lid = v.and_then(|r| r.parse().ok()),
            "Port GUID" => p.port_guid = guid(v),
            _ => {}
        }
    }
    out
}

/// The devices and ports as a partial node (shared with `ibstatus`, whose facts are ibstat's).
pub(crate) fn node_of(ports: &[IbstatPort], rate_known: bool) -> Node {
    let mut devices: Vec<RdmaDevice> = Vec::new();
    for p in ports {
        let i = match devices.iter().position(|d| d.name == p.device) {
            Some(i) => i,
            None => {
                devices.push(RdmaDevice {
                    name: p.device.clone(),
                    hca_type: p.ca_type.clone(),
                    fw_ver: p.fw_ver.clone(),
                    node_guid: p.node_guid.clone(),
                    sys_image_guid: p.sys_image_guid.clone(),
                    ..RdmaDevice::default()
                });
                devices.len() - 1
            }
        };
        devices[i].ports.push(Port {
            number: p.port,
            state: p.state.as_deref().map(port_state),
            phys_state: p.phys_state.as_deref().map(phys_state),
            rate: p.rate_gbps.map(|g| LinkRate {
                text: format!("{g} Gb/sec"),
                gbps: Some(g),
                width: None,
                speed: None,
            }),
            link_layer: p.link_layer.as_deref().map(LinkLayer::parse),
            lid: p.base_lid.map(|l| format!("{l:#x}")),
            sm_lid: p.sm_lid.map(|l| format!("{l:#x}")),
            guid: p.port_guid.clone(),
            ..Port::default()
        });
    }
    let mut known = BTreeSet::from([Fact::PortState]);
    if rate_known {
        known.insert(Fact::PortRate);
    }
    Node {
        rdma_devices: devices,
        known: Some(known),
        ..Node::default()
    }
}

/// The ports as a table (shared with `ibstatus`).
pub(crate) fn table_of(ports: &[IbstatPort], errors: &[String], tool: &str) -> FactTable {
    use fabrik_model::facts::cell;
    let mut t = FactTable::new([
        "port",
        "state",
        "physical",
        "rate",
        "link layer",
        "port GUID",
    ]);
    for p in ports {
        t.row([
            format!("{}:{}", p.device, p.port),
            cell(&p.state),
            cell(&p.phys_state),
            cell(&p.rate_gbps),
            cell(&p.link_layer),
            cell(&p.port_guid),
        ]);
    }
    for e in errors {
        t.note(format!("{tool} error: {e}"));
    }
    t
}

impl Paste for Ibstat {
    const NAME: &'static str = "ibstat";
    const ABOUT: &'static str =
        "`ibstat` output: port states, rates, link layers and GUIDs; `-` reads stdin";

    fn node(facts: &IbstatFacts) -> Node {
        node_of(&facts.ports, true)
    }

    fn table(facts: &IbstatFacts) -> FactTable {
        table_of(&facts.ports, &facts.errors, Self::NAME)
    }
}
