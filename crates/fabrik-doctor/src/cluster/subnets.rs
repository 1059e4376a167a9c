//! The RoCE subnets of the nodes: which networks each node's rails are on, and whether a peer's
//! rail is reachable from them.

use super::*;

/// The networks of a node's active RoCE netdevs: (network, prefix length, netdev carries the
/// default route).
pub(super) fn roce_networks(n: &Node) -> Vec<(std::net::Ipv4Addr, u32, bool)> {
    all_ports(n)
        .filter(|(d, p)| !d.is_software() && is_roce(p) && is_active(p))
        .filter_map(|(_, p)| p.netdev.as_deref().and_then(|nd| n.net_interface(nd)))
        .flat_map(|i| {
            i.ipv4
                .iter()
                .filter_map(|a| parse_cidr(a))
                .map(|(net, len)| (net, len, i.default_route))
                .collect::<Vec<_>>()
        })
        .collect()
}

pub(super) fn parse_cidr(cidr: &str) -> Option<(std::net::Ipv4Addr, u32)> {
    let (addr, len) = cidr.split_once('/')?;
    let len: u32 = len.parse().ok()?;
    let ip: std::net::Ipv4Addr = addr.parse().ok()?;
    let mask = mask(len)?;
    Some((std::net::Ipv4Addr::from(u32::from(ip) & mask), len))
}

pub(super) fn mask(len: u32) -> Option<u32> {
    match len {
        0 => Some(0),
        1..=32 => Some(u32::MAX << (32 - len)),
        _ => None,
    }
}

/// Two networks reach each other on-link when one contains the other.
pub(super) fn overlaps(a: (std::net::Ipv4Addr, u32), b: (std::net::Ipv4Addr, u32)) -> bool {
    let m = mask(a.1.min(b.1)).unwrap_or(0);
    u32::from(a.0) & m == u32::from(b.0) & m
}

/// A subnet drift is an error when, on the evidence, the odd node's rails cannot reach a peer:
/// one of its RoCE networks (or one of a peer's) has no on-link counterpart on the other side,
/// its rail interfaces carry no default route (so nothing routes them off-link), and the
/// addressing is not point-to-point (/31, /32: an L3 fabric, routed by design, where every
/// node's subnets differ). NCCL then waits on a connection that never completes: a hang, not a
/// slow job. /proc/net/route's main table is all fabrik reads; routes in other tables (policy
/// routing) are not seen, which the L3 exemption above is for.
pub(super) fn unroutable(mut f: Finding, nodes: &[NamedNode]) -> Finding {
    let Some(me) = nodes.iter().find(|n| n.name == f.subject) else {
        return f;
    };
    let mine = roce_networks(&me.node);
    let routed = mine.iter().any(|(_, _, dr)| *dr);
    let point_to_point = mine.iter().any(|(_, len, _)| *len >= 31);
    if routed || point_to_point || mine.is_empty() {
        return f;
    }
    let cut_off: Vec<String> = nodes
        .iter()
        .filter(|n| n.name != me.name)
        .filter_map(|peer| {
            let theirs = roce_networks(&peer.node);
            if theirs.is_empty() || theirs.iter().any(|(_, _, dr)| *dr) {
                return None;
            }
            let missing: Vec<String> = mine
                .iter()
                .filter(|(a, al, _)| {
                    !theirs
                        .iter()
                        .any(|(b, bl, _)| overlaps((*a, *al), (*b, *bl)))
                })
                .chain(theirs.iter().filter(|(b, bl, _)| {
                    !mine.iter().any(|(a, al, _)| overlaps((*a, *al), (*b, *bl)))
                }))
                .map(|(n, l, _)| format!("{n}/{l}"))
                .collect();
            (!missing.is_empty())
                .then(|| format!("{} (no counterpart for {})", peer.name, missing.join(", ")))
        })
        .collect();
    if cut_off.is_empty() {
        return f;
    }
    f.severity = Severity::Error;
    f.message = format!(
        "{}; no default route leaves through its RoCE interfaces, so its rails cannot reach {}: NCCL hangs connecting them",
        f.message,
        cut_off.join(", ")
    );
    f.evidence.push(ev(
        format!("{}:/proc/net/route", me.name),
        "no default route through the RoCE interfaces",
    ));
    f
}

/// `192.168.10.7/24` → `192.168.10.0/24`.
pub fn ipv4_network(cidr: &str) -> Option<String> {
    let (net, len) = ipv4_net(cidr)?;
    Some(format!("{}/{len}", std::net::Ipv4Addr::from(net)))
}

/// `192.168.10.7/24` → (the network's address as a number, 24).
pub(super) fn ipv4_net(cidr: &str) -> Option<(u32, u32)> {
    let (addr, len) = cidr.split_once('/')?;
    let len: u32 = len.parse().ok()?;
    if len > 32 {
        return None;
    }
    let ip: std::net::Ipv4Addr = addr.parse().ok()?;
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    Some((u32::from(ip) & mask, len))
}
