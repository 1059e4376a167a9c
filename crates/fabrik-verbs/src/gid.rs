//! Which GID to use: the RoCE v2 entry carrying the interface's IPv4 address, the one NCCL picks
//! (and `fabrik env` recommends), so that RoCE traffic is routable and gets the DSCP/ECN treatment
//! of IP.

use std::path::Path;

use fabrik_model::{Gid, GidType, LinkLayer, Node};

/// The default GID index for `port` of `device` in `node`.
pub fn default_gid_index(node: &Node, device: &str, port: u32) -> Option<u32> {
    let p = node
        .rdma_device(device)?
        .ports
        .iter()
        .find(|p| p.number == port)?;
    if matches!(p.link_layer, Some(LinkLayer::Infiniband)) {
        return Some(0);
    }
    let ipv4: Vec<String> = p
        .netdev
        .as_deref()
        .and_then(|n| node.net_interface(n))
        .map(|i| {
            i.ipv4
                .iter()
                .map(|a| a.split('/').next().unwrap_or(a).to_string())
                .collect()
        })
        .unwrap_or_default();
    select_gid(&p.gids, &ipv4)
}

/// Picks from a GID table: a RoCE v2 GID whose IPv4 is one of `ipv4` (the interface's addresses,
/// without prefix length); else the first RoCE v2 IPv4-mapped GID; else the first RoCE v2 GID;
/// else the first non-zero GID.
pub fn select_gid(gids: &[Gid], ipv4: &[String]) -> Option<u32> {
    let v2 = |g: &&Gid| g.gid_type == Some(GidType::RoceV2);
    gids.iter()
        .filter(v2)
        .find(|g| g.ipv4.as_ref().is_some_and(|a| ipv4.iter().any(|x| x == a)))
        .or_else(|| gids.iter().filter(v2).find(|g| g.ipv4.is_some()))
        .or_else(|| gids.iter().find(v2))
        .or_else(|| gids.iter().find(|g| !is_zero_gid_text(&g.gid)))
        .map(|g| g.index)
}

fn is_zero_gid_text(s: &str) -> bool {
    s.chars().all(|c| c == '0' || c == ':')
}

/// Parses a GID as sysfs writes it (`fe80:0000:...:0001`, 8 groups of 4 hex digits).
pub fn parse_gid(s: &str) -> Option<[u8; 16]> {
    let groups: Vec<&str> = s.trim().split(':').collect();
    if groups.len() != 8 {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, g) in groups.iter().enumerate() {
        if g.is_empty() || g.len() > 4 {
            return None;
        }
        let v = u16::from_str_radix(g, 16).ok()?;
        out[2 * i..2 * i + 2].copy_from_slice(&v.to_be_bytes());
    }
    Some(out)
}

/// Formats a GID as sysfs does.
pub fn format_gid(raw: &[u8; 16]) -> String {
    raw.chunks(2)
        .map(|c| format!("{:02x}{:02x}", c[0], c[1]))
        .collect::<Vec<_>>()
        .join(":")
}

/// The IPv4 address of an IPv4-mapped GID (`::ffff:a.b.c.d`).
pub fn gid_ipv4(raw: &[u8; 16]) -> Option<String> {
    if raw[..10].iter().all(|b| *b == 0) && raw[10] == 0xff && raw[11] == 0xff {
        Some(format!("{}.{}.{}.{}", raw[12], raw[13], raw[14], raw[15]))
    } else {
        None
    }
}

/// Reads the non-empty GID table of one port from `ROOT/sys/class/infiniband/DEV/ports/P/`.
pub fn read_gid_table(root: &Path, device: &str, port: u32) -> Vec<Gid> {
    let base = root
        .join("sys/class/infiniband")
        .join(device)
        .join("ports")
        .join(port.to_string());
    let Ok(entries) = std::fs::read_dir(base.join("gids")) else {
        return Vec::new();
    };
    let mut out: Vec<Gid> = entries
        .flatten()
        .filter_map(|e| {
            let index: u32 = e.file_name().to_str()?.parse().ok()?;
            let text = std::fs::read_to_string(e.path()).ok()?;
            let raw = parse_gid(&text)?;
            if raw.iter().all(|b| *b == 0) {
                return None;
            }
            let attr = |kind: &str| {
                std::fs::read_to_string(base.join("gid_attrs").join(kind).join(index.to_string()))
                    .ok()
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
            };
            Some(Gid {
                index,
                gid: text.trim().to_string(),
                gid_type: attr("types").map(|t| GidType::parse(&t)),
                netdev: attr("ndevs"),
                ipv4: gid_ipv4(&raw),
            })
        })
        .collect();
    out.sort_by_key(|g| g.index);
    out
}

