use super::*;
use crate::testkit::*;

fn named(nodes: Vec<Node>) -> Vec<NamedNode> {
    crate::name_nodes(nodes)
}

#[test]
fn every_remedy_names_a_catalog_rule() {
    for r in REMEDIES {
        assert!(crate::catalog::rule(r.rule).is_some(), "{}", r.rule);
    }
}

#[test]
fn roce_mtu_goes_to_9000_and_ib_mtu_stays_manual() {
    let mut n = healthy_roce_node("r", 1);
    let nd = n.rdma_devices[0].ports[0].netdev.clone().unwrap();
    n.net_interfaces
        .iter_mut()
        .find(|i| i.name == nd)
        .unwrap()
        .mtu = Some(1500);
    let nodes = named(vec![n]);
    let f = crate::check_node(&nodes[0].node, None)
        .into_iter()
        .find(|f| f.rule == roce::MTU)
        .unwrap();
    let t = Target {
        finding: &f,
        subject: &f.subject,
        node: &nodes[0],
        nodes: &nodes,
        expect: None,
    };
    assert_eq!(
        plan_finding(&t),
        vec![Planned::Change {
            change: Change::Mtu {
                netdev: nd,
                mtu: 9000
            },
            previous: Some("1500".into())
        }]
    );
}

/// The plan for node `i` of `nodes` of the first finding the cross-node rules raise under
/// `rule`.
fn cross_node_plan(nodes: &[NamedNode], rule: &str, i: usize) -> Vec<Planned> {
    let findings = crate::cluster::check(nodes);
    let f = findings.iter().find(|f| f.rule == rule).unwrap();
    plan_finding(&Target {
        finding: f,
        subject: &f.subject,
        node: &nodes[i],
        nodes,
        expect: None,
    })
}

#[test]
fn the_odd_nodes_socket_interface_converges_to_the_others_mtu() {
    let mut nodes: Vec<Node> = (1..=3)
        .map(|i| healthy_ib_node(&format!("gpu{i}")))
        .collect();
    let eth0 = |n: &mut Node| {
        n.net_interfaces
            .iter_mut()
            .find(|i| i.name == "eth0")
            .unwrap()
            .mtu = Some(9000);
    };
    eth0(&mut nodes[0]);
    eth0(&mut nodes[2]);
    let nodes = named(nodes);
    let subjects: Vec<String> = crate::cluster::check(&nodes)
        .into_iter()
        .filter(|f| f.rule == cluster::SOCKET_MTU)
        .map(|f| f.subject)
        .collect();
    assert_eq!(subjects, ["gpu2"]);
    assert_eq!(
        cross_node_plan(&nodes, cluster::SOCKET_MTU, 1),
        vec![Planned::Change {
            change: Change::Mtu {
                netdev: "eth0".into(),
                mtu: 9000
            },
            previous: Some("1500".into())
        }]
    );
    // Two nodes at each MTU: no value to converge to, the sentence stays.
    let even = named(vec![
        nodes[0].node.clone(),
        nodes[1].node.clone(),
        nodes[2].node.clone(),
        nodes[1].node.clone(),
    ]);
    assert!(matches!(
        cross_node_plan(&even, cluster::SOCKET_MTU, 1).as_slice(),
        [Planned::Manual { .. }]
    ));
}

#[test]
fn capped_tcp_buffers_rise_to_the_others_and_larger_ones_stay() {
    let buffers = |rmem_max: u64| fabrik_model::TcpBuffers {
        rmem: Some([4096, 131072, rmem_max]),
        wmem: Some([4096, 16384, 4194304]),
    };
    let with = |second: fabrik_model::TcpBuffers| {
        named(
            (1..=3)
                .map(|i| {
                    let mut n = healthy_ib_node(&format!("gpu{i}"));
                    n.tcp_buffers = Some(if i == 2 { second } else { buffers(6291456) });
                    n
                })
                .collect(),
        )
    };
    let capped = fabrik_model::TcpBuffers {
        rmem: Some([4096, 8192, 8192]),
        ..buffers(6291456)
    };
    let plan = cross_node_plan(&with(capped), cluster::TCP_BUFFERS, 1);
    assert_eq!(
        plan,
        vec![Planned::Change {
            change: Change::Sysctl {
                key: "net.ipv4.tcp_rmem".into(),
                value: "4096 131072 6291456".into()
            },
            previous: Some("4096 8192 8192".into())
        }]
    );
    let Planned::Change { change, .. } = &plan[0] else {
        unreachable!()
    };
    change.check().unwrap();
    // The node with the larger buffers is named by the drift rule too, but not lowered.
    assert!(matches!(
        cross_node_plan(&with(buffers(67108864)), cluster::TCP_BUFFERS, 1).as_slice(),
        [Planned::Manual { .. }]
    ));
}

#[test]
fn majority_needs_a_single_leader() {
    let mut c = BTreeMap::new();
    c.insert(1500u32, 2usize);
    c.insert(9000, 2);
    assert!(majority(c.clone()).is_none());
    c.insert(9000, 3);
    assert_eq!(majority(c), Some((9000, 3)));
}
