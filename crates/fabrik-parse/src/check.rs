//! Checks on parsed benchmark results: wrong results, and the link rate bandwidth is judged
//! against (read from an inventory [`Node`]). Whether the bandwidth is good enough is the
//! bandwidth judge's (`fabrik_doctor::passline`), one rule for every command.

use fabrik_model::{CollectiveReport, Evidence, Finding, Node, PortState, Severity};

use crate::nccl_tests::NcclTestsRun;

/// The link rate a node's benchmarks are measured against, in Gb/s: the slowest active RDMA
/// port (a collective runs at the pace of its slowest rail), else the slowest RDMA port of
/// unknown state, else the speed of the default-route interface (sockets/TCPX nodes).
pub fn link_gbps_from_node(node: &Node) -> Option<f64> {
    fn min(it: impl Iterator<Item = f64>) -> Option<f64> {
        it.filter(|v| *v > 0.0)
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.min(v))))
    }
    let ports = || node.rdma_devices.iter().flat_map(|d| d.ports.iter());
    let rate = |p: &fabrik_model::Port| p.rate.as_ref().and_then(|r| r.gbps);
    let active = min(ports()
        .filter(|p| {
            p.state
                .as_ref()
                .is_some_and(|s| s.port_state() == PortState::Active)
        })
        .filter_map(rate));
    // A port known to be down says nothing about the rate traffic ran at.
    let unknown = || min(ports().filter(|p| p.state.is_none()).filter_map(rate));
    let default_route = || {
        min(node
            .net_interfaces
            .iter()
            .filter(|i| i.default_route)
            .filter_map(|i| i.speed_mbps)
            .map(|m| m as f64 / 1000.0))
    };
    active.or_else(unknown).or_else(default_route)
}

/// The rate of the RDMA port a benchmark ran on (`device:port` as the report names it, or a
/// bare device for its first port), in Gb/s, from an inventory [`Node`]. Only a PCI function's
/// rate is a line rate: a software device (rxe, siw) copies a nominal rate from its netdev,
/// whatever the link under it carries, so it gives none.
pub fn port_gbps(node: &Node, device: &str) -> Option<f64> {
    let (name, port) = match device.rsplit_once(':') {
        Some((n, p)) => (n, p.parse::<u32>().ok()?),
        None => (device, 1),
    };
    let dev = node.rdma_device(name).filter(|d| d.pci.is_some())?;
    dev.ports
        .iter()
        .find(|p| p.number == port)?
        .rate
        .as_ref()?
        .gbps
        .filter(|g| g.is_finite() && *g > 0.0)
}

/// The slowest speed among the named interfaces, in Gb/s: the per-NIC line of a run striped
/// over them. Only a PCI function's speed is a line rate: software devices print a nominal one
/// (veth says 10000 whatever tc shapes it to), and an unknown speed (-1) gives no line either,
/// so one such interface, or none named, gives `None`.
pub fn slowest_nic_gbps(node: &Node, nics: &[&String]) -> Option<f64> {
    nics.iter()
        .map(|n| {
            node.net_interface(n)
                .filter(|i| i.pci.is_some())
                .and_then(|i| i.speed_mbps)
                .map(|m| m as f64 / 1000.0)
        })
        .collect::<Option<Vec<f64>>>()
        .and_then(|v| v.into_iter().reduce(f64::min))
}

/// The speed of the NIC that holds `ip` (a rank's data address), in Gb/s; a PCI function's
/// only, for the reason [`port_gbps`] gives.
pub fn address_gbps(node: &Node, ip: std::net::IpAddr) -> Option<f64> {
    let holds = |cidr: &String| {
        cidr.split('/')
            .next()
            .and_then(|a| a.parse::<std::net::IpAddr>().ok())
            == Some(ip)
    };
    node.net_interfaces
        .iter()
        .filter(|i| i.pci.is_some())
        .find(|i| i.ipv4.iter().chain(&i.ipv6).any(holds))?
        .speed_mbps
        .filter(|m| *m > 0)
        .map(|m| m as f64 / 1000.0)
}

fn subject(r: &CollectiveReport) -> String {
    format!("nccl-tests {}", r.op)
}

