//! Which changes each rule's findings call for. One [`Remedy`] per rule; a rule without one has
//! no safe automatic fix and keeps the fix sentence of its finding.
//!
//! Across nodes the value to converge to is the expectations file's when it names one, else
//! the value most nodes have; with no majority nothing is changed.

use std::collections::BTreeMap;

use fabrik_model::{Finding, Node, Port, RdmaDevice, Severity};
use serde::Serialize;

use super::plan::{majority, Planned, Target, MELLANOX_VENDOR};
use super::{acs_word, qos_value, Change};
use crate::cluster::{self, NamedNode};
use crate::expect::{self, Expectations, Memlock};
use crate::rules::{firmware, gdr, pci, rdma, roce};
use crate::util::{all_ports, is_active, is_ib, is_roce};

/// What `fabrik fix` can do for a rule's findings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// Changes that are safe on a node running jobs.
    Automatic,
    /// Changes that need the node drained first (`fix --apply --drained`).
    NeedsDrain,
    /// Nothing a command can safely do: the finding's sentence says what a person does.
    Manual,
}

impl std::fmt::Display for Class {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Class::Automatic => "automatic",
            Class::NeedsDrain => "needs drain",
            Class::Manual => "manual only",
        })
    }
}

/// A rule's remediation.
pub struct Remedy {
    /// The rule id.
    pub rule: &'static str,
    /// Its class: the worst risk of the changes it makes.
    pub class: Class,
    /// What fabrik changes, in one sentence, for the table in docs/fix.md.
    pub summary: &'static str,
    /// The changes (or manual steps) a finding of the rule calls for.
    pub plan: fn(&Target) -> Vec<Planned>,
}

