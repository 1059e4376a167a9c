//! Cross-node rules: what must match on every node of a job.
//!
//! Each rule computes one value per node, groups the nodes by it and names the nodes outside
//! the largest group (the drifted ones). With no strict majority (a 2-2 split) every node is
//! named. Nodes where the value is unknown are left out rather than guessed.
//!
//! Severity follows what the job would do (the reasoning per rule is in docs/rules/FAB-X-*.md):
//! an error where NCCL or the launcher cannot run the job across these nodes (InfiniBand beside
//! RoCE, fewer GPUs or active rails than the peers, a rail in a subnet its peers cannot reach);
//! a warning where the job runs, slower or less predictably (versions, firmware, rates, MTU, GID
//! index).

use std::collections::{BTreeMap, BTreeSet};

use fabrik_model::{Finding, Node, Severity};

use crate::rules::roce::recommended_gid_index;
use crate::util::*;

mod evidence;
mod peers;
mod subnets;
pub(crate) use evidence::{firmware_model, firmware_values};
pub use evidence::{BER_OUTLIER, FIRMWARE_SETTINGS};
pub use peers::on_link_peers;
use peers::*;
pub use subnets::ipv4_network;
use subnets::*;

/// Rule id of "Kernel versions differ across nodes".
pub const KERNEL: &str = "FAB-X-001";
/// Rule id of "NVIDIA driver versions differ across nodes".
pub const NVIDIA_DRIVER: &str = "FAB-X-002";
/// Rule id of "OFED / rdma-core versions differ across nodes".
pub const RDMA_STACK: &str = "FAB-X-003";
/// Rule id of "HCA firmware differs across nodes".
pub const FIRMWARE: &str = "FAB-X-004";
/// Rule id of "Link rates differ across nodes".
pub const LINK_RATES: &str = "FAB-X-005";
/// Rule id of "A node has fewer GPUs or active RDMA ports than its peers".
pub const COUNTS: &str = "FAB-X-006";
/// Rule id of "RDMA MTU differs across nodes".
pub const MTU: &str = "FAB-X-007";
/// Rule id of "RoCE v2 GID indexes differ across nodes".
pub const GID_INDEX: &str = "FAB-X-008";
/// Rule id of "RoCE interfaces in different IP subnets".
pub const SUBNETS: &str = "FAB-X-009";
/// Rule id of "InfiniBand and RoCE (or EFA) nodes in one job".
pub const LINK_LAYER: &str = "FAB-X-010";
/// Rule id of "Neighbour (ARP) table smaller than the job's on-link peers".
pub const NEIGHBOURS: &str = "FAB-X-011";
/// Rule id of "TCP buffer limits differ across nodes".
pub const TCP_BUFFERS: &str = "FAB-X-014";
/// Rule id of "MTU of NCCL's socket interfaces differs across nodes".
pub const SOCKET_MTU: &str = "FAB-MTU-002";
/// Rule id of "RDMA port below the rate or width of its model on the other nodes".
pub const PORT_BELOW_PEERS: &str = "FAB-PORT-005";

/// A node and the name the report gives it (hostname, or the root directory).
#[derive(Debug, Clone)]
pub struct NamedNode {
    /// The name findings use for the node.
    pub name: String,
    /// What probing found on it.
    pub node: Node,
}

struct Drift<'a> {
    rule: &'static str,
    severity: Severity,
    what: &'a str,
    path: &'a str,
    fix: &'a str,
}

