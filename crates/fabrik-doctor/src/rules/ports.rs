//! Port health: logical and physical state, rate and width, values fabrik does not know.

use std::collections::BTreeMap;

use fabrik_model::{Finding, GidType, LinkLayer, Node, PhysState, PortState, Severity};

use crate::util::*;

/// Rule id of "RDMA port not ACTIVE".
pub const PORT_STATE: &str = "FAB-PORT-001";
/// Rule id of "Physical link not LinkUp".
pub const PHYS_STATE: &str = "FAB-PORT-002";
/// Rule id of "InfiniBand port below its capable width or speed".
pub const BELOW_CAPABLE: &str = "FAB-PORT-003";
/// Rule id of "Active ports of one node at different rates".
pub const MIXED_RATES: &str = "FAB-PORT-004";
/// Rule id of "Software RDMA device: its rate and width cannot be judged".
pub const SOFTWARE_RATE: &str = "FAB-PORT-006";
/// Rule id of "A value fabrik cannot judge".
pub const UNKNOWN_VALUE: &str = "FAB-DATA-001";
/// Rule id of "Files fabrik could not read".
pub const UNREADABLE: &str = "FAB-DATA-002";

/// Files probing could not read or understand: the facts they hold are unknown, and rules that
/// need them stay silent rather than guess.
pub fn unreadable(node: &Node) -> Vec<Finding> {
    if node.warnings.is_empty() {
        return vec![];
    }
    let mut warnings: Vec<_> = node.warnings.iter().collect();
    warnings.sort_by(|a, b| a.path.cmp(&b.path).then_with(|| a.message.cmp(&b.message)));
    vec![finding(
        UNREADABLE,
        Severity::Info,
        "node",
        format!(
            "{} could not be read or understood; the facts in them are unknown to the rules",
            plural(warnings.len(), "file", "files")
        ),
        warnings.iter().map(|w| ev(w.path.clone(), w.message.clone())).collect(),
        "Run fabrik as root for a complete view, or take the snapshot on the node itself (`fabrik snapshot`); a malformed value is worth reporting to fabrik.",
    )]
}

/// A port without link is an error when it leaves the node with no active hardware port, or
/// when it is a rail of a multi-rail GPU node ([`is_rail_down`]); a warning otherwise: NCCL
/// skips it, and the unused second port of a dual-port card is common.
fn no_link_severity(
    node: &Node,
    dev: &fabrik_model::RdmaDevice,
    port: &fabrik_model::Port,
) -> Severity {
    let others_active = all_ports(node).any(|(d, p)| {
        !d.is_software() && is_active(p) && !(d.name == dev.name && p.number == port.number)
    });
    if !others_active || is_rail_down(node, dev) {
        Severity::Error
    } else {
        Severity::Warning
    }
}

/// The PCI slot (`0000:17:00`) of a function (`0000:17:00.1`): the ports of one card.
fn slot(address: &str) -> &str {
    address.rsplit_once('.').map_or(address, |(s, _)| s)
}

/// Whether `dev` is a rail that is down on a multi-rail GPU node: no port of its card (its own
/// or a sibling function's) is ACTIVE, while a card of the same driver family elsewhere on the
/// node is. On a GPU node each such card is a rail NCCL stripes over; a dual-port card with
/// one port cabled has its other function ACTIVE and is not a rail down.
pub(crate) fn is_rail_down(node: &Node, dev: &fabrik_model::RdmaDevice) -> bool {
    if node.gpus.is_empty() || dev.is_software() {
        return false;
    }
    let Some(card) = dev.pci.as_ref().map(|p| slot(&p.address)) else {
        return false;
    };
    let family = device_family(dev);
    let mut card_active = false;
    let mut other_card_active = false;
    for (d, p) in all_ports(node) {
        let Some(pci) = &d.pci else { continue };
        if d.is_software() || device_family(d) != family || !is_active(p) {
            continue;
        }
        if slot(&pci.address) == card {
            card_active = true;
        } else {
            other_card_active = true;
        }
    }
    !card_active && other_card_active
}

