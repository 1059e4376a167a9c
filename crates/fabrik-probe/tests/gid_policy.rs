//! Table tests of real GID table shapes, written as the kernel writes them under
//! `/sys/class/infiniband/DEV/ports/N/` (`gids/N` in full `%pI6` form, `gid_attrs/types/N`,
//! `gid_attrs/ndevs/N`) and read back by fabrik-probe, as `fabrik env`, `doctor` and the bench
//! see them. Expected indexes are NCCL's: each was traced through `ncclIbGetGidIndex`
//! (v2.21.5-1 .. v2.30.7-1) by hand; the trace is in the comment of each case.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use fabrik_model::gid::policy::*;
use fabrik_model::{LinkLayer, Port};
use fabrik_probe::fs::RootFs;
use fabrik_probe::rdma::{read_devices, MtuMap};

const ZERO: &str = "0000:0000:0000:0000:0000:0000:0000:0000";
const V1: &str = "IB/RoCE v1";
const V2: &str = "RoCE v2";

/// `(index, gid, type, ndev)`; an empty type leaves `gid_attrs/types/N` out, as an empty or
/// other-namespace slot answers EINVAL there.
type Row<'a> = (u32, &'a str, &'a str, &'a str);

fn write_port(root: &Path, dev: &str, layer: &str, rows: &[Row], table_len: u32) {
    let base = root.join(format!("sys/class/infiniband/{dev}/ports/1"));
    for sub in ["gids", "gid_attrs/types", "gid_attrs/ndevs"] {
        std::fs::create_dir_all(base.join(sub)).unwrap();
    }
    std::fs::write(base.join("state"), "4: ACTIVE\n").unwrap();
    std::fs::write(base.join("phys_state"), "5: LinkUp\n").unwrap();
    std::fs::write(base.join("link_layer"), format!("{layer}\n")).unwrap();
    for i in 0..table_len {
        let row = rows.iter().find(|r| r.0 == i);
        let gid = row.map_or(ZERO, |r| r.1);
        std::fs::write(base.join(format!("gids/{i}")), format!("{gid}\n")).unwrap();
        if let Some((_, _, ty, ndev)) = row {
            if !ty.is_empty() {
                std::fs::write(base.join(format!("gid_attrs/types/{i}")), format!("{ty}\n"))
                    .unwrap();
                std::fs::write(
                    base.join(format!("gid_attrs/ndevs/{i}")),
                    format!("{ndev}\n"),
                )
                .unwrap();
            }
        }
    }
}

fn probe_port(rows: &[Row], layer: &str) -> Port {
    let dir = tempfile::tempdir().unwrap();
    write_port(dir.path(), "mlx5_0", layer, rows, 16);
    let mut fs = RootFs::new(dir.path()).unwrap();
    let devs = read_devices(&mut fs, &MtuMap::new());
    devs.into_iter()
        .find(|d| d.name == "mlx5_0")
        .unwrap()
        .ports
        .remove(0)
}

fn pick(rows: &[Row], env: &[(&str, &str)]) -> u32 {
    let port = probe_port(rows, "Ethernet");
    assert_eq!(port.link_layer, Some(LinkLayer::Ethernet));
    let s = GidSettings::from_env(|k| {
        env.iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.to_string())
    });
    nccl_gid_index(&port, &s)
}

const LL: &str = "fe80:0000:0000:0000:bace:f6ff:fe4a:2170";
const V4_A: &str = "0000:0000:0000:0000:0000:ffff:c0a8:6401"; // 192.168.100.1
const V4_B: &str = "0000:0000:0000:0000:0000:ffff:0a00:6405"; // 10.0.100.5
const V6_G: &str = "2001:0db8:0000:0064:bace:f6ff:fe4a:2170"; // 2001:db8:0:64::/64

#[test]
fn the_usual_four_entry_table_picks_the_ipv4_roce_v2_entry() {
    // 0 fe80 v1 (start) · 1 fe80: IPv6, same family, not AF_INET: kept · 2 IPv4 v1: family
    // flips to the asked AF_INET: taken · 3 IPv4 v2: versions differ, v2 asked: taken.
    let rows = [
        (0, LL, V1, "ens1f0np0"),
        (1, LL, V2, "ens1f0np0"),
        (2, V4_A, V1, "ens1f0np0"),
        (3, V4_A, V2, "ens1f0np0"),
    ];
    assert_eq!(pick(&rows, &[]), 3);
    // NCCL_IB_ROCE_VERSION_NUM=1: 2 is taken by the family flip, 3 is v2 and not asked.
    assert_eq!(pick(&rows, &[("NCCL_IB_ROCE_VERSION_NUM", "1")]), 2);
    // An explicit index wins, whatever it points at.
    assert_eq!(pick(&rows, &[("NCCL_IB_GID_INDEX", "1")]), 1);
    // -1 is "select", as unset.
    assert_eq!(pick(&rows, &[("NCCL_IB_GID_INDEX", "-1")]), 3);
    // strtoll: no digits is 0, not the default; an empty value is the default.
    assert_eq!(pick(&rows, &[("NCCL_IB_GID_INDEX", "auto")]), 0);
    assert_eq!(pick(&rows, &[("NCCL_IB_GID_INDEX", "")]), 3);
    assert_eq!(pick(&rows, &[("NCCL_IB_GID_INDEX", "3abc")]), 3);
}

