//! Firmware settings (`mstconfig set`) for the rules that find them different from their peers
//! or from the expectations: each NIC's setting to the expectations file's value when it names
//! one, else to the value most peers hold; with no single majority nothing is changed.

use std::collections::BTreeMap;

use fabrik_model::{NicFirmware, Node};

use super::plan::{majority, Planned, Target, MELLANOX_VENDOR};
use super::Change;
use crate::cluster;
use crate::expect::setting_matches;

/// The value `mstconfig set` takes for a value as mstconfig prints it or as an expectations
/// file gives it: the number of `force_relax(1)`, else the bare word or number. `None` for
/// anything else (an `Array[0..15]`, a list of several values), which is left to a person.
fn set_value(v: &str) -> Option<String> {
    let v = v.trim();
    let token = |s: &str| {
        !s.is_empty()
            && s.len() <= 64
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    };
    match v.split_once('(') {
        Some((word, rest)) => {
            let number = rest.strip_suffix(')')?;
            (token(word.trim()) && !number.is_empty() && number.chars().all(|c| c.is_ascii_digit()))
                .then(|| number.to_string())
        }
        None => token(v).then(|| v.to_string()),
    }
}

/// The expectations file's value for firmware setting `key`, when it names one.
fn expected<'a>(t: &'a Target, key: &str) -> Option<&'a str> {
    t.expect
        .and_then(|e| e.nic.as_ref())
        .and_then(|n| n.firmware.get(key))
        .map(String::as_str)
}

/// Whether the node's PCI data shows `pci` as an NVIDIA (Mellanox) function: `mstconfig`
/// drives only those.
fn is_mellanox(node: &Node, pci: &str) -> bool {
    node.rdma_devices
        .iter()
        .filter_map(|d| d.pci.as_ref())
        .chain(node.net_interfaces.iter().filter_map(|n| n.pci.as_ref()))
        .any(|f| {
            f.address.eq_ignore_ascii_case(pci) && f.vendor.as_deref() == Some(MELLANOX_VENDOR)
        })
}

/// Firmware setting `key` of NIC `d` to `want`: nothing where it already holds it, a manual
/// line where fabrik cannot set it (no PCI address, not an NVIDIA NIC, a value that is no
/// single token).
fn set(node: &Node, d: &NicFirmware, key: &str, want: &str) -> Vec<Planned> {
    let Some(now) = d.settings.get(key).map(|s| s.effective()) else {
        return vec![];
    };
    if setting_matches(want, now) {
        return vec![];
    }
    let by_hand = |why: &str| {
        vec![Planned::Manual {
            what: format!(
                "Set {key}={want} on {} by hand ({why}): `mstconfig -d <pci> set {key}={want}`, then a firmware reset or reboot.",
                d.device
            ),
        }]
    };
    let Some(pci) = d.pci.as_deref() else {
        return by_hand("its query names no PCI address");
    };
    if !is_mellanox(node, pci) {
        return by_hand("the node's PCI data does not show it as an NVIDIA/Mellanox function");
    }
    let Some(value) = set_value(want) else {
        return by_hand("the value is not one mstconfig takes as it stands");
    };
    vec![Planned::Change {
        change: Change::Firmware {
            device: pci.to_string(),
            key: key.to_string(),
            value,
        },
        previous: set_value(now),
    }]
}

/// FAB-X-012 on the node it names: each setting its evidence names, on each of the node's NICs
/// of that model, to the expected value, else the value most nodes hold.
pub(super) fn drift(t: &Target) -> Vec<Planned> {
    let values = cluster::firmware_values(t.nodes);
    let prefix = format!("{}:mstconfig q (", t.node.name);
    let mut out = vec![];
    for ev in &t.finding.evidence {
        let Some((model, key)) = ev
            .path
            .strip_prefix(prefix.as_str())
            .and_then(|rest| rest.rsplit_once(") "))
        else {
            continue;
        };
        let want = match expected(t, key) {
            Some(v) => Some(v.to_string()),
            None => values.get(model).and_then(|m| m.get(key)).and_then(|per| {
                let mut count: BTreeMap<&str, usize> = BTreeMap::new();
                for v in per.values() {
                    *count.entry(v.as_str()).or_default() += 1;
                }
                majority(count).map(|(v, _)| v.to_string())
            }),
        };
        let Some(want) = want else { continue };
        for d in &t.node.node.nic_firmware {
            if cluster::firmware_model(d) == Some(model) {
                out.extend(set(&t.node.node, d, key, &want));
            }
        }
    }
    out
}

/// FAB-EXP-011 on the NIC it names: each setting the expectations file names, to its value.
pub(super) fn expected_settings(t: &Target) -> Vec<Planned> {
    let Some(want) = t.expect.and_then(|e| e.nic.as_ref()).map(|n| &n.firmware) else {
        return vec![];
    };
    // The subject is the device as the rule names it: its name, else `NIC`.
    let named = |d: &&NicFirmware| {
        if d.device.is_empty() {
            t.subject == "NIC"
        } else {
            d.device == t.subject
        }
    };
    let mut out = vec![];
    for d in t.node.node.nic_firmware.iter().filter(named) {
        for (key, value) in want {
            out.extend(set(&t.node.node, d, key, value));
        }
    }
    out
}

