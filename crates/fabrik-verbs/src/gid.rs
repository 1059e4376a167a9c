//! GID tables as sysfs lists them, and the GID the bench uses on a RoCE port: the one NCCL would
//! use in the same environment (fabrik-nccl's [`fabrik_nccl::gid`] is the one policy), so that
//! the bench measures the path a job takes.

use std::path::Path;

pub use fabrik_model::gid::{format as format_gid, ipv4 as gid_ipv4, parse as parse_gid};
use fabrik_model::{Gid, GidType, LinkLayer, Port};
use fabrik_nccl::gid::{nccl_gid_index, GidSettings};

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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

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

    proptest::proptest! {
        #[test]
        fn gid_parser_never_panics(s in ".*") {
            let _ = parse_gid(&s);
        }
    }
}
