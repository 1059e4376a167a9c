//! RDMA devices: `/sys/class/infiniband/*`.

use std::collections::BTreeMap;
use std::path::Path;

use fabrik_model::{Gid, GidType, LinkLayer, Port, RdmaDevice, StateValue};

use crate::fs::{join, RootFs};
use crate::parse::{gid_ipv4, gid_is_zero, parse_rate, parse_u64};
use crate::pci::function_behind;

/// Where RDMA devices are listed.
pub const CLASS_DIR: &str = "/sys/class/infiniband";

/// Names listed under a directory that are numbers, in numeric order.
fn numbered(names: Vec<String>) -> Vec<u32> {
    let mut v: Vec<u32> = names.iter().filter_map(|n| n.parse().ok()).collect();
    v.sort_unstable();
    v
}

/// `ibv_devinfo -v` MTUs by (device, port).
pub type MtuMap = BTreeMap<(String, u32), (Option<u32>, Option<u32>)>;

/// Every device under [`CLASS_DIR`] with its ports, GIDs and counters; `mtus` fills the MTUs sysfs lacks.
pub fn read_devices(fs: &mut RootFs, mtus: &MtuMap) -> Vec<RdmaDevice> {
    let mut out = Vec::new();
    for name in fs.list_opt(CLASS_DIR) {
        out.push(read_device(fs, &name, mtus));
    }
    out
}

/// The non-empty GID table of `port` of `device` under `root`, read as [`read_devices`] reads
/// every port's (through the root-confined reader): for a caller that needs one port's GIDs, such
/// as the RDMA bench choosing the GID NCCL would use. An unreadable table is empty.
pub fn read_port_gids(root: &Path, device: &str, port: u32) -> std::io::Result<Vec<Gid>> {
    let mut fs = RootFs::new(root)?;
    let dir = join(&join(CLASS_DIR, device), &format!("ports/{port}"));
    Ok(read_gids(&mut fs, &dir))
}

fn read_device(fs: &mut RootFs, name: &str, mtus: &MtuMap) -> RdmaDevice {
    let base = join(CLASS_DIR, name);
    let device_link = join(&base, "device");
    let pci = function_behind(fs, &device_link);
    let net_candidates = fs.list_opt(&join(&device_link, "net"));
    // Soft-RoCE (rxe) has no device link; newer kernels name its netdev in `parent`.
    let parent_netdev = fs.attr_opt(&join(&base, "parent"));
    let mut ports = Vec::new();
    for n in numbered(fs.list_opt(&join(&base, "ports"))) {
        let mut port = read_port(fs, &join(&base, &format!("ports/{n}")), n);
        if port.netdev.is_none() {
            port.netdev =
                pick_netdev(fs, &device_link, &net_candidates, n).or_else(|| parent_netdev.clone());
        }
        if let Some((active, max)) = mtus.get(&(name.to_string(), n)) {
            port.active_mtu = *active;
            port.max_mtu = *max;
        }
        ports.push(port);
    }
    RdmaDevice {
        name: name.to_string(),
        node_type: fs.attr(&join(&base, "node_type")),
        node_guid: fs.attr(&join(&base, "node_guid")),
        sys_image_guid: fs.attr_opt(&join(&base, "sys_image_guid")),
        fw_ver: fs.attr_opt(&join(&base, "fw_ver")),
        hca_type: fs.attr_opt(&join(&base, "hca_type")),
        board_id: fs.attr_opt(&join(&base, "board_id")),
        pci,
        ports,
    }
}

/// The netdev of port `n` among the PCI function's `net/` entries: the only one, or the one
/// whose `dev_port` (0-based) matches.
fn pick_netdev(fs: &mut RootFs, device_link: &str, names: &[String], n: u32) -> Option<String> {
    match names {
        [] => None,
        [one] => Some(one.clone()),
        many => many
            .iter()
            .find(|nd| {
                let p = join(device_link, &format!("net/{nd}/dev_port"));
                fs.attr_quiet(&p).and_then(|s| parse_u64(&s)) == Some(u64::from(n) - 1)
            })
            .cloned(),
    }
}

