//! `nvidia-smi topo -m` (and `-mp`): the whole GPU and NIC matrix, read through its NIC legend,
//! with each GPU's CPU and NUMA affinity.
//!
//! nvidia-smi names GPUs by index, not by PCI address: the partial node's GPUs carry the
//! index (`0`) where a probed node has the address, so the doctor names them `GPU 0`.

use std::collections::{BTreeMap, BTreeSet};

use fabrik_model::{Fact, FactTable, Gpu, GpuNicPath, Node, PathType, PciFunction, RdmaDevice};
use serde::{Deserialize, Serialize};

use super::{lines, Format, Paste};

/// One cell of the matrix: the connection between a row's device and a column's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopoCell {
    /// The row: `GPU0`, or a NIC by name (`mlx5_0`, through the legend).
    pub from: String,
    /// The column, named the same way.
    pub to: String,
    /// As printed: `X`, `NV18`, `PIX`, `PXB`, `PHB`, `NODE`, `SYS` (`SOC` before driver 384).
    pub path: String,
}

/// One GPU's nearest NICs (several when they tie) and the path to them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuNearestNic {
    /// The GPU's index (`GPU0` is 0).
    pub gpu: usize,
    /// Its nearest NICs by name.
    pub nics: Vec<String>,
    /// The path class to them (`PIX`, `PXB`, `PHB`, `NODE`, `SYS`).
    pub path: String,
}

/// A GPU's row beyond the matrix.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuAffinity {
    /// The GPU's index.
    pub gpu: usize,
    /// `CPU Affinity` (`0-47,96-143`).
    pub cpus: Option<String>,
    /// `NUMA Affinity`.
    pub numa: Option<i32>,
}

/// What `nvidia-smi topo -m` printed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopoFacts {
    /// Each GPU's nearest NICs.
    pub nearest: Vec<GpuNearestNic>,
    /// Every NIC by name.
    pub nics: BTreeSet<String>,
    /// NICs nearest to at least one GPU, in GPU order: NCCL_IB_HCA when other NICs exist.
    pub nccl_ib_hca: Vec<String>,
    /// Every cell of the matrix, GPU and NIC rows alike.
    pub matrix: Vec<TopoCell>,
    /// Each GPU's CPU and NUMA affinity.
    pub affinity: Vec<GpuAffinity>,
}

impl TopoFacts {
    /// The GPU-row × NIC-column cells, keyed by (GPU index, NIC name).
    pub fn gpu_nic_cells(&self) -> BTreeMap<(usize, String), String> {
        self.matrix
            .iter()
            .filter(|c| self.nics.contains(&c.to))
            .filter_map(|c| Some(((gpu_index(&c.from)?, c.to.clone()), c.path.clone())))
            .collect()
    }
}

fn gpu_index(label: &str) -> Option<usize> {
    label.strip_prefix("GPU")?.parse().ok()
}

/// `nvidia-smi topo -m`.
pub struct NvidiaSmiTopo;

impl Format for NvidiaSmiTopo {
    type Facts = TopoFacts;
    const EXPECTED: &'static str =
        "a matrix whose header starts `GPU0 GPU1 ... NIC0 ...` and rows `GPU0 X NV18 ... PIX ...`";

    fn parse(text: &str) -> Option<TopoFacts> {
        let (matrix, affinity, nics) = parse_matrix(text);
        if !matrix.iter().any(|c| gpu_index(&c.from).is_some()) {
            return None;
        }
        let mut facts = TopoFacts {
            nics,
            matrix,
            affinity,
            ..TopoFacts::default()
        };
        facts.nearest = nearest_nics(&facts.gpu_nic_cells());
        for g in &facts.nearest {
            for n in &g.nics {
                if !facts.nccl_ib_hca.contains(n) {
                    facts.nccl_ib_hca.push(n.clone());
                }
            }
        }
        Some(facts)
    }
}