#[test]
fn the_real_dual_port_fixture_and_soft_roce() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/nodes/roce-dualport");
    let devs = read_devices(&mut RootFs::new(&root).unwrap(), &MtuMap::new());
    for d in devs
        .iter()
        .filter(|d| d.name == "mlx5_0" || d.name == "mlx5_1")
    {
        assert_eq!(recommended_gid_index(&d.ports[0]), Some(3), "{}", d.name);
    }
    // rxe on a veth: 0 fe80 v2 · 1 IPv4 v2: family flip to AF_INET.
    let rxe = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/nodes/softroce-rxe");
    let devs = read_devices(&mut RootFs::new(&rxe).unwrap(), &MtuMap::new());
    let rxe0 = devs.iter().find(|d| d.name == "rxe0").unwrap();
    assert_eq!(recommended_gid_index(&rxe0.ports[0]), Some(1));
}

#[test]
fn inside_a_pod_the_table_starts_at_four() {
    // 0..3 belong to the host's netdevs: zeros, types unreadable (EINVAL). The pod's net1:
    // 4 fe80 v1 · 5 fe80 v2 · 6 IPv4 v1 · 7 IPv4 v2.
    // 0 zero (IPv6 family) start · 1..5 IPv6 family, never AF_INET · 6 flips family: taken ·
    // 7 same family, v1→v2 differ, v2 asked: taken.
    let rows = [
        (4, LL, V1, "net1"),
        (5, LL, V2, "net1"),
        (6, V4_A, V1, "net1"),
        (7, V4_A, V2, "net1"),
    ];
    assert_eq!(pick(&rows, &[]), 7);
    // Only the IPv4 pair inside the pod, at 4 and 5.
    let rows = [(4, V4_A, V1, "net1"), (5, V4_A, V2, "net1")];
    assert_eq!(pick(&rows, &[]), 5);
    assert_eq!(
        recommended_gid_index(&probe_port(&rows, "Ethernet")),
        Some(5)
    );
}

#[test]
fn ipv4_and_ipv6_on_one_port() {
    let rows = [
        (0, LL, V1, "eth0"),
        (1, LL, V2, "eth0"),
        (2, V6_G, V1, "eth0"),
        (3, V6_G, V2, "eth0"),
        (4, V4_A, V1, "eth0"),
        (5, V4_A, V2, "eth0"),
    ];
    // AF_INET: the IPv6 entries are never taken; 4 flips the family, 5 is v2.
    assert_eq!(pick(&rows, &[]), 5);
    // AF_INET6: 1 is link-local (not valid); 2 is valid, current 0 is not valid, but v1 is not
    // asked; 3 is valid and v2 (current 0 not valid): taken; 4/5 are AF_INET.
    assert_eq!(pick(&rows, &[("NCCL_IB_ADDR_FAMILY", "AF_INET6")]), 3);
    assert_eq!(
        pick(
            &rows,
            &[
                ("NCCL_IB_ADDR_FAMILY", "AF_INET6"),
                ("NCCL_IB_ROCE_VERSION_NUM", "1")
            ]
        ),
        2
    );
    // Anything but AF_INET6 is AF_INET.
    assert_eq!(pick(&rows, &[("NCCL_IB_ADDR_FAMILY", "inet6")]), 5);
    // AF_INET6 with a range the global prefix is not in: nothing valid matches, index 0 stays.
    assert_eq!(
        pick(
            &rows,
            &[
                ("NCCL_IB_ADDR_FAMILY", "AF_INET6"),
                ("NCCL_IB_ADDR_RANGE", "2001:db8:0:65::/64")
            ]
        ),
        0
    );
    assert_eq!(
        pick(
            &rows,
            &[
                ("NCCL_IB_ADDR_FAMILY", "AF_INET6"),
                ("NCCL_IB_ADDR_RANGE", "2001:db8:0:64::/64")
            ]
        ),
        3
    );
}