/// IPv4 addresses of a netdev from `ip -o -4 addr show dev X` output; used when no inventory is
/// at hand (`inet 192.0.2.1/24 brd ...`).
pub fn parse_ip_addr_ipv4(text: &str) -> Vec<String> {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .windows(2)
        .filter(|w| w[0] == "inet")
        .map(|w| w[1].split('/').next().unwrap_or(w[1]).to_string())
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use fabrik_model::{NetInterface, NetKind, Port, RdmaDevice};

    fn gid(index: u32, text: &str, t: Option<GidType>) -> Gid {
        let raw = parse_gid(text).unwrap();
        Gid {
            index,
            gid: text.into(),
            gid_type: t,
            netdev: Some("eth0".into()),
            ipv4: gid_ipv4(&raw),
        }
    }

    fn table() -> Vec<Gid> {
        vec![
            gid(
                0,
                "fe80:0000:0000:0000:5054:00ff:fe12:3401",
                Some(GidType::IbRoceV1),
            ),
            gid(
                1,
                "fe80:0000:0000:0000:5054:00ff:fe12:3401",
                Some(GidType::RoceV2),
            ),
            gid(
                2,
                "0000:0000:0000:0000:0000:ffff:0a00:0005",
                Some(GidType::IbRoceV1),
            ),
            gid(
                3,
                "0000:0000:0000:0000:0000:ffff:0a00:0005",
                Some(GidType::RoceV2),
            ),
            gid(
                4,
                "0000:0000:0000:0000:0000:ffff:c000:0201",
                Some(GidType::IbRoceV1),
            ),
            gid(
                5,
                "0000:0000:0000:0000:0000:ffff:c000:0201",
                Some(GidType::RoceV2),
            ),
        ]
    }

    #[test]
    fn picks_roce_v2_of_the_interface_address() {
        assert_eq!(select_gid(&table(), &["192.0.2.1".into()]), Some(5));
        assert_eq!(select_gid(&table(), &["10.0.0.5".into()]), Some(3));
        // Unknown address: first IPv4-mapped RoCE v2.
        assert_eq!(select_gid(&table(), &["198.51.100.7".into()]), Some(3));
        // No IPv4 at all: the link-local RoCE v2 entry.
        let t: Vec<Gid> = table().into_iter().take(2).collect();
        assert_eq!(select_gid(&t, &[]), Some(1));
        assert_eq!(select_gid(&[], &[]), None);
    }

    #[test]
    fn gid_from_node() {
        let port = Port {
            number: 1,
            link_layer: Some(LinkLayer::Ethernet),
            netdev: Some("eth0".into()),
            gids: table(),
            ..Default::default()
        };
        let node = Node {
            rdma_devices: vec![RdmaDevice {
                name: "rxe0".into(),
                ports: vec![port],
                ..Default::default()
            }],
            net_interfaces: vec![NetInterface {
                name: "eth0".into(),
                kind: NetKind::Ethernet,
                mtu: None,
                operstate: None,
                speed_mbps: None,
                mac: None,
                ipv4: vec!["10.0.0.5/24".into()],
                ipv6: vec![],
                driver: None,
                pci: None,
                rdma_device: Some("rxe0".into()),
                default_route: false,
                ecn: None,
                pfc: None,
                statistics: Default::default(),
            }],
            ..Default::default()
        };
        assert_eq!(default_gid_index(&node, "rxe0", 1), Some(3));
        assert_eq!(default_gid_index(&node, "rxe0", 2), None);
        assert_eq!(default_gid_index(&node, "mlx5_0", 1), None);
    }

    #[test]
    fn gid_text_round_trip() {
        let t = "fe80:0000:0000:0000:5054:00ff:fe12:3401";
        assert_eq!(format_gid(&parse_gid(t).unwrap()), t);
        assert_eq!(parse_gid("fe80::1"), None);
        assert_eq!(
            gid_ipv4(&parse_gid("0000:0000:0000:0000:0000:ffff:c000:0201").unwrap()),
            Some("192.0.2.1".into())
        );
    }

    #[test]
    fn reads_sysfs_gid_table() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("sys/class/infiniband/rxe0/ports/1");
        for sub in ["gids", "gid_attrs/types", "gid_attrs/ndevs"] {
            std::fs::create_dir_all(base.join(sub)).unwrap();
        }
        let zero = "0000:0000:0000:0000:0000:0000:0000:0000\n";
        std::fs::write(
            base.join("gids/0"),
            "fe80:0000:0000:0000:5054:00ff:fe12:3401\n",
        )
        .unwrap();
        std::fs::write(
            base.join("gids/1"),
            "0000:0000:0000:0000:0000:ffff:c000:0201\n",
        )
        .unwrap();
        std::fs::write(base.join("gids/2"), zero).unwrap();
        std::fs::write(base.join("gid_attrs/types/0"), "IB/RoCE v1\n").unwrap();
        std::fs::write(base.join("gid_attrs/types/1"), "RoCE v2\n").unwrap();
        std::fs::write(base.join("gid_attrs/ndevs/1"), "va\n").unwrap();
        let t = read_gid_table(dir.path(), "rxe0", 1);
        assert_eq!(t.len(), 2);
        assert_eq!(t[1].gid_type, Some(GidType::RoceV2));
        assert_eq!(t[1].netdev.as_deref(), Some("va"));
        assert_eq!(select_gid(&t, &["192.0.2.1".into()]), Some(1));
    }

    #[test]
    fn ip_addr_output() {
        let text = "2: va    inet 192.0.2.1/24 scope global va\\       valid_lft forever\n";
        assert_eq!(parse_ip_addr_ipv4(text), vec!["192.0.2.1".to_string()]);
    }

    proptest::proptest! {
        #[test]
        fn gid_parser_never_panics(s in ".*") {
            let _ = parse_gid(&s);
            let _ = parse_ip_addr_ipv4(&s);
        }
    }
}
