//! `nvidia-smi topo -m` (and `-mp`): the GPU × NIC matrix, read through its NIC legend.

use std::collections::BTreeMap;

/// `nvidia-smi topo -m`: the GPU-row × NIC-column cells, keyed by (GPU index, NIC name). NIC
/// columns are named `NIC0`… with a `NIC Legend:` (`NIC0: mlx5_0`) in newer drivers, or by the
/// device name (`mlx5_0`) in older ones. Cells are kept as printed (`PIX`, `PXB`, `SYS`...).
pub fn parse_nvidia_smi_topo(raw: &str) -> BTreeMap<(usize, String), String> {
    let mut out = BTreeMap::new();
    let mut legend: BTreeMap<String, String> = BTreeMap::new();
    for line in raw.lines().map(super::unquote) {
        let t = line.trim();
        if let Some((k, v)) = t.split_once(':') {
            let (k, v) = (k.trim(), v.trim());
            if k.starts_with("NIC") && k[3..].chars().all(|c| c.is_ascii_digit()) && !v.is_empty() {
                legend.insert(k.to_string(), v.to_string());
            }
        }
    }
    let mut columns: Vec<String> = Vec::new();
    for line in raw.lines().map(super::unquote) {
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
            }
            continue;
        }
        let Some(label) = words.first() else { break };
        let Some(gpu) = label
            .strip_prefix("GPU")
            .and_then(|n| n.parse::<usize>().ok())
        else {
            if label.starts_with("NIC") || label.starts_with("mlx") || label.starts_with("Legend") {
                break;
            }
            continue;
        };
        // A cell is one word (`X` is printed ` X `), so cells line up with the header.
        for (col, cell) in columns.iter().zip(words.iter().skip(1)) {
            if col.starts_with("GPU") {
                continue;
            }
            let nic = legend.get(col).cloned().unwrap_or_else(|| col.clone());
            out.insert((gpu, nic), cell.to_string());
        }
    }
    out
}

/// How close a NIC is to a GPU, nearest first, as `nvidia-smi topo -m` names the paths (`SOC`
/// is what drivers before 384 printed for `SYS`).
pub fn path_rank(cell: &str) -> Option<u8> {
    match cell {
        "PIX" => Some(0),
        "PXB" => Some(1),
        "PHB" => Some(2),
        "NODE" => Some(3),
        "SYS" | "SOC" => Some(4),
        _ => None,
    }
}

/// One GPU's nearest NICs (several when they tie) and the path to them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GpuNearestNic {
    /// The GPU's index (`GPU0` is 0).
    pub gpu: usize,
    /// Its nearest NICs by name.
    pub nics: Vec<String>,
    /// The path class to them (`PIX`, `PXB`, `PHB`, `NODE`, `SYS`).
    pub path: String,
}

/// Each GPU's nearest NICs, by the path class of its row (NIC names through the legend).
pub fn nearest_nics(cells: &BTreeMap<(usize, String), String>) -> Vec<GpuNearestNic> {
    let mut best: BTreeMap<usize, (u8, String, Vec<String>)> = BTreeMap::new();
    for ((gpu, nic), cell) in cells {
        let Some(rank) = path_rank(cell) else {
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
