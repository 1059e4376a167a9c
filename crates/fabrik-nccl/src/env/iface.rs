//! Which IP interface NCCL should use for its TCP bootstrap (and, without RDMA, for data).

use fabrik_model::{NetInterface, NetKind, Node};

/// Interface name prefixes that are never a host's way out: container bridges, veths, tunnels.
/// NCCL itself skips `lo` and `docker*` unless nothing else exists; fabrik skips more because a
/// CNI or libvirt bridge carries an address NCCL would otherwise happily pick.
const SOFTWARE_PREFIXES: &[&str] = &[
    "lo",
    "docker",
    "veth",
    "virbr",
    "br-",
    "cni",
    "flannel",
    "cali",
    "tun",
    "tap",
    "kube",
    "vxlan",
    "weave",
    "cilium",
    "lxc",
    "wg",
    "tailscale",
    "zt",
];

/// The chosen interface and the facts that made it the choice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SocketChoice {
    /// The interface (`eth0`).
    pub name: String,
    /// Its IPv4 addresses.
    pub ipv4: Vec<String>,
    /// Why it was chosen.
    pub why: String,
    /// Other interfaces that could have served, so the user sees what was passed over.
    pub others: Vec<String>,
}

fn is_candidate(i: &NetInterface) -> bool {
    // Kind `Virtual` (no PCI device behind it) is not excluded: a bond, a VLAN, or a
    // container's own `eth0` (the inside end of a veth) is what a job must use there. The
    // host-side software links are recognised by name instead.
    if matches!(i.kind, NetKind::Loopback | NetKind::Bridge) {
        return false;
    }
    if SOFTWARE_PREFIXES.iter().any(|p| i.name.starts_with(p)) {
        return false;
    }
    let up = match i.operstate.as_deref() {
        Some("up") => true,
        // Some virtual NICs and older drivers report `unknown` while passing traffic.
        Some("unknown") | None => true,
        Some(_) => false,
    };
    up && !i.ipv4.is_empty()
}

/// Picks the interface for NCCL_SOCKET_IFNAME: the one carrying the default route, else the only
/// candidate, else the first physical NIC by name (and says so).
pub fn choose_socket_interface(node: &Node) -> Option<SocketChoice> {
    let mut candidates: Vec<&NetInterface> = node
        .net_interfaces
        .iter()
        .filter(|i| is_candidate(i))
        .collect();
    // Physical NICs before software ones, then by name, so the fallback is stable.
    candidates.sort_by_key(|i| (i.kind == NetKind::Virtual, i.name.clone()));
    let default = candidates.iter().find(|i| i.default_route).copied();
    let (chosen, why) = match default {
        Some(i) => (i, "it carries the default route".to_string()),
        None => match candidates.as_slice() {
            [] => return None,
            [only] => (
                *only,
                "it is the only interface outside loopback, bridges and container links that is up with an IPv4 address".to_string(),
            ),
            [first, ..] => (
                *first,
                format!(
                    "no default route was found; it is the first of {} candidate interfaces (physical NICs first, then by name)",
                    candidates.len()
                ),
            ),
        },
    };
    Some(SocketChoice {
        name: chosen.name.clone(),
        ipv4: chosen.ipv4.clone(),
        why,
        others: candidates
            .iter()
            .filter(|i| i.name != chosen.name)
            .map(|i| i.name.clone())
            .collect(),
    })
}

/// NCCL_SOCKET_IFNAME value matching exactly one interface (`=eth0`), so that `eth0` does not
/// also select `eth0.100` or `eth01`.
pub fn exact_ifname(name: &str) -> String {
    format!("={name}")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    pub(crate) fn iface(
        name: &str,
        kind: NetKind,
        ip: &[&str],
        default_route: bool,
    ) -> NetInterface {
        NetInterface {
            kind,
            mtu: Some(1500),
            ..crate::env::tests::iface(name, ip, default_route)
        }
    }

    #[test]
    fn default_route_wins_over_docker_and_bridges() {
        let node = Node {
            net_interfaces: vec![
                iface("lo", NetKind::Loopback, &["127.0.0.1/8"], false),
                iface("docker0", NetKind::Bridge, &["172.17.0.1/16"], false),
                iface("ens5", NetKind::Ethernet, &["10.0.0.5/24"], true),
                iface("ens6", NetKind::Ethernet, &["10.1.0.5/24"], false),
            ],
            ..Node::default()
        };
        let c = choose_socket_interface(&node).unwrap();
        assert_eq!(c.name, "ens5");
        assert!(c.why.contains("default route"));
        assert_eq!(c.others, vec!["ens6".to_string()]);
    }

    #[test]
    fn without_default_route_first_by_name_and_said() {
        let node = Node {
            net_interfaces: vec![
                iface("eth1", NetKind::Ethernet, &["10.1.0.5/24"], false),
                iface("eth0", NetKind::Ethernet, &["10.0.0.5/24"], false),
                iface("veth12", NetKind::Ethernet, &["10.9.0.1/24"], false),
            ],
            ..Node::default()
        };
        let c = choose_socket_interface(&node).unwrap();
        assert_eq!(c.name, "eth0");
        assert!(c.why.contains("no default route"));
    }

    #[test]
    fn a_containers_veth_eth0_and_a_bond_are_usable() {
        // Inside a container eth0 has no PCI device (probing calls it virtual).
        let node = Node {
            net_interfaces: vec![
                iface("lo", NetKind::Loopback, &["127.0.0.1/8"], false),
                iface("eth0", NetKind::Virtual, &["10.244.1.7/24"], true),
            ],
            ..Node::default()
        };
        assert_eq!(choose_socket_interface(&node).unwrap().name, "eth0");
        let node = Node {
            net_interfaces: vec![
                iface("bond0", NetKind::Virtual, &["10.0.0.2/24"], false),
                iface("veth9a1", NetKind::Virtual, &["10.9.0.1/24"], false),
                iface("enp1s0", NetKind::Ethernet, &["10.1.0.2/24"], false),
            ],
            ..Node::default()
        };
        let c = choose_socket_interface(&node).unwrap();
        assert_eq!(c.name, "enp1s0", "physical first without a default route");
        assert_eq!(c.others, vec!["bond0".to_string()]);
    }

    #[test]
    fn down_or_addressless_interfaces_are_not_candidates() {
        let mut down = iface("eth0", NetKind::Ethernet, &["10.0.0.5/24"], true);
        down.operstate = Some("down".into());
        let node = Node {
            net_interfaces: vec![down, iface("eth1", NetKind::Ethernet, &[], false)],
            ..Node::default()
        };
        assert_eq!(choose_socket_interface(&node), None);
    }
}