/// FAB-FW-002: the setting it names, on each NIC its evidence lists, to the expected value,
/// else the value most of those NICs hold.
pub(super) fn rails(t: &Target) -> Vec<Planned> {
    // Evidence: `mstconfig -d DEV q: KEY` = value, one line per NIC.
    let listed: Vec<(&str, &str, &str)> = t
        .finding
        .evidence
        .iter()
        .filter_map(|ev| {
            let (dev, key) = ev.path.strip_prefix("mstconfig -d ")?.rsplit_once(" q: ")?;
            Some((dev, key, ev.value.as_str()))
        })
        .collect();
    let Some(&(_, key, _)) = listed.first() else {
        return vec![];
    };
    if listed.iter().any(|(_, k, _)| *k != key) {
        return vec![];
    }
    let want = match expected(t, key) {
        Some(v) => v.to_string(),
        None => {
            let mut count: BTreeMap<&str, usize> = BTreeMap::new();
            for (_, _, v) in &listed {
                *count.entry(*v).or_default() += 1;
            }
            let Some((v, _)) = majority(count) else {
                return vec![];
            };
            v.to_string()
        }
    };
    let mut out = vec![];
    for d in &t.node.node.nic_firmware {
        if listed.iter().any(|(dev, _, _)| *dev == d.device) {
            out.extend(set(&t.node.node, d, key, &want));
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use fabrik_model::FirmwareSetting;
    use fabrik_parse::formats::{Format, Mstconfig};

    use super::*;
    use crate::cluster::NamedNode;
    use crate::expect::{self, Expectations};
    use crate::rules::firmware::SETTINGS_DIFFER;
    use crate::testkit::*;

    /// A ConnectX-4 Lx's full `mstconfig q` (fixtures/commands/mstconfig/01-*), as the probe
    /// reads it from `fabrik/cmd/mstconfig-<BDF>.txt`: the device named by that address.
    fn queried(bdf: &str) -> NicFirmware {
        let text = include_str!(
            "../../../../fixtures/commands/mstconfig/01-cx4lx-full-query-next-boot-fenced.txt"
        );
        let mut d = Mstconfig::parse(text).unwrap().devices.remove(0);
        d.device = bdf.to_string();
        d.pci = Some(bdf.to_string());
        d
    }

    fn wr_ordering(d: &mut NicFirmware, value: &str) {
        d.settings.insert(
            "PCI_WR_ORDERING".into(),
            FirmwareSetting {
                next_boot: value.into(),
                ..FirmwareSetting::default()
            },
        );
    }

    /// The first two HCAs of a healthy node (NVIDIA functions at 0000:12:00.0 and
    /// 0000:22:00.0), each with the capture's settings and PCI_WR_ORDERING at `value`.
    fn node(name: &str, value: &str) -> fabrik_model::Node {
        let mut n = healthy_ib_node(name);
        for bdf in ["0000:12:00.0", "0000:22:00.0"] {
            let mut d = queried(bdf);
            wr_ordering(&mut d, value);
            n.nic_firmware.push(d);
        }
        n
    }

    fn plan(
        nodes: &[NamedNode],
        rule: &str,
        subject: &str,
        expect: Option<&Expectations>,
    ) -> Vec<Planned> {
        let findings = crate::cluster::check(nodes);
        let f = findings
            .iter()
            .find(|f| f.rule == rule && f.subject == subject)
            .unwrap();
        let i = nodes.iter().position(|n| n.name == subject).unwrap();
        super::super::plan_finding(&Target {
            finding: f,
            subject: &f.subject,
            node: &nodes[i],
            nodes,
            expect,
        })
    }

    fn set_to(bdf: &str, value: &str, previous: &str) -> Planned {
        Planned::Change {
            change: Change::Firmware {
                device: bdf.into(),
                key: "PCI_WR_ORDERING".into(),
                value: value.into(),
            },
            previous: Some(previous.into()),
        }
    }

    fn expectations(value: &str) -> Expectations {
        Expectations::parse(
            "t",
            &format!("[nic.firmware]\nPCI_WR_ORDERING = \"{value}\"\n"),
        )
        .unwrap()
    }

    #[test]
    fn mstconfig_takes_the_number_or_the_bare_word() {
        for (printed, set) in [
            ("force_relax(1)", Some("1")),
            ("True(1)", Some("1")),
            ("False(0)", Some("0")),
            ("ETH(2)", Some("2")),
            ("254", Some("254")),
            ("per_mkey", Some("per_mkey")),
            ("Array[0..15]", None),
            ("per_mkey(0), force_relax(1)", None),
            ("x(y)", None),
            ("1;reboot", None),
            ("", None),
        ] {
            assert_eq!(set_value(printed).as_deref(), set, "{printed}");
        }
    }

    #[test]
    fn the_odd_nodes_nics_converge_to_the_majoritys_firmware_setting() {
        let nodes = crate::name_nodes(vec![
            node("gpu1", "per_mkey(0)"),
            node("gpu2", "force_relax(1)"),
            node("gpu3", "per_mkey(0)"),
        ]);
        let odd: Vec<String> = crate::cluster::check(&nodes)
            .into_iter()
            .filter(|f| f.rule == cluster::FIRMWARE_SETTINGS)
            .map(|f| f.subject)
            .collect();
        assert_eq!(odd, ["gpu2"]);
        let planned = plan(&nodes, cluster::FIRMWARE_SETTINGS, "gpu2", None);
        assert_eq!(
            planned,
            vec![
                set_to("0000:12:00.0", "0", "1"),
                set_to("0000:22:00.0", "0", "1"),
            ]
        );
        for p in &planned {
            let Planned::Change { change, .. } = p else {
                unreachable!()
            };
            change.check().unwrap();
        }
        // The expectations file's value wins over the majority's.
        let e = expectations("force_relax");
        assert!(matches!(
            plan(&nodes, cluster::FIRMWARE_SETTINGS, "gpu2", Some(&e)).as_slice(),
            [Planned::Manual { .. }]
        ));
    }

    #[test]
    fn a_tie_changes_nothing_unless_the_expectations_name_the_value() {
        let nodes = crate::name_nodes(vec![
            node("gpu1", "per_mkey(0)"),
            node("gpu2", "force_relax(1)"),
            node("gpu3", "per_mkey(0)"),
            node("gpu4", "force_relax(1)"),
        ]);
        assert!(matches!(
            plan(&nodes, cluster::FIRMWARE_SETTINGS, "gpu1", None).as_slice(),
            [Planned::Manual { .. }]
        ));
        let e = expectations("force_relax");
        assert_eq!(
            plan(&nodes, cluster::FIRMWARE_SETTINGS, "gpu1", Some(&e)),
            vec![
                set_to("0000:12:00.0", "force_relax", "0"),
                set_to("0000:22:00.0", "force_relax", "0"),
            ]
        );
        assert!(matches!(
            plan(&nodes, cluster::FIRMWARE_SETTINGS, "gpu2", Some(&e)).as_slice(),
            [Planned::Manual { .. }]
        ));
    }

    #[test]
    fn a_setting_off_the_expectations_is_set_to_their_value() {
        let mut n = node("gpu1", "per_mkey(0)");
        // A NIC whose query names no PCI address is left to a person.
        n.nic_firmware[1].pci = None;
        let nodes = crate::name_nodes(vec![n]);
        let e = expectations("force_relax(1)");
        let findings = expect::check_expectations(&nodes[0].node, &e, None);
        let planned: Vec<Vec<Planned>> = ["0000:12:00.0", "0000:22:00.0"]
            .iter()
            .map(|dev| {
                let f = findings
                    .iter()
                    .find(|f| f.rule == expect::FIRMWARE && f.subject == *dev)
                    .unwrap();
                super::super::plan_finding(&Target {
                    finding: f,
                    subject: &f.subject,
                    node: &nodes[0],
                    nodes: &nodes,
                    expect: Some(&e),
                })
            })
            .collect();
        assert_eq!(planned[0], vec![set_to("0000:12:00.0", "1", "0")]);
        assert!(
            matches!(planned[1].as_slice(), [Planned::Manual { what }] if what.contains("no PCI address")),
            "{:?}",
            planned[1]
        );
    }

    fn rails_plan(n: fabrik_model::Node) -> Vec<Planned> {
        let nodes = crate::name_nodes(vec![n]);
        let findings = crate::check_node(&nodes[0].node, None);
        let f = findings.iter().find(|f| f.rule == SETTINGS_DIFFER).unwrap();
        super::super::plan_finding(&Target {
            finding: f,
            subject: &f.subject,
            node: &nodes[0],
            nodes: &nodes,
            expect: None,
        })
    }

    #[test]
    fn the_odd_rail_takes_the_setting_most_rails_of_its_node_hold() {
        let mut n = node("gpu1", "per_mkey(0)");
        let mut third = queried("0000:32:00.0");
        wr_ordering(&mut third, "force_relax(1)");
        n.nic_firmware.push(third);
        assert_eq!(
            rails_plan(n.clone()),
            vec![set_to("0000:32:00.0", "0", "1")]
        );
        // A function the node's PCI data does not show as NVIDIA's is not handed to mstconfig.
        let nic = n
            .rdma_devices
            .iter_mut()
            .find(|d| d.name == "mlx5_2")
            .unwrap();
        nic.pci.as_mut().unwrap().vendor = Some("0x8086".into());
        assert!(matches!(
            rails_plan(n.clone()).as_slice(),
            [Planned::Manual { what }] if what.contains("NVIDIA/Mellanox")
        ));
        // One rail each way: no value the node's rails agree on.
        n.nic_firmware.remove(0);
        assert!(matches!(
            rails_plan(n).as_slice(),
            [Planned::Manual { what }] if what.starts_with("Set PCI_WR_ORDERING alike")
        ));
    }
}
