//! Cross-node rules on the evidence below the link state: NIC firmware settings that drift
//! between nodes, and a port whose raw BER stands out from its peers'.

use std::collections::{BTreeMap, BTreeSet};

use fabrik_model::{Finding, LinkQuality, NicFirmware, Severity};

use super::NamedNode;
use crate::util::*;

/// Rule id of "NIC firmware settings differ across nodes".
pub const FIRMWARE_SETTINGS: &str = "FAB-X-012";
/// Rule id of "A NIC port's raw BER is an outlier among its peers".
pub const BER_OUTLIER: &str = "FAB-X-013";

/// The model a firmware query names (`ConnectX6`), else its board part number.
pub(crate) fn firmware_model(d: &NicFirmware) -> Option<&str> {
    d.device_type
        .as_deref()
        .or(d.part.as_deref())
        .filter(|m| !m.is_empty())
}

/// Model → setting → node → value: each node's value of each firmware setting of its NICs of
/// one model (the distinct values of those NICs, joined by `, ` where they differ), what
/// [`firmware_settings`] compares and what `fabrik fix` converges to.
pub(crate) type FirmwareValues<'a> =
    BTreeMap<&'a str, BTreeMap<&'a str, BTreeMap<&'a str, String>>>;

/// The firmware setting values of every node, per NIC model (see [`FirmwareValues`]).
pub(crate) fn firmware_values(nodes: &[NamedNode]) -> FirmwareValues<'_> {
    let mut by_model: FirmwareValues<'_> = BTreeMap::new();
    for n in nodes {
        let mut per: BTreeMap<(&str, &str), BTreeSet<&str>> = BTreeMap::new();
        for d in &n.node.nic_firmware {
            let Some(model) = firmware_model(d) else {
                continue;
            };
            for (name, s) in &d.settings {
                per.entry((model, name.as_str()))
                    .or_default()
                    .insert(s.effective());
            }
        }
        for ((model, setting), values) in per {
            let v: Vec<&str> = values.into_iter().collect();
            by_model
                .entry(model)
                .or_default()
                .entry(setting)
                .or_default()
                .insert(n.name.as_str(), v.join(", "));
        }
    }
    by_model
}

/// Rule [`FIRMWARE_SETTINGS`]: for each NIC model on two nodes or more, each setting's value on
/// each node (the distinct values of its NICs of that model), against the most common value;
/// one finding per node naming every setting where it is outside the majority. With no strict
/// majority every node is named, as the other drift rules do.
pub fn firmware_settings(nodes: &[NamedNode]) -> Vec<Finding> {
    let by_model = firmware_values(nodes);
    let mut out = vec![];
    for (model, settings) in &by_model {
        // node → (setting, its value, the majority's value and how many nodes hold it).
        type Differs<'a> = BTreeMap<&'a str, Vec<(&'a str, &'a str, Option<(&'a str, usize)>)>>;
        let mut differs: Differs<'_> = BTreeMap::new();
        let mut compared: BTreeMap<&str, usize> = BTreeMap::new();
        for (setting, per_node) in settings {
            if per_node.len() < 2 {
                continue;
            }
            let mut groups: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
            for (node, v) in per_node {
                groups.entry(v.as_str()).or_default().push(node);
                *compared.entry(node).or_default() += 1;
            }
            if groups.len() < 2 {
                continue;
            }
            let biggest = groups.values().map(Vec::len).max().unwrap_or(0);
            let leaders: Vec<&str> = groups
                .iter()
                .filter(|(_, n)| n.len() == biggest)
                .map(|(v, _)| *v)
                .collect();
            let majority = (leaders.len() == 1).then(|| (leaders[0], biggest));
            for (value, names) in &groups {
                if majority.is_some_and(|(m, _)| m == *value) {
                    continue;
                }
                for node in names {
                    differs
                        .entry(node)
                        .or_default()
                        .push((setting, value, majority));
                }
            }
        }
        let total = settings
            .values()
            .flat_map(|m| m.keys())
            .collect::<BTreeSet<_>>()
            .len();
        for (node, items) in differs {
            let described: Vec<String> = items
                .iter()
                .map(|(s, v, m)| match m {
                    Some((mv, k)) => format!("{s} `{v}` (`{mv}` on {k} of {total} nodes)"),
                    None => format!("{s} `{v}` (no majority)"),
                })
                .collect();
            let evidence = items
                .iter()
                .map(|(s, v, _)| ev(format!("{node}:mstconfig q ({model}) {s}"), v.to_string()))
                .collect();
            out.push(finding(
                FIRMWARE_SETTINGS,
                Severity::Warning,
                node.to_string(),
                format!(
                    "the firmware of the {model} NICs on {node} is set differently from its peers: {}",
                    described.join("; ")
                ),
                evidence,
                format!(
                    "Apply one firmware configuration to every {model} NIC of the job (`mstconfig -d <pci> set NAME=VALUE` or `mlxconfig`, then a firmware reset or reboot), e.g. from the majority's `mstconfig q`; {} of {node}'s settings compared.",
                    compared.get(node).copied().unwrap_or(0)
                ),
            ));
        }
    }
    out
}

/// Raw BERs at or below this are the floor of what a counter window measures (10^15 bits is
/// about 3 hours at 100 Gb/s), and no port there is judged an outlier.
const BER_FLOOR: f64 = 1e-15;
/// The modified z-score above which a value is an outlier (Iglewicz and Hoaglin, as the NIST
/// handbook gives it).
const Z_OUTLIER: f64 = 3.5;
/// The least a port must stand above its peers' median to be named: ten times the BER.
const MIN_DECADES: f64 = 1.0;
/// The spread assumed when the peers agree exactly (MAD 0), in decades of BER: a port a
/// decade above identical peers is then an outlier, rather than any port above them at all.
const MIN_MAD: f64 = 0.05;
/// The fewest ports of one speed a robust median and MAD are taken over.
const MIN_PEERS: usize = 4;

fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    })
}

