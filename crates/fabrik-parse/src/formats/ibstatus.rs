//! `ibstatus` (rdma-core `infiniband-diags/scripts/ibstatus`): a shell script that prints, for
//! each port, `Infiniband device 'mlx5_0' port 1 status:` and the sysfs files of the port as
//! the kernel writes them (`default gid` is `gids/0`; `state` is `4: ACTIVE`; `rate` is
//! `100 Gb/sec (4X EDR)`), `unknown` for a file it could not read and `IB` for a missing
//! `link_layer`.

use std::collections::BTreeSet;

use fabrik_model::facts::cell;
use fabrik_model::{Fact, FactTable, Gid, LinkLayer, Node, Port, RdmaDevice, StateValue};
use serde::{Deserialize, Serialize};

use super::{lines, Format, IbRate, Paste};

/// One port block.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IbstatusPort {
    /// The device (`mlx5_0`).
    pub device: String,
    /// The port number.
    pub port: u32,
    /// `default gid` (GID 0).
    pub default_gid: Option<String>,
    /// `base lid` (`0x3`).
    pub base_lid: Option<String>,
    /// `sm lid`.
    pub sm_lid: Option<String>,
    /// `state` as sysfs writes it (`4: ACTIVE`).
    pub state: Option<String>,
    /// `phys state` (`5: LinkUp`).
    pub phys_state: Option<String>,
    /// `rate` (`100 Gb/sec (4X EDR)`).
    pub rate: Option<String>,
    /// `link_layer` (`InfiniBand`, `Ethernet`).
    pub link_layer: Option<String>,
}

/// Every port block of an `ibstatus` output.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct IbstatusFacts {
    /// The ports, in the order printed.
    pub ports: Vec<IbstatusPort>,
}

/// `ibstatus`.
pub struct Ibstatus;

impl Format for Ibstatus {
    type Facts = IbstatusFacts;
    const EXPECTED: &'static str =
        "`Infiniband device 'mlx5_0' port 1 status:` blocks (`state: 4: ACTIVE`, `rate: 100 Gb/sec (4X EDR)`...)";

    fn parse(text: &str) -> Option<IbstatusFacts> {
        let mut ports: Vec<IbstatusPort> = Vec::new();
        for line in lines(text) {
            let t = line.trim();
            if let Some(rest) = t.strip_prefix("Infiniband device '") {
                let Some((dev, rest)) = rest.split_once('\'') else {
                    continue;
                };
                let port = rest
                    .trim()
                    .strip_prefix("port")
                    .and_then(|r| r.split_whitespace().next())
                    .and_then(|p| p.trim_end_matches(':').parse().ok());
                if let Some(port) = port {
                    ports.push(IbstatusPort {
                        device: dev.to_string(),
                        port,
                        ..IbstatusPort::default()
                    });
                }
                continue;
            }
            let Some((key, value)) = t.split_once(':') else {
                continue;
            };
            let Some(p) = ports.last_mut() else { continue };
            let value = value.trim();
            let v = (!value.is_empty() && value != "unknown").then(|| value.to_string());
            match key.trim() {
                "default gid" => p.default_gid = v,
                "base lid" => p.base_lid = v,
                "sm lid" => p.sm_lid = v,
                "state" => p.state = v,
                "phys state" | "physical state" => p.phys_state = v,
                "rate" => p.rate = v,
                "link_layer" => p.link_layer = v,
                _ => {}
            }
        }
        (!ports.is_empty()).then_some(IbstatusFacts { ports })
    }
}

impl Paste for Ibstatus {
    const NAME: &'static str = "ibstatus";
    const ABOUT: &'static str =
        "`ibstatus` output: port states, rates (width and lane speed) and link layers; `-` reads stdin";

    fn node(facts: &IbstatusFacts) -> Node {
        let mut devices: Vec<RdmaDevice> = Vec::new();
        for p in &facts.ports {
            let mut port = Port {
                number: p.port,
                state: p.state.as_deref().map(StateValue::parse),
                phys_state: p.phys_state.as_deref().map(StateValue::parse),
                rate: p.rate.as_deref().and_then(IbRate::parse),
                // The script prints `IB` when the kernel has no link_layer file (before 2.6.37).
                link_layer: p.link_layer.as_deref().map(|l| match l {
                    "IB" => LinkLayer::Infiniband,
                    other => LinkLayer::parse(other),
                }),
                lid: p.base_lid.clone(),
                sm_lid: p.sm_lid.clone(),
                ..Port::default()
            };
            if let Some(g) = p.default_gid.as_deref().and_then(fabrik_model::gid::parse) {
                let text = fabrik_model::gid::format(&g);
                if !fabrik_model::gid::is_zero_text(&text) {
                    port.gids.push(Gid {
                        index: 0,
                        ipv4: fabrik_model::gid::ipv4_of_text(&text),
                        gid: text,
                        gid_type: None,
                        netdev: None,
                    });
                }
            }
            match devices.iter_mut().find(|d| d.name == p.device) {
                Some(d) => d.ports.push(port),
                None => devices.push(RdmaDevice {
                    name: p.device.clone(),
                    ports: vec![port],
                    ..RdmaDevice::default()
                }),
            }
        }
        Node {
            rdma_devices: devices,
            known: Some(BTreeSet::from([Fact::PortState, Fact::PortRate])),
            ..Node::default()
        }
    }

    fn table(facts: &IbstatusFacts) -> FactTable {
        let mut t = FactTable::new(["port", "state", "physical", "rate", "link layer", "GID 0"]);
        for p in &facts.ports {
            t.row([
                format!("{}:{}", p.device, p.port),
                cell(&p.state),
                cell(&p.phys_state),
                cell(&p.rate),
                cell(&p.link_layer),
                cell(&p.default_gid),
            ]);
        }
        t
    }
}
