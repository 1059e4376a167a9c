//! `ibdev2netdev` and `ibdev2netdev -v` (Mellanox ofed-scripts): `mlx5_0 port 1 ==> ib0 (Up)`,
//! `0000:0c:00.0 mlx5_0 (MT4123 - ...) ... fw 20.35 port 1 (ACTIVE) ==> ib0 (Up)`.

use serde::{Deserialize, Serialize};

/// One `DEV port N ==> NETDEV` line.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NetdevMap {
    /// The RDMA device (`mlx5_0`).
    pub device: String,
    /// The port number.
    pub port: u32,
    /// The network interface.
    pub netdev: String,
    /// The netdev's state in parentheses after it: `Up`, `Down`.
    pub netdev_up: Option<bool>,
    /// The RDMA port's state printed by `-v` (`ACTIVE`, `DOWN`, `INIT`).
    pub port_state: Option<String>,
}

/// Reads every mapping line; lines it does not know are skipped.
pub fn parse_ibdev2netdev(raw: &str) -> Vec<NetdevMap> {
    let mut out = Vec::new();
    for line in raw.lines().map(super::unquote) {
        let line = line.split(" #").next().unwrap_or(line);
        let Some((left, right)) = line.split_once("==>") else {
            continue;
        };
        let l: Vec<&str> = left.split_whitespace().collect();
        let Some(pi) = l.iter().rposition(|w| *w == "port") else {
            continue;
        };
        let Some(port) = l.get(pi + 1).and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        // Plain form: the device is the first word; `-v` puts the PCI address first.
        let device = match l.first() {
            Some(first) if first.contains(':') && first.contains('.') => l.get(1),
            first => first,
        };
        let Some(device) = device else { continue };
        // `port 1 (ACTIVE)`; ofed-scripts pads the state: `(DOWN  )`.
        let after_port = left
            .rsplit_once(" port ")
            .map(|(_, r)| {
                r.trim_start()
                    .trim_start_matches(|c: char| c.is_ascii_digit())
            })
            .unwrap_or("");
        let port_state = after_port
            .trim()
            .strip_prefix('(')
            .and_then(|s| s.split_once(')'))
            .map(|(s, _)| s.trim().to_string())
            .filter(|s| !s.is_empty());
        let r: Vec<&str> = right.split_whitespace().collect();
        let Some(netdev) = r.first() else { continue };
        let netdev_up = r
            .get(1)
            .map(|s| s.trim_matches(['(', ')']))
            .and_then(|s| match s {
                "Up" => Some(true),
                "Down" => Some(false),
                _ => None,
            });
        out.push(NetdevMap {
            device: device.to_string(),
            port,
            netdev: netdev.to_string(),
            netdev_up,
            port_state,
        });
    }
    out
}
