//! fabrik's rule catalog: nodes and planned NCCL environments to explained findings.
//!
//! Pure functions of data: [`check_node`] runs the single-node rules on a [`Node`],
//! [`check_env`] judges a planned NCCL environment against it, [`cluster::check`] compares
//! several nodes, and [`diagnose`] runs them all into a sorted [`Report`]. Every rule is listed
//! with its page in [`catalog`].
#![warn(missing_docs)]

pub mod catalog;
pub mod cluster;
pub mod counter_rules;
pub mod env;
pub mod env_rules;
pub mod expect;
pub mod health;
pub mod parsed;
pub mod passline;
pub mod remedy;
pub mod rules;
pub mod socket;
mod util;
pub mod waive;

#[cfg(test)]
pub(crate) mod testkit;

use fabrik_model::{sort_findings, Fact, Finding, Node, Severity, SCHEMA_VERSION};

pub use cluster::NamedNode;
pub use env::PlannedEnv;
pub use expect::{check_expectations, Expectations};
pub use waive::{apply_waivers, Waived, Waiver};

/// The doctor's document is a model type: every renderer reads it.
pub use fabrik_model::report::{Report, Summary};

/// A single-node rule and the kinds of fact it reads: on a node assembled from pastes it runs
/// only when the node holds them all (see [`fabrik_model::Node::known`]).
type NodeRule = (fn(&Node) -> Vec<Finding>, &'static [Fact]);

/// Every single-node rule that needs no planned environment, with the facts it reads.
const NODE_RULES: &[NodeRule] = {
    use rules::*;
    use Fact::*;
    &[
        (unchecked::not_checked, &[]),
        (rdma::no_rdma, &[Inventory]),
        (rdma::no_stack, &[Inventory]),
        (rdma::no_uverbs, &[Inventory, DevInfiniband]),
        (rdma::memlock, &[Inventory, Memlock]),
        (rdma::sriov_vf, &[Inventory]),
        (ports::port_state, &[PortState]),
        (ports::netdev_down, &[NetdevState]),
        (ports::phys_state, &[PortState]),
        (ports::below_capable, &[PortState, PortRate]),
        (ports::mixed_rates, &[PortState, PortRate]),
        (ports::software_rate, &[PortState, PortRate]),
        (ports::unknown_values, &[]),
        (ports::unreadable, &[]),
        (pci::pcie_link, &[PciLinks]),
        (pci::acs_redirect, &[Acs]),
        (pci::iommu_translated, &[Inventory, Iommu]),
        (pci::relaxed_ordering, &[PciDevCtl]),
        (pci::aer_uncorrectable, &[Aer]),
        (pci::aer_correctable, &[Aer]),
        (roce::no_v2_gid, &[Gids]),
        (roce::gid_index_differs, &[Gids]),
        (roce::mtu, &[Mtu]),
        (roce::pfc_off, &[Pfc]),
        (roce::ecn_off, &[Ecn]),
        (gdr::no_peer_memory, &[Inventory, Modules]),
        (gdr::far_nic, &[GpuNicPaths]),
        (counters::link_errors, &[Counters]),
        (counters::roce_loss, &[Counters]),
        (counters::congestion, &[Counters]),
        (link::effective_errors, &[LinkQuality]),
        (link::raw_errors, &[LinkQuality]),
        (link::recommendation, &[LinkQuality]),
        (link::link_not_up, &[LinkQuality]),
        (link::module_temperature, &[LinkQuality]),
        (link::module_alarm, &[LinkQuality]),
        (link::eth_link, &[LinkQuality]),
        (link::nic_stats, &[Counters]),
        (link::nvlink, &[NvLink]),
        (link::ibdiagnet, &[Fabric]),
        (link::fabric_link, &[Fabric]),
        (firmware::ats_off, &[Firmware]),
        (firmware::settings_differ, &[Firmware]),
        (firmware::pending, &[Firmware]),
        (klog::xid, &[KernelLog]),
        (klog::mlx5_health, &[KernelLog]),
        (klog::link_flaps, &[KernelLog]),
        (klog::aer, &[KernelLog]),
        (klog::pin_failure, &[KernelLog]),
    ]
};

/// Runs every single-node rule whose facts the node holds (all of them on a probed node).
/// `env`, when given, lets node rules that depend on settings (socket interface, cloud
/// plugins) take them into account.
pub fn check_node(node: &Node, env: Option<&PlannedEnv>) -> Vec<Finding> {
    use rules::*;
    let mut out = vec![];
    for (rule, needs) in NODE_RULES {
        if needs.iter().all(|f| node.knows(*f)) {
            out.extend(rule(node));
        }
    }
    if node.knows(Fact::Inventory) {
        out.extend(sockets::socket_interface(node, env));
        out.extend(sockets::socket_bad_default(node, env));
        out.extend(cloud::gcp_a3(node, env));
        out.extend(cloud::aws_efa(node, env));
    }
    sort_findings(&mut out);
    out
}

/// The doctor's rules on a node assembled from a pasted tool output (`source`, the tool's
/// name): the rules whose facts the paste gave, with evidence named after the tool rather
/// than the sysfs file a probed node would have shown.
pub fn check_paste(node: &Node, source: &str) -> Vec<Finding> {
    let mut out = check_node(node, None);
    for f in &mut out {
        for e in &mut f.evidence {
            for prefix in [
                "/sys/class/infiniband/",
                "/sys/class/net/",
                "/sys/bus/pci/devices/",
            ] {
                if let Some(rest) = e.path.strip_prefix(prefix) {
                    e.path = format!("{source}: {rest}");
                    break;
                }
            }
        }
    }
    out
}

/// Runs the planned-environment rules.
pub fn check_env(node: &Node, env: &PlannedEnv) -> Vec<Finding> {
    use env_rules::*;
    let mut out = vec![];
    for rule in [
        ib_hca,
        ib_hca_fewer_rails,
        socket_ifname,
        ib_disabled,
        gid_index,
        gdr_level,
        p2p_shm_disabled,
        unread_variables,
    ] {
        out.extend(rule(node, env));
    }
    sort_findings(&mut out);
    out
}

/// Adds to `report` the differences between each node and the expectations (subjects prefixed with
/// the node's name when there are several, as [`diagnose`] does).
pub fn add_expectations(
    report: &mut Report,
    nodes: &[NamedNode],
    expect: &Expectations,
    env: Option<&PlannedEnv>,
) {
    let many = nodes.len() > 1;
    let mut more = vec![];
    for n in nodes {
        let prefix = if many {
            format!("{}/", n.name)
        } else {
            String::new()
        };
        if let Some(have) = expect::rails_met(&n.node, expect) {
            for f in &mut report.findings {
                let Some(subject) = f.subject.strip_prefix(&prefix) else {
                    continue;
                };
                let is_rail = [rules::ports::PORT_STATE, rules::ports::PHYS_STATE]
                    .contains(&f.rule.as_str())
                    && f.severity == Severity::Error
                    && subject.split_once(':').is_some_and(|(dev, _)| {
                        n.node
                            .rdma_device(dev)
                            .is_some_and(|d| rules::ports::is_rail_down(&n.node, d))
                    });
                if is_rail {
                    f.severity = Severity::Warning;
                    f.message = format!("{}; the expectations ask for {have}, which the node has, so this rail is not counted on", f.message);
                }
            }
        }
        for mut f in check_expectations(&n.node, expect, env) {
            if many {
                f.subject = format!("{}/{}", n.name, f.subject);
            }
            more.push(f);
        }
    }
    report.add_findings(more);
}

/// Runs every rule on every node (and across them when there are several) into one report.
/// With several nodes, each node-level subject is prefixed with the node's name
/// (`gpu3/mlx5_0:1`) so the report says where each finding is.
pub fn diagnose(nodes: &[NamedNode], env: Option<&PlannedEnv>) -> Report {
    let mut findings = vec![];
    let many = nodes.len() > 1;
    for n in nodes {
        let mut own = check_node(&n.node, env);
        if let Some(e) = env {
            own.extend(check_env(&n.node, e));
        }
        for f in &mut own {
            if many {
                f.subject = format!("{}/{}", n.name, f.subject);
            }
        }
        findings.extend(own);
    }
    findings.extend(cluster::check(nodes));
    sort_findings(&mut findings);
    let summary = Summary::of(&findings);
    Report {
        schema_version: SCHEMA_VERSION,
        nodes: nodes.iter().map(|n| n.name.clone()).collect(),
        findings,
        summary,
        waived: vec![],
    }
}

/// Names for nodes: the hostname when every node has a distinct one, else the root directory.
pub fn name_nodes(nodes: Vec<Node>) -> Vec<NamedNode> {
    let hostnames: Vec<Option<String>> = nodes.iter().map(|n| n.hostname.clone()).collect();
    let distinct = hostnames.iter().all(Option::is_some)
        && hostnames
            .iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len()
            == hostnames.len();
    nodes
        .into_iter()
        .map(|node| {
            let name = if distinct {
                node.hostname.clone().unwrap_or_else(|| node.root.clone())
            } else {
                node.root.clone()
            };
            NamedNode { name, node }
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::testkit::*;

    #[test]
    fn healthy_nodes_fire_nothing() {
        assert!(check_node(&healthy_ib_node("a"), None).is_empty());
        assert!(check_node(&healthy_roce_node("r", 1), None).is_empty());
    }

    #[test]
    fn every_finding_names_a_catalog_rule() {
        let mut n = healthy_roce_node("r", 1);
        n.rdma_devices[0].ports[0].state = state("2: INIT");
        n.dev_infiniband = None;
        let env = PlannedEnv::parse(
            "t",
            "NCCL_IB_GID_INDEX=2\nNCCL_P2P_DISABLE=1\nNCCL_SOCKET_IFNAME=nothere\n",
        );
        let report = diagnose(&name_nodes(vec![n, bare_node()]), Some(&env));
        assert!(!report.findings.is_empty());
        for f in &report.findings {
            assert!(
                catalog::rule(&f.rule).is_some(),
                "{} not in catalog",
                f.rule
            );
        }
    }

    #[test]
    fn the_bare_machine_gets_only_infos_and_exit_0() {
        let r = diagnose(&name_nodes(vec![bare_node()]), None);
        assert_eq!(r.summary.errors + r.summary.warnings, 0);
        assert!(!r.has_problems(true));
        let ids: Vec<&str> = r.findings.iter().map(|f| f.rule.as_str()).collect();
        assert_eq!(ids, vec!["FAB-RDMA-001", "FAB-SOCK-001"]);
    }

    #[test]
    fn output_does_not_depend_on_read_order() {
        let mut a = healthy_ib_node("a");
        a.rdma_devices[1].ports[0].state = state("2: INIT");
        a.rdma_devices[3].ports[0].rate = rate("25 Gb/sec (1X EDR)");
        a.memlock = Some(fabrik_model::MemlockLimit {
            soft_bytes: Some(65536),
            hard_bytes: Some(65536),
        });
        let mut b = a.clone();
        b.rdma_devices.reverse();
        b.gpus.reverse();
        b.gpu_nic_paths.reverse();
        b.net_interfaces.reverse();
        let ra = diagnose(&name_nodes(vec![a]), None);
        let rb = diagnose(&name_nodes(vec![b]), None);
        assert_eq!(ra.findings, rb.findings);
    }

    #[test]
    fn exit_codes_follow_severity_and_strict() {
        let mut n = healthy_ib_node("a");
        n.memlock = Some(fabrik_model::MemlockLimit {
            soft_bytes: Some(65536),
            hard_bytes: Some(65536),
        });
        let r = diagnose(&name_nodes(vec![n.clone()]), None);
        assert!(!r.has_problems(false));
        assert!(r.has_problems(true));
        n.rdma_devices[0].ports[0].state = state("2: INIT");
        assert!(diagnose(&name_nodes(vec![n]), None).has_problems(false));
    }

    proptest::proptest! {
        /// Whatever text sysfs holds, the rules neither panic nor name a rule outside the catalog.
        #[test]
        fn arbitrary_sysfs_values_never_panic(
            state_text in ".{0,20}",
            phys_text in ".{0,20}",
            rate_text in ".{0,30}",
            layer in ".{0,12}",
            gid_type in ".{0,12}",
            kernel in ".{0,20}",
            env_text in ".{0,80}",
        ) {
            let mut n = healthy_roce_node("p", 1);
            let p = &mut n.rdma_devices[0].ports[0];
            p.state = Some(fabrik_model::StateValue::parse(&state_text));
            p.phys_state = Some(fabrik_model::StateValue::parse(&phys_text));
            p.rate = rate(&rate_text);
            p.link_layer = Some(fabrik_model::LinkLayer::parse(&layer));
            p.gids[3].gid_type = Some(fabrik_model::GidType::parse(&gid_type));
            n.os.kernel = Some(kernel);
            let env = PlannedEnv::parse("p", &env_text);
            let r = diagnose(&name_nodes(vec![n, healthy_roce_node("q", 2)]), Some(&env));
            for f in &r.findings {
                proptest::prop_assert!(catalog::rule(&f.rule).is_some());
            }
        }
    }

    #[test]
    fn a_rail_down_fails_the_node_unless_the_expectations_do_without_it() {
        let mut n = healthy_ib_node("a");
        n.rdma_devices[2].ports[0].state = state("1: DOWN");
        let named = name_nodes(vec![n]);
        let r = diagnose(&named, None);
        assert!(r.has_problems(false), "{:?}", r.findings);
        let active = named[0].node.rdma_devices.len() - 1;
        let e = Expectations::parse("t", &format!("[rdma]\nactive_ports = {active}\n")).unwrap();
        let mut waived = r.clone();
        add_expectations(&mut waived, &named, &e, None);
        assert!(!waived.has_problems(false), "{:?}", waived.findings);
        let f = waived
            .findings
            .iter()
            .find(|f| f.rule == "FAB-PORT-001")
            .unwrap();
        assert_eq!(f.severity, Severity::Warning);
        assert!(f.message.contains("not counted on"), "{}", f.message);
        // Asking for every rail keeps the error (and adds the expectation's own).
        let e =
            Expectations::parse("t", &format!("[rdma]\nactive_ports = {}\n", active + 1)).unwrap();
        let mut kept = r.clone();
        add_expectations(&mut kept, &named, &e, None);
        assert!(kept
            .findings
            .iter()
            .any(|f| f.rule == "FAB-PORT-001" && f.severity == Severity::Error));
    }

    #[test]
    fn several_nodes_prefix_subjects_and_name_by_hostname() {
        let mut b = healthy_ib_node("gpu2");
        b.rdma_devices[0].ports[0].state = state("2: INIT");
        let r = diagnose(&name_nodes(vec![healthy_ib_node("gpu1"), b]), None);
        assert_eq!(r.nodes, vec!["gpu1", "gpu2"]);
        assert!(r.findings.iter().any(|f| f.subject == "gpu2/mlx5_0:1"));
        let same = name_nodes(vec![healthy_ib_node("x"), healthy_ib_node("x")]);
        assert_eq!(same[0].name, "/");
    }
}
