//! GPU↔NIC distance, classified as `nvidia-smi topo -m` and NCCL do, from PCI paths alone.
//!
//! A PCIe switch shows in sysfs as an upstream port with downstream ports below it; like NCCL,
//! fabrik treats each switch as one hop by stepping up two levels at a time from a device.

use std::collections::{BTreeMap, BTreeSet};

use fabrik_model::{Gpu, GpuNicPath, PathType, PciBridge, PciFunction};

/// The host bridge (`DDDD:BB`) a PCI path hangs from: its root port's domain and bus.
fn host_bridge(path: &[String]) -> Option<&str> {
    let first = path.first()?;
    first.rsplit_once(':').map(|(db, _)| db)
}

/// The switches above a device, nearest first: its grandparent, then every second bridge up.
fn switch_chain(path: &[String]) -> Vec<&str> {
    let mut out = Vec::new();
    let mut i = path.len() as isize - 3;
    while i >= 0 {
        out.push(path[i as usize].as_str());
        i -= 2;
    }
    out
}

/// Whether two functions share a NUMA node. On a machine with a single NUMA node they do, even
/// when the kernel reports `-1` for a device.
fn same_numa(a: &PciFunction, b: &PciFunction, single_node: bool) -> Option<bool> {
    if single_node {
        return Some(true);
    }
    match (a.numa_node, b.numa_node) {
        (Some(x), Some(y)) => Some(x == y),
        _ => None,
    }
}

/// Classifies the connection between two PCI functions. `None` when the paths are unknown, or
/// when the devices sit on different host bridges and a NUMA node is unknown.
pub fn classify(a: &PciFunction, b: &PciFunction, single_node: bool) -> Option<PathType> {
    if a.path.is_empty() || b.path.is_empty() {
        return None;
    }
    if host_bridge(&a.path)? != host_bridge(&b.path)? {
        return same_numa(a, b, single_node).map(
            |same| {
                if same {
                    PathType::NODE
                } else {
                    PathType::SYS
                }
            },
        );
    }
    let (pa, pb) = (&a.path, &b.path);
    if pa.len() >= 2 && pb.len() >= 2 && pa[pa.len() - 2] == pb[pb.len() - 2] {
        // Both right below one bridge (functions of one card, or one switch port).
        return Some(PathType::PIX);
    }
    let (ca, cb) = (switch_chain(pa), switch_chain(pb));
    for (i, s) in ca.iter().enumerate() {
        if let Some(j) = cb.iter().position(|t| t == s) {
            return Some(if i + j == 0 {
                PathType::PIX
            } else {
                PathType::PXB
            });
        }
    }
    Some(PathType::PHB)
}

/// One pair for every GPU and NIC, in GPU then NIC order. `single_node`: the machine has one
/// NUMA node (`/sys/devices/system/node/online` is `0`).
pub fn gpu_nic_paths(
    gpus: &[Gpu],
    nics: &[(String, PciFunction)],
    single_node: bool,
) -> Vec<GpuNicPath> {
    let mut out = Vec::new();
    for g in gpus {
        for (name, pci) in nics {
            out.push(GpuNicPath {
                gpu: g.pci.address.clone(),
                nic: name.clone(),
                nic_pci: pci.address.clone(),
                path_type: classify(&g.pci, pci, single_node),
                same_numa: same_numa(&g.pci, pci, single_node),
            });
        }
    }
    out
}

/// Every bridge above the given functions, with ACS control bits where `lspci -vvv` showed them.
pub fn bridges(
    functions: &[&PciFunction],
    acs: Option<&BTreeMap<String, Vec<String>>>,
) -> Vec<PciBridge> {
    let mut set = BTreeSet::new();
    for f in functions {
        if let Some((_, above)) = f.path.split_last() {
            set.extend(above.iter().cloned());
        }
    }
    set.into_iter()
        .map(|address| PciBridge {
            acs_ctl_enabled: acs.and_then(|m| m.get(&address).cloned()),
            address,
            function: None,
        })
        .collect()
}

fn path_type_named(s: &str) -> Option<PathType> {
    Some(match s {
        "PIX" => PathType::PIX,
        "PXB" => PathType::PXB,
        "PHB" => PathType::PHB,
        "NODE" => PathType::NODE,
        "SYS" => PathType::SYS,
        _ => None?,
    })
}

