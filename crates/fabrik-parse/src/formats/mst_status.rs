//! `mst status` and `mst status -v` (NVIDIA MFT; mstflint's `mstfwmanager` lists the same
//! devices): the `MST devices:` list, one `/dev/mst/mt4123_pciconf0 - PCI configuration cycles
//! access.` line each with `domain:bus:dev.fn=0000:3b:00.0 ...` under it; with `-v` a `PCI
//! devices:` table whose header names the columns (`DEVICE_TYPE MST PCI RDMA NET NUMA`).

use std::collections::BTreeSet;

use fabrik_model::facts::cell;
use fabrik_model::{FactTable, NetInterface, NetKind, Node, PciFunction, RdmaDevice};
use serde::{Deserialize, Serialize};

use super::{lines, normalize_bdf, Format, Paste};

/// One device `mst status` lists.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MstDevice {
    /// `/dev/mst/mt4123_pciconf0` (`NA` in `-v` for a function without one).
    pub mst: Option<String>,
    /// The PCI address.
    pub pci: Option<String>,
    /// `DEVICE_TYPE` of `-v` (`ConnectX6(rev:0)`).
    pub device_type: Option<String>,
    /// `RDMA` of `-v` (`mlx5_0`).
    pub rdma: Option<String>,
    /// `NET` of `-v` without the `net-` prefixes (`ib0`; several netdevs comma-separated).
    pub net: Option<String>,
    /// `NUMA` of `-v` (`-1`, no NUMA information, is left out).
    pub numa: Option<i32>,
}

/// What `mst status` printed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MstStatusFacts {
    /// Whether the MST PCI configuration module is loaded (`MST PCI configuration module
    /// loaded` / `is not loaded`).
    pub pciconf_loaded: Option<bool>,
    /// The devices.
    pub devices: Vec<MstDevice>,
}

/// `mst status [-v]`.
pub struct MstStatus;

impl Format for MstStatus {
    type Facts = MstStatusFacts;
    const EXPECTED: &'static str =
        "`MST devices:` lines (`/dev/mst/mt4123_pciconf0 - PCI configuration cycles access.`) or the `-v` table";

    fn parse(text: &str) -> Option<MstStatusFacts> {
        let mut out = MstStatusFacts::default();
        let mut header: Vec<String> = Vec::new();
        for line in lines(text) {
            let t = line.trim();
            if t.contains("MST PCI configuration module") {
                out.pciconf_loaded = Some(!t.contains("not loaded"));
                continue;
            }
            let words: Vec<&str> = t.split_whitespace().collect();
            if words.first() == Some(&"DEVICE_TYPE") {
                header = words.iter().map(|w| w.to_string()).collect();
                continue;
            }
            if let Some(dev) = words.first().filter(|w| w.starts_with("/dev/mst/")) {
                if header.is_empty() {
                    out.devices.push(MstDevice {
                        mst: Some(dev.to_string()),
                        ..MstDevice::default()
                    });
                    continue;
                }
            }
            if let Some(rest) = t.split("domain:bus:dev.fn=").nth(1) {
                if let Some(d) = out.devices.last_mut() {
                    d.pci = rest.split_whitespace().next().and_then(normalize_bdf);
                }
                continue;
            }
            if !header.is_empty() && words.len() >= 3 {
                // By shape rather than column: a function without an RDMA device or netdev
                // leaves its column empty, which shifts the words.
                let Some(pi) = words.iter().position(|w| normalize_bdf(w).is_some()) else {
                    continue;
                };
                let rest = &words[pi + 1..];
                let net = rest.iter().find(|w| w.starts_with("net-")).map(|n| {
                    n.split(',')
                        .map(|x| x.trim_start_matches("net-"))
                        .collect::<Vec<_>>()
                        .join(",")
                });
                out.devices.push(MstDevice {
                    mst: words[..pi]
                        .iter()
                        .find(|w| w.starts_with("/dev/mst/"))
                        .map(|s| s.to_string()),
                    pci: normalize_bdf(words[pi]),
                    device_type: words
                        .first()
                        .filter(|w| !w.starts_with("/dev/"))
                        .map(|s| s.to_string()),
                    rdma: rest
                        .iter()
                        .find(|w| {
                            !w.starts_with("net-") && w.parse::<i64>().is_err() && **w != "NA"
                        })
                        .map(|s| s.to_string()),
                    net,
                    numa: rest
                        .last()
                        .and_then(|n| n.parse::<i32>().ok())
                        .filter(|n| *n >= 0),
                });
            }
        }
        (!out.devices.is_empty()).then_some(out)
    }
}

impl Paste for MstStatus {
    const NAME: &'static str = "mst_status";
    const COMMAND: &'static str = "mst-status";
    const ALIASES: &'static [&'static str] = &["mst"];
    const ABOUT: &'static str =
        "`mst status [-v]` output: the NICs' MST devices, PCI addresses, RDMA devices, netdevs and NUMA nodes; `-` reads stdin";

    fn node(facts: &MstStatusFacts) -> Node {
        let mut node = Node {
            known: Some(BTreeSet::new()),
            ..Node::default()
        };
        for d in &facts.devices {
            let pci = d.pci.clone().map(|address| PciFunction {
                address,
                numa_node: d.numa,
                ..PciFunction::default()
            });
            if let Some(r) = &d.rdma {
                node.rdma_devices.push(RdmaDevice {
                    name: r.clone(),
                    pci: pci.clone(),
                    ..RdmaDevice::default()
                });
            }
            for n in d.net.iter().flat_map(|n| n.split(',')) {
                node.net_interfaces.push(NetInterface {
                    pci: pci.clone(),
                    rdma_device: d.rdma.clone(),
                    ..NetInterface::new(n, NetKind::Unknown)
                });
            }
        }
        node
    }

    fn table(facts: &MstStatusFacts) -> FactTable {
        let mut t = FactTable::new(["MST device", "PCI", "type", "RDMA", "netdev", "NUMA"]);
        for d in &facts.devices {
            t.row([
                cell(&d.mst),
                cell(&d.pci),
                cell(&d.device_type),
                cell(&d.rdma),
                cell(&d.net),
                cell(&d.numa),
            ]);
        }
        if facts.pciconf_loaded == Some(false) {
            t.note("the MST PCI configuration module is not loaded: run `mst start`");
        }
        t
    }
}
