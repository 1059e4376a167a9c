//! What the RDMA side of a node offers NCCL: active ports by link layer, the RoCE v2 GID index,
//! and the traffic class that lands RoCE on the lossless priority.

use fabrik_model::{LinkLayer, Node, PortState, RdmaDevice};

use fabrik_model::gid::policy::{nccl_gid_index, routable_v2, GidSettings};

/// One RDMA port NCCL could use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsablePort {
    /// The RDMA device (`mlx5_0`).
    pub device: String,
    /// The port number (from 1).
    pub port: u32,
    /// The network interface behind it (RoCE), when known.
    pub netdev: Option<String>,
    /// The port's rate as sysfs writes it.
    pub rate: Option<String>,
}

impl UsablePort {
    /// `device:port`, as `NCCL_IB_HCA` takes it.
    pub fn hca(&self) -> String {
        format!("{}:{}", self.device, self.port)
    }
}

/// The RDMA ports of a node sorted into what NCCL can use and what it cannot, with reasons.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RdmaInventory {
    /// Active InfiniBand ports.
    pub ib: Vec<UsablePort>,
    /// Active RoCE ports.
    pub roce: Vec<UsablePort>,
    /// AWS EFA devices (their ports report link layer `Unspecified`).
    pub efa: Vec<String>,
    /// `mlx5_1:1 is DOWN (phys Disabled)`, `rxe0 is Soft-RoCE`...
    pub unusable: Vec<String>,
}

impl RdmaInventory {
    /// Whether NCCL has any RDMA device to use.
    pub fn has_usable(&self) -> bool {
        !self.ib.is_empty() || !self.roce.is_empty() || !self.efa.is_empty()
    }
}

/// Sorts the node's RDMA ports into usable (by link layer) and unusable, with reasons.
pub fn inventory(node: &Node) -> RdmaInventory {
    let mut inv = RdmaInventory::default();
    let mut devices: Vec<&RdmaDevice> = node.rdma_devices.iter().collect();
    devices.sort_by_key(|d| natural_key(&d.name));
    for d in devices {
        if d.is_efa() {
            inv.efa.push(d.name.clone());
            continue;
        }
        // Software RDMA devices work but move data through the CPU: NCCL over them is slower
        // than over plain sockets with several threads, so fabrik never picks them for a job.
        if d.is_software() {
            inv.unusable.push(format!(
                "{} is a software RDMA device (Soft-RoCE/siw): no GPUDirect, slower than sockets",
                d.name
            ));
            continue;
        }
        if d.is_iwarp() {
            let known_by = match d.node_type.as_deref() {
                Some(t) => format!("node_type {}", t.trim()),
                None => "named by its iWARP driver".to_string(),
            };
            inv.unusable.push(format!(
                "{} is an iWARP device ({known_by}): RDMA over TCP, which NCCL's IB transport \
                 (InfiniBand and RoCE only) cannot use",
                d.name
            ));
            continue;
        }
        if d.ports.is_empty() {
            inv.unusable.push(format!("{} has no ports listed", d.name));
        }
        for p in &d.ports {
            let id = format!("{}:{}", d.name, p.number);
            let state = p.state.as_ref().map(|s| s.port_state());
            if state != Some(PortState::Active) {
                let st = p
                    .state
                    .as_ref()
                    .map_or("unknown".to_string(), |s| s.name.clone());
                let phys = p
                    .phys_state
                    .as_ref()
                    .map_or("unknown".to_string(), |s| s.name.clone());
                inv.unusable
                    .push(format!("{id} is not active (state {st}, phys {phys})"));
                continue;
            }
            let usable = UsablePort {
                device: d.name.clone(),
                port: p.number,
                netdev: p.netdev.clone(),
                rate: p.rate.as_ref().map(|r| r.text.clone()),
            };
            match &p.link_layer {
                Some(LinkLayer::Infiniband) => inv.ib.push(usable),
                Some(LinkLayer::Ethernet) => inv.roce.push(usable),
                Some(LinkLayer::Other(o)) => inv.unusable.push(format!(
                    "{id} has link layer {o:?}, which NCCL's IB transport does not know"
                )),
                None => inv
                    .unusable
                    .push(format!("{id} is active but its link layer is unknown")),
            }
        }
    }
    inv
}

/// `mlx5_10` after `mlx5_9`.
fn natural_key(name: &str) -> (String, u64) {
    let digits: String = name
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit())
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let stem = name[..name.len() - digits.len()].to_string();
    (stem, digits.parse().unwrap_or(0))
}

/// NCCL_IB_HCA listing exactly these ports: `=mlx5_0:1,mlx5_1:1`.
pub fn hca_list(ports: &[UsablePort]) -> String {
    let list: Vec<String> = ports.iter().map(UsablePort::hca).collect();
    format!("={}", list.join(","))
}

/// The RoCE v2 GID index per port, or why none was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GidChoice {
    /// NCCL picks the same routable RoCE v2 IPv4 GID index on every port.
    Same(u32),
    /// Ports disagree; `(port, index)` for those that have one.
    Differs(Vec<(String, u32)>),
    /// Ports where NCCL's pick is not a routable RoCE v2 IPv4 GID (no IPv4 address).
    Missing(Vec<String>),
}

