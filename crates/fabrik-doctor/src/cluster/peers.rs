//! Cross-node rules that compare a node with its peers one by one: a port slower than the same
//! model's ports elsewhere, and a neighbour table too small for the on-link peers.

use super::*;

/// Active hardware ports whose rate is below what most ports of the same model (chip and
/// board) run at across the job's nodes: a degraded cable or transceiver (fewer lanes, a lower
/// lane speed) on one node, named by its port. The reference is the most common rate of the
/// model, the highest on a tie, so a job of two nodes names the slower one.
pub(super) fn ports_below_peers(nodes: &[NamedNode]) -> Vec<Finding> {
    struct Seen<'a> {
        node: &'a str,
        dev: &'a fabrik_model::RdmaDevice,
        port: &'a fabrik_model::Port,
        rate: &'a fabrik_model::LinkRate,
        gbps: f64,
    }
    let mut by_model: BTreeMap<String, Vec<Seen<'_>>> = BTreeMap::new();
    for n in nodes {
        for (dev, port) in all_ports(&n.node) {
            // EFA's driver reports one fixed rate (`100 Gb/sec (4X EDR)`), and software devices
            // their netdev's: neither is a trained link.
            if dev.is_software() || dev.is_iwarp() || dev.is_efa() || !is_active(port) {
                continue;
            }
            let Some(rate) = &port.rate else { continue };
            let Some(gbps) = rate.gbps else { continue };
            by_model.entry(model_key(dev)).or_default().push(Seen {
                node: &n.name,
                dev,
                port,
                rate,
                gbps,
            });
        }
    }
    let mut out = vec![];
    for (model, ports) in &by_model {
        let nodes_with: BTreeSet<&str> = ports.iter().map(|p| p.node).collect();
        if nodes_with.len() < 2 {
            continue;
        }
        let mut counts: BTreeMap<String, (usize, f64, &fabrik_model::LinkRate)> = BTreeMap::new();
        for p in ports {
            let e = counts
                .entry(p.rate.text.clone())
                .or_insert((0, p.gbps, p.rate));
            e.0 += 1;
        }
        let Some((_, &(most, ref_gbps, reference))) = counts
            .iter()
            .max_by(|a, b| a.1 .0.cmp(&b.1 .0).then(a.1 .1.total_cmp(&b.1 .1)))
        else {
            continue;
        };
        for p in ports.iter().filter(|p| p.gbps < ref_gbps) {
            let mut what = vec![];
            if let (Some(w), Some(rw)) = (p.rate.width, reference.width) {
                if w < rw {
                    what.push(format!("{w}X of {rw}X lanes trained"));
                }
            }
            if let (Some(s), Some(rs)) = (&p.rate.speed, &reference.speed) {
                if lane_speed_rank(s) < lane_speed_rank(rs) {
                    what.push(format!("lanes at {s} instead of {rs}"));
                }
            }
            let detail = if what.is_empty() {
                String::new()
            } else {
                format!(" ({})", what.join(", "))
            };
            out.push(finding(
                PORT_BELOW_PEERS,
                Severity::Warning,
                format!("{}/{}", p.node, port_subject(p.dev, p.port)),
                format!(
                    "{} runs at `{}`{detail} where {most} of the job's {} {model} ports run at `{}`: NCCL's rings run at its pace",
                    port_subject(p.dev, p.port),
                    p.rate.text,
                    ports.len(),
                    reference.text
                ),
                vec![ev(format!("{}:{}", p.node, port_path(p.dev, p.port, "rate")), p.rate.text.clone())],
                format!(
                    "Reseat or replace the cable or transceiver of {} on {} and check its switch port (`mlxlink -d {} -p {}` shows lanes, speed and errors); the port should train at `{}` like its peers.",
                    port_subject(p.dev, p.port),
                    p.node,
                    p.dev.name,
                    p.port.number,
                    reference.text
                ),
            ));
        }
    }
    out
}

/// For each node, the number of the other nodes' IPv4 addresses on the subnets it is on: the
/// neighbour (ARP) entries a job that reaches every peer needs there (FAB-X-011, and the
/// thresholds `fabrik fix` raises).
pub fn on_link_peers(nodes: &[NamedNode]) -> Vec<u64> {
    // Each address is parsed once: per node, how many of its addresses sit on each network,
    // and over the job, how many addresses each network holds. A node's on-link peers are then
    // the job's addresses on its networks less its own, without comparing every pair of nodes.
    let per_node: Vec<BTreeMap<(u32, u32), u64>> = nodes
        .iter()
        .map(|n| {
            let mut nets: BTreeMap<(u32, u32), u64> = BTreeMap::new();
            for net in n
                .node
                .net_interfaces
                .iter()
                .filter(|i| i.kind != fabrik_model::NetKind::Loopback)
                .flat_map(|i| i.ipv4.iter())
                .filter_map(|c| ipv4_net(c))
            {
                *nets.entry(net).or_default() += 1;
            }
            nets
        })
        .collect();
    let mut job: BTreeMap<(u32, u32), u64> = BTreeMap::new();
    for (net, count) in per_node.iter().flatten() {
        *job.entry(*net).or_default() += count;
    }
    per_node
        .iter()
        .map(|mine| {
            mine.iter()
                .map(|(net, own)| job.get(net).map_or(0, |all| all - own))
                .sum()
        })
        .collect()
}

/// Nodes whose IPv4 neighbour table cannot hold an entry for every peer address on the subnets
/// they share with it. Each on-link peer address takes one ARP entry; past `gc_thresh3` the
/// kernel resolves no new neighbour, so a job whose traffic reaches every peer (the pair
/// matrix, alltoall, a bootstrap all-gather) finds some of them unreachable. Peers reached
/// through a gateway (another subnet, /31 and /32 fabrics) take no entry and are not counted.
pub(super) fn neighbour_tables(nodes: &[NamedNode]) -> Vec<Finding> {
    let mut out = vec![];
    for (n, need) in nodes.iter().zip(on_link_peers(nodes)) {
        let Some(limit) = n.node.neighbour_limits.as_ref().and_then(|l| l.gc_thresh3) else {
            continue;
        };
        if need <= limit {
            continue;
        }
        out.push(finding(
            NEIGHBOURS,
            Severity::Warning,
            n.name.clone(),
            format!(
                "{} needs at least {need} neighbour (ARP) entries for the job's peer addresses on its subnets, above the table's hard limit gc_thresh3 = {limit}: once the table is full the kernel resolves no new peer (dmesg: `neighbour: arp_cache: neighbor table overflow!`) and connections to it time out",
                n.name
            ),
            vec![
                ev(
                    format!("{}:/proc/sys/net/ipv4/neigh/default/gc_thresh3", n.name),
                    limit.to_string(),
                ),
                ev(
                    format!("{}: peer IPv4 addresses on its subnets", n.name),
                    need.to_string(),
                ),
            ],
            format!(
                "Raise the thresholds on every node above the number of on-link peers (the table holds other neighbours too), e.g. `sysctl -w net.ipv4.neigh.default.gc_thresh1={} net.ipv4.neigh.default.gc_thresh2={} net.ipv4.neigh.default.gc_thresh3={}`, and keep them in /etc/sysctl.d/.",
                need.next_power_of_two(),
                2 * need.next_power_of_two(),
                4 * need.next_power_of_two()
            ),
        ));
    }
    out
}
