//! Rules on a planned NCCL environment, judged against the fabric the node has.

use fabrik_model::{Finding, GidType, Node, PathType, Severity};

use crate::env::PlannedEnv;
use crate::rules::gdr::nearest_nic;
use crate::socket::{self, NameFilter};
use crate::util::*;

/// Rule id of "NCCL_IB_HCA names devices or ports that do not exist or are down".
pub const IB_HCA: &str = "FAB-ENV-001";
/// Rule id of "NCCL_SOCKET_IFNAME matches no usable interface".
pub const SOCKET_IFNAME: &str = "FAB-ENV-002";
/// Rule id of "IB/RoCE disabled while healthy RDMA ports exist".
pub const IB_DISABLED: &str = "FAB-ENV-003";
/// Rule id of "NCCL_IB_GID_INDEX points at an empty slot or a RoCE v1 GID".
pub const GID_INDEX: &str = "FAB-ENV-004";
/// Rule id of "NCCL_NET_GDR_LEVEL below the GPU↔NIC distance".
pub const GDR_LEVEL: &str = "FAB-ENV-005";
/// Rule id of "NCCL_P2P_DISABLE or NCCL_SHM_DISABLE set".
pub const P2P_SHM_DISABLED: &str = "FAB-ENV-006";

/// Rule id of "NCCL_IB_HCA leaves out rails the node has".
pub const IB_HCA_FEWER_RAILS: &str = "FAB-ENV-008";

/// `mlx5_0:1` → ("mlx5_0", Some(1)).
fn split_port(entry: &str) -> (&str, Option<u32>) {
    match entry.rsplit_once(':') {
        Some((d, p)) => match p.parse() {
            Ok(n) => (d, Some(n)),
            Err(_) => (entry, None),
        },
        None => (entry, None),
    }
}