/// `NIC0: mlx5_0` lines of the NIC legend.
fn legend(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in lines(text) {
        if let Some((k, v)) = line.trim().split_once(':') {
            let (k, v) = (k.trim(), v.trim());
            if k.starts_with("NIC") && k[3..].chars().all(|c| c.is_ascii_digit()) && !v.is_empty() {
                out.insert(k.to_string(), v.to_string());
            }
        }
    }
    out
}

type Matrix = (Vec<TopoCell>, Vec<GpuAffinity>, BTreeSet<String>);

fn parse_matrix(text: &str) -> Matrix {
    let legend = legend(text);
    let name = |col: &str| legend.get(col).cloned().unwrap_or_else(|| col.to_string());
    let mut columns: Vec<String> = Vec::new();
    let mut numa_column = false;
    let mut cells = Vec::new();
    let mut affinity = Vec::new();
    for line in lines(text) {
        let words: Vec<&str> = line.split_whitespace().collect();
        if columns.is_empty() {
            // The header's first word is GPU0 and its second another column; GPU0's own row has
            // `X` second. Pastes often lose the header's leading whitespace, so that is no test.
            // A label may precede the header (`NVIDIA Topology:` in collect_env dumps).
            let at = words.iter().position(|w| *w == "GPU0").filter(|i| *i <= 3);
            if let Some(at) = at.filter(|i| words.get(i + 1).is_some_and(|w| *w != "X")) {
                columns = words[at..]
                    .iter()
                    .take_while(|w| **w != "CPU" && **w != "NUMA")
                    .map(|w| w.to_string())
                    .collect();
                numa_column = words[at..].contains(&"NUMA");
            }
            continue;
        }
        let Some(label) = words.first() else { continue };
        if !columns.iter().any(|c| c == label) {
            continue;
        }
        // A cell is one word (`X` is printed ` X `), so cells line up with the header.
        let from = name(label);
        for (col, cell) in columns.iter().zip(words.iter().skip(1)) {
            cells.push(TopoCell {
                from: from.clone(),
                to: name(col),
                path: cell.to_string(),
            });
        }
        if let Some(gpu) = gpu_index(label) {
            let rest = &words[(columns.len() + 1).min(words.len())..];
            affinity.push(GpuAffinity {
                gpu,
                cpus: rest.first().map(|s| s.to_string()),
                numa: numa_column
                    .then(|| rest.get(1).and_then(|n| n.parse().ok()))
                    .flatten(),
            });
        }
    }
    let nics = columns
        .iter()
        .filter(|c| gpu_index(c).is_none())
        .map(|c| name(c))
        .collect();
    (cells, affinity, nics)
}

/// How close a NIC is to a GPU, as `nvidia-smi topo -m` names the paths (`SOC` is what drivers
/// before 384 printed for `SYS`).
fn path_type(cell: &str) -> Option<PathType> {
    match cell {
        "PIX" => Some(PathType::PIX),
        "PXB" => Some(PathType::PXB),
        "PHB" => Some(PathType::PHB),
        "NODE" => Some(PathType::NODE),
        "SYS" | "SOC" => Some(PathType::SYS),
        _ => None,
    }
}

/// Each GPU's nearest NICs, by the path class of its row.
fn nearest_nics(cells: &BTreeMap<(usize, String), String>) -> Vec<GpuNearestNic> {
    let mut best: BTreeMap<usize, (PathType, String, Vec<String>)> = BTreeMap::new();
    for ((gpu, nic), cell) in cells {
        let Some(rank) = path_type(cell) else {
            continue;
        };
        let e = best
            .entry(*gpu)
            .or_insert_with(|| (rank, cell.clone(), Vec::new()));
        if rank < e.0 {
            *e = (rank, cell.clone(), Vec::new());
        }
        if rank == e.0 {
            e.2.push(nic.clone());
        }
    }
    best.into_iter()
        .map(|(gpu, (_, path, mut nics))| {
            nics.sort_by_key(|n| natural(n));
            GpuNearestNic { gpu, nics, path }
        })
        .collect()
}