/// The rules with a remediation. Adding one is one entry here (and, for a new kind of
/// setting, a [`Change`] variant).
pub static REMEDIES: &[Remedy] = &[
    Remedy { rule: rdma::NO_UVERBS, class: Class::Automatic,
        summary: "`modprobe ib_uverbs`, kept in /etc/modules-load.d; in a container whose host has it loaded, manual (pass /dev/infiniband to the container)",
        plan: no_uverbs },
    Remedy { rule: rdma::NO_STACK, class: Class::Automatic,
        summary: "`modprobe` the card's missing driver modules (`mlx5_core`, `mlx5_ib` or `efa`, and `ib_uverbs`), kept in /etc/modules-load.d; a loaded driver that refused the card is manual (its kernel log says why)",
        plan: no_stack },
    Remedy { rule: rdma::MEMLOCK, class: Class::Automatic,
        summary: "memlock unlimited for new sessions in /etc/security/limits.d (root included) and DefaultLimitMEMLOCK for systemd services",
        plan: memlock },
    Remedy { rule: rdma::SRIOV_VF, class: Class::NeedsDrain,
        summary: "`mstconfig -d <PF> set PCI_WR_ORDERING=1` (relaxed ordering for all PCIe writes) on an NVIDIA/Mellanox PF, then a firmware reset",
        plan: sriov_vf },
    Remedy { rule: pci::ACS_REDIRECT, class: Class::NeedsDrain,
        summary: "`setpci -s <bridge> ECAP_ACS+0x6.w=0000` as NCCL's troubleshooting guide gives it, and a systemd unit that repeats it at boot",
        plan: acs },
    Remedy { rule: roce::MTU, class: Class::NeedsDrain,
        summary: "`ip link set dev <netdev> mtu 9000` (or the expected MTU) on RoCE netdevs, kept by a udev rule; an InfiniBand MTU is the subnet manager's (manual)",
        plan: mtu },
    Remedy { rule: roce::PFC_OFF, class: Class::NeedsDrain,
        summary: "`mlnx_qos -i <netdev> --pfc ... --trust dscp` (priority 3 unless the expectations say otherwise), repeated at boot by a systemd unit",
        plan: pfc_off },
    Remedy { rule: roce::ECN_OFF, class: Class::Automatic,
        summary: "`echo 1` into ecn/roce_np and ecn/roce_rp enable files of the RoCE priority, kept by a udev rule",
        plan: ecn_off },
    Remedy { rule: gdr::NO_PEER_MEMORY, class: Class::Automatic,
        summary: "`modprobe nvidia_peermem`, kept in /etc/modules-load.d",
        plan: peer_memory },
    Remedy { rule: expect::MTU, class: Class::NeedsDrain,
        summary: "the expected MTU on RoCE netdevs, as FAB-MTU-001; the InfiniBand MTU is the subnet manager's (manual)",
        plan: expected_mtu },
    Remedy { rule: expect::ROCE, class: Class::NeedsDrain,
        summary: "the expected PFC priorities and trust (`mlnx_qos`) and ECN enables; the GID index follows addressing (manual)",
        plan: expected_roce },
    Remedy { rule: expect::GDR, class: Class::Automatic,
        summary: "the expected peer-memory module loaded and kept, memlock unlimited for new sessions",
        plan: expected_host },
    Remedy { rule: cluster::MTU, class: Class::NeedsDrain,
        summary: "the RoCE netdevs of the odd nodes set to the expected MTU, else the one most nodes have",
        plan: drift_mtu },
    Remedy { rule: cluster::SOCKET_MTU, class: Class::NeedsDrain,
        summary: "the interfaces NCCL's sockets use on the odd node set to the MTU most nodes' socket interfaces have (`ip link set dev <if> mtu <mtu>`), kept by a udev rule; with no single majority MTU, manual",
        plan: drift_socket_mtu },
    Remedy { rule: cluster::TCP_BUFFERS, class: Class::Automatic,
        summary: "`sysctl -w net.ipv4.tcp_rmem/tcp_wmem` to the limits most nodes have, on a node whose largest buffers are below them (never lowered), kept in /etc/sysctl.d",
        plan: tcp_buffers },
    Remedy { rule: firmware::SETTINGS_DIFFER, class: Class::NeedsDrain,
        summary: "`mstconfig -d <pci> set KEY=VALUE` on the NVIDIA/Mellanox NICs that differ, to the expected value, else the one most of the node's NICs of that model hold (with no single majority, manual), then a firmware reset",
        plan: super::firmware::rails },
    Remedy { rule: expect::FIRMWARE, class: Class::NeedsDrain,
        summary: "`mstconfig -d <pci> set KEY=VALUE` to the expected value on the NVIDIA/Mellanox NIC, then a firmware reset",
        plan: super::firmware::expected_settings },
    Remedy { rule: cluster::FIRMWARE_SETTINGS, class: Class::NeedsDrain,
        summary: "`mstconfig -d <pci> set KEY=VALUE` on the odd node's NVIDIA/Mellanox NICs of that model, to the expected value, else the one most nodes hold (with no single majority, manual), then a firmware reset",
        plan: super::firmware::drift },
    Remedy { rule: cluster::NEIGHBOURS, class: Class::Automatic,
        summary: "`sysctl -w net.ipv4.neigh.default.gc_thresh1/2/3` above the on-link peers (never lowered), kept in /etc/sysctl.d",
        plan: neighbours },
];

/// The remediation of `rule`, when it has one.
pub fn remedy(rule: &str) -> Option<&'static Remedy> {
    REMEDIES.iter().find(|r| r.rule.eq_ignore_ascii_case(rule))
}

/// The class of `rule`'s remediation ([`Class::Manual`] for a rule without one).
pub fn class(rule: &str) -> Class {
    remedy(rule).map_or(Class::Manual, |r| r.class)
}

/// What a finding calls for: its rule's changes, or the finding's own sentence when its rule
/// has no remediation or the changes do not apply to this node.
pub fn plan_finding(t: &Target) -> Vec<Planned> {
    match remedy(&t.finding.rule) {
        Some(r) => {
            let planned = (r.plan)(t);
            if planned.is_empty() {
                manual(t)
            } else {
                planned
            }
        }
        None => manual(t),
    }
}

fn manual(t: &Target) -> Vec<Planned> {
    vec![Planned::Manual {
        what: t.finding.fix.clone(),
    }]
}