/// Rule [`PORT_STATE`]: "RDMA port not ACTIVE".
pub fn port_state(node: &Node) -> Vec<Finding> {
    let mut out = vec![];
    for (dev, port) in all_ports(node) {
        let Some(state) = &port.state else { continue };
        let path = port_path(dev, port, "state");
        let raw = format!(
            "{}{}",
            state.code.map(|c| format!("{c}: ")).unwrap_or_default(),
            state.name
        );
        let (severity, message, fix) = match state.port_state() {
            PortState::Active | PortState::ActiveDefer | PortState::Unknown => continue,
            PortState::Init if is_ib(port) => (
                Severity::Error,
                "port is INIT: the link is up but no subnet manager has configured it (no LID), so no traffic can flow".to_string(),
                "Start a subnet manager on the fabric (`systemctl start opensm` on one host, or enable the SM on a managed switch); check `sminfo` and `ibstat` (SM lid).".to_string(),
            ),
            PortState::Armed => (
                Severity::Error,
                "port is ARMED: the subnet manager has not finished bringing it to ACTIVE".to_string(),
                "Check the subnet manager log (`/var/log/opensm.log`) and `ibstat`; a port stuck in ARMED usually clears after an SM sweep (`opensm` restart or `ibportstate` reset).".to_string(),
            ),
            PortState::Down => (
                no_link_severity(node, dev, port),
                "port is DOWN: no link".to_string(),
                format!("Check the cable and the switch port (`ibstat {} {}`, `mlxlink -d {} -p {}`); reseat or replace the cable.", dev.name, port.number, dev.name, port.number),
            ),
            other => (
                Severity::Error,
                format!("port is {other:?}, not ACTIVE"),
                "Check the link with `ibstat` and the switch side.".to_string(),
            ),
        };
        out.push(finding(
            PORT_STATE,
            severity,
            port_subject(dev, port),
            message,
            vec![ev(path, raw)],
            fix,
        ));
    }
    out
}

/// Rule [`PORT_STATE`] for a port whose own state is unknown but whose netdev is down (what
/// `ibdev2netdev` shows without `-v`): on RoCE the port is unusable, on InfiniBand only IPoIB
/// is down. A port whose state was read is judged by [`port_state`] alone.
pub fn netdev_down(node: &Node) -> Vec<Finding> {
    let mut out = vec![];
    for (dev, port) in all_ports(node) {
        if port.state.is_some() {
            continue;
        }
        let Some(netdev) = &port.netdev else { continue };
        let Some(nif) = node.net_interface(netdev) else {
            continue;
        };
        if nif.operstate.as_deref() != Some("down") {
            continue;
        }
        out.push(finding(
            PORT_STATE,
            Severity::Warning,
            port_subject(dev, port),
            format!("netdev {netdev} is down and the port's own state is unknown: on RoCE the RDMA port is unusable; on InfiniBand only IPoIB is down"),
            vec![ev(net_path(netdev, "operstate"), "down")],
            format!("For RoCE bring the interface up (`ip link set {netdev} up`, check the cable); for InfiniBand check the port itself with `ibstat {} {}`.", dev.name, port.number),
        ));
    }
    out
}