fn drift(d: Drift<'_>, values: Vec<(&str, Option<String>)>) -> Vec<Finding> {
    let mut groups: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for (name, v) in &values {
        if let Some(v) = v {
            groups.entry(v.clone()).or_default().push(name);
        }
    }
    if groups.len() < 2 {
        return vec![];
    }
    let biggest = groups.values().map(Vec::len).max().unwrap_or(0);
    let leaders: Vec<&String> = groups
        .iter()
        .filter(|(_, n)| n.len() == biggest)
        .map(|(v, _)| v)
        .collect();
    let majority = if leaders.len() == 1 {
        Some(leaders[0].clone())
    } else {
        None
    };
    let evidence: Vec<_> = values
        .iter()
        .filter_map(|(n, v)| v.as_ref().map(|v| ev(format!("{n}:{}", d.path), v.clone())))
        .collect();
    let mut out = vec![];
    for (value, names) in &groups {
        if majority.as_ref() == Some(value) {
            continue;
        }
        for name in names {
            let message = match &majority {
                Some(m) => format!(
                    "{} differs: `{value}` on {name}, `{m}` on {} of {} nodes",
                    d.what,
                    groups[m].len(),
                    values.len()
                ),
                None => format!(
                    "{} differs across nodes with no majority: {}",
                    d.what,
                    groups
                        .iter()
                        .map(|(v, n)| format!("`{v}` on {}", n.join(", ")))
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
            };
            out.push(finding(
                d.rule,
                d.severity,
                name.to_string(),
                message,
                evidence.clone(),
                d.fix,
            ));
        }
    }
    out
}

fn sorted_join<I: IntoIterator<Item = String>>(it: I) -> String {
    let set: BTreeSet<String> = it.into_iter().collect();
    set.into_iter().collect::<Vec<_>>().join(", ")
}

/// The cross-node rules (`FAB-X-*`) over `nodes`; none with fewer than two nodes.
pub fn check(nodes: &[NamedNode]) -> Vec<Finding> {
    if nodes.len() < 2 {
        return vec![];
    }
    let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
    let per = |f: &dyn Fn(&Node) -> Option<String>| -> Vec<(&str, Option<String>)> {
        nodes
            .iter()
            .zip(&names)
            .map(|(n, name)| (*name, f(&n.node)))
            .collect()
    };
    let mut out = vec![];
    out.extend(drift(Drift { rule: KERNEL, severity: Severity::Warning, what: "kernel", path: "/proc/sys/kernel/osrelease (or /proc/version)",
        fix: "Run the same kernel on every node of a job (RDMA and GPU drivers are built against it)." },
        per(&|n| n.os.kernel.clone())));
    out.extend(drift(Drift { rule: NVIDIA_DRIVER, severity: Severity::Warning, what: "NVIDIA driver", path: "/proc/driver/nvidia/version",
        fix: "Install the same NVIDIA driver version on every node (mixed drivers give different CUDA/NCCL behaviour and peer-memory support)." },
        per(&|n| n.versions.nvidia_driver.clone())));
    out.extend(drift(
        Drift {
            rule: RDMA_STACK,
            severity: Severity::Warning,
            what: "OFED (`ofed_info -s`)",
            path: "fabrik/cmd/ofed_info.txt",
            fix: "Install the same MLNX_OFED/DOCA-OFED or distro rdma-core release on every node.",
        },
        per(&|n| n.versions.ofed.clone()),
    ));
    out.extend(drift(
        Drift {
            rule: RDMA_STACK,
            severity: Severity::Warning,
            what: "rdma-core",
            path: "rdma-core version",
            fix: "Install the same MLNX_OFED/DOCA-OFED or distro rdma-core release on every node.",
        },
        per(&|n| n.versions.rdma_core.clone()),
    ));
    let models: BTreeSet<String> = nodes
        .iter()
        .flat_map(|n| verbs_hardware(&n.node).map(model_key).collect::<Vec<_>>())
        .collect();
    for model in &models {
        let what = format!("firmware of the {model} HCAs");
        out.extend(drift(Drift { rule: FIRMWARE, severity: Severity::Warning, what: &what, path: "/sys/class/infiniband/*/fw_ver",
            fix: "Flash the same firmware on every HCA of the same model (`mlxfwmanager --online -u` or the vendor bundle), then reboot or reset the devices." },
            per(&|n| {
                let fws: Vec<String> = verbs_hardware(n).filter(|d| &model_key(d) == model).filter_map(|d| d.fw_ver.clone()).collect();
                if fws.is_empty() { None } else { Some(sorted_join(fws)) }
            })));
    }
    out.extend(drift(Drift { rule: LINK_RATES, severity: Severity::Warning, what: "active link rates", path: "/sys/class/infiniband/*/ports/*/rate",
        fix: "Bring every node's ports to the same rate (cables, transceivers, switch port speed). A fabric with mixed rates (FDR and HDR) runs collectives at the slowest node's pace." },
        per(&|n| {
            let rates: Vec<String> = verbs_hardware(n)
                .flat_map(|d| d.ports.iter())
                .filter(|p| is_active(p))
                .filter_map(|p| p.rate.as_ref().map(|r| r.text.clone()))
                .collect();
            if rates.is_empty() { None } else {
                let mut counts: BTreeMap<String, usize> = BTreeMap::new();
                for r in rates { *counts.entry(r).or_default() += 1; }
                Some(counts.iter().map(|(r, c)| format!("{c}x {r}")).collect::<Vec<_>>().join(", "))
            }
        })));
    // NCCL's IB transport refuses a peer whose link layer differs from its own ("Remote %s
    // device is incompatible with the local ...", net_ib connect since 2.19), and falls back to
    // nothing: the job fails at its first inter-node connection.
    out.extend(drift(Drift { rule: LINK_LAYER, severity: Severity::Error, what: "RDMA link layer of the active ports", path: "/sys/class/infiniband/*/ports/*/link_layer",
        fix: "Run a job over nodes of one fabric: InfiniBand with InfiniBand, RoCE with RoCE (split the allocation by partition or node label); NCCL cannot connect an InfiniBand HCA to a RoCE NIC over RDMA." },
        per(&|n| {
            let mut layers: Vec<String> = devices(n)
                .into_iter()
                .filter(|d| !d.is_software() && !d.is_iwarp())
                .flat_map(|d| d.ports.iter().filter(|p| is_active(p)).map(move |p| (d, p)))
                .filter_map(|(d, p)| if d.is_efa() { Some("EFA".to_string()) } else if is_ib(p) { Some("InfiniBand".to_string()) } else if is_roce(p) { Some("RoCE (Ethernet)".to_string()) } else { None })
                .collect();
            layers.sort();
            layers.dedup();
            if layers.is_empty() { None } else { Some(layers.join(" + ")) }
        })));
    // torchrun/srun start one rank per GPU from one per-node count: a node with fewer GPUs fails
    // the job at start (CUDA device ordinal out of range); a node with fewer active rails sends
    // its share over the others or, on rail-isolated fabrics, cannot reach its peers' rail. The
    // node with fewer is the one at fault, majority or not (two nodes, 8 and 7 GPUs).
    out.extend(fewer(nodes));
    out.extend(drift(Drift { rule: MTU, severity: Severity::Warning, what: "RDMA MTU (RoCE netdev MTU / IB active MTU)", path: "/sys/class/net/*/mtu",
        fix: "Use one MTU for the RDMA network on every node and switch (9000 for RoCE, 4096 IB MTU)." },
        per(&|n| {
            let mut m: Vec<String> = vec![];
            for (_, p) in all_ports(n).filter(|(d, p)| !d.is_software() && is_active(p)) {
                if is_roce(p) {
                    if let Some(mtu) = p.netdev.as_deref().and_then(|nd| n.net_interface(nd)).and_then(|i| i.mtu) {
                        m.push(format!("RoCE netdev {mtu}"));
                    }
                } else if let Some(a) = p.active_mtu {
                    m.push(format!("IB {a}"));
                }
            }
            if m.is_empty() { None } else { Some(sorted_join(m)) }
        })));
    out.extend(drift(Drift { rule: GID_INDEX, severity: Severity::Warning, what: "RoCE v2 IPv4 GID index", path: "/sys/class/infiniband/*/ports/*/gid_attrs/types/*",
        fix: "Make the GID tables alike on every node (same addressing on the RoCE netdevs), or leave NCCL_IB_GID_INDEX unset with NCCL ≥ 2.21, which selects per device." },
        per(&|n| {
            let idx: Vec<String> = all_ports(n)
                .filter(|(d, p)| !d.is_software() && !d.is_iwarp() && is_roce(p) && is_active(p))
                .filter_map(|(_, p)| recommended_gid_index(p).map(|i| i.to_string()))
                .collect();
            if idx.is_empty() { None } else { Some(sorted_join(idx)) }
        })));
    let subnets = drift(Drift { rule: SUBNETS, severity: Severity::Warning, what: "IPv4 subnets of the RoCE interfaces", path: "/sys/class/net/<roce netdev> addresses",
        fix: "Put each rail's RoCE interfaces in the same subnet on every node, or route between the subnets (RoCE v2) and check with `ip route get <peer address>` from each rail interface." },
        per(&|n| {
            let nets: Vec<String> = roce_networks(n).into_iter().map(|(net, len, _)| format!("{net}/{len}")).collect();
            if nets.is_empty() { None } else { Some(sorted_join(nets)) }
        }));
    out.extend(subnets.into_iter().map(|f| unroutable(f, nodes)));
    out.extend(neighbour_tables(nodes));
    out.extend(drift(
        Drift {
            rule: SOCKET_MTU,
            severity: Severity::Warning,
            what: "MTU of the interfaces NCCL's bootstrap and socket transport use",
            path: "/sys/class/net/<interface>/mtu",
            fix: "Give the interfaces that carry the job's traffic one MTU on every node and on the switch ports between them (`ip link set <if> mtu <mtu>`, and the netplan, NetworkManager or ifupdown file that sets it at boot); `fabrik cluster matrix` probes the path MTU between every pair.",
        },
        per(&socket_mtus),
    ));
    out.extend(drift(
        Drift {
            rule: TCP_BUFFERS,
            severity: Severity::Warning,
            what: "largest TCP receive / send buffer (net.ipv4.tcp_rmem / tcp_wmem max)",
            path: "/proc/sys/net/ipv4/tcp_{r,w}mem",
            fix: "Give every node the same TCP buffer limits (`sysctl -w net.ipv4.tcp_rmem=\"4096 131072 <max>\"` and `tcp_wmem`, kept in /etc/sysctl.d/), at least the kernel's defaults (6 MiB receive, 4 MiB send); a container or pod sets them in its own network namespace.",
        },
        per(&tcp_buffer_limits),
    ));
    out.extend(ports_below_peers(nodes));
    out.extend(evidence::firmware_settings(nodes));
    out.extend(evidence::ber_outliers(nodes));
    out
}

/// The largest receive and send buffers a TCP socket may autotune to on a node:
/// `6291456 / 4194304 bytes`. `None` when either sysctl is unknown.
fn tcp_buffer_limits(n: &Node) -> Option<String> {
    let b = n.tcp_buffers?;
    Some(format!("{} / {} bytes", b.rmem?[2], b.wmem?[2]))
}

/// The MTUs of the interfaces NCCL's socket code would pick on a node without
/// `NCCL_SOCKET_IFNAME` (its bootstrap uses the first, its socket transport all of them):
/// `9000`, or `1500, 9000` for several. Names differ from node to node, so only the MTUs are
/// compared. `None` when no interface qualifies or an MTU is unknown.
pub(crate) fn socket_mtus(n: &Node) -> Option<String> {
    let choice = crate::socket::default_choice(n)?;
    if choice
        .interfaces
        .iter()
        .any(|i| i.kind == fabrik_model::NetKind::Loopback)
    {
        return None;
    }
    let mtus: Option<Vec<String>> = choice
        .interfaces
        .iter()
        .map(|i| i.mtu.map(|m| m.to_string()))
        .collect();
    let mut mtus = mtus?;
    mtus.sort_by_key(|m| m.parse::<u32>().unwrap_or(0));
    mtus.dedup();
    (!mtus.is_empty()).then(|| mtus.join(", "))
}

/// The count the job is shaped for: the most common one, the largest on a tie. A node above it
/// (a spare GPU) runs the job; a node below it does not.
fn reference(counts: impl Iterator<Item = usize>) -> usize {
    let mut freq: BTreeMap<usize, usize> = BTreeMap::new();
    for c in counts {
        *freq.entry(c).or_default() += 1;
    }
    freq.iter()
        .max_by_key(|(count, n)| (**n, **count))
        .map_or(0, |(count, _)| *count)
}

/// Nodes with fewer GPUs or fewer active RDMA ports than the job's reference count.
fn fewer(nodes: &[NamedNode]) -> Vec<Finding> {
    let counts: Vec<(&str, usize, usize)> = nodes
        .iter()
        .map(|n| {
            let active = all_ports(&n.node)
                .filter(|(d, p)| !d.is_software() && is_active(p))
                .count();
            (n.name.as_str(), n.node.gpus.len(), active)
        })
        .collect();
    let max_gpus = reference(counts.iter().map(|c| c.1));
    let max_ports = reference(counts.iter().map(|c| c.2));
    let evidence: Vec<_> = counts
        .iter()
        .map(|(n, g, p)| {
            ev(
                format!("{n}:gpus and /sys/class/infiniband/*/ports/*/state"),
                format!("{g} GPUs / {p} active RDMA ports"),
            )
        })
        .collect();
    let mut out = vec![];
    for (name, g, p) in &counts {
        let mut short = vec![];
        if *g < max_gpus {
            short.push(format!("{g} GPUs where peers have {max_gpus}: a launcher starting {max_gpus} processes per node fails here"));
        }
        if *p < max_ports {
            short.push(format!("{p} active RDMA ports where peers have {max_ports}: a rail is missing, and NCCL's connections to it from the peers fall on the other rails or, on rail-isolated fabrics, hang"));
        }
        if short.is_empty() {
            continue;
        }
        out.push(finding(
            COUNTS,
            Severity::Error,
            name.to_string(),
            format!("{name} has fewer than its peers: {}", short.join("; ")),
            evidence.clone(),
            "Drain the node and find what it is missing (a GPU fallen off the bus: `nvidia-smi -q`, dmesg Xid 79; an HCA without driver or a port down: `ibstat`, cable and switch port) before scheduling multi-node jobs on it.",
        ));
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;
