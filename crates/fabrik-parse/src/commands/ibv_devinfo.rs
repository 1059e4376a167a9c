//! `ibv_devinfo` and `ibv_devinfo -v` (rdma-core `libibverbs/examples/devinfo.c`).

use std::collections::BTreeMap;

/// Active and max MTU per (device, port) from `ibv_devinfo -v`.
pub fn parse_ibv_devinfo_mtu(raw: &str) -> BTreeMap<(String, u32), (Option<u32>, Option<u32>)> {
    let mut out: BTreeMap<(String, u32), (Option<u32>, Option<u32>)> = BTreeMap::new();
    let mut dev: Option<String> = None;
    let mut port: Option<u32> = None;
    for line in raw.lines().map(super::unquote) {
        let t = line.trim();
        let Some((key, value)) = t.split_once(':') else {
            continue;
        };
        let value = value.trim();
        let first_num = || {
            value
                .split_whitespace()
                .next()
                .and_then(|n| n.parse::<u32>().ok())
        };
        match key.trim() {
            "hca_id" => {
                dev = value.split_whitespace().next().map(str::to_string);
                port = None;
            }
            "port" => port = first_num(),
            "active_mtu" | "max_mtu" => {
                if let (Some(d), Some(p)) = (&dev, port) {
                    let e = out.entry((d.clone(), p)).or_default();
                    if key.trim() == "active_mtu" {
                        e.0 = first_num();
                    } else {
                        e.1 = first_num();
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// One port as `ibv_devinfo` prints it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DevinfoPort {
    /// The RDMA device (`mlx5_0`).
    pub device: String,
    /// The port number.
    pub port: u32,
    /// `PORT_ACTIVE`, `PORT_DOWN`, `PORT_INIT`... without the number.
    pub state: Option<String>,
    /// `LINK_UP`, `POLLING`, `DISABLED`... (`-v` only).
    pub phys_state: Option<String>,
    /// `active_mtu` in bytes.
    pub active_mtu: Option<u32>,
    /// `max_mtu` in bytes.
    pub max_mtu: Option<u32>,
    /// `InfiniBand`, `Ethernet`; old libibverbs printed no link_layer line.
    pub link_layer: Option<String>,
    /// Width × speed from `active_width`/`active_speed` (`-v` only), in Gb/s.
    pub rate_gbps: Option<f64>,
    /// `fw_ver` of the device.
    pub fw_ver: Option<String>,
}

/// Every port of an `ibv_devinfo` output.
pub fn parse_ibv_devinfo(raw: &str) -> Vec<DevinfoPort> {
    let mut out: Vec<DevinfoPort> = Vec::new();
    let mut dev: Option<String> = None;
    let mut fw: Option<String> = None;
    let mut width: Option<f64> = None;
    for line in raw.lines().map(super::unquote) {
        let Some((key, value)) = line.trim().split_once(':') else {
            continue;
        };
        let value = value.trim();
        let first = value.split_whitespace().next();
        let num = || first.and_then(|n| n.parse::<u32>().ok());
        let cur = |out: &mut Vec<DevinfoPort>, d: &Option<String>| -> bool {
            d.is_some() && out.last().is_some_and(|p| Some(&p.device) == d.as_ref())
        };
        match key.trim() {
            "hca_id" => {
                dev = first.map(str::to_string);
                fw = None;
            }
            "fw_ver" => fw = first.map(str::to_string),
            "port" => {
                if let (Some(d), Some(p)) = (&dev, num()) {
                    out.push(DevinfoPort {
                        device: d.clone(),
                        port: p,
                        fw_ver: fw.clone(),
                        ..DevinfoPort::default()
                    });
                    width = None;
                }
            }
            k if cur(&mut out, &dev) => {
                let Some(p) = out.last_mut() else { continue };
                match k {
                    "state" => p.state = first.map(str::to_string),
                    "phys_state" => p.phys_state = first.map(str::to_string),
                    "active_mtu" => p.active_mtu = num(),
                    "max_mtu" => p.max_mtu = num(),
                    "link_layer" => p.link_layer = first.map(str::to_string),
                    "active_width" => {
                        width = first
                            .and_then(|w| w.strip_suffix('X'))
                            .and_then(|w| w.parse().ok());
                    }
                    "active_speed" => {
                        // `25.0 Gbps (32)`, `2.5 Gbps (1)`.
                        let speed: Option<f64> = first.and_then(|s| s.parse().ok());
                        if let (Some(w), Some(s)) = (width, speed) {
                            p.rate_gbps = Some(w * s);
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    out
}