/// Rule [`IB_HCA`]: "NCCL_IB_HCA names devices or ports that do not exist or are down".
pub fn ib_hca(node: &Node, env: &PlannedEnv) -> Vec<Finding> {
    let Some(raw) = env.get("NCCL_IB_HCA") else {
        return vec![];
    };
    let filter = NameFilter::parse(raw);
    let path = PlannedEnv::evidence_path("NCCL_IB_HCA");
    let present = devices(node)
        .iter()
        .map(|d| d.name.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    let mut out = vec![];
    if filter.exclude {
        let left: Vec<_> = all_ports(node)
            .filter(|(d, _)| {
                !filter
                    .entries
                    .iter()
                    .any(|e| filter.matches_entry(split_port(e).0, &d.name))
            })
            .filter(|(_, p)| is_active(p))
            .collect();
        if left.is_empty() && !node.rdma_devices.is_empty() {
            out.push(finding(IB_HCA, Severity::Warning, "env:NCCL_IB_HCA",
                format!("NCCL_IB_HCA={raw} excludes every active RDMA port: NCCL will fall back to sockets"),
                vec![ev(path, raw), ev("/sys/class/infiniband", present)],
                "Remove the exclusion or exclude only the ports that must not be used."));
        }
        return out;
    }
    for entry in &filter.entries {
        let (dev_name, port_no) = split_port(entry);
        let devs: Vec<_> = devices(node)
            .into_iter()
            .filter(|d| filter.matches_entry(dev_name, &d.name))
            .collect();
        if devs.is_empty() {
            out.push(finding(IB_HCA, Severity::Error, format!("env:NCCL_IB_HCA {entry}"),
                format!("NCCL_IB_HCA entry `{entry}` matches no RDMA device on this node ({})", if present.is_empty() { "none present".to_string() } else { present.clone() }),
                vec![ev(path.clone(), raw), ev("/sys/class/infiniband", present.clone())],
                "List devices as `ibv_devices` or /sys/class/infiniband names them (prefixes allowed, `=` for exact names, `:N` for a port)."));
            continue;
        }
        let ports: Vec<_> = devs
            .iter()
            .flat_map(|d| d.ports.iter().map(move |p| (*d, p)))
            .filter(|(_, p)| port_no.is_none_or(|n| p.number == n))
            .collect();
        if ports.is_empty() {
            out.push(finding(
                IB_HCA,
                Severity::Error,
                format!("env:NCCL_IB_HCA {entry}"),
                format!(
                    "NCCL_IB_HCA entry `{entry}` names port {} which {} does not have",
                    port_no.unwrap_or(0),
                    dev_name
                ),
                vec![ev(path.clone(), raw)],
                "Use the port numbers under /sys/class/infiniband/<dev>/ports/.",
            ));
            continue;
        }
        let down: Vec<_> = ports.iter().filter(|(_, p)| !is_active(p)).collect();
        if down.is_empty() {
            continue;
        }
        let (severity, what, fix) = if down.len() == ports.len() {
            (
                Severity::Error,
                "selects only",
                "Fix the ports (see FAB-PORT-001) or select ACTIVE ones.",
            )
        } else {
            (
                Severity::Warning,
                "includes",
                "Fix the ports (see FAB-PORT-001) or leave them out of NCCL_IB_HCA.",
            )
        };
        out.push(finding(
            IB_HCA,
            severity,
            format!("env:NCCL_IB_HCA {entry}"),
            format!(
                "NCCL_IB_HCA entry `{entry}` {what} ports that are not ACTIVE ({})",
                down.iter()
                    .map(|(d, p)| port_subject(d, p))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            down.iter()
                .map(|(d, p)| {
                    ev(
                        port_path(d, p, "state"),
                        p.state.as_ref().map(|s| s.name.clone()).unwrap_or_default(),
                    )
                })
                .collect(),
            fix,
        ));
    }
    out
}

/// Rule [`IB_HCA_FEWER_RAILS`]: "NCCL_IB_HCA leaves out rails the node has". The rails are
/// the ACTIVE ports of the hardware RDMA devices of the driver family NCCL_IB_HCA selects
/// (a storage NIC of another family is no rail); a job given fewer stripes its inter-node
/// traffic over fewer NICs than the node has, and its bandwidth drops with them.
pub fn ib_hca_fewer_rails(node: &Node, env: &PlannedEnv) -> Vec<Finding> {
    let Some(raw) = env.get("NCCL_IB_HCA") else {
        return vec![];
    };
    let filter = NameFilter::parse(raw);
    let selected = |d: &fabrik_model::RdmaDevice, p: &fabrik_model::Port| {
        let hit = filter.entries.iter().any(|e| {
            let (dev, port) = split_port(e);
            filter.matches_entry(dev, &d.name) && port.is_none_or(|n| n == p.number)
        });
        hit != filter.exclude
    };
    let active: Vec<_> = all_ports(node)
        .filter(|(d, p)| !d.is_software() && !d.is_efa() && !d.is_iwarp() && is_active(p))
        .collect();
    let families: std::collections::BTreeSet<String> = active
        .iter()
        .filter(|(d, p)| selected(d, p))
        .map(|(d, _)| device_family(d))
        .collect();
    if families.is_empty() {
        return vec![];
    }
    let rails: Vec<_> = active
        .iter()
        .filter(|(d, _)| families.contains(&device_family(d)))
        .collect();
    let left_out: Vec<String> = rails
        .iter()
        .filter(|(d, p)| !selected(d, p))
        .map(|(d, p)| port_subject(d, p))
        .collect();
    if left_out.is_empty() {
        return vec![];
    }
    vec![finding(
        IB_HCA_FEWER_RAILS,
        Severity::Warning,
        "env:NCCL_IB_HCA",
        format!(
            "NCCL_IB_HCA={raw} uses {} of the node's {} ACTIVE rails; it leaves out {}: NCCL stripes inter-node traffic over the rails it is given, so the job gets their share of the bandwidth",
            rails.len() - left_out.len(),
            rails.len(),
            left_out.join(", ")
        ),
        vec![
            ev(PlannedEnv::evidence_path("NCCL_IB_HCA"), raw),
            ev(
                "/sys/class/infiniband/*/ports/*/state",
                format!(
                    "ACTIVE: {}",
                    rails
                        .iter()
                        .map(|(d, p)| port_subject(d, p))
                        .collect::<Vec<_>>()
                        .join(" ")
                ),
            ),
        ],
        "Name every rail (a prefix such as `NCCL_IB_HCA=mlx5` selects them all), or leave NCCL_IB_HCA unset; exclude only the NICs that are not rails (`^mlx5_8` for a storage NIC).",
    )]
}

/// Rule [`SOCKET_IFNAME`]: "NCCL_SOCKET_IFNAME matches no usable interface".
pub fn socket_ifname(node: &Node, env: &PlannedEnv) -> Vec<Finding> {
    let Some(raw) = env.socket_ifname() else {
        return vec![];
    };
    let filter = NameFilter::parse(raw);
    let chosen = socket::explicit_choice(node, &filter);
    if !chosen.is_empty() {
        let poor: Vec<_> = chosen
            .iter()
            .filter(|i| socket::is_poor_choice(i))
            .collect();
        if poor.is_empty() {
            return vec![];
        }
        return vec![finding(SOCKET_IFNAME, Severity::Warning, "env:NCCL_SOCKET_IFNAME",
            format!("NCCL_SOCKET_IFNAME={raw} selects {} among its interfaces: NCCL may bootstrap or send over an interface other nodes cannot reach", poor.iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join(", ")),
            vec![ev(PlannedEnv::evidence_path("NCCL_SOCKET_IFNAME"), raw)],
            "Use the exact name of the physical interface (`NCCL_SOCKET_IFNAME==eth0`).")];
    }
    let all_names = interfaces(node)
        .iter()
        .map(|i| i.name.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    let matched_unusable: Vec<_> = interfaces(node)
        .into_iter()
        .filter(|i| filter.selects(&i.name))
        .collect();
    let why = if matched_unusable.is_empty() {
        format!("matches no interface on this node ({all_names})")
    } else {
        format!(
            "matches only interfaces that are down or have no IP address ({})",
            matched_unusable
                .iter()
                .map(|i| i.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let fix = match socket::recommended(node) {
        Some(i) => format!("Set NCCL_SOCKET_IFNAME=={} (names differ between nodes? list them all: NCCL_SOCKET_IFNAME==eno1,eth0, or set it per node in /etc/nccl.conf).", i.name),
        None => "Name an interface that is up and has an address.".to_string(),
    };
    vec![finding(SOCKET_IFNAME, Severity::Error, "env:NCCL_SOCKET_IFNAME",
        format!("NCCL_SOCKET_IFNAME={raw} {why}: NCCL will fail with `Bootstrap : no socket interface found`"),
        vec![ev(PlannedEnv::evidence_path("NCCL_SOCKET_IFNAME"), raw), ev("/sys/class/net", all_names)],
        fix)]
}

/// Rule [`IB_DISABLED`]: "IB/RoCE disabled while healthy RDMA ports exist".
pub fn ib_disabled(node: &Node, env: &PlannedEnv) -> Vec<Finding> {
    if !has_healthy_verbs_port(node) {
        return vec![];
    }
    let mut evidence = vec![];
    if env.int("NCCL_IB_DISABLE").is_some_and(|v| v != 0) {
        evidence.push(ev(
            PlannedEnv::evidence_path("NCCL_IB_DISABLE"),
            env.get("NCCL_IB_DISABLE").unwrap_or(""),
        ));
    }
    if env
        .get("NCCL_NET")
        .is_some_and(|v| v.eq_ignore_ascii_case("socket"))
    {
        evidence.push(ev(
            PlannedEnv::evidence_path("NCCL_NET"),
            env.get("NCCL_NET").unwrap_or(""),
        ));
    }
    if evidence.is_empty() {
        return vec![];
    }
    let ports = verbs_hardware(node)
        .flat_map(|d| {
            d.ports
                .iter()
                .filter(|p| is_active(p) && is_link_up(p))
                .map(move |p| port_subject(d, p))
        })
        .collect::<Vec<_>>();
    evidence.push(ev(
        "/sys/class/infiniband/*/ports/*/state",
        format!("ACTIVE: {}", ports.join(" ")),
    ));
    vec![finding(IB_DISABLED, Severity::Warning, "env",
        format!("the planned environment forces NCCL onto TCP sockets while healthy IB/RoCE ports are present ({}): inter-node bandwidth drops to what TCP reaches", ports.join(", ")),
        evidence,
        "Remove NCCL_IB_DISABLE=1 / NCCL_NET=Socket unless the platform requires it (some cloud RDMA offerings, e.g. Alibaba ACS P16EN, document NCCL_IB_DISABLE=1 because their RDMA is not usable by NCCL's IB transport).")]
}

/// Rule [`GID_INDEX`]: "NCCL_IB_GID_INDEX points at an empty slot or a RoCE v1 GID".
pub fn gid_index(node: &Node, env: &PlannedEnv) -> Vec<Finding> {
    let Some(raw) = env.get("NCCL_IB_GID_INDEX") else {
        return vec![];
    };
    let Ok(index) = raw.parse::<i64>() else {
        return vec![finding(GID_INDEX, Severity::Error, "env:NCCL_IB_GID_INDEX",
            format!("NCCL_IB_GID_INDEX={raw} is not an integer"),
            vec![ev(PlannedEnv::evidence_path("NCCL_IB_GID_INDEX"), raw)],
            "Set an integer GID index, or leave it unset (-1, automatic selection since NCCL 2.21).")];
    };
    if index < 0 {
        return vec![];
    }
    let mut out = vec![];
    for (dev, port) in all_ports(node) {
        if !is_roce(port) || !is_active(port) {
            continue;
        }
        let suggestion = crate::rules::roce::recommended_gid_index(port)
            .map(|i| format!("use NCCL_IB_GID_INDEX={i} (the RoCE v2 IPv4 GID NCCL ≥ 2.21 selects by itself on this port), or leave it unset with NCCL ≥ 2.21"))
            .unwrap_or_else(|| "give the netdev an IP address first (FAB-ROCE-001)".to_string());
        let path = port_path(dev, port, &format!("gid_attrs/types/{index}"));
        match port.gids.iter().find(|g| i64::from(g.index) == index) {
            None => out.push(finding(GID_INDEX, Severity::Error, port_subject(dev, port),
                format!("NCCL_IB_GID_INDEX={index} points at an empty GID slot on this port: NCCL connections over it fail"),
                vec![ev(PlannedEnv::evidence_path("NCCL_IB_GID_INDEX"), raw), ev(port_path(dev, port, &format!("gids/{index}")), "0000:0000:0000:0000:0000:0000:0000:0000")],
                suggestion)),
            Some(g) if g.gid_type == Some(GidType::IbRoceV1) => out.push(finding(GID_INDEX, Severity::Error, port_subject(dev, port),
                format!("NCCL_IB_GID_INDEX={index} points at a RoCE v1 GID on this port: RoCE v1 is not routable across IP subnets and mismatches RoCE v2 peers"),
                vec![ev(PlannedEnv::evidence_path("NCCL_IB_GID_INDEX"), raw), ev(path, "IB/RoCE v1")],
                suggestion)),
            Some(g) if g.gid_type == Some(GidType::RoceV2) && g.ipv4.is_none() && g.gid.starts_with("fe80:") => out.push(finding(GID_INDEX, Severity::Warning, port_subject(dev, port),
                format!("NCCL_IB_GID_INDEX={index} points at a link-local RoCE v2 GID ({}) on this port: it only reaches peers on the same L2 segment", g.gid),
                vec![ev(PlannedEnv::evidence_path("NCCL_IB_GID_INDEX"), raw), ev(path, "RoCE v2")],
                suggestion)),
            Some(_) => {}
        }
    }
    out
}

/// NCCL_NET_GDR_LEVEL as NCCL reads it: a path-type name, or a legacy integer.
fn parse_level(raw: &str) -> Option<Option<PathType>> {
    let v = raw.trim().to_ascii_uppercase();
    // The outer `None`: a value fabrik does not know. The inner `None`: LOC, never use GDR.
    // Legacy integers per NCCL's docs: LOC 0, PIX 1, PXB 2, PHB 3, SYS 4, greater values SYS.
    if let Ok(n) = v.parse::<i64>() {
        return Some(match n {
            i64::MIN..=0 => None,
            1 => Some(PathType::PIX),
            2 => Some(PathType::PXB),
            3 => Some(PathType::PHB),
            _ => Some(PathType::SYS),
        });
    }
    Some(match v.as_str() {
        "LOC" => None,
        "PIX" => Some(PathType::PIX),
        "PXB" => Some(PathType::PXB),
        "PHB" => Some(PathType::PHB),
        "SYS" => Some(PathType::SYS),
        _ => return None,
    })
}

/// Rule [`GDR_LEVEL`]: "NCCL_NET_GDR_LEVEL below the GPU↔NIC distance".
pub fn gdr_level(node: &Node, env: &PlannedEnv) -> Vec<Finding> {
    let Some(raw) = env.get("NCCL_NET_GDR_LEVEL") else {
        return vec![];
    };
    let path = PlannedEnv::evidence_path("NCCL_NET_GDR_LEVEL");
    let Some(level) = parse_level(raw) else {
        return vec![finding(GDR_LEVEL, Severity::Info, "env:NCCL_NET_GDR_LEVEL",
            format!("NCCL_NET_GDR_LEVEL={raw} is not a level fabrik knows (LOC, PIX, PXB, PHB, SYS); fabrik cannot judge it"),
            vec![ev(path, raw)],
            "Use a path-type name rather than a number; numbers changed meaning between NCCL versions.")];
    };
    let mut out = vec![];
    for gpu in &node.gpus {
        let Some(p) = nearest_nic(node, &gpu.pci.address) else {
            continue;
        };
        let Some(t) = p.path_type else { continue };
        let allowed = level.is_some_and(|l| t <= l);
        if allowed {
            continue;
        }
        out.push(finding(GDR_LEVEL, Severity::Warning, format!("GPU {}", gpu.pci.address),
            format!("NCCL_NET_GDR_LEVEL={raw} is below the distance from GPU {} to its nearest NIC {} ({}): GPUDirect RDMA is disabled for it and traffic is staged through host memory", gpu.pci.address, p.nic, t.as_str()),
            vec![ev(path.clone(), raw), ev(format!("nvidia-smi topo -m: GPU {} ↔ {}", gpu.pci.address, p.nic), t.as_str())],
            "Unset NCCL_NET_GDR_LEVEL (NCCL's default is PXB), or set it at least to the GPU↔NIC distance."));
    }
    out
}

/// Rule [`P2P_SHM_DISABLED`]: "NCCL_P2P_DISABLE or NCCL_SHM_DISABLE set".
pub fn p2p_shm_disabled(_node: &Node, env: &PlannedEnv) -> Vec<Finding> {
    let mut out = vec![];
    for (key, what) in [
        (
            "NCCL_P2P_DISABLE",
            "direct GPU-to-GPU transfers over NVLink/PCIe",
        ),
        (
            "NCCL_SHM_DISABLE",
            "the shared-memory transport between GPUs of one node",
        ),
    ] {
        if env.int(key).is_some_and(|v| v != 0) {
            out.push(finding(P2P_SHM_DISABLED, Severity::Warning, format!("env:{key}"),
                format!("{key}=1 turns off {what}: intra-node traffic falls back to slower paths. NVIDIA lists it as a debugging variable, not for production"),
                vec![ev(PlannedEnv::evidence_path(key), env.get(key).unwrap_or(""))],
                format!("Remove {key} once the problem it worked around is fixed (often ACS or IOMMU settings, FAB-PCI-002/003).")));
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::testkit::*;

    fn env(text: &str) -> PlannedEnv {
        PlannedEnv::parse("test", text)
    }

    #[test]
    fn ib_hca_entries_are_checked_against_devices_and_ports() {
        let mut n = healthy_ib_node("a");
        assert!(ib_hca(&n, &env("NCCL_IB_HCA=mlx5\n")).is_empty());
        assert!(ib_hca(&n, &env("NCCL_IB_HCA==mlx5_0:1,mlx5_1:1\n")).is_empty());
        let f = ib_hca(&n, &env("NCCL_IB_HCA=mlx4_0\n"));
        assert_eq!(f[0].severity, Severity::Error);
        let f = ib_hca(&n, &env("NCCL_IB_HCA==mlx5_0:2\n"));
        assert!(f[0].message.contains("port 2"));
        n.rdma_devices[1].ports[0].state = state("1: DOWN");
        let f = ib_hca(&n, &env("NCCL_IB_HCA==mlx5_1\n"));
        assert_eq!(f[0].severity, Severity::Error);
        let f = ib_hca(&n, &env("NCCL_IB_HCA=mlx5\n"));
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(ib_hca(&n, &env("NCCL_IB_HCA=\n")).is_empty());
        let f = ib_hca(&n, &env("NCCL_IB_HCA=^mlx5\n"));
        assert!(f[0].message.contains("excludes every active"));
    }

    #[test]
    fn ib_hca_naming_fewer_rails_warns() {
        let n = healthy_ib_node("a");
        assert!(ib_hca_fewer_rails(&n, &env("NCCL_IB_HCA=mlx5\n")).is_empty());
        assert!(ib_hca_fewer_rails(&n, &env("NCCL_IB_HCA=\n")).is_empty());
        let all: Vec<String> = n
            .rdma_devices
            .iter()
            .map(|d| format!("{}:1", d.name))
            .collect();
        let all = all.join(",");
        let f = ib_hca_fewer_rails(&n, &env(&format!("NCCL_IB_HCA=={all}\n")));
        assert!(f.is_empty(), "{all}: {f:?}");
        let f = ib_hca_fewer_rails(&n, &env("NCCL_IB_HCA==mlx5_0,mlx5_1\n"));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Warning);
        let rails = n.rdma_devices.len();
        assert!(
            f[0].message
                .contains(&format!("uses 2 of the node's {rails} ACTIVE rails")),
            "{}",
            f[0].message
        );
        assert!(f[0].message.contains("mlx5_2:1"), "{}", f[0].message);
        let f = ib_hca_fewer_rails(&n, &env("NCCL_IB_HCA=^mlx5_3\n"));
        assert!(
            f[0].message.contains("leaves out mlx5_3:1"),
            "{}",
            f[0].message
        );
        // A device that matches nothing is FAB-ENV-001's, not this rule's.
        assert!(ib_hca_fewer_rails(&n, &env("NCCL_IB_HCA=mlx4\n")).is_empty());
    }

    #[test]
    fn socket_ifname_matching_nothing_errors() {
        let n = bare_node();
        assert!(socket_ifname(&n, &env("NCCL_SOCKET_IFNAME=eth\n")).is_empty());
        let f = socket_ifname(&n, &env("NCCL_SOCKET_IFNAME=ens\n"));
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0].fix.contains("NCCL_SOCKET_IFNAME==eth0"));
        let mut down = bare_node();
        down.net_interfaces[0].operstate = Some("down".into());
        assert!(socket_ifname(&down, &env("NCCL_SOCKET_IFNAME==eth0\n"))[0]
            .message
            .contains("down or have no IP"));
    }

    #[test]
    fn disabling_ib_with_healthy_ports_warns() {
        let n = healthy_ib_node("a");
        assert_eq!(ib_disabled(&n, &env("NCCL_IB_DISABLE=1\n")).len(), 1);
        assert_eq!(ib_disabled(&n, &env("NCCL_NET=Socket\n")).len(), 1);
        assert!(ib_disabled(&n, &env("NCCL_IB_DISABLE=0\n")).is_empty());
        assert!(ib_disabled(&bare_node(), &env("NCCL_IB_DISABLE=1\n")).is_empty());
    }

    #[test]
    fn gid_index_slots_are_checked() {
        let n = healthy_roce_node("r", 1);
        assert!(gid_index(&n, &env("NCCL_IB_GID_INDEX=3\n")).is_empty());
        assert!(gid_index(&n, &env("NCCL_IB_GID_INDEX=-1\n")).is_empty());
        let v1 = gid_index(&n, &env("NCCL_IB_GID_INDEX=2\n"));
        assert_eq!(v1.len(), 2);
        assert!(v1[0].message.contains("RoCE v1"));
        assert!(v1[0].fix.contains("NCCL_IB_GID_INDEX=3"));
        let empty = gid_index(&n, &env("NCCL_IB_GID_INDEX=7\n"));
        assert!(empty[0].message.contains("empty GID slot"));
        let ll = gid_index(&n, &env("NCCL_IB_GID_INDEX=1\n"));
        assert_eq!(ll[0].severity, Severity::Warning);
    }

    #[test]
    fn gdr_level_below_distance_warns() {
        let mut n = healthy_ib_node("a");
        assert!(gdr_level(&n, &env("NCCL_NET_GDR_LEVEL=PIX\n")).is_empty());
        let f = gdr_level(&n, &env("NCCL_NET_GDR_LEVEL=LOC\n"));
        assert_eq!(f.len(), 8);
        for p in n
            .gpu_nic_paths
            .iter_mut()
            .filter(|p| p.path_type == Some(PathType::PIX))
        {
            p.path_type = Some(PathType::PXB);
        }
        assert_eq!(gdr_level(&n, &env("NCCL_NET_GDR_LEVEL=PIX\n")).len(), 8);
        assert!(gdr_level(&n, &env("NCCL_NET_GDR_LEVEL=PXB\n")).is_empty());
        assert_eq!(
            gdr_level(&n, &env("NCCL_NET_GDR_LEVEL=weird\n"))[0].severity,
            Severity::Info
        );
    }

    #[test]
    fn p2p_and_shm_disable_warn() {
        let f = p2p_shm_disabled(
            &bare_node(),
            &env("NCCL_P2P_DISABLE=1\nNCCL_SHM_DISABLE=1\n"),
        );
        assert_eq!(f.len(), 2);
        assert!(p2p_shm_disabled(&bare_node(), &env("NCCL_P2P_DISABLE=0\n")).is_empty());
    }
}
