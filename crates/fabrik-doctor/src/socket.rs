//! NCCL's socket interface selection, reproduced from its source so that fabrik can say which
//! interface the bootstrap (and the socket transport) would use on a node.
//!
//! NCCL (`src/misc/socket.cc`, `ncclFindInterfaces`; `src/os/linux.cc`, `ncclOsFindInterfaces`):
//! with `NCCL_SOCKET_IFNAME` unset it tries, in order, interfaces whose name starts with `ib`;
//! then (when `NCCL_COMM_ID` is set) one in the same subnet as that address; then any interface
//! that does not start with `docker`, `lo` or `virbr` (older releases exclude only `docker` and
//! `lo`); then `docker*`, then `lo`, then `virbr*`. Within a tier it keeps only interfaces that
//! are running (`IFF_RUNNING`) and carry an IPv4 or non-loopback IPv6 address, in `getifaddrs`
//! order; the bootstrap uses the first one.

use fabrik_model::{NetInterface, NetKind, Node};

/// An `NCCL_SOCKET_IFNAME`/`NCCL_IB_HCA`-style list: `^` excludes, `=` matches names exactly,
/// otherwise each entry is a prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameFilter {
    /// The list starts with `^`: entries are excluded.
    pub exclude: bool,
    /// The list starts with `=`: entries match whole names.
    pub exact: bool,
    /// The entries, without the `^`/`=` markers.
    pub entries: Vec<String>,
}

impl NameFilter {
    /// Parses a list as NCCL does (`^=docker,lo`).
    pub fn parse(raw: &str) -> Self {
        let mut s = raw.trim();
        let exclude = s.starts_with('^');
        if exclude {
            s = &s[1..];
        }
        let exact = s.starts_with('=');
        if exact {
            s = &s[1..];
        }
        let entries = s
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .map(str::to_string)
            .collect();
        NameFilter {
            exclude,
            exact,
            entries,
        }
    }

    /// Whether `name` matches any entry (before `^` is applied).
    pub fn matches_entry(&self, entry: &str, name: &str) -> bool {
        if self.exact {
            name == entry
        } else {
            name.starts_with(entry)
        }
    }

    /// Whether NCCL would keep `name` under this filter.
    pub fn selects(&self, name: &str) -> bool {
        let hit = self.entries.iter().any(|e| self.matches_entry(e, name));
        hit != self.exclude
    }
}

/// Which tier of NCCL's default search produced the selection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// Names starting with `ib`.
    Ib,
    /// Anything but `docker*`, `lo*`, `virbr*`.
    General,
    /// `docker*` interfaces.
    Docker,
    /// `lo*` interfaces.
    Loopback,
    /// `virbr*` interfaces.
    Virbr,
}

impl Tier {
    /// The tier in words, for messages.
    pub fn describe(self) -> &'static str {
        match self {
            Tier::Ib => "interfaces starting with `ib` (NCCL's first choice)",
            Tier::General => "interfaces other than docker*, lo* and virbr*",
            Tier::Docker => "docker* interfaces (nothing else was usable)",
            Tier::Loopback => "the loopback interface (nothing else was usable)",
            Tier::Virbr => "virbr* interfaces (nothing else was usable)",
        }
    }
}

/// The interfaces NCCL's socket transport would choose from on a node.
#[derive(Debug, Clone, PartialEq)]
pub struct SocketChoice<'a> {
    /// The tier the interfaces come from.
    pub tier: Tier,
    /// Every interface of the tier, in the order fabrik assumes NCCL sees them; the bootstrap
    /// uses the first.
    pub interfaces: Vec<&'a NetInterface>,
    /// True when the node's data had no IP addresses at all (a snapshot without them), so the
    /// address condition could not be applied.
    pub addresses_unknown: bool,
}

/// `IFF_RUNNING` is what NCCL tests; sysfs `operstate` `up` (or `unknown`, which loopback and
/// some virtual devices report while running) is its closest offline trace.
fn running(i: &NetInterface) -> bool {
    matches!(i.operstate.as_deref(), Some("up") | Some("unknown"))
}

fn has_address(i: &NetInterface) -> bool {
    !i.ipv4.is_empty()
        || i.ipv6
            .iter()
            .any(|a| !a.starts_with("::1/") && a.as_str() != "::1")
}