fn change(change: Change, previous: Option<String>) -> Planned {
    Planned::Change { change, previous }
}

/// The device and port a `dev:port` subject names.
fn port<'a>(node: &'a Node, subject: &str) -> Option<(&'a RdmaDevice, &'a Port)> {
    let (dev, num) = subject.rsplit_once(':')?;
    let num: u32 = num.parse().ok()?;
    let d = node.rdma_device(dev)?;
    Some((d, d.ports.iter().find(|p| p.number == num)?))
}

fn netdev_mtu(node: &Node, netdev: &str) -> Option<u32> {
    node.net_interface(netdev).and_then(|i| i.mtu)
}

/// A RoCE port's netdev to `want`, or nothing when it already is or has no netdev.
fn mtu_change(node: &Node, port: &Port, want: u32) -> Vec<Planned> {
    let Some(netdev) = &port.netdev else {
        return vec![];
    };
    let now = netdev_mtu(node, netdev);
    if now == Some(want) {
        return vec![];
    }
    vec![change(
        Change::Mtu {
            netdev: netdev.clone(),
            mtu: want,
        },
        now.map(|m| m.to_string()),
    )]
}

/// The MTU 9000 NVIDIA recommends for RoCE (what FAB-MTU-001's fix names).
const ROCE_MTU: u32 = 9000;

fn mtu(t: &Target) -> Vec<Planned> {
    let Some((_, p)) = port(&t.node.node, t.subject) else {
        return vec![];
    };
    if !is_roce(p) {
        return vec![];
    }
    let want = t
        .expect
        .and_then(|e| e.rdma.as_ref())
        .and_then(|r| r.netdev_mtu)
        .filter(|m| *m >= roce::ROCE_MIN_NETDEV_MTU)
        .unwrap_or(ROCE_MTU);
    mtu_change(&t.node.node, p, want)
}

fn expected_mtu(t: &Target) -> Vec<Planned> {
    let Some((_, p)) = port(&t.node.node, t.subject) else {
        return vec![];
    };
    match t
        .expect
        .and_then(|e| e.rdma.as_ref())
        .and_then(|r| r.netdev_mtu)
    {
        Some(want) if is_roce(p) => mtu_change(&t.node.node, p, want),
        _ => vec![],
    }
}

/// The RoCE netdev MTU every node should have: the expectations', else the one most nodes have
/// (a node counts once per MTU it has); none on a tie.
pub fn converge_mtu(nodes: &[NamedNode], expect: Option<&Expectations>) -> Option<(u32, Source)> {
    if let Some(m) = expect
        .and_then(|e| e.rdma.as_ref())
        .and_then(|r| r.netdev_mtu)
    {
        return Some((m, Source::Expectations));
    }
    let mut count: BTreeMap<u32, usize> = BTreeMap::new();
    for n in nodes {
        let mut mine: Vec<u32> = roce_ports(&n.node)
            .filter_map(|(_, p)| p.netdev.as_deref().and_then(|nd| netdev_mtu(&n.node, nd)))
            .collect();
        mine.sort_unstable();
        mine.dedup();
        for m in mine {
            *count.entry(m).or_default() += 1;
        }
    }
    majority(count).map(|(m, k)| {
        (
            m,
            Source::Majority {
                nodes: k,
                of: nodes.len(),
            },
        )
    })
}

/// Where a converged value comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "from", rename_all = "snake_case")]
pub enum Source {
    /// The expectations file names it.
    Expectations,
    /// `nodes` of the `of` nodes have it.
    Majority {
        /// How many nodes have it.
        nodes: usize,
        /// How many nodes were compared.
        of: usize,
    },
}

fn roce_ports(node: &Node) -> impl Iterator<Item = (&RdmaDevice, &Port)> {
    all_ports(node).filter(|(d, p)| !d.is_software() && !d.is_iwarp() && is_roce(p) && is_active(p))
}

