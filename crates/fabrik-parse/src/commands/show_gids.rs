//! `show_gids` (Mellanox ofed-scripts): `DEV PORT INDEX GID IPv4 VER DEV` rows.

use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};

/// One row of `show_gids`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GidRow {
    /// The RDMA device (`mlx5_0`).
    pub device: String,
    /// The port number.
    pub port: u32,
    /// The GID index.
    pub index: u32,
    /// The GID as printed.
    pub gid: String,
    /// The IPv4 address of an IPv4-mapped GID.
    pub ipv4: Option<Ipv4Addr>,
    /// `v1` or `v2`.
    pub version: Option<String>,
    /// The network interface behind the GID.
    pub netdev: Option<String>,
}

/// Per device and port, the RoCE v2 GID index that carries an IPv4 address (the lowest if
/// several): what NCCL_IB_GID_INDEX and perftest `-x` want.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoceV2Index {
    /// The RDMA device.
    pub device: String,
    /// The port number.
    pub port: u32,
    /// The network interface of the chosen GID.
    pub netdev: Option<String>,
    /// The GID index, `None` when no RoCE v2 GID carries an IPv4 address.
    pub index: Option<u32>,
    /// The IPv4 address of that GID.
    pub ipv4: Option<Ipv4Addr>,
}

/// Reads `show_gids` rows; the header and lines it does not know are skipped.
pub fn parse_show_gids(raw: &str) -> Vec<GidRow> {
    let mut out = Vec::new();
    for line in raw.lines().map(super::unquote) {
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.len() < 4 {
            continue;
        }
        let (Ok(port), Ok(index)) = (w[1].parse::<u32>(), w[2].parse::<u32>()) else {
            continue;
        };
        if !w[3].contains(':') {
            continue;
        }
        let mut ipv4 = None;
        let mut version = None;
        let mut netdev = None;
        for tok in &w[4..] {
            if let Ok(ip) = tok.parse::<Ipv4Addr>() {
                ipv4 = Some(ip);
            } else if matches!(*tok, "v1" | "v2") {
                version = Some(tok.to_string());
            } else if version.is_some() && netdev.is_none() {
                netdev = Some(tok.to_string());
            }
        }
        out.push(GidRow {
            device: w[0].to_string(),
            port,
            index,
            gid: w[3].to_string(),
            ipv4,
            version,
            netdev,
        });
    }
    out
}

/// One entry per (device, port) seen, in the order first seen.
pub fn roce_v2_indices(rows: &[GidRow]) -> Vec<RoceV2Index> {
    let mut out: Vec<RoceV2Index> = Vec::new();
    for r in rows {
        let i = match out
            .iter()
            .position(|e| e.device == r.device && e.port == r.port)
        {
            Some(i) => i,
            None => {
                out.push(RoceV2Index {
                    device: r.device.clone(),
                    port: r.port,
                    netdev: r.netdev.clone(),
                    index: None,
                    ipv4: None,
                });
                out.len() - 1
            }
        };
        let e = &mut out[i];
        if e.netdev.is_none() {
            e.netdev = r.netdev.clone();
        }
        if r.version.as_deref() == Some("v2")
            && r.ipv4.is_some()
            && e.index.is_none_or(|x| r.index < x)
        {
            e.index = Some(r.index);
            e.ipv4 = r.ipv4;
        }
    }
    out
}
