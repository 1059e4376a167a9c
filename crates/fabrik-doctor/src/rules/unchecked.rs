//! Facts a health rule needs that the root could not give: said, never passed over in silence.

use std::collections::BTreeMap;

use fabrik_model::{Finding, Node, Severity};

use crate::util::*;

/// Rule id of "A fact the check could not read".
pub const NOT_CHECKED: &str = "FAB-CHK-001";

/// What each fact is, the rule that needs it, and how much its absence weighs: ACS decides
/// FAB-PCI-002 (an error on bare metal, so unknown is a warning on a GPU node, and nothing in a
/// VM, where the rule does not judge), PFC FAB-QOS-001 (a warning), the IB MTU only an
/// expectation (an info).
fn weight(node: &Node, fact: &str) -> Option<(Severity, &'static str)> {
    match fact {
        "acs" if node.os.virtualized == Some(true) => None,
        "acs" if !node.gpus.is_empty() => Some((
            Severity::Warning,
            "ACS redirect on the PCIe bridges between GPUs and NICs (FAB-PCI-002)",
        )),
        "acs" => Some((Severity::Info, "ACS on the PCIe bridges (FAB-PCI-002)")),
        "pfc" => Some((
            Severity::Warning,
            "PFC and trust of the RoCE netdevs (FAB-QOS-001)",
        )),
        "ib_mtu" => Some((
            Severity::Info,
            "the InfiniBand active MTU (rdma.ib_mtu expectations)",
        )),
        "kernel_log" => Some((
            Severity::Info,
            "the kernel log: Xid errors, mlx5 health, link flaps, AER events, pinning failures (FAB-KLOG-001..005)",
        )),
        "nic_firmware" => Some((
            Severity::Info,
            "the NIC firmware settings: ATS, relaxed ordering, settings that differ (FAB-FW-001..003, FAB-X-012)",
        )),
        "link_quality" => Some((
            Severity::Info,
            "the physical link quality: errors after FEC, raw BER, module temperature (FAB-LINK-001..005, FAB-X-013)",
        )),
        "link_settings" => Some((
            Severity::Info,
            "the Ethernet link settings (FAB-LINK-006)",
        )),
        "nic_stats" => Some((
            Severity::Info,
            "the NIC's own error and discard counters (FAB-LINK-007)",
        )),
        "transceiver" => Some((
            Severity::Info,
            "the transceiver modules' own alarms (FAB-LINK-011)",
        )),
        _ => Some((Severity::Info, "a fact")),
    }
}

/// Rule [`NOT_CHECKED`]: one finding per kind of fact the probe could not read, naming every
/// subject and why.
pub fn not_checked(node: &Node) -> Vec<Finding> {
    let mut by_fact: BTreeMap<&str, Vec<&fabrik_model::NotRead>> = BTreeMap::new();
    for n in &node.not_read {
        by_fact.entry(n.fact.as_str()).or_default().push(n);
    }
    let mut out = vec![];
    for (fact, mut items) in by_fact {
        let Some((severity, what)) = weight(node, fact) else {
            continue;
        };
        items.sort_by(|a, b| a.subject.cmp(&b.subject));
        let subjects: Vec<&str> = items.iter().map(|n| n.subject.as_str()).collect();
        out.push(finding(
            NOT_CHECKED,
            severity,
            format!("not checked: {fact}"),
            format!(
                "{what} could not be checked on {} ({}): {}",
                plural(items.len(), "subject", "subjects"),
                subjects.join(", "),
                items[0].reason
            ),
            items
                .iter()
                .map(|n| ev(n.subject.clone(), n.reason.clone()))
                .collect(),
            "Run the check as root on the node itself (the extended PCI config space needs CAP_SYS_ADMIN), with the tools installed (rdma-core's ibv_devinfo, mstflint's mstconfig and mstlink, ethtool) and a --budget they fit in; a snapshot keeps what `fabrik snapshot` read as root. Waive it with a reason where the fact cannot be had.",
        ));
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::testkit::*;
    use fabrik_model::NotRead;

    fn nr(fact: &str, subject: &str) -> NotRead {
        NotRead {
            fact: fact.into(),
            subject: subject.into(),
            reason: "only the first 64 bytes of its config space could be read".into(),
        }
    }

    #[test]
    fn unread_facts_are_findings_weighed_by_what_needs_them() {
        let mut n = healthy_ib_node("a");
        assert!(not_checked(&n).is_empty());
        n.not_read = vec![
            nr("acs", "0000:16:02.0"),
            nr("acs", "0000:15:01.0"),
            nr("ib_mtu", "mlx5_0:1"),
        ];
        let f = not_checked(&n);
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].subject, "not checked: acs");
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(
            f[0].message.contains("0000:15:01.0, 0000:16:02.0"),
            "{}",
            f[0].message
        );
        assert!(f[0].message.contains("64 bytes"));
        assert_eq!(f[1].severity, Severity::Info);
        // In a VM the ACS rule does not judge, so its fact is not missed.
        n.os.virtualized = Some(true);
        assert_eq!(not_checked(&n).len(), 1);
    }
}