fn drift_mtu(t: &Target) -> Vec<Planned> {
    let Some((want, _)) = converge_mtu(t.nodes, t.expect) else {
        return vec![];
    };
    let mut out = vec![];
    for (_, p) in roce_ports(&t.node.node) {
        out.extend(mtu_change(&t.node.node, p, want));
    }
    let ib_differs = all_ports(&t.node.node).any(|(d, p)| {
        !d.is_software()
            && is_ib(p)
            && is_active(p)
            && p.active_mtu.is_some_and(|m| m < roce::IB_FULL_MTU)
    });
    if ib_differs {
        out.push(Planned::Manual {
            what: "Raise the InfiniBand MTU in the subnet manager's partition configuration (opensm partitions.conf `mtu=5` for 4096).".into(),
        });
    }
    out
}

/// The one MTU most nodes' socket interfaces have (a node whose interfaces carry several MTUs
/// votes for none); `None` without a single leader.
fn converge_socket_mtu(nodes: &[NamedNode]) -> Option<u32> {
    let mut count: BTreeMap<u32, usize> = BTreeMap::new();
    for n in nodes {
        if let Some(m) = cluster::socket_mtus(&n.node).and_then(|v| v.parse::<u32>().ok()) {
            *count.entry(m).or_default() += 1;
        }
    }
    majority(count).map(|(m, _)| m)
}

/// FAB-MTU-002 on the node it names: each interface NCCL's default socket choice takes on it,
/// to the MTU the other nodes agree on. Names differ between nodes, so the interfaces are this
/// node's own, as the rule compared them.
fn drift_socket_mtu(t: &Target) -> Vec<Planned> {
    let Some(want) = converge_socket_mtu(t.nodes) else {
        return vec![];
    };
    let Some(choice) = crate::socket::default_choice(&t.node.node) else {
        return vec![];
    };
    choice
        .interfaces
        .iter()
        .filter(|i| i.kind != fabrik_model::NetKind::Loopback)
        .filter_map(|i| {
            let now = i.mtu?;
            (now != want).then(|| {
                change(
                    Change::Mtu {
                        netdev: i.name.clone(),
                        mtu: want,
                    },
                    Some(now.to_string()),
                )
            })
        })
        .collect()
}

/// FAB-X-014 on the node it names: `tcp_rmem` and `tcp_wmem` to the (min, default, max) most
/// nodes have, each only where this node's largest buffer is below theirs: a node with larger
/// buffers than its peers is not slowed down to match them.
fn tcp_buffers(t: &Target) -> Vec<Planned> {
    let mut count: BTreeMap<([u64; 3], [u64; 3]), usize> = BTreeMap::new();
    for n in t.nodes {
        if let Some((r, w)) = n.node.tcp_buffers.and_then(|b| Some((b.rmem?, b.wmem?))) {
            *count.entry((r, w)).or_default() += 1;
        }
    }
    let Some(((rmem, wmem), _)) = majority(count) else {
        return vec![];
    };
    let Some(mine) = t.node.node.tcp_buffers else {
        return vec![];
    };
    let words = |v: [u64; 3]| format!("{} {} {}", v[0], v[1], v[2]);
    [
        ("net.ipv4.tcp_rmem", rmem, mine.rmem),
        ("net.ipv4.tcp_wmem", wmem, mine.wmem),
    ]
    .into_iter()
    .filter(|(_, want, now)| now.is_some_and(|n| n[2] < want[2]))
    .map(|(key, want, now)| {
        change(
            Change::Sysctl {
                key: key.into(),
                value: words(want),
            },
            now.map(words),
        )
    })
    .collect()
}

fn no_uverbs(t: &Target) -> Vec<Planned> {
    let node = &t.node.node;
    if t.finding.severity != Severity::Error {
        return vec![];
    }
    if node.has_module("ib_uverbs") {
        return vec![Planned::Manual {
            what: "ib_uverbs is loaded, so the device nodes are missing from this root itself: start the container with `--device=/dev/infiniband` (Docker) or the RDMA device plugin's resource (Kubernetes).".into(),
        }];
    }
    vec![change(
        Change::Module {
            name: "ib_uverbs".into(),
        },
        (!node.modules.is_empty()).then(|| "not loaded".into()),
    )]
}