/// For each RoCE port, the GID NCCL ≥ 2.21 picks by itself ([`crate::gid`], the one policy),
/// when that is a routable RoCE v2 IPv4 GID; the ports whose pick is not are `Missing`.
pub fn roce_gid_index(node: &Node, ports: &[UsablePort]) -> GidChoice {
    let settings = GidSettings::default();
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for up in ports {
        let gid = node
            .rdma_device(&up.device)
            .and_then(|d| d.ports.iter().find(|p| p.number == up.port))
            .and_then(|p| routable_v2(p, nccl_gid_index(p, &settings), &settings))
            .map(|g| g.index);
        match gid {
            Some(i) => found.push((up.hca(), i)),
            None => missing.push(up.hca()),
        }
    }
    if !missing.is_empty() {
        return GidChoice::Missing(missing);
    }
    let first = found.first().map(|(_, i)| *i);
    match first {
        Some(i) if found.iter().all(|(_, j)| *j == i) => GidChoice::Same(i),
        _ => GidChoice::Differs(found),
    }
}

/// The RoCE QoS setting NCCL needs so its traffic rides the lossless (PFC) priority.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QosChoice {
    /// DSCP trust: `NCCL_IB_TC` = DSCP << 2 | ECN-capable bits.
    TrafficClass {
        /// The `NCCL_IB_TC` value.
        tc: u32,
        /// The DSCP that maps to the lossless priority.
        dscp: u32,
        /// The PFC priority it lands on.
        priority: u8,
    },
    /// PCP trust: the VLAN priority comes from the service level.
    ServiceLevel {
        /// The `NCCL_IB_SL` value.
        sl: u8,
    },
    /// Not decidable; the message says why.
    Unknown(String),
}

/// From the PFC settings of the RoCE netdevs. mlx5's default DSCP→priority map puts DSCP 8p..8p+7
/// on priority p; NVIDIA's RoCE recipes use DSCP 26 (AF31) on priority 3 and NCCL_IB_TC=106,
/// which is 26 << 2 with ECT(0) (value 2) in the ECN bits. fabrik generalises that to DSCP
/// 8p+2 on priority p.
pub fn roce_qos(node: &Node, ports: &[UsablePort]) -> QosChoice {
    let mut settings = Vec::new();
    for up in ports {
        let Some(netdev) = up.netdev.as_deref() else {
            return QosChoice::Unknown(format!("{} has no netdev to read PFC from", up.hca()));
        };
        let Some(pfc) = node.net_interface(netdev).and_then(|i| i.pfc.as_ref()) else {
            return QosChoice::Unknown(format!(
                "PFC settings of {netdev} are unknown (no mlnx_qos capture)"
            ));
        };
        settings.push((
            netdev.to_string(),
            pfc.enabled_priorities.clone(),
            pfc.trust.clone(),
        ));
    }
    let Some((first_dev, prios, trust)) = settings.first().cloned() else {
        return QosChoice::Unknown("no RoCE ports".into());
    };
    if let Some((dev, ..)) = settings.iter().find(|(_, p, t)| *p != prios || *t != trust) {
        return QosChoice::Unknown(format!(
            "PFC differs between {first_dev} and {dev}; one NCCL_IB_TC cannot serve both"
        ));
    }
    let priority = match prios.as_slice() {
        [p] => *p,
        [] => {
            return QosChoice::Unknown(format!(
                "PFC is off on every priority of {first_dev}: RoCE runs lossy, so no traffic class is lossless"
            ))
        }
        many => {
            return QosChoice::Unknown(format!(
                "PFC is on for several priorities of {first_dev} ({many:?}); which one carries RDMA is the fabric's convention, not visible here"
            ))
        }
    };
    match trust.as_deref().map(str::to_ascii_lowercase).as_deref() {
        Some("dscp") => {
            let dscp = 8 * u32::from(priority) + 2;
            QosChoice::TrafficClass {
                tc: (dscp << 2) | 2,
                dscp,
                priority,
            }
        }
        Some("pcp") => QosChoice::ServiceLevel { sl: priority },
        Some(other) => QosChoice::Unknown(format!(
            "trust mode {other:?} of {first_dev} is not pcp or dscp"
        )),
        None => QosChoice::Unknown(format!("trust mode of {first_dev} is unknown")),
    }
}

/// Splits ports into those whose device sits near a GPU (PIX/PXB, the same PCIe switch tree)
/// and those that do not (storage or management NICs on GPU nodes). When no port is near a
/// GPU, or the node has no GPU/path facts, every port is kept: nothing is known to tell them
/// apart.
pub fn split_by_gpu_affinity(
    node: &Node,
    ports: Vec<UsablePort>,
) -> (Vec<UsablePort>, Vec<String>) {
    use fabrik_model::PathType;
    if node.gpus.is_empty() || node.gpu_nic_paths.is_empty() {
        return (ports, vec![]);
    }
    let best = |dev: &str| {
        node.gpu_nic_paths
            .iter()
            .filter(|p| p.nic == dev)
            .filter_map(|p| p.path_type)
            .min()
    };
    let near = |p: &UsablePort| matches!(best(&p.device), Some(PathType::PIX | PathType::PXB));
    if !ports.iter().any(near) {
        return (ports, vec![]);
    }
    let mut keep = Vec::new();
    let mut dropped = Vec::new();
    for p in ports {
        match best(&p.device) {
            // Unknown distance: keep rather than guess.
            None => keep.push(p),
            Some(_) if near(&p) => keep.push(p),
            Some(t) => dropped.push(format!(
                "{} is not near any GPU (closest path {}) while other HCAs are: a storage or management NIC, left out of NCCL_IB_HCA",
                p.hca(),
                t.as_str()
            )),
        }
    }
    (keep, dropped)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn natural_order_of_device_names() {
        let mut v = vec!["mlx5_10", "mlx5_2", "mlx5_1"];
        v.sort_by_key(|n| natural_key(n));
        assert_eq!(v, vec!["mlx5_1", "mlx5_2", "mlx5_10"]);
    }
}
