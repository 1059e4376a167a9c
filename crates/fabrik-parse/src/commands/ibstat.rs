//! `ibstat` (rdma-core `infiniband-diags/ibstat.c`): `CA 'mlx5_0'` blocks with `Port N:` blocks.

use serde::{Deserialize, Serialize};

/// One `Port N:` block of an `ibstat` CA.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IbstatPort {
    /// The CA's name (`mlx5_0`).
    pub device: String,
    /// The port number.
    pub port: u32,
    /// `Active`, `Down`, `Initializing`, `Armed`.
    pub state: Option<String>,
    /// `LinkUp`, `Polling`, `Disabled`...
    pub phys_state: Option<String>,
    /// `Rate:` in Gb/s (`100`, `56`; a port that never trained reports 10 or 2.5).
    pub rate_gbps: Option<f64>,
    /// `Link layer:` (`InfiniBand`, `Ethernet`).
    pub link_layer: Option<String>,
    /// `Base lid:`.
    pub base_lid: Option<u32>,
    /// The CA's `CA type:` (`MT4123`).
    pub ca_type: Option<String>,
    /// The CA's `Firmware version:`.
    pub fw_ver: Option<String>,
}

/// What `ibstat` printed: its ports and its own errors.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ibstat {
    /// Every port of every CA, in the order printed.
    pub ports: Vec<IbstatPort>,
    /// ibstat's own errors (`ibpanic: ... stat of IB device 'mlx5_8' failed`).
    pub errors: Vec<String>,
}

/// Reads `ibstat` output; lines it does not know are skipped.
pub fn parse_ibstat(raw: &str) -> Ibstat {
    let mut out = Ibstat::default();
    let mut ca: Option<String> = None;
    let mut ca_type: Option<String> = None;
    let mut fw: Option<String> = None;
    let mut in_port = false;
    for line in raw.lines().map(super::unquote) {
        let t = line.trim();
        if t.contains("ibpanic") || t.contains("ibwarn") {
            if out.errors.len() < 64 {
                out.errors.push(t.to_string());
            }
            continue;
        }
        if let Some(rest) = t.strip_prefix("CA '") {
            ca = rest.split('\'').next().map(str::to_string);
            ca_type = None;
            fw = None;
            in_port = false;
            continue;
        }
        let Some((key, value)) = t.split_once(':') else {
            continue;
        };
        let key = key.trim();
        if let Some(n) = key.strip_prefix("Port ") {
            if let (Some(d), Ok(p)) = (&ca, n.trim().parse::<u32>()) {
                out.ports.push(IbstatPort {
                    device: d.clone(),
                    port: p,
                    ca_type: ca_type.clone(),
                    fw_ver: fw.clone(),
                    ..IbstatPort::default()
                });
                in_port = true;
            }
            continue;
        }
        let v = super::value_word(value).filter(|v| *v != "...");
        if !in_port {
            match key {
                "CA type" => ca_type = v.map(str::to_string),
                "Firmware version" => fw = v.map(str::to_string),
                _ => {}
            }
            continue;
        }
        let Some(p) = out.ports.last_mut() else {
            continue;
        };
        match key {
            "State" => p.state = v.map(str::to_string),
            "Physical state" => p.phys_state = v.map(str::to_string),
            "Rate" => p.rate_gbps = v.and_then(|r| r.parse().ok()),
            "Link layer" => p.link_layer = v.map(str::to_string),
            "Base lid" => p.base_lid = v.and_then(|r| r.parse().ok()),
            _ => {}
        }
    }
    out
}