fn no_stack(t: &Target) -> Vec<Planned> {
    let node = &t.node.node;
    let function = t
        .subject
        .strip_prefix("pci ")
        .and_then(|a| node.network_functions.iter().find(|f| f.address == a));
    let Some((core, ib)) = function.and_then(rdma::made_for_rdma) else {
        return vec![];
    };
    // Which modules the node lacks is only known when /proc/modules was read.
    if node.modules.is_empty() {
        return vec![];
    }
    let missing: Vec<&str> = [core, ib, "ib_uverbs"]
        .into_iter()
        .filter(|m| !node.has_module(m))
        .collect();
    if missing.is_empty() {
        return vec![Planned::Manual {
            what: format!("`{core}` and `{ib}` are loaded but gave the card no RDMA device: the kernel log (`dmesg | grep {core}`) says why (firmware, PCIe errors); reload the driver or reset the card on a drained node."),
        }];
    }
    missing.into_iter().map(|m| module(node, m)).collect()
}

fn memlock_now(node: &Node) -> Option<String> {
    let l = node.memlock.as_ref()?;
    Some(match l.soft_bytes {
        Some(b) => format!("{b} bytes"),
        None => "unlimited".into(),
    })
}

fn memlock(t: &Target) -> Vec<Planned> {
    vec![change(Change::Memlock, memlock_now(&t.node.node))]
}

fn module(node: &Node, name: &str) -> Planned {
    change(
        Change::Module { name: name.into() },
        (!node.modules.is_empty()).then(|| "not loaded".into()),
    )
}

fn peer_memory(t: &Target) -> Vec<Planned> {
    // The info variant says /proc/modules could not be read: nothing is known to change.
    if t.finding.severity != Severity::Warning {
        return vec![];
    }
    vec![module(&t.node.node, "nvidia_peermem")]
}

fn expected_host(t: &Target) -> Vec<Planned> {
    let node = &t.node.node;
    let Some(h) = t.expect.and_then(|e| e.host.as_ref()) else {
        return vec![];
    };
    let mut out = vec![];
    if let Some(m) = &h.peer_memory {
        if !node.modules.is_empty() && !node.has_module(m) {
            out.push(module(node, m));
        }
    }
    if let (Some(want), Some(limit)) = (&h.memlock, &node.memlock) {
        let ok = match want {
            Memlock::Text(_) => limit.is_unlimited(),
            Memlock::Bytes(b) => limit.soft_bytes.is_none_or(|s| s >= *b),
        };
        if !ok {
            out.push(change(Change::Memlock, memlock_now(node)));
        }
    }
    out
}

fn sriov_vf(t: &Target) -> Vec<Planned> {
    let Some(dev) = t.node.node.rdma_device(t.subject) else {
        return vec![];
    };
    let Some(pci) = &dev.pci else { return vec![] };
    let (Some(pf), Some(MELLANOX_VENDOR)) = (&pci.physfn, pci.vendor.as_deref()) else {
        return vec![];
    };
    vec![change(
        Change::Firmware {
            device: pf.clone(),
            key: "PCI_WR_ORDERING".into(),
            value: "1".into(),
        },
        None,
    )]
}

fn acs(t: &Target) -> Vec<Planned> {
    let Some(bdf) = t.subject.strip_prefix("bridge ") else {
        return vec![];
    };
    let Some(bridge) = t.node.node.pci_bridges.iter().find(|b| b.address == bdf) else {
        return vec![];
    };
    let previous = bridge
        .acs_ctl_enabled
        .as_ref()
        .map(|flags| format!("{:04x}", acs_word(flags)));
    vec![change(
        Change::AcsOff {
            bridge: bdf.to_string(),
        },
        previous,
    )]
}