/// Rule [`PHYS_STATE`]: "Physical link not LinkUp".
pub fn phys_state(node: &Node) -> Vec<Finding> {
    let mut out = vec![];
    for (dev, port) in all_ports(node) {
        let Some(state) = &port.phys_state else {
            continue;
        };
        let path = port_path(dev, port, "phys_state");
        let raw = format!(
            "{}{}",
            state.code.map(|c| format!("{c}: ")).unwrap_or_default(),
            state.name
        );
        let (severity, message, fix) = match state.phys_state() {
            PhysState::LinkUp | PhysState::Unknown => continue,
            PhysState::Polling => (
                no_link_severity(node, dev, port),
                "physical link is Polling: the port sees no partner (cable unplugged or bad, or the peer port is down)".to_string(),
                "Check the cable (`mlxlink` shows the module and the error counters) and that the switch or peer port is enabled.".to_string(),
            ),
            PhysState::Disabled => (
                no_link_severity(node, dev, port),
                "physical link is Disabled: the port was administratively disabled".to_string(),
                format!("Enable it (`ibportstate -D 0 {} enable` for IB, `ip link set <netdev> up` for RoCE) and check why it was disabled.", port.number),
            ),
            PhysState::LinkErrorRecovery => (
                Severity::Error,
                "physical link is in LinkErrorRecovery: the link is retraining after errors".to_string(),
                "Check the error counters and the cable; a link that keeps recovering needs a new cable or transceiver.".to_string(),
            ),
            other => (
                no_link_severity(node, dev, port),
                format!("physical link is {other:?}, not LinkUp"),
                "Check the cable and the peer port.".to_string(),
            ),
        };
        out.push(finding(
            PHYS_STATE,
            severity,
            port_subject(dev, port),
            message,
            vec![ev(path, raw)],
            fix,
        ));
    }
    out
}

/// Width and lane speed are compared with the other active ports of the same HCA model on the
/// node (what the same hardware reached elsewhere); a 1X InfiniBand link is reported on its own
/// because HCA ports are built as 4X (2X only on split cables) and 1X means lanes failed.
pub fn below_capable(node: &Node) -> Vec<Finding> {
    let mut best: BTreeMap<String, (u32, u8)> = BTreeMap::new();
    for (dev, port) in all_ports(node) {
        if !is_active(port) || !is_ib(port) || dev.is_iwarp() {
            continue;
        }
        let Some(rate) = &port.rate else { continue };
        let entry = best.entry(model_key(dev)).or_insert((0, 0));
        if let Some(w) = rate.width {
            entry.0 = entry.0.max(w);
        }
        if let Some(r) = rate.speed.as_deref().and_then(lane_speed_rank) {
            entry.1 = entry.1.max(r);
        }
    }
    let mut out = vec![];
    for (dev, port) in all_ports(node) {
        if !is_active(port) || !is_ib(port) || dev.is_iwarp() {
            continue;
        }
        let Some(rate) = &port.rate else { continue };
        let Some(&(best_w, best_s)) = best.get(&model_key(dev)) else {
            continue;
        };
        let mut problems = vec![];
        if let Some(w) = rate.width {
            if w < best_w {
                problems.push(format!(
                    "runs {w}X where another {} port on this node runs {best_w}X",
                    model_key(dev)
                ));
            } else if w == 1 {
                problems.push(
                    "runs 1X: InfiniBand HCA ports are 4X links, so 1X means lanes failed to train"
                        .to_string(),
                );
            }
        }
        if let Some(s) = rate.speed.as_deref() {
            if let Some(r) = lane_speed_rank(s) {
                if r < best_s {
                    problems.push(format!(
                        "lane speed {s} is slower than other {} ports on this node",
                        model_key(dev)
                    ));
                }
            }
        }
        if problems.is_empty() {
            continue;
        }
        out.push(finding(
            BELOW_CAPABLE,
            Severity::Warning,
            port_subject(dev, port),
            format!("link rate `{}` {}", rate.text, problems.join("; ")),
            vec![
                ev(port_path(dev, port, "rate"), rate.text.clone()),
                ev(dev_path(dev, "hca_type"), dev.hca_type.clone().unwrap_or_default()),
                ev(dev_path(dev, "board_id"), dev.board_id.clone().unwrap_or_default()),
            ],
            format!("Reseat or replace the cable/transceiver of {}:{} and check the switch port (`mlxlink -d {} -p {}` shows the lanes and errors); the port should train at the full width and speed.", dev.name, port.number, dev.name, port.number),
        ));
    }
    out
}

