//! The parsers on real tool outputs pasted in public reports (fixtures/doctor/captures/,
//! each file's source in fixtures/doctor/README.md).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use std::collections::BTreeMap;

use fabrik_parse::formats::{Format, IbvDevinfo, Lspci, MlnxQos, NvidiaSmiTopo, NvidiaVersion};

fn parse_nvidia_smi_topo(t: &str) -> BTreeMap<(usize, String), String> {
    NvidiaSmiTopo::parse(t)
        .map(|f| f.gpu_nic_cells())
        .unwrap_or_default()
}

fn capture(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/doctor/captures")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn cell(m: &std::collections::BTreeMap<(usize, String), String>, gpu: usize, nic: &str) -> String {
    m.get(&(gpu, nic.to_string()))
        .cloned()
        .unwrap_or_else(|| panic!("no cell GPU{gpu}/{nic} in {m:?}"))
}

#[test]
fn topo_tab_separated_with_gpu_numa_id_and_nic_rows() {
    let m = parse_nvidia_smi_topo(&capture("nvidia-smi-topo-m.nccl-1453.txt"));
    // 8 GPU rows × 9 NIC columns; the NIC rows and the affinity columns are no cells.
    assert_eq!(m.len(), 72, "{m:?}");
    assert_eq!(cell(&m, 0, "NIC8"), "PIX");
    assert_eq!(cell(&m, 7, "NIC1"), "PIX");
    assert_eq!(cell(&m, 0, "NIC0"), "SYS");
    assert_eq!(cell(&m, 4, "NIC5"), "SYS");
    assert_eq!(cell(&m, 3, "NIC6"), "NODE");
    assert!(m
        .values()
        .all(|v| ["PIX", "NODE", "SYS"].contains(&v.as_str())));
}

#[test]
fn topo_space_aligned_without_gpu_numa_id() {
    let m = parse_nvidia_smi_topo(&capture("nvidia-smi-topo-m.nccl-933.txt"));
    assert_eq!(m.len(), 7 * 9);
    assert_eq!(cell(&m, 0, "NIC2"), "PIX");
    assert_eq!(cell(&m, 4, "NIC1"), "PIX");
    assert_eq!(cell(&m, 6, "NIC5"), "PIX");
    assert_eq!(cell(&m, 6, "NIC8"), "SYS");
}

#[test]
fn topo_without_nics_has_no_cells() {
    assert!(parse_nvidia_smi_topo(&capture("nvidia-smi-topo-m.club-3090-1229.txt")).is_empty());
}

#[test]
fn mlnx_qos_ofed_4_2_with_dscp_map_and_tc_blocks() {
    let pfc = MlnxQos::parse(&capture("mlnx_qos.mellanox-doc-2792.txt"))
        .and_then(|q| q.pfc("x"))
        .unwrap();
    assert_eq!(pfc.enabled_priorities, vec![0, 2, 6, 7]);
    assert_eq!(pfc.trust.as_deref(), Some("dscp"));
}

#[test]
fn ibv_devinfo_roce_ports() {
    let m = IbvDevinfo::parse(&capture("ibv_devinfo.deepep-60.txt"))
        .unwrap()
        .mtus();
    assert_eq!(m[&("mlx5_12".to_string(), 1)], (Some(1024), Some(4096)));
    assert!(!m.contains_key(&("mlx5_13".to_string(), 1)));
}

#[test]
fn nvidia_version_files() {
    for (file, version, open) in [
        ("nvidia-version.open-565.nixgl-186.txt", "565.57.01", true),
        ("nvidia-version.open-525.nixgl-121.txt", "525.60.11", true),
        ("nvidia-version.open-555.hyprland-6715.txt", "555.58", true),
        (
            "nvidia-version.proprietary-384.neofetch-876.txt",
            "384.98",
            false,
        ),
    ] {
        let v = NvidiaVersion::parse(&capture(file)).unwrap();
        assert_eq!(v.version.as_deref(), Some(version), "{file}");
        assert_eq!(v.open_module, Some(open), "{file}");
    }
}

#[test]
fn lspci_acs_blocks_as_pasted() {
    let acs = |t: &str| Lspci::parse(t).map(|l| l.acs()).unwrap_or_default();
    let m = acs(&capture("lspci-vv.openvmm-3461.txt"));
    assert_eq!(m.len(), 1, "{m:?}");
    assert!(
        m["0000:00:00.0"].is_empty(),
        "ACSCtl all off; ACSCap is no control"
    );
    // A paste that starts inside a device block: the ACS lines belong to no known address and
    // are dropped rather than given to the next header.
    let m = acs(&capture("lspci-vvv.heymeco-6.txt"));
    assert!(m.is_empty(), "{m:?}");
}

#[test]
fn proc_limits_with_a_huge_memlock_number() {
    let m =
        fabrik_parse::formats::ProcLimits::parse(&capture("proc-limits.procfs-26231.txt")).unwrap();
    assert_eq!(m.soft_bytes, Some(18446744073708503040));
    assert_eq!(m.hard_bytes, Some(18446744073708503040));
}
