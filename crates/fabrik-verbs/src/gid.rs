//! GID tables as sysfs lists them, and the GID the bench uses on a RoCE port: the one NCCL would
//! use in the same environment (the model's [`fabrik_model::gid::policy`] is the one policy), so that
//! the bench measures the path a job takes.

use std::path::Path;

use fabrik_model::gid::policy::{nccl_gid_index, GidSettings};
pub use fabrik_model::gid::{format as format_gid, ipv4 as gid_ipv4, parse as parse_gid};
use fabrik_model::{Gid, LinkLayer, Port};

/// The GID index NCCL would use on RoCE `port` of `device` under `settings`, from the table under
/// `root` (the bench passes the process's own NCCL_IB_* variables, as NCCL reads them).
pub fn roce_gid_index(root: &Path, device: &str, port: u32, settings: &GidSettings) -> u32 {
    let p = Port {
        number: port,
        link_layer: Some(LinkLayer::Ethernet),
        gids: read_gid_table(root, device, port),
        ..Default::default()
    };
    nccl_gid_index(&p, settings)
}

/// Reads the non-empty GID table of one port from `ROOT/sys/class/infiniband/DEV/ports/P/`,
/// through fabrik-probe's root-confined reader (the one reader of a root); a root that cannot be
/// opened reads as an empty table, which leaves NCCL's choice at index 0.
pub fn read_gid_table(root: &Path, device: &str, port: u32) -> Vec<Gid> {
    fabrik_probe::rdma::read_port_gids(root, device, port).unwrap_or_default()
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
    use fabrik_model::GidType;

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
        assert_eq!(
            roce_gid_index(dir.path(), "rxe0", 1, &GidSettings::default()),
            1
        );
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