/// `mlx5_10` after `mlx5_9`: the trailing number compared as a number.
fn natural(s: &str) -> (String, u64) {
    let digits = s.len() - s.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (head, tail) = s.split_at(s.len() - digits);
    (head.to_string(), tail.parse().unwrap_or(0))
}

/// The trailing number of a NIC name (`mlx5_3` → 3).
fn trailing_number(n: &str) -> Option<usize> {
    let digits = n.len() - n.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    n[n.len() - digits..].parse().ok()
}

impl Paste for NvidiaSmiTopo {
    const NAME: &'static str = "topo";
    const ALIASES: &'static [&'static str] = &["nvidia-smi-topo"];
    const ABOUT: &'static str =
        "`nvidia-smi topo -m` output: the GPU/NIC matrix and each GPU's nearest NIC; `-` reads stdin";

    fn node(facts: &TopoFacts) -> Node {
        let gpus = facts
            .affinity
            .iter()
            .map(|a| {
                Gpu::new(PciFunction {
                    address: a.gpu.to_string(),
                    numa_node: a.numa,
                    ..PciFunction::default()
                })
            })
            .collect();
        let gpu_nic_paths = facts
            .gpu_nic_cells()
            .into_iter()
            .map(|((gpu, nic), cell)| GpuNicPath {
                gpu: gpu.to_string(),
                nic,
                nic_pci: String::new(),
                path_type: path_type(&cell),
                same_numa: None,
            })
            .collect();
        Node {
            gpus,
            rdma_devices: facts
                .nics
                .iter()
                .map(|n| RdmaDevice {
                    name: n.clone(),
                    ..RdmaDevice::default()
                })
                .collect(),
            gpu_nic_paths,
            known: Some(BTreeSet::from([Fact::GpuNicPaths])),
            ..Node::default()
        }
    }

    fn table(facts: &TopoFacts) -> FactTable {
        let mut t = FactTable::new(["GPU", "path", "nearest NIC", "NUMA"]);
        for g in &facts.nearest {
            let numa = facts
                .affinity
                .iter()
                .find(|a| a.gpu == g.gpu)
                .and_then(|a| a.numa);
            t.row([
                format!("GPU{}", g.gpu),
                g.path.clone(),
                g.nics.join(","),
                fabrik_model::facts::cell(&numa),
            ]);
        }
        t.note(format!(
            "NCCL_IB_HCA (GPU-near NICs): {}",
            facts.nccl_ib_hca.join(",")
        ));
        // GPU n's own NIC is often not NICn/mlx5_n (fixture topo/03: GPU1 -> mlx5_3): NCCL
        // reads the PCI topology itself, but scripts that pin rank n to mlx5_n pick a far NIC.
        let crossed: Vec<String> = facts
            .nearest
            .iter()
            .filter(|g| g.nics.len() == 1 && matches!(g.path.as_str(), "PIX" | "PXB"))
            .filter(|g| trailing_number(&g.nics[0]) != Some(g.gpu))
            .map(|g| format!("GPU{} -> {}", g.gpu, g.nics[0]))
            .collect();
        if !crossed.is_empty() {
            t.note(format!(
                "the NIC nearest to a GPU does not carry the GPU's number ({}): a launcher that maps local rank n to NIC n sends those GPUs' traffic through a far NIC; map ranks by this table or leave the choice to NCCL",
                crossed.join(", ")
            ));
        }
        let unused: Vec<&str> = facts
            .nics
            .iter()
            .filter(|n| !facts.nccl_ib_hca.contains(n))
            .map(String::as_str)
            .collect();
        if !unused.is_empty() && !facts.nccl_ib_hca.is_empty() {
            t.note(format!(
                "NICs {} are nearest to no GPU (storage or management NICs, or far rails): NCCL_IB_HCA={} keeps NCCL on the GPU-near ones",
                unused.join(","),
                facts.nccl_ib_hca.join(",")
            ));
        }
        t
    }
}