/// Rule [`BER_OUTLIER`]: the raw (pre-FEC) physical BER of every port `mstlink` reported,
/// compared on log10 among the ports of the same speed (PAM4 and NRZ links have BERs decades
/// apart by design) on all nodes: a port whose modified z-score `0.6745 (x - median) / MAD` is
/// above 3.5, and at least ten times the median, is named with its node.
pub fn ber_outliers(nodes: &[NamedNode]) -> Vec<Finding> {
    struct Seen<'a> {
        node: &'a str,
        link: &'a LinkQuality,
        ber: f64,
        x: f64,
    }
    let mut by_speed: BTreeMap<&str, Vec<Seen<'_>>> = BTreeMap::new();
    for n in nodes {
        for l in &n.node.link_quality {
            let Some(ber) = l.raw_ber.filter(|b| b.is_finite() && *b >= 0.0) else {
                continue;
            };
            let x = ber.max(1e-30).log10();
            by_speed
                .entry(l.speed.as_deref().unwrap_or("unknown speed"))
                .or_default()
                .push(Seen {
                    node: &n.name,
                    link: l,
                    ber,
                    x,
                });
        }
    }
    let mut out = vec![];
    for (speed, ports) in &by_speed {
        let nodes_with: BTreeSet<&str> = ports.iter().map(|p| p.node).collect();
        if nodes_with.len() < 2 || ports.len() < MIN_PEERS {
            continue;
        }
        let mut xs: Vec<f64> = ports.iter().map(|p| p.x).collect();
        let Some(m) = median(&mut xs) else { continue };
        let mut dev: Vec<f64> = ports.iter().map(|p| (p.x - m).abs()).collect();
        let Some(mad) = median(&mut dev) else {
            continue;
        };
        let mad = mad.max(MIN_MAD);
        for p in ports {
            let z = 0.6745 * (p.x - m) / mad;
            if p.ber <= BER_FLOOR || z <= Z_OUTLIER || p.x - m < MIN_DECADES {
                continue;
            }
            let median_ber = 10f64.powf(m);
            let dev_name = if p.link.device.is_empty() {
                "?"
            } else {
                p.link.device.as_str()
            };
            out.push(finding(
                BER_OUTLIER,
                Severity::Warning,
                format!("{}/{dev_name}", p.node),
                format!(
                    "the raw physical BER of {dev_name} on {} is {:.1e}, {:.0}× the median {median_ber:.1e} of the job's {} `{speed}` ports (modified z-score {z:.1}): FEC still corrects it, but a link this far from its peers is a dirty or failing optic, cable or connector, and one degraded port slows every collective that crosses it",
                    p.node,
                    p.ber,
                    p.ber / median_ber,
                    ports.len()
                ),
                vec![
                    ev(format!("{}:mstlink -d {dev_name} -c (Raw Physical BER)", p.node), format!("{:e}", p.ber)),
                    ev(format!("median raw BER of {} `{speed}` ports", ports.len()), format!("{median_ber:e}")),
                ],
                format!(
                    "Clean or reseat the optic and cable of {dev_name} on {}, or swap them with a healthy port's to see whether the errors follow; check it again with `mlxlink -d {dev_name} -c -m` after clearing the counters (`--pc`).",
                    p.node
                ),
            ));
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::testkit::healthy_ib_node;
    use fabrik_model::FirmwareSetting;

    fn fw(model: &str, settings: &[(&str, &str)]) -> NicFirmware {
        NicFirmware {
            device: "0000:3b:00.0".into(),
            pci: Some("0000:3b:00.0".into()),
            device_type: Some(model.into()),
            part: None,
            settings: settings
                .iter()
                .map(|(k, v)| {
                    (
                        k.to_string(),
                        FirmwareSetting {
                            next_boot: v.to_string(),
                            current: None,
                            default: None,
                        },
                    )
                })
                .collect(),
        }
    }

    fn named(name: &str, firmware: Vec<NicFirmware>, links: Vec<LinkQuality>) -> NamedNode {
        let mut node = healthy_ib_node(name);
        node.nic_firmware = firmware;
        node.link_quality = links;
        NamedNode {
            name: name.into(),
            node,
        }
    }

    const GOOD: [(&str, &str); 3] = [
        ("PCI_WR_ORDERING", "force_relax(1)"),
        ("ATS_ENABLED", "True(1)"),
        ("MAX_ACC_OUT_READ", "0"),
    ];

    #[test]
    fn the_node_whose_firmware_setting_left_the_majority_is_named_with_the_setting() {
        let mut nodes: Vec<NamedNode> = (0..4)
            .map(|i| named(&format!("n{i}"), vec![fw("ConnectX7", &GOOD)], vec![]))
            .collect();
        assert!(firmware_settings(&nodes).is_empty(), "alike: quiet");
        nodes[2].node.nic_firmware = vec![fw(
            "ConnectX7",
            &[
                ("PCI_WR_ORDERING", "per_mkey(0)"),
                ("ATS_ENABLED", "True(1)"),
                ("MAX_ACC_OUT_READ", "0"),
            ],
        )];
        // Another model's settings are not compared with these.
        nodes[3]
            .node
            .nic_firmware
            .push(fw("BlueField3", &[("PCI_WR_ORDERING", "per_mkey(0)")]));
        let f = firmware_settings(&nodes);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].rule, FIRMWARE_SETTINGS);
        assert_eq!(f[0].subject, "n2");
        assert!(
            f[0].message
                .contains("PCI_WR_ORDERING `per_mkey(0)` (`force_relax(1)` on 3 of 4 nodes)"),
            "{}",
            f[0].message
        );
        assert!(!f[0].message.contains("ATS_ENABLED"));
        // A node whose capture lacks a setting (a grep) is not called different for it.
        nodes[1].node.nic_firmware = vec![fw("ConnectX7", &[("ATS_ENABLED", "True(1)")])];
        let f = firmware_settings(&nodes);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].subject, "n2");
    }

    fn link(device: &str, speed: &str, raw: f64) -> LinkQuality {
        LinkQuality {
            device: device.into(),
            speed: Some(speed.into()),
            raw_ber: Some(raw),
            ..LinkQuality::default()
        }
    }

    #[test]
    fn the_port_whose_raw_ber_stands_out_is_named_and_spread_peers_are_quiet() {
        // Two nodes of 4 NDR ports spread over a decade, as healthy PAM4 links are.
        let bers = [[2e-9, 5e-9, 1e-8, 3e-9], [4e-9, 8e-9, 2e-9, 6e-9]];
        let mut nodes: Vec<NamedNode> = bers
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let links = b
                    .iter()
                    .enumerate()
                    .map(|(j, r)| link(&format!("mlx5_{j}"), "IB-NDR", *r))
                    .collect();
                named(&format!("n{i}"), vec![], links)
            })
            .collect();
        assert!(ber_outliers(&nodes).is_empty(), "healthy spread: quiet");
        nodes[1].node.link_quality[2].raw_ber = Some(3e-6);
        // A 100G NRZ port elsewhere is compared with its own kind only.
        nodes[0]
            .node
            .link_quality
            .push(link("mlx5_9", "100G", 1e-12));
        let f = ber_outliers(&nodes);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].subject, "n1/mlx5_2");
        assert!(f[0].message.contains("3.0e-6"), "{}", f[0].message);
        // Peers that agree exactly: a port a decade above them is named, one at the floor not.
        let mut same: Vec<NamedNode> = (0..2)
            .map(|i| {
                named(
                    &format!("m{i}"),
                    vec![],
                    (0..3)
                        .map(|j| link(&format!("mlx5_{j}"), "100G", 0.0))
                        .collect(),
                )
            })
            .collect();
        same[0].node.link_quality[0].raw_ber = Some(1e-16);
        assert!(ber_outliers(&same).is_empty());
        same[0].node.link_quality[0].raw_ber = Some(1e-10);
        assert_eq!(ber_outliers(&same).len(), 1);
        // One node alone has no peers to be compared with.
        assert!(ber_outliers(&same[..1]).is_empty());
    }
}