/// The PFC priorities and trust a RoCE port should have: the expectations', else priority 3
/// with DSCP trust (RoCE v2's DSCP 26 maps to priority 3).
fn qos_target(expect: Option<&Expectations>) -> (Vec<u8>, String) {
    let r = expect.and_then(|e| e.roce.as_ref());
    (
        r.and_then(|r| r.pfc_priorities.clone())
            .filter(|p| !p.is_empty() && p.iter().all(|x| *x < 8))
            .unwrap_or_else(|| vec![3]),
        r.and_then(|r| r.trust.clone())
            .unwrap_or_else(|| "dscp".into()),
    )
}

fn qos_change(node: &Node, port: &Port, expect: Option<&Expectations>) -> Vec<Planned> {
    let Some(netdev) = &port.netdev else {
        return vec![];
    };
    let Some(nif) = node.net_interface(netdev) else {
        return vec![];
    };
    let (pfc, trust) = qos_target(expect);
    let previous = nif
        .pfc
        .as_ref()
        .and_then(|p| Some(qos_value(&p.enabled_priorities, p.trust.as_deref()?)));
    let same = nif.pfc.as_ref().is_some_and(|p| {
        let mut have = p.enabled_priorities.clone();
        have.sort_unstable();
        have == pfc && p.trust.as_deref() == Some(trust.as_str())
    });
    if same {
        return vec![];
    }
    vec![change(
        Change::Qos {
            netdev: netdev.clone(),
            pfc,
            trust,
        },
        previous,
    )]
}

fn pfc_off(t: &Target) -> Vec<Planned> {
    let Some((_, p)) = port(&t.node.node, t.subject) else {
        return vec![];
    };
    qos_change(&t.node.node, p, t.expect)
}

fn ecn_changes(node: &Node, port: &Port, expect: Option<&Expectations>) -> Vec<Planned> {
    let Some(netdev) = &port.netdev else {
        return vec![];
    };
    let Some(nif) = node.net_interface(netdev) else {
        return vec![];
    };
    let Some(ecn) = &nif.ecn else { return vec![] };
    let priorities = match &nif.pfc {
        Some(p) if !p.enabled_priorities.is_empty() => p.enabled_priorities.clone(),
        _ => qos_target(expect).0,
    };
    let mut out = vec![];
    for prio in priorities {
        for (side, map) in [("roce_np", &ecn.np_enabled), ("roce_rp", &ecn.rp_enabled)] {
            if let Some(false) = map.get(&prio) {
                out.push(change(
                    Change::NetdevAttr {
                        netdev: netdev.clone(),
                        attr: format!("ecn/{side}/enable/{prio}"),
                        value: "1".into(),
                    },
                    Some("0".into()),
                ));
            }
        }
    }
    out
}

fn ecn_off(t: &Target) -> Vec<Planned> {
    let Some((_, p)) = port(&t.node.node, t.subject) else {
        return vec![];
    };
    ecn_changes(&t.node.node, p, t.expect)
}

fn expected_roce(t: &Target) -> Vec<Planned> {
    let node = &t.node.node;
    let Some((_, p)) = port(node, t.subject) else {
        return vec![];
    };
    let Some(r) = t.expect.and_then(|e| e.roce.as_ref()) else {
        return vec![];
    };
    let mut out = vec![];
    if r.pfc_priorities.is_some() || r.trust.is_some() {
        out.extend(qos_change(node, p, t.expect));
    }
    if r.ecn == Some(true) {
        out.extend(ecn_changes(node, p, t.expect));
    }
    if let Some(want) = r.gid_index {
        if roce::recommended_gid_index(p) != Some(want) {
            out.push(Planned::Manual {
                what: format!("The RoCE v2 IPv4 GID of {} is not at index {want}: the index follows the netdev's addresses (give every node the same addressing), or leave NCCL_IB_GID_INDEX unset with NCCL 2.21 or newer.", t.subject),
            });
        }
    }
    out
}

