//! `nvidia-smi nvlink -s` (`--status`): per GPU a `GPU N: NAME (UUID: GPU-...)` line and one
//! `Link L: 26.562 GB/s` line per NVLink, `Link L: <inactive>` for a link that is down.
//!
//! nvidia-smi names GPUs by index: the partial node's GPUs carry the index (`0`) where a probed
//! node has the PCI address, so the doctor names them `GPU 0`.

use std::collections::BTreeSet;

use fabrik_model::{Fact, FactTable, Gpu, Node, NvLink, PciFunction};
use serde::{Deserialize, Serialize};

use super::{lines, Format, Paste};

/// One GPU's links.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuLinks {
    /// The GPU's index.
    pub gpu: u32,
    /// Its name (`NVIDIA H100 80GB HBM3`).
    pub name: Option<String>,
    /// Its UUID.
    pub uuid: Option<String>,
    /// Its links.
    pub links: Vec<NvLink>,
}

/// Every GPU of the output.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NvlinkFacts {
    /// The GPUs, in the order printed.
    pub gpus: Vec<GpuLinks>,
}

/// `nvidia-smi nvlink -s`.
pub struct NvlinkStatus;

impl Format for NvlinkStatus {
    type Facts = NvlinkFacts;
    const EXPECTED: &'static str =
        "`GPU 0: NAME (UUID: ...)` lines each followed by `Link 0: 26.562 GB/s` or `Link 0: <inactive>`";

    fn parse(text: &str) -> Option<NvlinkFacts> {
        let mut gpus: Vec<GpuLinks> = Vec::new();
        for line in lines(text) {
            let t = line.trim();
            if let Some(rest) = t.strip_prefix("GPU ") {
                let Some((n, after)) = rest.split_once(':') else {
                    continue;
                };
                let Ok(gpu) = n.trim().parse() else { continue };
                let (name, uuid) = match after.split_once("(UUID:") {
                    Some((name, u)) => {
                        (name.trim(), Some(u.split(')').next().unwrap_or("").trim()))
                    }
                    None => (after.trim(), None),
                };
                gpus.push(GpuLinks {
                    gpu,
                    name: (!name.is_empty()).then(|| name.to_string()),
                    uuid: uuid.filter(|u| !u.is_empty()).map(str::to_string),
                    links: vec![],
                });
                continue;
            }
            let Some(rest) = t.strip_prefix("Link ") else {
                continue;
            };
            let Some((n, value)) = rest.split_once(':') else {
                continue;
            };
            let (Ok(link), Some(g)) = (n.trim().parse(), gpus.last_mut()) else {
                continue;
            };
            let v = value.trim();
            let gbps = if v.contains("inactive") {
                None
            } else {
                match v
                    .strip_suffix("GB/s")
                    .and_then(|x| x.trim().parse::<f64>().ok())
                {
                    Some(x) => Some(x),
                    None => continue,
                }
            };
            g.links.push(NvLink { link, gbps });
        }
        gpus.retain(|g| !g.links.is_empty());
        (!gpus.is_empty()).then_some(NvlinkFacts { gpus })
    }
}

impl Paste for NvlinkStatus {
    const NAME: &'static str = "nvlink";
    const ALIASES: &'static [&'static str] = &["nvidia-smi-nvlink"];
    const ABOUT: &'static str =
        "`nvidia-smi nvlink -s` output: each GPU's NVLinks, their speed and the inactive ones; `-` reads stdin";

    fn node(facts: &NvlinkFacts) -> Node {
        Node {
            gpus: facts
                .gpus
                .iter()
                .map(|g| Gpu {
                    model: g.name.clone(),
                    uuid: g.uuid.clone(),
                    nvlinks: g.links.clone(),
                    ..Gpu::new(PciFunction {
                        address: g.gpu.to_string(),
                        ..PciFunction::default()
                    })
                })
                .collect(),
            known: Some(BTreeSet::from([Fact::NvLink])),
            ..Node::default()
        }
    }

    fn table(facts: &NvlinkFacts) -> FactTable {
        let mut t = FactTable::new(["GPU", "links", "active", "GB/s per link", "inactive"]);
        for g in &facts.gpus {
            let active: Vec<f64> = g.links.iter().filter_map(|l| l.gbps).collect();
            let mut speeds: Vec<String> = active.iter().map(|s| s.to_string()).collect();
            speeds.dedup();
            t.row([
                format!("GPU{}", g.gpu),
                g.links.len().to_string(),
                active.len().to_string(),
                speeds.join(","),
                g.links
                    .iter()
                    .filter(|l| l.gbps.is_none())
                    .map(|l| l.link.to_string())
                    .collect::<Vec<_>>()
                    .join(","),
            ]);
        }
        t
    }
}
