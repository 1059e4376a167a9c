//! `ibdev2netdev` and `ibdev2netdev -v` (Mellanox ofed-scripts): `mlx5_0 port 1 ==> ib0 (Up)`,
//! `0000:0c:00.0 mlx5_0 (MT4123 - ...) ... fw 20.35 port 1 (ACTIVE) ==> ib0 (Up)`.

use std::collections::BTreeSet;

use fabrik_model::facts::cell;
use fabrik_model::{Fact, FactTable, NetInterface, NetKind, Node, PciFunction, Port, RdmaDevice};
use serde::{Deserialize, Serialize};

use super::{lines, port_state, Format, Paste};

/// One `DEV port N ==> NETDEV` line.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NetdevMap {
    /// The RDMA device (`mlx5_0`).
    pub device: String,
    /// The port number.
    pub port: u32,
    /// The network interface.
    pub netdev: String,
    /// The netdev's state in parentheses after it: `Up`, `Down`.
    pub netdev_up: Option<bool>,
    /// The RDMA port's state printed by `-v` (`ACTIVE`, `DOWN`, `INIT`).
    pub port_state: Option<String>,
    /// The PCI address `-v` prints first.
    #[serde(default)]
    pub pci: Option<String>,
    /// The part number `-v` prints in parentheses (`MT4123`).
    #[serde(default)]
    pub hca_type: Option<String>,
    /// The firmware version `-v` prints after `fw`.
    #[serde(default)]
    pub fw_ver: Option<String>,
}

/// Every mapping line, in the order printed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Ibdev2netdevFacts {
    /// The lines.
    pub maps: Vec<NetdevMap>,
}

/// `ibdev2netdev [-v]`.
pub struct Ibdev2netdev;

impl Format for Ibdev2netdev {
    type Facts = Ibdev2netdevFacts;
    const EXPECTED: &'static str = "`mlx5_0 port 1 ==> ib0 (Up)` lines";

    fn parse(text: &str) -> Option<Ibdev2netdevFacts> {
        let maps = parse(text);
        (!maps.is_empty()).then_some(Ibdev2netdevFacts { maps })
    }
}

fn parse(text: &str) -> Vec<NetdevMap> {
    let mut out = Vec::new();
    for line in lines(text) {
        let line = line.split(" #").next().unwrap_or(line);
        let Some((left, right)) = line.split_once("==>") else {
            continue;
        };
        let l: Vec<&str> = left.split_whitespace().collect();
        let Some(pi) = l.iter().rposition(|w| *w == "port") else {
            continue;
        };
        let Some(port) = l.get(pi + 1).and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        // Plain form: the device is the first word; `-v` puts the PCI address first.
        let (pci, device) = match l.first() {
            Some(first) if super::normalize_bdf(first).is_some() => {
                (super::normalize_bdf(first), l.get(1))
            }
            first => (None, first),
        };
        let Some(device) = device else { continue };
        // `(MT4123 - MT2004X09466)` after the device, `fw 20.35.1012` before `port`.
        let hca_type = pci.as_ref().and_then(|_| {
            left.split_once('(')
                .and_then(|(_, r)| r.split([' ', ')']).next())
                .filter(|t| !t.is_empty())
                .map(str::to_string)
        });
        let fw_ver = l
            .iter()
            .position(|w| *w == "fw")
            .and_then(|i| l.get(i + 1))
            .map(|s| s.to_string());
        // `port 1 (ACTIVE)`; ofed-scripts pads the state: `(DOWN  )`.
        let after_port = left
            .rsplit_once(" port ")
            .map(|(_, r)| {
                r.trim_start()
                    .trim_start_matches(|c: char| c.is_ascii_digit())
            })
            .unwrap_or("");
        let port_state = after_port
            .trim()
            .strip_prefix('(')
            .and_then(|s| s.split_once(')'))
            .map(|(s, _)| s.trim().to_string())
            .filter(|s| !s.is_empty());
        let r: Vec<&str> = right.split_whitespace().collect();
        let Some(netdev) = r.first() else { continue };
        let netdev_up = r
            .get(1)
            .map(|s| s.trim_matches(['(', ')']))
            .and_then(|s| match s {
                "Up" => Some(true),
                "Down" => Some(false),
                _ => None,
            });
        out.push(NetdevMap {
            device: device.to_string(),
            port,
            netdev: netdev.to_string(),
            netdev_up,
            port_state,
            pci,
            hca_type,
            fw_ver,
        });
    }
    out
}

impl Paste for Ibdev2netdev {
    const NAME: &'static str = "ibdev2netdev";
    const ABOUT: &'static str =
        "`ibdev2netdev [-v]` output: RDMA device to netdev, and their states; `-` reads stdin";

    fn node(facts: &Ibdev2netdevFacts) -> Node {
        let mut node = Node {
            known: Some(BTreeSet::from([Fact::PortState, Fact::NetdevState])),
            ..Node::default()
        };
        // A paste may hold the plain form and then `-v`: a later line adds to an earlier one.
        for m in &facts.maps {
            let di = match node.rdma_devices.iter().position(|d| d.name == m.device) {
                Some(i) => i,
                None => {
                    node.rdma_devices.push(RdmaDevice {
                        name: m.device.clone(),
                        ..RdmaDevice::default()
                    });
                    node.rdma_devices.len() - 1
                }
            };
            let d = &mut node.rdma_devices[di];
            if let Some(a) = &m.pci {
                d.pci = Some(PciFunction {
                    address: a.clone(),
                    ..PciFunction::default()
                });
            }
            d.hca_type = m.hca_type.clone().or(d.hca_type.take());
            d.fw_ver = m.fw_ver.clone().or(d.fw_ver.take());
            let pi = match d.ports.iter().position(|p| p.number == m.port) {
                Some(i) => i,
                None => {
                    d.ports.push(Port {
                        number: m.port,
                        ..Port::default()
                    });
                    d.ports.len() - 1
                }
            };
            let p = &mut d.ports[pi];
            p.netdev = Some(m.netdev.clone());
            if let Some(s) = &m.port_state {
                p.state = Some(port_state(s));
            }
            let operstate = m
                .netdev_up
                .map(|up| if up { "up" } else { "down" }.to_string());
            match node.net_interfaces.iter_mut().find(|n| n.name == m.netdev) {
                Some(n) => n.operstate = operstate.or(n.operstate.take()),
                None => node.net_interfaces.push(NetInterface {
                    operstate,
                    rdma_device: Some(m.device.clone()),
                    ..NetInterface::new(&m.netdev, NetKind::Unknown)
                }),
            }
        }
        node
    }

    fn table(facts: &Ibdev2netdevFacts) -> FactTable {
        let mut t = FactTable::new(["port", "netdev", "netdev state", "port state"]);
        for m in &facts.maps {
            t.row([
                format!("{}:{}", m.device, m.port),
                m.netdev.clone(),
                match m.netdev_up {
                    Some(true) => "Up".to_string(),
                    Some(false) => "Down".to_string(),
                    None => String::new(),
                },
                cell(&m.port_state),
            ]);
        }
        t
    }
}
