//! Which local address or interface, and which server address, each stream uses. Multi-NIC
//! hosts (GCP TCPX's four data NICs, rail-optimised clusters) put each NIC on its own subnet, so
//! a stream leaving NIC k must go to the server's address on NIC k's subnet; sending it to the
//! control address would route every stream through one NIC.

use std::net::IpAddr;

use crate::proto::AddrInfo;

/// How the user asked to spread streams.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum PathSpec {
    /// Let the kernel route every stream.
    #[default]
    Default,
    /// Bind each stream to one of these local addresses, round-robin.
    LocalAddrs(Vec<IpAddr>),
    /// Bind each stream to one of these interfaces (SO_BINDTODEVICE), round-robin.
    Ifaces(Vec<String>),
}

/// Where one stream runs: the local address or interface it leaves from, the server address it goes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamPath {
    /// The stream's number.
    pub stream: u32,
    /// The local address it binds, if any.
    pub local: Option<IpAddr>,
    /// The interface bound with SO_BINDTODEVICE (only for `--ifaces`).
    pub bind_device: Option<String>,
    /// The interface the local address belongs to, for the report.
    pub iface: Option<String>,
    /// The server address it connects to.
    pub remote: IpAddr,
}

/// Plans `streams` streams. `local_table` is this host's interface addresses, `server_addrs`
/// what the server advertised, `peer_addrs` an explicit list of server addresses (paired with
/// the local addresses by position).
pub fn plan(
    streams: u32,
    spec: &PathSpec,
    local_table: &[AddrInfo],
    server_addrs: &[AddrInfo],
    control_ip: IpAddr,
    peer_addrs: &[IpAddr],
) -> Result<Vec<StreamPath>, String> {
    // (local address, bind device, interface name) per path, in the user's order.
    let locals: Vec<(Option<IpAddr>, Option<String>, Option<String>)> = match spec {
        PathSpec::Default => vec![(None, None, None)],
        PathSpec::LocalAddrs(addrs) => addrs
            .iter()
            .map(|ip| {
                let iface = local_table
                    .iter()
                    .find(|a| a.ip == *ip)
                    .map(|a| a.iface.clone());
                (Some(*ip), None, iface)
            })
            .collect(),
        PathSpec::Ifaces(names) => names
            .iter()
            .map(|name| {
                let ip = local_table
                    .iter()
                    .filter(|a| &a.iface == name)
                    .map(|a| a.ip)
                    .find(|ip| ip.is_ipv4() == control_ip.is_ipv4());
                if ip.is_none() && !local_table.iter().any(|a| &a.iface == name) {
                    return Err(format!("interface {name} has no address on this host"));
                }
                Ok((ip, Some(name.clone()), Some(name.clone())))
            })
            .collect::<Result<_, _>>()?,
    };
    if locals.is_empty() {
        return Err("no local address or interface given".into());
    }
    Ok((0..streams)
        .map(|s| {
            let k = s as usize % locals.len();
            let (local, bind_device, iface) = locals[k].clone();
            let remote = if !peer_addrs.is_empty() {
                peer_addrs[k % peer_addrs.len()]
            } else {
                local
                    .and_then(|ip| same_subnet(ip, server_addrs, control_ip))
                    .unwrap_or(control_ip)
            };
            StreamPath {
                stream: s,
                local,
                bind_device,
                iface,
                remote,
            }
        })
        .collect())
}

/// The server address whose subnet holds `local`; the control address wins a tie.
fn same_subnet(local: IpAddr, server: &[AddrInfo], control_ip: IpAddr) -> Option<IpAddr> {
    let matching: Vec<IpAddr> = server
        .iter()
        .filter(|a| in_prefix(local, a.ip, a.prefix_len))
        .map(|a| a.ip)
        .collect();
    if matching.contains(&control_ip) {
        return Some(control_ip);
    }
    matching.first().copied()
}