/// The driver family and chip (`mlx5 MT4129`) whose ports should run at one rate.
fn chip_group(dev: &fabrik_model::RdmaDevice) -> String {
    match dev
        .hca_type
        .as_deref()
        .or_else(|| dev.pci.as_ref().and_then(|p| p.device.as_deref()))
    {
        Some(chip) => format!("{} {chip}", device_family(dev)),
        None => device_family(dev),
    }
}

/// (subject, rate path, Gb/s, rate text) of one active port.
type RatedPort = (String, String, f64, String);

/// Rule [`MIXED_RATES`]: "Active ports of one node at different rates".
pub fn mixed_rates(node: &Node) -> Vec<Finding> {
    // Compared within one driver family and chip: a node's 10 GbE iWARP NIC, 100G Omni-Path HFI
    // or 25 GbE ConnectX-4 Lx management port next to its ConnectX-7 rails is another network,
    // not a slow rail.
    let mut by_layer: BTreeMap<(&'static str, String), Vec<RatedPort>> = BTreeMap::new();
    for (dev, port) in all_ports(node) {
        if !is_active(port) || dev.is_software() || dev.is_iwarp() {
            continue;
        }
        let layer = match port.link_layer {
            Some(LinkLayer::Infiniband) => "InfiniBand",
            Some(LinkLayer::Ethernet) => "Ethernet",
            _ => continue,
        };
        if let Some(rate) = &port.rate {
            if let Some(g) = rate.gbps {
                by_layer.entry((layer, chip_group(dev))).or_default().push((
                    port_subject(dev, port),
                    port_path(dev, port, "rate"),
                    g,
                    rate.text.clone(),
                ));
            }
        }
    }
    let mut out = vec![];
    for ((layer, _), ports) in by_layer {
        let max = ports.iter().map(|p| p.2).fold(f64::MIN, f64::max);
        let min = ports.iter().map(|p| p.2).fold(f64::MAX, f64::min);
        if ports.len() < 2 || (max - min).abs() < f64::EPSILON {
            continue;
        }
        let slow: Vec<&RatedPort> = ports
            .iter()
            .filter(|p| (p.2 - max).abs() > f64::EPSILON)
            .collect();
        out.push(finding(
            MIXED_RATES,
            Severity::Warning,
            "node",
            format!(
                "active {layer} ports run at different rates ({min} to {max} Gb/s); NCCL rings and trees run at the pace of the slowest rail: {}",
                slow.iter().map(|p| format!("{} at {} Gb/s", p.0, p.2)).collect::<Vec<_>>().join(", ")
            ),
            ports.iter().map(|p| ev(p.1.clone(), p.3.clone())).collect(),
            "Bring the slow ports to the rate of the others (cable, transceiver, switch port speed), or exclude them with NCCL_IB_HCA until fixed.",
        ));
    }
    out
}

/// Rule [`SOFTWARE_RATE`]: a Soft-RoCE (`rxe`) or Soft-iWARP (`siw`) port reports a rate the
/// driver makes up (rxe asks its netdev's ethtool speed, which a veth or virtio NIC invents;
/// siw reports a constant), so neither its rate nor its width says anything about the link.
/// Said once per active port, so that a rate check that stays silent is not read as a pass.
pub fn software_rate(node: &Node) -> Vec<Finding> {
    let mut out = vec![];
    for (dev, port) in all_ports(node) {
        if !dev.is_software() || !is_active(port) {
            continue;
        }
        let rate = port.rate.as_ref().map_or("unknown", |r| r.text.as_str());
        let over = port
            .netdev
            .as_deref()
            .map(|n| format!(" over {n}"))
            .unwrap_or_default();
        out.push(finding(
            SOFTWARE_RATE,
            Severity::Info,
            port_subject(dev, port),
            format!(
                "{} is a software RDMA device{over}: its rate `{rate}` is what the driver reports for the netdev beneath it, not a trained link, so fabrik cannot judge its rate or width (rate expectations and the rate rules skip it)",
                dev.name
            ),
            vec![ev(port_path(dev, port, "rate"), rate)],
            "Judge this port by what it carries: `fabrik bench p2p --transport rdma` or `fabrik cluster matrix --transport rdma` against a peer, and the netdev's own link (`ethtool <netdev>`).",
        ));
    }
    out
}

/// Values this version of fabrik cannot interpret: reported, never judged.
pub fn unknown_values(node: &Node) -> Vec<Finding> {
    let mut out = vec![];
    let cannot = "fabrik cannot judge this value; it is reported as read.";
    for (dev, port) in all_ports(node) {
        let subject = port_subject(dev, port);
        // A warning on one of the port's files, quoting the value as read.
        let unknown = |file: &str, value: &str, message: String, fix: &str| {
            let evidence = vec![ev(port_path(dev, port, file), value)];
            finding(
                UNKNOWN_VALUE,
                Severity::Warning,
                &subject,
                message,
                evidence,
                fix,
            )
        };
        if let Some(s) = port
            .state
            .as_ref()
            .filter(|s| s.port_state() == PortState::Unknown)
        {
            out.push(unknown("state", &s.name,
                format!("port state `{}` is not a state fabrik knows; {cannot}", s.name),
                "Check the port with `ibstat`/`ibv_devinfo`; report the value to fabrik if it is a new kernel state."));
        }
        if let Some(s) = port
            .phys_state
            .as_ref()
            .filter(|s| s.phys_state() == PhysState::Unknown)
        {
            out.push(unknown("phys_state", &s.name,
                format!("physical state `{}` is not a state fabrik knows; {cannot}", s.name),
                "Check the port with `ibstat`; report the value to fabrik if it is a new kernel state."));
        }
        if let Some(r) = port.rate.as_ref().filter(|r| r.gbps.is_none()) {
            out.push(unknown("rate", &r.text,
                format!("link rate `{}` has no number fabrik can read; {cannot}", r.text),
                "Check the rate with `ibstat`; report the text to fabrik if the kernel writes a new format."));
        }
        // EFA ports have no IB or Ethernet link layer: the kernel writes `Unknown` for them.
        if let Some(LinkLayer::Other(v)) = port.link_layer.as_ref().filter(|_| !dev.is_efa()) {
            out.push(unknown("link_layer", v,
                format!("link layer `{v}` is neither InfiniBand nor Ethernet; IB and RoCE rules were not applied to this port"),
                "Check the device with `ibv_devinfo`."));
        }
        for gid in &port.gids {
            if let Some(GidType::Other(t)) = &gid.gid_type {
                out.push(finding(
                    UNKNOWN_VALUE,
                    Severity::Info,
                    &subject,
                    format!(
                        "GID {} has type `{t}`, which fabrik does not know",
                        gid.index
                    ),
                    vec![ev(
                        port_path(dev, port, &format!("gid_attrs/types/{}", gid.index)),
                        t.clone(),
                    )],
                    "No action unless NCCL_IB_GID_INDEX points at it.",
                ));
            }
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::testkit::*;

    #[test]
    fn healthy_ports_fire_nothing() {
        let n = healthy_ib_node("a");
        assert!(port_state(&n).is_empty());
        assert!(phys_state(&n).is_empty());
        assert!(below_capable(&n).is_empty());
        assert!(mixed_rates(&n).is_empty());
        assert!(unknown_values(&n).is_empty());
        assert!(software_rate(&n).is_empty());
    }

    #[test]
    fn a_software_device_says_its_rate_cannot_be_judged() {
        let mut n = healthy_roce_node("vm", 1);
        n.rdma_devices.truncate(1);
        n.rdma_devices[0].name = "rxe0".into();
        n.rdma_devices[0].pci = None;
        n.rdma_devices[0].ports[0].rate = rate("10 Gb/sec (1X FDR10)");
        let f = software_rate(&n);
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!(f[0].subject, "rxe0:1");
        assert_eq!(f[0].severity, Severity::Info);
        assert!(
            f[0].message.contains("rate `10 Gb/sec (1X FDR10)`")
                && f[0].message.contains("cannot judge its rate or width"),
            "{}",
            f[0].message
        );
        // A port that is not ACTIVE carries nothing to judge either way.
        n.rdma_devices[0].ports[0].state = state("1: DOWN");
        assert!(software_rate(&n).is_empty());
    }

    #[test]
    fn init_on_ib_names_the_subnet_manager() {
        let mut n = healthy_ib_node("a");
        n.rdma_devices[2].ports[0].state = state("2: INIT");
        let f = port_state(&n);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].subject, "mlx5_2:1");
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0].message.contains("subnet manager"));
        assert_eq!(
            f[0].evidence[0].path,
            "/sys/class/infiniband/mlx5_2/ports/1/state"
        );
        assert_eq!(f[0].evidence[0].value, "2: INIT");
    }

    #[test]
    fn down_and_polling_fire() {
        let mut n = healthy_ib_node("a");
        n.rdma_devices[0].ports[0].state = state("1: DOWN");
        n.rdma_devices[0].ports[0].phys_state = state("2: Polling");
        assert_eq!(port_state(&n)[0].message, "port is DOWN: no link");
        // One of eight rails down on a GPU node: the check fails.
        assert_eq!(port_state(&n)[0].severity, Severity::Error);
        assert!(phys_state(&n)[0].message.contains("Polling"));
        assert_eq!(phys_state(&n)[0].severity, Severity::Error);
        // The same port on a node without GPUs (storage, a login node) is a warning.
        let mut no_gpu = n.clone();
        no_gpu.gpus.clear();
        assert_eq!(port_state(&no_gpu)[0].severity, Severity::Warning);
        // The second function of a dual-port card whose first port is ACTIVE: an uncabled
        // port, not a rail down.
        let mut dual = n.clone();
        let first = dual.rdma_devices[1].pci.as_ref().unwrap().address.clone();
        let pci = dual.rdma_devices[0].pci.as_mut().unwrap();
        pci.address = format!("{}.1", first.rsplit_once('.').unwrap().0);
        assert_eq!(port_state(&dual)[0].severity, Severity::Warning);
        assert_eq!(phys_state(&dual)[0].severity, Severity::Warning);
        for d in &mut n.rdma_devices {
            d.ports[0].state = state("1: DOWN");
        }
        assert!(port_state(&n).iter().all(|f| f.severity == Severity::Error));
    }

    #[test]
    fn unknown_states_are_reported_as_unknown_not_judged() {
        let mut n = healthy_ib_node("a");
        n.rdma_devices[0].ports[0].state = state("9: SOMETHING_NEW");
        n.rdma_devices[0].ports[0].phys_state = state("12: NewPhys");
        n.rdma_devices[1].ports[0].rate = rate("fast (4X ZDR)");
        n.rdma_devices[3].ports[0].link_layer = Some(LinkLayer::Other("OPA".into()));
        assert!(port_state(&n).is_empty());
        assert!(phys_state(&n).is_empty());
        let u = unknown_values(&n);
        assert_eq!(u.len(), 4);
        assert!(u.iter().all(|f| f.rule == UNKNOWN_VALUE));
        assert!(u.iter().any(|f| f.message.contains("SOMETHING_NEW")));
        assert!(u.iter().any(|f| f.message.contains("fast (4X ZDR)")));
    }

    #[test]
    fn a_1x_link_and_a_narrower_sibling_fire() {
        let mut n = healthy_ib_node("a");
        n.rdma_devices[5].ports[0].rate = rate("25 Gb/sec (1X EDR)");
        let f = below_capable(&n);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].subject, "mlx5_5:1");
        assert!(f[0]
            .message
            .contains("runs 1X where another MT4129 (MT_0000000838) port on this node runs 4X"));
        assert!(f[0].message.contains("lane speed EDR"));
        let m = mixed_rates(&n);
        assert_eq!(m.len(), 1);
        assert!(m[0].message.contains("mlx5_5:1 at 25 Gb/s"));
    }

    #[test]
    fn probe_warnings_become_one_info() {
        let mut n = healthy_ib_node("a");
        assert!(unreadable(&n).is_empty());
        n.warnings.push(fabrik_model::ProbeWarning {
            path: "/proc/self/limits".into(),
            message: "permission denied".into(),
        });
        n.warnings.push(fabrik_model::ProbeWarning {
            path: "/proc/modules".into(),
            message: "missing".into(),
        });
        let f = unreadable(&n);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Info);
        assert_eq!(f[0].evidence[0].path, "/proc/modules");
    }

    #[test]
    fn ports_of_other_boards_are_not_compared() {
        let mut n = healthy_ib_node("a");
        n.rdma_devices[7].board_id = Some("MT_0000000970".into());
        n.rdma_devices[7].ports[0].rate = rate("200 Gb/sec (4X HDR)");
        assert!(below_capable(&n).is_empty());
    }

    #[test]
    fn a_lone_1x_port_still_fires() {
        let mut n = healthy_ib_node("a");
        n.rdma_devices.truncate(1);
        n.rdma_devices[0].ports[0].rate = rate("25 Gb/sec (1X EDR)");
        let f = below_capable(&n);
        assert_eq!(f.len(), 1);
        assert!(f[0].message.contains("1X"));
    }

    #[test]
    fn other_families_and_iwarp_are_not_slow_rails() {
        let mut n = healthy_ib_node("a");
        assert!(mixed_rates(&n).is_empty());
        // node_exporter's real i40iw0: iWARP with an `InfiniBand` link layer and `10 Gb/sec (4X)`.
        let mut iw = n.rdma_devices[0].clone();
        iw.name = "i40iw0".into();
        iw.hca_type = Some("I40IW".into());
        iw.node_type = None;
        iw.ports[0].rate = Some(fabrik_model::LinkRate {
            text: "10 Gb/sec (4X)".into(),
            gbps: Some(10.0),
            width: Some(4),
            speed: Some("SDR".into()),
        });
        n.rdma_devices.push(iw.clone());
        assert!(mixed_rates(&n).is_empty());
        assert!(below_capable(&n).is_empty());
        // An Omni-Path HFI beside the HCAs is another fabric too.
        iw.name = "hfi1_0".into();
        n.rdma_devices.push(iw);
        assert!(mixed_rates(&n).is_empty());
        // Another mlx5 chip (a 25 GbE ConnectX-4 Lx beside ConnectX-7 rails) is another role.
        let mut lx = n.rdma_devices[0].clone();
        lx.name = "mlx5_9".into();
        lx.hca_type = Some("MT4117".into());
        lx.ports[0].rate.as_mut().unwrap().gbps = Some(25.0);
        n.rdma_devices.push(lx);
        assert!(mixed_rates(&n).is_empty());
        // rdma-core's persistent names carry the PCI bus: `rdmap115s0` and `rdmap116s0` are one
        // family.
        let mut a = n.rdma_devices[0].clone();
        a.name = "rdmap115s0".into();
        a.pci = None;
        a.hca_type = None;
        let mut b = a.clone();
        b.name = "rdmap116s0".into();
        assert_eq!(device_family(&a), device_family(&b));
        assert_eq!(device_family(&n.rdma_devices[0]), "mlx5_core");
        // Slow ports of the same family and chip still fire.
        n.rdma_devices[1].ports[0].rate.as_mut().unwrap().gbps = Some(200.0);
        assert_eq!(mixed_rates(&n).len(), 1);
    }
}
