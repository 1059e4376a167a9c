//! The interface NCCL's socket bootstrap (and socket transport) would use by default.

use fabrik_model::{Finding, NetKind, Node, Severity};

use crate::env::PlannedEnv;
use crate::socket::{self, Tier};
use crate::util::*;

/// Rule id of "The interface NCCL's sockets would use".
pub const SOCKET_INTERFACE: &str = "FAB-SOCK-001";
/// Rule id of "NCCL's default socket interface would be wrong".
pub const SOCKET_BAD_DEFAULT: &str = "FAB-SOCK-002";

fn describe(i: &fabrik_model::NetInterface) -> String {
    let addr = i
        .ipv4
        .first()
        .or_else(|| i.ipv6.first())
        .map(|a| format!(" {a}"))
        .unwrap_or_default();
    let kind = match i.kind {
        NetKind::Bridge => " (bridge)",
        NetKind::Virtual => " (virtual)",
        NetKind::Loopback => " (loopback)",
        _ => "",
    };
    format!("{}{addr}{kind}", i.name)
}

fn fix_for(node: &Node) -> String {
    match socket::recommended(node) {
        Some(i) => format!("Set NCCL_SOCKET_IFNAME={} (the exact name, `=` prefix) on every rank, or NCCL_SOCKET_IFNAME=^docker,lo,virbr,veth,br to exclude virtual interfaces; use the interface whose network reaches the other nodes (MASTER_ADDR's network).", format_args!("={}", i.name)),
        None => "Bring up an interface with an address on the network that reaches the other nodes and set NCCL_SOCKET_IFNAME=<that interface>.".to_string(),
    }
}

/// Reported when sockets would carry NCCL's data (no healthy verbs port): which interfaces.
pub fn socket_interface(node: &Node, env: Option<&PlannedEnv>) -> Vec<Finding> {
    if has_healthy_verbs_port(node) || env.is_some_and(|e| e.socket_ifname().is_some()) {
        return vec![];
    }
    let Some(choice) = socket::default_choice(node) else {
        return vec![];
    };
    let names: Vec<String> = choice.interfaces.iter().map(|i| describe(i)).collect();
    let caveat = if choice.addresses_unknown {
        " (the data holds no IP addresses, so fabrik assumed every running interface has one)"
    } else {
        ""
    };
    vec![finding(
        SOCKET_INTERFACE,
        Severity::Info,
        "node",
        format!(
            "NCCL_SOCKET_IFNAME unset: NCCL's bootstrap would use {} and its socket transport {}, chosen among {}{caveat}",
            choice.interfaces[0].name,
            names.join(", "),
            choice.tier.describe()
        ),
        choice
            .interfaces
            .iter()
            .map(|i| ev(net_path(&i.name, "operstate"), i.operstate.clone().unwrap_or_default()))
            .collect(),
        fix_for(node),
    )]
}

/// NCCL's default would take a bridge, a virtual device, loopback, or nothing at all.
pub fn socket_bad_default(node: &Node, env: Option<&PlannedEnv>) -> Vec<Finding> {
    if env.is_some_and(|e| e.socket_ifname().is_some()) {
        return vec![];
    }
    let Some(choice) = socket::default_choice(node) else {
        return vec![finding(
            SOCKET_BAD_DEFAULT,
            Severity::Error,
            "node",
            "no running interface with an IP address: NCCL's bootstrap has no interface to use and will fail (`Bootstrap : no socket interface found`)",
            interfaces(node)
                .iter()
                .map(|i| ev(net_path(&i.name, "operstate"), i.operstate.clone().unwrap_or_default()))
                .collect(),
            fix_for(node),
        )];
    };
    let poor: Vec<_> = choice
        .interfaces
        .iter()
        .filter(|i| socket::is_poor_choice(i))
        .collect();
    if poor.is_empty() {
        return vec![];
    }
    let first_poor = socket::is_poor_choice(choice.interfaces[0]);
    let (severity, what) = match choice.tier {
        Tier::Loopback => (
            Severity::Error,
            "only the loopback interface is usable, which cannot reach other nodes".to_string(),
        ),
        Tier::Docker | Tier::Virbr => (
            Severity::Error,
            format!(
                "only {} is usable: a local bridge that other nodes cannot reach",
                choice.interfaces[0].name
            ),
        ),
        _ if first_poor => (
            Severity::Warning,
            format!(
                "the bootstrap would use {} first",
                describe(choice.interfaces[0])
            ),
        ),
        _ => (
            Severity::Warning,
            format!(
                "the socket transport would also use {}",
                poor.iter()
                    .map(|i| describe(i))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
    };
    vec![finding(
        SOCKET_BAD_DEFAULT,
        severity,
        "node",
        format!("NCCL_SOCKET_IFNAME unset and NCCL's default interface choice is poor: {what}. A bridge or virtual interface leads to hangs at init or connections to unreachable addresses"),
        poor.iter().map(|i| ev(net_path(&i.name, "operstate"), format!("{} ({:?})", i.operstate.clone().unwrap_or_default(), i.kind).to_lowercase())).collect(),
        fix_for(node),
    )]
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::testkit::*;

    #[test]
    fn bare_node_says_which_interface() {
        let f = socket_interface(&bare_node(), None);
        assert_eq!(f.len(), 1);
        assert!(f[0].message.contains("bootstrap would use eth0"));
        assert!(socket_bad_default(&bare_node(), None).is_empty());
        assert!(socket_interface(&healthy_ib_node("a"), None).is_empty());
    }

    #[test]
    fn a_bridge_in_the_chosen_tier_warns_and_lo_only_errors() {
        let mut n = bare_node();
        n.net_interfaces
            .push(netif("br0", NetKind::Bridge, Some("10.0.0.12/24"), "up"));
        let f = socket_bad_default(&n, None);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0].message.contains("br0"));
        assert!(f[0].fix.contains("NCCL_SOCKET_IFNAME==eth0"));
        let set = PlannedEnv::parse("t", "NCCL_SOCKET_IFNAME==eth0\n");
        assert!(socket_bad_default(&n, Some(&set)).is_empty());

        let mut lo_only = bare_node();
        lo_only.net_interfaces[0].operstate = Some("down".into());
        let f = socket_bad_default(&lo_only, None);
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0].message.contains("loopback"));
    }

    #[test]
    fn docker0_when_the_real_nic_is_down_errors() {
        let mut n = bare_node();
        n.net_interfaces[0].operstate = Some("down".into());
        n.net_interfaces.push(netif(
            "docker0",
            NetKind::Bridge,
            Some("172.17.0.1/16"),
            "up",
        ));
        let f = socket_bad_default(&n, None);
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0].message.contains("docker0"));
    }
}