fn in_prefix(a: IpAddr, b: IpAddr, len: u8) -> bool {
    match (a, b) {
        (IpAddr::V4(a), IpAddr::V4(b)) => {
            let len = u32::from(len.min(32));
            let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
            u32::from(a) & mask == u32::from(b) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(b)) => {
            let len = u32::from(len.min(128));
            let mask = if len == 0 {
                0
            } else {
                u128::MAX << (128 - len)
            };
            u128::from(a) & mask == u128::from(b) & mask
        }
        _ => false,
    }
}

/// This host's interface addresses.
pub fn local_addrs() -> std::io::Result<Vec<AddrInfo>> {
    Ok(if_addrs::get_if_addrs()?
        .into_iter()
        .map(|i| {
            let (ip, prefix_len) = match &i.addr {
                if_addrs::IfAddr::V4(v4) => (IpAddr::V4(v4.ip), v4.prefixlen),
                if_addrs::IfAddr::V6(v6) => (IpAddr::V6(v6.ip), v6.prefixlen),
            };
            AddrInfo {
                ip,
                prefix_len,
                iface: i.name,
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(ip: &str, len: u8, iface: &str) -> AddrInfo {
        AddrInfo {
            ip: ip.parse().unwrap_or(IpAddr::from([0, 0, 0, 0])),
            prefix_len: len,
            iface: iface.into(),
        }
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap_or(IpAddr::from([0, 0, 0, 0]))
    }

    #[test]
    fn each_nic_talks_to_the_server_on_its_own_subnet() {
        let local = [a("10.0.0.1", 24, "eth0"), a("10.0.1.1", 24, "eth1")];
        let server = [a("10.0.0.2", 24, "eth0"), a("10.0.1.2", 24, "eth1")];
        let spec = PathSpec::LocalAddrs(vec![ip("10.0.0.1"), ip("10.0.1.1")]);
        let p = plan(4, &spec, &local, &server, ip("10.0.0.2"), &[]).unwrap_or_default();
        let pairs: Vec<_> = p
            .iter()
            .map(|s| (s.local, s.remote, s.iface.as_deref()))
            .collect();
        assert_eq!(
            pairs,
            vec![
                (Some(ip("10.0.0.1")), ip("10.0.0.2"), Some("eth0")),
                (Some(ip("10.0.1.1")), ip("10.0.1.2"), Some("eth1")),
                (Some(ip("10.0.0.1")), ip("10.0.0.2"), Some("eth0")),
                (Some(ip("10.0.1.1")), ip("10.0.1.2"), Some("eth1")),
            ]
        );
    }

    #[test]
    fn interfaces_bind_the_device_and_use_its_address() {
        let local = [a("10.0.3.1", 24, "eth3")];
        let server = [a("10.0.3.2", 24, "eth3")];
        let spec = PathSpec::Ifaces(vec!["eth3".into()]);
        let p = plan(1, &spec, &local, &server, ip("192.168.1.1"), &[]).unwrap_or_default();
        assert_eq!(p[0].bind_device.as_deref(), Some("eth3"));
        assert_eq!(p[0].remote, ip("10.0.3.2"));
        let bad = PathSpec::Ifaces(vec!["nope0".into()]);
        assert!(plan(1, &bad, &local, &server, ip("10.0.3.2"), &[]).is_err());
    }

    #[test]
    fn loopback_aliases_reach_the_control_address_and_explicit_peers_win() {
        let local = [a("127.0.0.1", 8, "lo")];
        let spec = PathSpec::LocalAddrs(vec![ip("127.0.0.2"), ip("127.0.0.3")]);
        let p = plan(2, &spec, &local, &local, ip("127.0.0.1"), &[]).unwrap_or_default();
        assert!(p.iter().all(|s| s.remote == ip("127.0.0.1")));
        let peers = [ip("127.0.0.5"), ip("127.0.0.6")];
        let p = plan(2, &spec, &local, &local, ip("127.0.0.1"), &peers).unwrap_or_default();
        assert_eq!(p[1].remote, ip("127.0.0.6"));
        let d =
            plan(3, &PathSpec::Default, &local, &local, ip("127.0.0.1"), &[]).unwrap_or_default();
        assert_eq!(d.len(), 3);
        assert!(d
            .iter()
            .all(|s| s.local.is_none() && s.remote == ip("127.0.0.1")));
    }
}