/// Addresses are taken as unknown when not one interface, loopback included, has any: a live
/// Linux machine always has `127.0.0.1` on `lo`.
pub fn addresses_unknown(node: &Node) -> bool {
    node.net_interfaces
        .iter()
        .all(|i| i.ipv4.is_empty() && i.ipv6.is_empty())
}

/// The candidates NCCL would consider (running, addressed) in the order fabrik assumes:
/// `getifaddrs` lists IPv4 entries before IPv6 ones, and within a family by interface index,
/// which fabrik does not know; interfaces keep the node's order (by name) within a family.
pub fn candidates(node: &Node) -> Vec<&NetInterface> {
    let unknown = addresses_unknown(node);
    let usable = |i: &&NetInterface| running(i) && (unknown || has_address(i));
    let mut by_name: Vec<&NetInterface> = node.net_interfaces.iter().collect();
    by_name.sort_by(|a, b| a.name.cmp(&b.name));
    let mut v4: Vec<&NetInterface> = by_name
        .iter()
        .copied()
        .filter(usable)
        .filter(|i| unknown || !i.ipv4.is_empty())
        .collect();
    let v6: Vec<&NetInterface> = by_name
        .iter()
        .copied()
        .filter(usable)
        .filter(|i| !unknown && i.ipv4.is_empty())
        .collect();
    v4.extend(v6);
    v4
}

/// NCCL's default choice (no `NCCL_SOCKET_IFNAME`, no `NCCL_COMM_ID`).
pub fn default_choice(node: &Node) -> Option<SocketChoice<'_>> {
    let cands = candidates(node);
    let tiers: [(Tier, NameFilter); 5] = [
        (Tier::Ib, NameFilter::parse("ib")),
        (Tier::General, NameFilter::parse("^docker,lo,virbr")),
        (Tier::Docker, NameFilter::parse("docker")),
        (Tier::Loopback, NameFilter::parse("lo")),
        (Tier::Virbr, NameFilter::parse("virbr")),
    ];
    for (tier, filter) in tiers {
        let picked: Vec<&NetInterface> = cands
            .iter()
            .copied()
            .filter(|i| filter.selects(&i.name))
            .collect();
        if !picked.is_empty() {
            return Some(SocketChoice {
                tier,
                interfaces: picked,
                addresses_unknown: addresses_unknown(node),
            });
        }
    }
    None
}

/// Interfaces NCCL would select under an explicit `NCCL_SOCKET_IFNAME`.
pub fn explicit_choice<'a>(node: &'a Node, filter: &NameFilter) -> Vec<&'a NetInterface> {
    candidates(node)
        .into_iter()
        .filter(|i| filter.selects(&i.name))
        .collect()
}

/// Interfaces that other hosts cannot reach, or reach only through NAT: loopback, container and
/// VM bridges and their veth/overlay devices. Bonds, VLANs and a pod's own `eth0` (a veth with
/// no PCI device behind it) are fine; a bridge that carries the default route is the host's main
/// interface (VM hosts often have one) and is fine too.
pub fn is_poor_choice(i: &NetInterface) -> bool {
    const LOCAL_ONLY: [&str; 16] = [
        "docker", "virbr", "veth", "cni", "flannel", "cali", "br-", "vxlan", "tun", "tap", "lxc",
        "lxd", "podman", "cilium", "weave", "kube-",
    ];
    i.kind == NetKind::Loopback
        || (i.kind == NetKind::Bridge && !i.default_route)
        || LOCAL_ONLY.iter().any(|p| i.name.starts_with(p))
}