#[test]
fn several_addresses_take_the_first_unless_a_range_says_otherwise() {
    // A VLAN (or macvlan) on the port adds its address's GIDs before the port's own; NCCL does
    // not look at ndevs: the first IPv4 RoCE v2 entry wins. This is the table on which the
    // doctor said 3 and `fabrik env` and the bench said 5.
    let rows = [
        (0, LL, V1, "ens1f0np0"),
        (1, LL, V2, "ens1f0np0"),
        (2, V4_B, V1, "ens1f0np0.100"),
        (3, V4_B, V2, "ens1f0np0.100"),
        (4, V4_A, V1, "ens1f0np0"),
        (5, V4_A, V2, "ens1f0np0"),
    ];
    assert_eq!(pick(&rows, &[]), 3);
    // 2 and 3 are outside 192.168.100.0/24: rule 1 needs the range, rule 2 too; 4 flips, 5 v2.
    assert_eq!(
        pick(&rows, &[("NCCL_IB_ADDR_RANGE", "192.168.100.0/24")]),
        5
    );
    assert_eq!(pick(&rows, &[("NCCL_IB_ADDR_RANGE", "10.0.0.0/8")]), 3);
    // A range NCCL ignores (no `/`, a too long prefix, an IPv6 range under AF_INET).
    for bad in ["192.168.100.0", "192.168.100.0/33", "2001:db8::/32"] {
        assert_eq!(pick(&rows, &[("NCCL_IB_ADDR_RANGE", bad)]), 3, "{bad}");
    }
}

#[test]
fn only_link_local_leaves_nccl_on_index_0_and_fabrik_recommends_nothing() {
    let rows = [(0, LL, V1, "eth0"), (1, LL, V2, "eth0")];
    assert_eq!(pick(&rows, &[]), 0);
    assert_eq!(recommended_gid_index(&probe_port(&rows, "Ethernet")), None);
}

#[test]
fn roce_v2_listed_before_v1() {
    // Some drivers list the v2 entry of a pair first: 2 IPv4 v2 flips the family; 3 v1 is
    // not asked.
    let rows = [
        (0, LL, V2, "eth0"),
        (1, LL, V1, "eth0"),
        (2, V4_A, V2, "eth0"),
        (3, V4_A, V1, "eth0"),
    ];
    assert_eq!(pick(&rows, &[]), 2);
    assert_eq!(pick(&rows, &[("NCCL_IB_ROCE_VERSION_NUM", "1")]), 3);
}

#[test]
fn a_bonded_port_uses_the_bond_entries() {
    // RoCE LAG: mlx5_bond_0 carries the bond's GIDs; the slaves have no addresses of their own.
    let rows = [
        (0, LL, V1, "bond0"),
        (1, LL, V2, "bond0"),
        (2, V4_A, V1, "bond0"),
        (3, V4_A, V2, "bond0"),
        (4, V4_B, V1, "bond0.200"),
        (5, V4_B, V2, "bond0.200"),
    ];
    assert_eq!(pick(&rows, &[]), 3);
    assert_eq!(pick(&rows, &[("NCCL_IB_ADDR_RANGE", "10.0.100.0/24")]), 5);
}

#[test]
fn infiniband_uses_the_routable_flid_entry_when_there_is_one() {
    let plain = [(0, "fe80:0000:0000:0000:a088:c203:0025:6b47", V1, "")];
    let p = probe_port(&plain, "InfiniBand");
    assert_eq!(nccl_gid_index(&p, &GidSettings::default()), 0);
    // NCCL_IB_GID_INDEX does not apply to InfiniBand ports.
    let s = GidSettings::from_env(|k| (k == "NCCL_IB_GID_INDEX").then(|| "3".to_string()));
    assert_eq!(nccl_gid_index(&p, &s), 0);
    // A GID at index 1 with FLID 0x0012 in bytes 4..6.
    let flid = [
        (0, "fe80:0000:0000:0000:a088:c203:0025:6b47", V1, ""),
        (1, "fec0:0000:0012:0001:a088:c203:0025:6b47", V1, ""),
    ];
    let p = probe_port(&flid, "InfiniBand");
    assert_eq!(nccl_gid_index(&p, &GidSettings::default()), 1);
}

#[test]
fn settings_parse_as_nccl_reads_them() {
    let s = GidSettings::from_env(|k| match k {
        "NCCL_IB_ROCE_VERSION_NUM" => Some("0x1".into()),
        "NCCL_IB_GID_INDEX" => Some("010".into()),
        "NCCL_IB_ROUTABLE_FLID_GID_INDEX" => Some("99999999999999999999".into()),
        _ => None,
    });
    assert_eq!(s.roce_version, 1);
    assert_eq!(s.gid_index, Some(8));
    // Overflow (ERANGE) is the one case NCCL falls back to the default.
    assert_eq!(s.routable_flid_index, 1);
    assert_eq!(GidSettings::from_env(|_| None), GidSettings::default());
}

proptest::proptest! {
    #[test]
    fn parsers_never_panic(s in ".*") {
        let _ = parse_gid(&s);
        let _ = GidSettings::from_env(|_| Some(s.clone()));
    }
}