fn neighbours(t: &Target) -> Vec<Planned> {
    let Some(i) = t.nodes.iter().position(|n| std::ptr::eq(n, t.node)) else {
        return vec![];
    };
    let Some(need) = cluster::on_link_peers(t.nodes).get(i).copied() else {
        return vec![];
    };
    let Some(limits) = &t.node.node.neighbour_limits else {
        return vec![];
    };
    let base = need.max(1).next_power_of_two();
    let mut out = vec![];
    for (key, now, want) in [
        ("gc_thresh1", limits.gc_thresh1, base),
        ("gc_thresh2", limits.gc_thresh2, 2 * base),
        ("gc_thresh3", limits.gc_thresh3, 4 * base),
    ] {
        // Never lowered: a node tuned above what this job needs keeps its setting.
        if now.is_some_and(|n| n >= want) {
            continue;
        }
        out.push(change(
            Change::Sysctl {
                key: format!("net.ipv4.neigh.default.{key}"),
                value: want.to_string(),
            },
            now.map(|n| n.to_string()),
        ));
    }
    out
}

/// For a cross-node finding (`FAB-X-*`), the value its node should converge to: the
/// expectations file's when it names one for the rule, else the value most of the compared
/// nodes show in the finding's evidence (`<node>:<path>` = value). `None` with no majority.
pub fn converge(
    finding: &Finding,
    nodes: &[NamedNode],
    expect: Option<&Expectations>,
) -> Option<(String, Source)> {
    if !finding.rule.starts_with("FAB-X-") {
        return None;
    }
    if finding.rule == cluster::MTU {
        return converge_mtu(nodes, expect).map(|(m, s)| (m.to_string(), s));
    }
    if finding.rule == cluster::FIRMWARE_SETTINGS {
        // One value per setting, not per finding: the plan's steps name each.
        return None;
    }
    let from_expect = expect.and_then(|e| match finding.rule.as_str() {
        cluster::NVIDIA_DRIVER => e.versions.as_ref()?.nvidia_driver.clone(),
        cluster::RDMA_STACK if finding.message.starts_with("OFED") => {
            e.versions.as_ref()?.ofed.clone()
        }
        cluster::RDMA_STACK => e.versions.as_ref()?.rdma_core.clone(),
        cluster::FIRMWARE => e.rdma.as_ref()?.firmware.clone(),
        cluster::GID_INDEX => e.roce.as_ref()?.gid_index.map(|i| i.to_string()),
        _ => None,
    });
    if let Some(v) = from_expect {
        return Some((v, Source::Expectations));
    }
    // One value per node: the first evidence line naming it (`<node>:<path>`); later lines
    // for the same node are further facts (routes), not another vote.
    let mut seen: Vec<&str> = vec![];
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for ev in &finding.evidence {
        let named: Vec<&NamedNode> = nodes
            .iter()
            .filter(|n| {
                ev.path
                    .strip_prefix(n.name.as_str())
                    .is_some_and(|rest| rest.starts_with(':'))
            })
            .collect();
        if let [n] = named.as_slice() {
            if !seen.contains(&n.name.as_str()) {
                seen.push(&n.name);
                *count.entry(ev.value.clone()).or_default() += 1;
            }
        }
    }
    let total = seen.len();
    majority(count).map(|(v, k)| {
        (
            v,
            Source::Majority {
                nodes: k,
                of: total,
            },
        )
    })
}

/// The table of docs/fix.md: every node, environment and cross-node rule of the catalog with
/// its class and what `fabrik fix` does (rules without a remediation keep their sentence).
pub fn table_markdown() -> String {
    let mut s = String::from(
        "| rule | title | class | what `fabrik fix` does |\n| --- | --- | --- | --- |\n",
    );
    for r in crate::catalog::RULES {
        let (class, what) = match remedy(r.id) {
            Some(m) => (m.class, m.summary.to_string()),
            None if r.id.starts_with("FAB-X-") => (
                Class::Manual,
                "keeps the rule's sentence and names the value the node should converge to"
                    .to_string(),
            ),
            None => (Class::Manual, "keeps the rule's sentence".to_string()),
        };
        s.push_str(&format!(
            "| [{}](rules/{}.md) | {} | {} | {} |\n",
            r.id,
            r.id,
            r.title,
            class,
            what.replace('|', "\\|")
        ));
    }
    s
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