/// Compares the PCI walk with a captured `nvidia-smi topo -m` (GPU N is the Nth GPU in PCI
/// order, as nvidia-smi numbers them). Where the walk could not tell, nvidia-smi's answer is
/// taken; where they disagree, the walk's answer stays and a warning says so.
pub fn cross_check(
    paths: &mut [GpuNicPath],
    gpus: &[Gpu],
    smi: &BTreeMap<(usize, String), String>,
    fs: &mut crate::fs::RootFs,
) {
    for ((index, nic), cell) in smi {
        let Some(theirs) = path_type_named(cell) else {
            continue;
        };
        let Some(gpu) = gpus.get(*index) else {
            continue;
        };
        let Some(p) = paths
            .iter_mut()
            .find(|p| p.gpu == gpu.pci.address && &p.nic == nic)
        else {
            continue;
        };
        match p.path_type {
            None => p.path_type = Some(theirs),
            Some(ours) if ours != theirs => fs.warn(
                "/fabrik/cmd/nvidia-smi-topo-m.txt",
                format!(
                    "nvidia-smi says {} for GPU{index} ({}) and {nic}; the PCI walk says {}",
                    theirs.as_str(),
                    gpu.pci.address,
                    ours.as_str()
                ),
            ),
            Some(_) => {}
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn f(path: &[&str], numa: Option<i32>) -> PciFunction {
        PciFunction {
            address: path.last().map(|s| s.to_string()).unwrap_or_default(),
            numa_node: numa,
            path: path.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn classifies_like_nvidia_smi() {
        // Root port 00:01.0 → switch 01:00.0 → ports 02:00.0 (GPU) and 02:01.0 (NIC).
        let gpu = f(
            &[
                "0000:00:01.0",
                "0000:01:00.0",
                "0000:02:00.0",
                "0000:03:00.0",
            ],
            Some(0),
        );
        let nic = f(
            &[
                "0000:00:01.0",
                "0000:01:00.0",
                "0000:02:01.0",
                "0000:04:00.0",
            ],
            Some(0),
        );
        assert_eq!(classify(&gpu, &nic, false), Some(PathType::PIX));
        // A second switch level below the first: two switches crossed.
        let deep = f(
            &[
                "0000:00:01.0",
                "0000:01:00.0",
                "0000:02:02.0",
                "0000:05:00.0",
                "0000:06:00.0",
                "0000:07:00.0",
            ],
            Some(0),
        );
        assert_eq!(classify(&gpu, &deep, false), Some(PathType::PXB));
        // Another root port of the same host bridge.
        let other_rp = f(&["0000:00:02.0", "0000:08:00.0"], Some(0));
        assert_eq!(classify(&gpu, &other_rp, false), Some(PathType::PHB));
        let other_hb_same_numa = f(&["0000:40:01.0", "0000:41:00.0"], Some(0));
        assert_eq!(
            classify(&gpu, &other_hb_same_numa, false),
            Some(PathType::NODE)
        );
        let far = f(&["0000:80:01.0", "0000:81:00.0"], Some(1));
        assert_eq!(classify(&gpu, &far, false), Some(PathType::SYS));
        let unknown_numa = f(&["0000:80:01.0", "0000:81:00.0"], None);
        assert_eq!(classify(&gpu, &unknown_numa, false), None);
        // With one NUMA node in the machine, `-1` still means that node.
        assert_eq!(classify(&gpu, &unknown_numa, true), Some(PathType::NODE));
        let two_functions = f(
            &[
                "0000:00:01.0",
                "0000:01:00.0",
                "0000:02:00.0",
                "0000:03:00.1",
            ],
            Some(0),
        );
        assert_eq!(classify(&gpu, &two_functions, false), Some(PathType::PIX));
        assert_eq!(classify(&gpu, &f(&[], Some(0)), false), None);
    }

    #[test]
    fn nvidia_smi_fills_gaps_and_disagreements_warn() {
        let gpu = Gpu {
            pci: f(
                &[
                    "0000:00:01.0",
                    "0000:01:00.0",
                    "0000:02:00.0",
                    "0000:03:00.0",
                ],
                Some(0),
            ),
            model: None,
            uuid: None,
            minor: None,
            ..Default::default()
        };
        let near = (
            "mlx5_0".to_string(),
            f(
                &[
                    "0000:00:01.0",
                    "0000:01:00.0",
                    "0000:02:01.0",
                    "0000:04:00.0",
                ],
                Some(0),
            ),
        );
        let lost = (
            "mlx5_1".to_string(),
            f(&["0000:80:01.0", "0000:81:00.0"], None),
        );
        let mut paths = gpu_nic_paths(std::slice::from_ref(&gpu), &[near, lost], false);
        assert_eq!(paths[1].path_type, None);
        let mut smi = BTreeMap::new();
        smi.insert((0, "mlx5_0".to_string()), "PXB".to_string());
        smi.insert((0, "mlx5_1".to_string()), "SYS".to_string());
        smi.insert((5, "mlx5_1".to_string()), "PIX".to_string());
        let dir = tempfile::tempdir().expect("tempdir");
        let mut fs = crate::fs::RootFs::new(dir.path()).unwrap();
        cross_check(&mut paths, &[gpu], &smi, &mut fs);
        assert_eq!(paths[0].path_type, Some(PathType::PIX));
        assert_eq!(paths[1].path_type, Some(PathType::SYS));
        assert_eq!(fs.warnings.len(), 1);
        assert!(fs.warnings[0].message.contains("nvidia-smi says PXB"));
    }

    #[test]
    fn bridges_are_the_ancestors() {
        let gpu = f(
            &[
                "0000:00:01.0",
                "0000:01:00.0",
                "0000:02:00.0",
                "0000:03:00.0",
            ],
            Some(0),
        );
        let mut acs = BTreeMap::new();
        acs.insert("0000:01:00.0".to_string(), vec!["ReqRedir".to_string()]);
        let b = bridges(&[&gpu], Some(&acs));
        assert_eq!(b.len(), 3);
        assert_eq!(b[1].acs_ctl_enabled, Some(vec!["ReqRedir".to_string()]));
        assert_eq!(b[0].acs_ctl_enabled, None);
    }
}