/// The kernel's names for port states (`state_show`) and physical states (`phys_state_show`),
/// by code: a number whose name does not match is not something the kernel wrote.
const STATE_NAMES: &[&str] = &["NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"];
const PHYS_STATE_NAMES: &[&str] = &[
    "<unknown>",
    "Sleep",
    "Polling",
    "Disabled",
    "PortConfigurationTraining",
    "LinkUp",
    "LinkErrorRecovery",
    "Phy Test",
];

/// Reads `N: NAME`; when the kernel's table gives N another name, the value is unknown (code
/// dropped, text kept) and warned about, rather than trusting either half.
fn read_state(fs: &mut RootFs, path: &str, names: &[&str]) -> Option<StateValue> {
    let raw = fs.attr(path)?;
    let v = StateValue::parse(&raw);
    let expected = v
        .code
        .and_then(|c| usize::try_from(c).ok())
        .and_then(|c| names.get(c));
    match expected {
        Some(name) if !name.eq_ignore_ascii_case(&v.name) => {
            fs.warn(
                path,
                format!("code and name disagree ({raw:?}; the kernel names this code {name:?})"),
            );
            Some(StateValue {
                code: None,
                name: raw.trim().to_string(),
            })
        }
        _ => Some(v),
    }
}

fn read_port(fs: &mut RootFs, dir: &str, number: u32) -> Port {
    let state = read_state(fs, &join(dir, "state"), STATE_NAMES);
    let phys_state = read_state(fs, &join(dir, "phys_state"), PHYS_STATE_NAMES);
    let rate_path = join(dir, "rate");
    let rate = match fs.attr(&rate_path) {
        Some(raw) => {
            let r = parse_rate(&raw);
            if r.as_ref().is_some_and(|r| r.gbps.is_none()) {
                fs.warn(&rate_path, format!("rate not understood: {raw:?}"));
            }
            r
        }
        None => None,
    };
    let link_layer = fs
        .attr(&join(dir, "link_layer"))
        .map(|s| LinkLayer::parse(&s));
    let (lid, sm_lid) = if link_layer == Some(LinkLayer::Infiniband) {
        (
            fs.attr_opt(&join(dir, "lid")),
            fs.attr_opt(&join(dir, "sm_lid")),
        )
    } else {
        (None, None)
    };
    let gids = read_gids(fs, dir);
    let netdev = gids.iter().find_map(|g| g.netdev.clone());
    let mut hw_counters = fs.numeric_dir(&join(dir, "hw_counters"));
    // ib_core puts `lifespan` (how long, in ms, the driver caches the values) among the
    // counters; it is a setting, not a count.
    hw_counters.remove("lifespan");
    Port {
        number,
        state,
        phys_state,
        rate,
        link_layer,
        lid,
        sm_lid,
        active_mtu: None,
        max_mtu: None,
        netdev,
        gids,
        counters: fs.numeric_dir(&join(dir, "counters")),
        hw_counters,
    }
}

fn read_gids(fs: &mut RootFs, port_dir: &str) -> Vec<Gid> {
    let mut out = Vec::new();
    for index in numbered(fs.list_opt(&join(port_dir, "gids"))) {
        // Empty slots read as zeros, and their attributes answer EINVAL: neither is a fault.
        let Some(gid) = fs.attr_quiet(&join(port_dir, &format!("gids/{index}"))) else {
            continue;
        };
        if gid.is_empty() || gid_is_zero(&gid) {
            continue;
        }
        let gid_type = fs
            .attr_quiet(&join(port_dir, &format!("gid_attrs/types/{index}")))
            .filter(|s| !s.is_empty())
            .map(|s| GidType::parse(&s));
        let netdev = fs
            .attr_quiet(&join(port_dir, &format!("gid_attrs/ndevs/{index}")))
            .filter(|s| !s.is_empty());
        out.push(Gid {
            index,
            ipv4: gid_ipv4(&gid),
            gid,
            gid_type,
            netdev,
        });
    }
    out
}
