//! `rocm-smi --showtopo` (ROCm SMI `rocm_smi.py`, `showTopology`): matrices between GPUs under
//! `=== Weight between two GPUs ===`, `=== Hops between two GPUs ===`, `=== Link Type between two
//! GPUs ===` (`XGMI`, `PCIE`) and, in newer releases, `=== Numa Nodes ===` with
//! `GPU[0] : (Topology) Numa Node: 0` lines. A matrix has a header of `GPU0 GPU1 ...` and one
//! row per GPU, its own cell `0` (weight, hops) or `0`/`X` (link type).

use std::collections::{BTreeMap, BTreeSet};

use fabrik_model::{FactTable, Gpu, Node, PciFunction};
use serde::{Deserialize, Serialize};

use super::{lines, Format, Paste};

/// One pair of GPUs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuPair {
    /// The row GPU's index.
    pub from: u32,
    /// The column GPU's index.
    pub to: u32,
    /// `Weight between two GPUs` (lower is closer).
    pub weight: Option<u64>,
    /// `Hops between two GPUs`.
    pub hops: Option<u64>,
    /// `Link Type between two GPUs` (`XGMI`, `PCIE`).
    pub link_type: Option<String>,
}

/// What `rocm-smi --showtopo` printed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RocmTopoFacts {
    /// Every GPU of a matrix (a one-GPU node has a matrix but no pair).
    pub gpus: BTreeSet<u32>,
    /// Every pair of different GPUs.
    pub pairs: Vec<GpuPair>,
    /// Each GPU's NUMA node.
    pub numa: BTreeMap<u32, i32>,
}

/// `rocm-smi --showtopo`.
pub struct RocmTopo;

#[derive(Clone, Copy, PartialEq)]
enum Matrix {
    Weight,
    Hops,
    LinkType,
    Other,
}

impl Format for RocmTopo {
    type Facts = RocmTopoFacts;
    const EXPECTED: &'static str =
        "`Weight between two GPUs`, `Hops between two GPUs` or `Link Type between two GPUs` matrices";

    fn parse(text: &str) -> Option<RocmTopoFacts> {
        let mut pairs: BTreeMap<(u32, u32), GpuPair> = BTreeMap::new();
        let mut numa = BTreeMap::new();
        let mut gpus = BTreeSet::new();
        let mut matrix = Matrix::Other;
        let mut columns: Vec<u32> = Vec::new();
        let gpu = |w: &str| -> Option<u32> { w.strip_prefix("GPU")?.parse().ok() };
        for line in lines(text) {
            let t = line.trim();
            if t.starts_with('=') {
                let title = t.trim_matches('=').trim();
                if !title.is_empty() {
                    matrix = if title.starts_with("Weight between") {
                        Matrix::Weight
                    } else if title.starts_with("Hops between") {
                        Matrix::Hops
                    } else if title.starts_with("Link Type between") {
                        Matrix::LinkType
                    } else {
                        Matrix::Other
                    };
                    columns.clear();
                }
                continue;
            }
            // `GPU[0]          : (Topology) Numa Node: 0`; older releases print `GPU 0  : ...`.
            if t.contains("(Topology)") {
                let index = t
                    .strip_prefix("GPU[")
                    .and_then(|r| r.split_once(']'))
                    .map(|(n, _)| n)
                    .or_else(|| {
                        t.strip_prefix("GPU ")
                            .and_then(|r| r.split_once(':'))
                            .map(|(n, _)| n)
                    });
                if let (Some(n), true) = (index, t.contains("Numa Node:")) {
                    if let (Ok(n), Some(v)) = (
                        n.trim().parse::<u32>(),
                        t.rsplit_once(':').and_then(|(_, v)| v.trim().parse().ok()),
                    ) {
                        numa.insert(n, v);
                    }
                }
                continue;
            }
            if matrix == Matrix::Other {
                continue;
            }
            let words: Vec<&str> = t.split_whitespace().collect();
            if !words.is_empty() && words.iter().all(|w| gpu(w).is_some()) {
                columns = words.iter().filter_map(|w| gpu(w)).collect();
                continue;
            }
            let Some(from) = words.first().and_then(|w| gpu(w)) else {
                continue;
            };
            if columns.contains(&from) {
                gpus.insert(from);
            }
            for (to, cell) in columns.iter().zip(words.iter().skip(1)) {
                if *to == from {
                    continue;
                }
                let p = pairs.entry((from, *to)).or_insert_with(|| GpuPair {
                    from,
                    to: *to,
                    ..GpuPair::default()
                });
                match matrix {
                    Matrix::Weight => p.weight = cell.parse().ok(),
                    Matrix::Hops => p.hops = cell.parse().ok(),
                    Matrix::LinkType => p.link_type = Some(cell.to_string()),
                    Matrix::Other => {}
                }
            }
        }
        (!gpus.is_empty()).then(|| RocmTopoFacts {
            gpus,
            pairs: pairs.into_values().collect(),
            numa,
        })
    }
}

impl Paste for RocmTopo {
    const NAME: &'static str = "rocm_topo";
    const COMMAND: &'static str = "rocm-topo";
    const ALIASES: &'static [&'static str] = &["rocm-smi"];
    const ABOUT: &'static str =
        "`rocm-smi --showtopo` output: link type (XGMI, PCIE), weight and hops between AMD GPUs, NUMA nodes; `-` reads stdin";

    fn node(facts: &RocmTopoFacts) -> Node {
        let mut gpus = facts.gpus.clone();
        gpus.extend(facts.numa.keys());
        Node {
            gpus: gpus
                .into_iter()
                .map(|g| {
                    Gpu::new(PciFunction {
                        address: g.to_string(),
                        numa_node: facts.numa.get(&g).copied(),
                        ..PciFunction::default()
                    })
                })
                .collect(),
            known: Some(BTreeSet::new()),
            ..Node::default()
        }
    }

    fn table(facts: &RocmTopoFacts) -> FactTable {
        let mut t = FactTable::new(["GPU", "XGMI to", "PCIE to", "NUMA"]);
        for &g in &facts.gpus {
            let to = |kind: &str| {
                facts
                    .pairs
                    .iter()
                    .filter(|p| p.from == g && p.link_type.as_deref() == Some(kind))
                    .map(|p| format!("GPU{}", p.to))
                    .collect::<Vec<_>>()
                    .join(",")
            };
            t.row([
                format!("GPU{g}"),
                to("XGMI"),
                to("PCIE"),
                facts.numa.get(&g).map(i32::to_string).unwrap_or_default(),
            ]);
        }
        t
    }
}