/// The interface fabrik recommends for `NCCL_SOCKET_IFNAME`: the default-route interface when
/// it is a running physical (or IPoIB) one, else the first such interface with an IPv4 address.
pub fn recommended(node: &Node) -> Option<&NetInterface> {
    let good = |i: &&NetInterface| {
        matches!(i.kind, NetKind::Ethernet | NetKind::Ipoib) && running(i) && !is_poor_choice(i)
    };
    node.net_interfaces
        .iter()
        .filter(good)
        .find(|i| i.default_route)
        .or_else(|| {
            node.net_interfaces
                .iter()
                .filter(good)
                .find(|i| !i.ipv4.is_empty())
        })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::testkit::*;
    use proptest::prelude::*;

    #[test]
    fn filters_follow_nccl_syntax() {
        let f = NameFilter::parse("^docker,lo");
        assert!(f.exclude && !f.exact);
        assert!(!f.selects("docker0"));
        assert!(!f.selects("lo"));
        assert!(f.selects("eth0"));
        let e = NameFilter::parse("=eth0,eth1");
        assert!(e.exact);
        assert!(e.selects("eth0"));
        assert!(!e.selects("eth00"));
        let p = NameFilter::parse("eth");
        assert!(p.selects("eth12"));
        assert!(!p.selects("ens1"));
        let ne = NameFilter::parse("^=docker0");
        assert!(ne.exclude && ne.exact);
        assert!(ne.selects("docker1"));
        assert!(!ne.selects("docker0"));
    }

    #[test]
    fn ib_interfaces_come_first() {
        let mut n = bare_node();
        n.net_interfaces
            .push(netif("ib0", NetKind::Ipoib, Some("10.1.0.5/16"), "up"));
        let c = default_choice(&n).unwrap();
        assert_eq!(c.tier, Tier::Ib);
        assert_eq!(c.interfaces[0].name, "ib0");
    }

    #[test]
    fn docker_and_lo_are_last_resorts_and_down_links_are_skipped() {
        let mut n = bare_node();
        n.net_interfaces.push(netif(
            "docker0",
            NetKind::Bridge,
            Some("172.17.0.1/16"),
            "up",
        ));
        let c = default_choice(&n).unwrap();
        assert_eq!(c.tier, Tier::General);
        assert_eq!(c.interfaces.len(), 1);
        assert_eq!(c.interfaces[0].name, "eth0");

        n.net_interfaces[0].operstate = Some("down".into());
        let c = default_choice(&n).unwrap();
        assert_eq!(c.tier, Tier::Docker);
        assert_eq!(c.interfaces[0].name, "docker0");
    }

    #[test]
    fn a_bridge_not_named_docker_is_in_the_general_tier() {
        let mut n = bare_node();
        n.net_interfaces
            .push(netif("br0", NetKind::Bridge, Some("10.0.0.12/24"), "up"));
        let c = default_choice(&n).unwrap();
        let names: Vec<&str> = c.interfaces.iter().map(|i| i.name.as_str()).collect();
        assert!(names.contains(&"br0"));
        assert!(c.interfaces.iter().any(|i| is_poor_choice(i)));
    }

    #[test]
    fn without_addresses_in_the_data_every_running_interface_is_a_candidate() {
        let mut n = bare_node();
        for i in &mut n.net_interfaces {
            i.ipv4.clear();
        }
        let c = default_choice(&n).unwrap();
        assert!(c.addresses_unknown);
        assert_eq!(c.interfaces[0].name, "eth0");
    }

    #[test]
    fn bonds_vlans_and_main_bridges_are_not_poor_choices() {
        let bond = netif("bond0", NetKind::Virtual, Some("10.0.0.5/24"), "up");
        assert!(!is_poor_choice(&bond));
        let vlan = netif("eth0.100", NetKind::Virtual, Some("10.1.0.5/24"), "up");
        assert!(!is_poor_choice(&vlan));
        let mut br0 = netif("br0", NetKind::Bridge, Some("10.0.0.5/24"), "up");
        assert!(is_poor_choice(&br0));
        br0.default_route = true;
        assert!(!is_poor_choice(&br0));
        let veth = netif("veth12ab", NetKind::Virtual, None, "up");
        assert!(is_poor_choice(&veth));
    }

    #[test]
    fn recommendation_prefers_the_default_route() {
        let mut n = bare_node();
        n.net_interfaces
            .push(netif("eno2", NetKind::Ethernet, Some("10.9.0.1/24"), "up"));
        assert_eq!(recommended(&n).unwrap().name, "eth0");
    }

    proptest! {
        #[test]
        fn filter_parsing_never_panics(s in ".*") {
            let f = NameFilter::parse(&s);
            let _ = f.selects("eth0");
        }
    }
}
