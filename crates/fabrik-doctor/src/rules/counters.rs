//! Port counters: link errors, RoCE loss and retransmission, congestion notifications.
//!
//! Counters are cumulative since the driver loaded or they were last reset, so a non-zero value
//! says the problem happened, not that it is happening; `fabrik monitor` or a second snapshot
//! shows the rate.

use fabrik_model::{Evidence, Finding, Node, Port, RdmaDevice, Severity};

use crate::util::*;

/// Rule id of "Link error counters above zero".
pub const LINK_ERRORS: &str = "FAB-CTR-001";
/// Rule id of "RoCE loss and retransmission counters above zero".
pub const ROCE_LOSS: &str = "FAB-CTR-002";
/// Rule id of "Congestion notifications exchanged".
pub const CONGESTION: &str = "FAB-CTR-003";

/// `ports/N/counters/*` that count physical or link-level faults (IB PortCounters). Left out:
/// `port_xmit_discards` (packets dropped while the link was down or congested: a healthy
/// node's real mlx4 port in node_exporter's fixtures reads 5) and the two `*_constraint_errors`
/// (partition-key filtering, a configuration matter): none of them is a cable fault.
pub const LINK_ERROR_COUNTERS: [&str; 8] = [
    "symbol_error",
    "link_error_recovery",
    "link_downed",
    "port_rcv_errors",
    "port_rcv_remote_physical_errors",
    "port_rcv_switch_relay_errors",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
];

/// mlx5 `hw_counters/*` that count lost or retransmitted RoCE packets.
pub const ROCE_LOSS_COUNTERS: [&str; 7] = [
    "out_of_sequence",
    "packet_seq_err",
    "local_ack_timeout_err",
    "implied_nak_seq_err",
    "rnr_nak_retry_err",
    "req_transport_retries_exceeded",
    "duplicate_request",
];

/// mlx5 `hw_counters/*` of DCQCN congestion control.
pub const CONGESTION_COUNTERS: [&str; 4] = [
    "np_cnp_sent",
    "np_ecn_marked_roce_packets",
    "rp_cnp_handled",
    "rp_cnp_ignored",
];

fn nonzero<'a>(
    map: &'a std::collections::BTreeMap<String, u64>,
    names: &[&str],
) -> Vec<(&'a str, u64)> {
    names
        .iter()
        .filter_map(|n| map.get_key_value(*n))
        .filter(|(_, v)| **v > 0)
        .map(|(k, v)| (k.as_str(), *v))
        .collect()
}

/// Each hit as read from the port's `dir` (`counters` or `hw_counters`).
fn evidence(dev: &RdmaDevice, port: &Port, dir: &str, hits: &[(&str, u64)]) -> Vec<Evidence> {
    hits.iter()
        .map(|(k, v)| ev(port_path(dev, port, &format!("{dir}/{k}")), v.to_string()))
        .collect()
}

fn listing(hits: &[(&str, u64)]) -> String {
    hits.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Rule [`LINK_ERRORS`]: "Link error counters above zero".
pub fn link_errors(node: &Node) -> Vec<Finding> {
    let mut out = vec![];
    for (dev, port) in all_ports(node) {
        let hits = nonzero(&port.counters, &LINK_ERROR_COUNTERS);
        if hits.is_empty() {
            continue;
        }
        out.push(finding(
            LINK_ERRORS,
            Severity::Warning,
            port_subject(dev, port),
            format!("link error counters are above zero ({}): a marginal cable, transceiver or switch port, which costs retransmissions or link flaps", listing(&hits)),
            evidence(dev, port, "counters", &hits),
            format!("Watch whether they grow (`perfquery -x` or a second `fabrik snapshot`); if they do, check the link with `mlxlink -d {} -p {} -c` and replace the cable or transceiver. Reset the counters after a fix (`perfquery -R`).", dev.name, port.number),
        ));
    }
    out
}

/// Rule [`ROCE_LOSS`]: "RoCE loss and retransmission counters above zero".
pub fn roce_loss(node: &Node) -> Vec<Finding> {
    let mut out = vec![];
    for (dev, port) in all_ports(node) {
        // InfiniBand is credit-based and lossless: these counters there do not mean what the
        // finding says (PFC/ECN), so only RoCE ports are judged.
        if is_ib(port) {
            continue;
        }
        let hits = nonzero(&port.hw_counters, &ROCE_LOSS_COUNTERS);
        if hits.is_empty() {
            continue;
        }
        out.push(finding(
            ROCE_LOSS,
            Severity::Warning,
            port_subject(dev, port),
            format!("RoCE loss and retransmission counters are above zero ({}): packets were dropped in the fabric and recovered by go-back-N retransmission or timeouts, which stalls NCCL", listing(&hits)),
            evidence(dev, port, "hw_counters", &hits),
            "Make the RoCE priority lossless end to end (PFC on host and switches, see FAB-QOS-001) with ECN/DCQCN on (FAB-QOS-002), check switch buffer drops, and check that NCCL_IB_TC/NCCL_IB_SL map traffic to that priority.",
        ));
    }
    out
}

/// Rule [`CONGESTION`]: "Congestion notifications exchanged".
pub fn congestion(node: &Node) -> Vec<Finding> {
    let mut out = vec![];
    for (dev, port) in all_ports(node) {
        let hits = nonzero(&port.hw_counters, &CONGESTION_COUNTERS);
        if hits.is_empty() {
            continue;
        }
        out.push(finding(
            CONGESTION,
            Severity::Info,
            port_subject(dev, port),
            format!("congestion notifications were exchanged ({}): DCQCN is working and the fabric saw congestion; many CNPs during a job point at incast or an oversubscribed path", listing(&hits)),
            evidence(dev, port, "hw_counters", &hits),
            "No action if bandwidth is as expected; otherwise compare the CNP rate across nodes to find the congested rail or switch, and check the job's traffic pattern (all-to-all incast).",
        ));
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::testkit::*;

    #[test]
    fn zero_counters_fire_nothing() {
        let n = healthy_roce_node("r", 1);
        assert!(link_errors(&n).is_empty());
        assert!(roce_loss(&n).is_empty());
        assert!(congestion(&n).is_empty());
    }

    #[test]
    fn nonzero_counters_fire_with_their_paths() {
        let mut n = healthy_roce_node("r", 1);
        let p = &mut n.rdma_devices[0].ports[0];
        p.counters.insert("symbol_error".into(), 12);
        p.counters.insert("port_xmit_data".into(), 1 << 40);
        p.hw_counters.insert("out_of_sequence".into(), 77);
        p.hw_counters.insert("np_cnp_sent".into(), 5);
        let l = link_errors(&n);
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].evidence.len(), 1);
        assert_eq!(
            l[0].evidence[0].path,
            "/sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error"
        );
        let r = roce_loss(&n);
        assert!(r[0].message.contains("out_of_sequence=77"));
        let c = congestion(&n);
        assert_eq!(c[0].severity, Severity::Info);
    }

    #[test]
    fn discards_and_ib_transport_counters_are_not_faults() {
        let mut n = healthy_ib_node("a");
        let p = &mut n.rdma_devices[0].ports[0];
        p.counters.insert("port_xmit_discards".into(), 5);
        p.counters.insert("port_rcv_constraint_errors".into(), 2);
        p.hw_counters.insert("local_ack_timeout_err".into(), 131);
        assert!(link_errors(&n).is_empty());
        assert!(roce_loss(&n).is_empty(), "InfiniBand port");
    }
}