/// Findings for an nccl-tests run: wrong results and out-of-bounds values.
pub fn check_collective(run: &NcclTestsRun) -> Vec<Finding> {
    let r = &run.report;
    let mut out = Vec::new();
    let wrong: Vec<Evidence> = r
        .rows
        .iter()
        .flat_map(|row| {
            [
                ("out-of-place", &row.out_of_place),
                ("in-place", &row.in_place),
            ]
            .into_iter()
            .filter_map(move |(place, t)| {
                let w = t.as_ref()?.wrong?;
                (w > 0).then(|| {
                    Evidence::new(format!("size {} {place}", row.size), format!("#wrong {w}"))
                })
            })
        })
        .collect();
    if !wrong.is_empty() {
        out.push(Finding {
            rule: "FAB-BENCH-WRONG".into(),
            severity: Severity::Error,
            subject: subject(r),
            message: format!("{} result(s) with #wrong above zero: the collective produced corrupt data", wrong.len()),
            evidence: wrong,
            fix: "Treat the fabric as broken until fixed: check GPU and NIC errors (Xid in dmesg, NIC counters), disable GDR (NCCL_NET_GDR_LEVEL=LOC) to isolate, rerun with -c 1".into(),
        });
    }
    if let Some(n) = run.out_of_bounds.filter(|n| *n > 0) {
        out.push(Finding {
            rule: "FAB-BENCH-WRONG".into(),
            severity: Severity::Error,
            subject: subject(r),
            message: format!("nccl-tests reported {n} out-of-bounds values"),
            evidence: vec![Evidence::new("Out of bounds values", n.to_string())],
            fix: "Rerun with -c 1 to find the failing size; check GPU memory errors and GDR".into(),
        });
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod port_rate_tests {
    use super::*;
    use fabrik_model::{LinkRate, PciFunction, Port, RdmaDevice};

    fn node(pci: bool) -> Node {
        let port = |number, gbps| Port {
            number,
            rate: Some(LinkRate {
                text: format!("{gbps} Gb/sec (4X NDR)"),
                gbps: Some(gbps),
                width: Some(4),
                speed: Some("NDR".into()),
            }),
            ..Default::default()
        };
        Node {
            rdma_devices: vec![RdmaDevice {
                name: "mlx5_0".into(),
                pci: pci.then(PciFunction::default),
                ports: vec![port(1, 400.0), port(2, 200.0)],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn the_port_in_use_gives_the_rate() {
        assert_eq!(port_gbps(&node(true), "mlx5_0:2"), Some(200.0));
        assert_eq!(port_gbps(&node(true), "mlx5_0:1"), Some(400.0));
        assert_eq!(port_gbps(&node(true), "mlx5_0"), Some(400.0));
        assert_eq!(port_gbps(&node(true), "mlx5_0:3"), None);
        assert_eq!(port_gbps(&node(true), "mlx5_1:1"), None);
        assert_eq!(port_gbps(&node(true), "mlx5_0:x"), None);
    }

    #[test]
    fn a_software_device_has_no_line_rate() {
        assert_eq!(port_gbps(&node(false), "mlx5_0:1"), None);
    }

    #[test]
    fn the_nic_holding_the_address_gives_the_rate() {
        use fabrik_model::{NetInterface, NetKind};
        let nic = |name: &str, ip: &str, pci: bool, mbps| NetInterface {
            name: name.into(),
            kind: NetKind::Ethernet,
            mtu: None,
            operstate: None,
            speed_mbps: Some(mbps),
            mac: None,
            ipv4: vec![format!("{ip}/24")],
            ipv6: Vec::new(),
            driver: None,
            pci: pci.then(PciFunction::default),
            rdma_device: None,
            default_route: false,
            ecn: None,
            pfc: None,
            statistics: Default::default(),
            ..Default::default()
        };
        let n = Node {
            net_interfaces: vec![
                nic("eth0", "10.0.0.5", true, 100_000),
                nic("eth1", "10.0.1.5", true, 200_000),
                nic("veth0", "10.0.2.5", false, 10_000),
            ],
            ..Default::default()
        };
        let ip = |s: &str| s.parse().unwrap();
        assert_eq!(address_gbps(&n, ip("10.0.1.5")), Some(200.0));
        assert_eq!(address_gbps(&n, ip("10.0.0.5")), Some(100.0));
        assert_eq!(address_gbps(&n, ip("10.0.2.5")), None);
        assert_eq!(address_gbps(&n, ip("10.0.3.5")), None);
    }
}
