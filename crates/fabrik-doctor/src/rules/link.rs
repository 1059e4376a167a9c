//! Below the port state: the physical quality of NIC links (`mstlink`), Ethernet link settings
//! and NIC statistics (`ethtool`), NVLink, and the InfiniBand fabric's own links and checks.

use std::collections::{BTreeMap, BTreeSet};

use fabrik_model::{Finding, LinkQuality, Node, Severity};

use crate::util::*;

/// Rule id of "Errors left after FEC on a link".
pub const EFFECTIVE_ERRORS: &str = "FAB-LINK-001";
/// Rule id of "High raw (pre-FEC) error rate on a link".
pub const RAW_ERRORS: &str = "FAB-LINK-002";
/// Rule id of "mlxlink recommends action on a link".
pub const RECOMMENDATION: &str = "FAB-LINK-003";
/// Rule id of "NIC physical link not up (mlxlink)".
pub const LINK_NOT_UP: &str = "FAB-LINK-004";
/// Rule id of "Transceiver temperature above its alarm threshold".
pub const MODULE_TEMPERATURE: &str = "FAB-LINK-005";
/// Rule id of "Ethernet link down or below what both ends support".
pub const ETH_LINK: &str = "FAB-LINK-006";
/// Rule id of "Physical-layer errors or discards in NIC statistics".
pub const NIC_STATS: &str = "FAB-LINK-007";
/// Rule id of "NVLink inactive or slower than the GPU's other links".
pub const NVLINK: &str = "FAB-LINK-008";
/// Rule id of "ibdiagnet reported errors".
pub const IBDIAGNET: &str = "FAB-LINK-009";
/// Rule id of "Transceiver module reports an alarm".
pub const MODULE_ALARM: &str = "FAB-LINK-011";
/// Rule id of "Fabric link slower than both its ends support".
pub const FABRIC_LINK: &str = "FAB-LINK-010";

/// Oracle's OKE/OCI health check: an effective (post-FEC) BER at or above this fails a link.
pub const EFFECTIVE_BER_LIMIT: f64 = 1e-12;
/// Oracle's health check: a raw (pre-FEC) BER at or above this fails a link.
pub const RAW_BER_LIMIT: f64 = 1e-5;
/// Oracle's health check: more raw errors than this on one lane is a warning.
pub const RAW_ERRORS_PER_LANE_LIMIT: u64 = 10_000;
/// Oracle's health check tolerates mlxlink's "Bad signal integrity" below this raw BER.
pub const SIGNAL_INTEGRITY_TOLERATED_BER: f64 = 1e-7;
/// Seconds after boot during which link changes are the driver bringing ports up (Oracle's
/// link-flapping check uses the same 30 minutes of grace).
pub const BOOT_GRACE_SECONDS: f64 = 1800.0;

fn dev(l: &LinkQuality) -> String {
    if l.device.is_empty() {
        "link".to_string()
    } else {
        l.device.clone()
    }
}

fn src(l: &LinkQuality, field: &str) -> String {
    format!("mstlink -d {}: {field}", dev(l))
}

/// Rule [`EFFECTIVE_ERRORS`]: "Errors left after FEC on a link".
pub fn effective_errors(node: &Node) -> Vec<Finding> {
    let mut out = vec![];
    for l in &node.link_quality {
        let errors = l.effective_errors.unwrap_or(0);
        let ber_bad = l.effective_ber.is_some_and(|b| b >= EFFECTIVE_BER_LIMIT);
        if errors == 0 && !ber_bad {
            continue;
        }
        let mut evidence = vec![];
        if let Some(e) = l.effective_errors {
            evidence.push(ev(src(l, "Effective Physical Errors"), e.to_string()));
        }
        if let Some(b) = l.effective_ber {
            evidence.push(ev(src(l, "Effective Physical BER"), format!("{b:e}")));
        }
        out.push(finding(
            EFFECTIVE_ERRORS,
            Severity::Error,
            dev(l),
            format!(
                "{} has errors that FEC did not correct ({errors} effective physical errors{}): packets are dropped on this link and RDMA retransmits them, which stalls collectives",
                dev(l),
                l.effective_ber.map(|b| format!(", effective BER {b:e}")).unwrap_or_default()
            ),
            evidence,
            format!("Clean or replace the optic or cable of {} (and check the switch side); clear the counters (`mlxlink -d {} -pc`) and watch whether they come back.", dev(l), dev(l)),
        ));
    }
    out
}

/// Rule [`RAW_ERRORS`]: "High raw (pre-FEC) error rate on a link".
pub fn raw_errors(node: &Node) -> Vec<Finding> {
    let mut out = vec![];
    for l in &node.link_quality {
        let raw_bad = l.raw_ber.is_some_and(|b| b >= RAW_BER_LIMIT);
        let worst_lane = l.raw_errors_per_lane.iter().copied().max().unwrap_or(0);
        // Lane counts are cumulative since the last clear: millions of raw errors over weeks at a
        // raw BER of 1E-8 is a healthy PAM4 link. The count limit stands in only where no BER
        // was printed.
        let lanes_bad = l.raw_ber.is_none() && worst_lane > RAW_ERRORS_PER_LANE_LIMIT;
        if !raw_bad && !lanes_bad {
            continue;
        }
        let mut evidence = vec![];
        if let Some(b) = l.raw_ber {
            evidence.push(ev(src(l, "Raw Physical BER"), format!("{b:e}")));
        }
        if !l.raw_errors_per_lane.is_empty() {
            evidence.push(ev(
                src(l, "Raw Physical Errors Per Lane"),
                l.raw_errors_per_lane
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
            ));
        }
        let (severity, what) = if raw_bad {
            (
                Severity::Error,
                format!(
                    "a raw BER of {:e}, at or above {RAW_BER_LIMIT:e}",
                    l.raw_ber.unwrap_or(0.0)
                ),
            )
        } else {
            (
                Severity::Warning,
                format!("{worst_lane} raw errors on one lane, above {RAW_ERRORS_PER_LANE_LIMIT}"),
            )
        };
        out.push(finding(
            RAW_ERRORS,
            severity,
            dev(l),
            format!(
                "{} shows {what}{}: FEC still corrects it, but a link this noisy is marginal (a dirty or failing optic, a bent cable) and tends to get worse",
                dev(l),
                l.minutes_since_clear.map(|m| format!(" over {m} minutes")).unwrap_or_default()
            ),
            evidence,
            format!("Clean the connectors and reseat the module of {}, or replace it; compare with the other ports of the node.", dev(l)),
        ));
    }
    out
}

/// Rule [`RECOMMENDATION`]: "mlxlink recommends action on a link".
pub fn recommendation(node: &Node) -> Vec<Finding> {
    let mut out = vec![];
    for l in &node.link_quality {
        let Some(r) = &l.recommendation else { continue };
        if r.contains("No issue was observed") {
            continue;
        }
        let tolerated = r.contains("Bad signal integrity")
            && l.raw_ber
                .is_some_and(|b| b < SIGNAL_INTEGRITY_TOLERATED_BER);
        out.push(finding(
            RECOMMENDATION,
            if tolerated {
                Severity::Info
            } else {
                Severity::Warning
            },
            dev(l),
            format!(
                "mlxlink's troubleshooting says for {}: {r}{}",
                dev(l),
                if tolerated {
                    " (the raw BER is low enough that this can wait)"
                } else {
                    ""
                }
            ),
            vec![ev(src(l, "Recommendation"), r.clone())],
            "Follow the recommendation (usually: check the cable and the module, then the far end); `mlxlink -d DEV -m -c` shows the module and the counters.",
        ));
    }
    out
}

/// Rule [`LINK_NOT_UP`]: "NIC physical link not up (mlxlink)".
pub fn link_not_up(node: &Node) -> Vec<Finding> {
    let mut out = vec![];
    for l in &node.link_quality {
        let Some(s) = &l.state else { continue };
        if s == "Active" {
            continue;
        }
        out.push(finding(
            LINK_NOT_UP,
            Severity::Warning,
            dev(l),
            format!(
                "the physical link of {} is {s}{}, not Active: the port carries no traffic",
                dev(l),
                l.physical_state
                    .as_deref()
                    .map(|p| format!(" ({p})"))
                    .unwrap_or_default()
            ),
            vec![ev(src(l, "State"), s.clone())],
            "Check the cable and the module, and the switch port; `Polling` means no partner is seen.",
        ));
    }
    out
}

/// Rule [`MODULE_TEMPERATURE`]: "Transceiver temperature above its alarm threshold".
pub fn module_temperature(node: &Node) -> Vec<Finding> {
    let mut out = vec![];
    for l in &node.link_quality {
        let Some(m) = &l.module else { continue };
        let (Some(t), Some((_, high))) = (m.temperature_c, m.temperature_range_c) else {
            continue;
        };
        if t <= high {
            continue;
        }
        out.push(finding(
            MODULE_TEMPERATURE,
            Severity::Warning,
            dev(l),
            format!("the module of {} is at {t} °C, above its own alarm threshold of {high} °C: hot optics lose signal and fail", dev(l)),
            vec![ev(src(l, "Temperature [C]"), format!("{t} [..{high}]"))],
            "Check the airflow around the NIC and the switch port; replace the module if it keeps running hot.",
        ));
    }
    out
}

/// Rule [`MODULE_ALARM`]: "Transceiver module reports an alarm".
pub fn module_alarm(node: &Node) -> Vec<Finding> {
    let mut out = vec![];
    let mut modules: Vec<_> = node.transceivers.iter().collect();
    modules.sort_by(|a, b| a.interface.cmp(&b.interface));
    for m in modules {
        let alarms = fabrik_parse::formats::ethtool_module::alarms(m);
        if alarms.is_empty() {
            continue;
        }
        let iface = if m.interface.is_empty() {
            "module".to_string()
        } else {
            m.interface.clone()
        };
        let what = [&m.vendor, &m.part_number]
            .iter()
            .filter_map(|v| v.as_deref())
            .collect::<Vec<_>>()
            .join(" ");
        let source = format!("ethtool -m {iface}");
        let mut evidence: Vec<_> = alarms
            .iter()
            .map(|a| ev(source.clone(), a.clone()))
            .collect();
        for l in &m.lanes {
            if let Some(p) = l.rx_power_mw {
                let dbm = fabrik_parse::formats::ethtool_module::dbm(p)
                    .map(|d| format!(" ({d:.2} dBm)"))
                    .unwrap_or_default();
                let lane = if l.lane == 0 {
                    String::new()
                } else {
                    format!(" lane {}", l.lane)
                };
                evidence.push(ev(source.clone(), format!("rx power{lane}: {p} mW{dbm}")));
            }
        }
        out.push(finding(
            MODULE_ALARM,
            Severity::Warning,
            iface.clone(),
            format!(
                "the module{} of {iface} reports {}: {}",
                if what.is_empty() { String::new() } else { format!(" ({what})") },
                if alarms.len() == 1 { "an alarm".to_string() } else { format!("{} alarms", alarms.len()) },
                alarms.join("; ")
            ),
            evidence,
            "A receive power alarm means a dirty or damaged fiber or connector, a far end not transmitting, or a failing optic: clean and reseat both ends, check the far end's transmit power, replace the module or cable; a bias or temperature alarm means the module itself is failing.",
        ));
    }
    out
}

/// Rule [`ETH_LINK`]: "Ethernet link down or below what both ends support".
pub fn eth_link(node: &Node) -> Vec<Finding> {
    let mut out = vec![];
    for nif in interfaces(node) {
        let Some(s) = &nif.link_settings else {
            continue;
        };
        let path = format!("ethtool {}", nif.name);
        if s.link_detected == Some(false) {
            out.push(finding(
                ETH_LINK,
                Severity::Warning,
                nif.name.clone(),
                format!("{} has no link (`Link detected: no`)", nif.name),
                vec![ev(format!("{path}: Link detected"), "no")],
                format!("Check the cable and the switch port of {}; `ip link set {} up` if it is administratively down.", nif.name, nif.name),
            ));
            continue;
        }
        let (Some(speed), Some(partner), Some(own)) =
            (s.speed_mbps, s.max_partner_mbps, s.max_supported_mbps)
        else {
            continue;
        };
        let both = partner.min(own);
        if speed >= both {
            continue;
        }
        out.push(finding(
            ETH_LINK,
            Severity::Warning,
            nif.name.clone(),
            format!(
                "{} runs at {speed} Mb/s although it and its link partner both support {both} Mb/s: the link trained low (cable, module, or a forced speed)",
                nif.name
            ),
            vec![
                ev(format!("{path}: Speed"), format!("{speed}Mb/s")),
                ev(format!("{path}: Supported link modes"), format!("up to {own}")),
                ev(format!("{path}: Link partner advertised link modes"), format!("up to {partner}")),
            ],
            format!("Check the cable or module of {} (a lower-rated one caps the speed) and whether speed or autonegotiation was forced (`ethtool -s`).", nif.name),
        ));
    }
    out
}

/// NIC statistics (mlx5 names, Linux `Documentation/networking/device_drivers/ethernet/
/// mellanox/mlx5/counters.rst`) that count damaged frames on the wire.
const PHY_ERRORS: &[&str] = &[
    "rx_crc_errors_phy",
    "rx_symbol_err_phy",
    "rx_pcs_symbol_err_phy",
    "rx_in_range_len_errors_phy",
    "rx_undersize_pkts_phy",
    "rx_fragments_phy",
    "rx_jabbers_phy",
];
/// Statistics that count frames the NIC dropped for lack of buffers.
const DISCARDS: &[&str] = &["rx_discards_phy", "rx_out_of_buffer", "tx_discards_phy"];

/// Rule [`NIC_STATS`]: "Physical-layer errors or discards in NIC statistics".
pub fn nic_stats(node: &Node) -> Vec<Finding> {
    let mut out = vec![];
    for nif in interfaces(node) {
        let pick = |names: &[&str]| -> BTreeMap<String, u64> {
            names
                .iter()
                .filter_map(|n| {
                    nif.nic_stats
                        .get(*n)
                        .filter(|v| **v > 0)
                        .map(|v| (n.to_string(), *v))
                })
                .collect()
        };
        let errors = pick(PHY_ERRORS);
        let discards = pick(DISCARDS);
        let path = format!("ethtool -S {}", nif.name);
        if !errors.is_empty() {
            out.push(finding(
                NIC_STATS,
                Severity::Warning,
                nif.name.clone(),
                format!(
                    "{} has received damaged frames ({}): the physical link (cable, optic, connector) corrupts data, and each lost RoCE packet costs a retransmission",
                    nif.name,
                    errors.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
                ),
                errors.iter().map(|(k, v)| ev(format!("{path}: {k}"), v.to_string())).collect(),
                format!("Check the cable and module of {} (`mlxlink` shows the BER); counters are cumulative, so compare two readings before replacing parts.", nif.name),
            ));
        }
        if !discards.is_empty() {
            out.push(finding(
                NIC_STATS,
                Severity::Warning,
                nif.name.clone(),
                format!(
                    "{} dropped frames for lack of buffers ({}): on a lossless RoCE fabric PFC should prevent this; drops mean retransmissions and stalled collectives",
                    nif.name,
                    discards.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
                ),
                discards.iter().map(|(k, v)| ev(format!("{path}: {k}"), v.to_string())).collect(),
                "Check that PFC is on for the RoCE priority on host and switch (`mlnx_qos`), that NCCL's traffic class lands on it, and the PCIe link of the NIC (a slow link backs up the receive buffers).",
            ));
        }
    }
    out
}

/// Rule [`NVLINK`]: "NVLink inactive or slower than the GPU's other links".
///
/// A PCIe card (`H100 PCIe`, GeForce, RTX, Quadro) lists every link its chip has but only the
/// ones its NVLink bridges wire come up: links inactive on every such GPU alike are its wiring,
/// not a fault. A link inactive on one GPU and up on another is a fault on any board.
pub fn nvlink(node: &Node) -> Vec<Finding> {
    let mut out = vec![];
    let inactive_of = |g: &fabrik_model::Gpu| -> BTreeSet<u32> {
        g.nvlinks
            .iter()
            .filter(|l| l.gbps.is_none())
            .map(|l| l.link)
            .collect()
    };
    let with_links: Vec<&fabrik_model::Gpu> =
        node.gpus.iter().filter(|g| !g.nvlinks.is_empty()).collect();
    // Links up on some GPU of the node.
    let up_somewhere: BTreeSet<u32> = with_links
        .iter()
        .flat_map(|g| {
            g.nvlinks
                .iter()
                .filter(|l| l.gbps.is_some())
                .map(|l| l.link)
        })
        .collect();
    for gpu in &with_links {
        let label = format!("GPU {}", gpu.pci.address);
        let inactive = inactive_of(gpu);
        let fastest = gpu
            .nvlinks
            .iter()
            .filter_map(|l| l.gbps)
            .fold(0.0_f64, f64::max);
        let slow: Vec<String> = gpu
            .nvlinks
            .iter()
            .filter_map(|l| {
                l.gbps
                    .filter(|g| *g + 0.01 < fastest)
                    .map(|g| format!("link {} at {g} GB/s", l.link))
            })
            .collect();
        let up_elsewhere: Vec<u32> = inactive
            .iter()
            .copied()
            .filter(|l| up_somewhere.contains(l))
            .collect();
        let bridged_card = gpu.model.as_deref().is_some_and(|m| {
            let m = m.to_ascii_lowercase();
            ["pcie", "geforce", "rtx", "quadro"]
                .iter()
                .any(|k| m.contains(k))
        });
        let faulty: Vec<u32> = if bridged_card {
            up_elsewhere
        } else {
            inactive.iter().copied().collect()
        };
        if !faulty.is_empty() {
            let links = faulty
                .iter()
                .map(|l| format!("link {l}"))
                .collect::<Vec<_>>()
                .join(", ");
            let elsewhere = if bridged_card {
                " while another GPU of the node has them up"
            } else {
                ""
            };
            out.push(finding(
                NVLINK,
                Severity::Error,
                label.clone(),
                format!(
                    "{label} has {} of {} NVLinks inactive ({links}){elsewhere}: GPU-to-GPU traffic loses that bandwidth, or falls back to PCIe when none is up",
                    faulty.len(),
                    gpu.nvlinks.len(),
                ),
                faulty.iter().map(|l| ev(format!("nvidia-smi nvlink -s: GPU {} Link {l}", gpu.pci.address), "<inactive>")).collect(),
                "On NVSwitch systems check that nvidia-fabricmanager runs; otherwise reset the GPU (`nvidia-smi -r`) or reboot, and check `nvidia-smi nvlink -e` for errors; a link that stays down is a hardware fault (on a PCIe card: the bridge).",
            ));
        } else if !slow.is_empty() {
            out.push(finding(
                NVLINK,
                Severity::Warning,
                label.clone(),
                format!("{label} has NVLinks slower than its others ({}; the fastest runs at {fastest} GB/s)", slow.join(", ")),
                vec![ev(format!("nvidia-smi nvlink -s: GPU {}", gpu.pci.address), slow.join(", "))],
                "Check `nvidia-smi nvlink -e` for errors on those links; reset the GPU or reboot.",
            ));
        }
    }
    out
}

/// Rule [`IBDIAGNET`]: "ibdiagnet reported errors".
pub fn ibdiagnet(node: &Node) -> Vec<Finding> {
    let Some(f) = &node.fabric else { return vec![] };
    let failing: Vec<_> = f.checks.iter().filter(|c| c.errors > 0).collect();
    if failing.is_empty() {
        return vec![];
    }
    let mut evidence: Vec<_> = failing
        .iter()
        .map(|c| {
            ev(
                format!("ibdiagnet: {}", c.stage),
                format!("{} errors", c.errors),
            )
        })
        .collect();
    evidence.extend(
        f.errors
            .iter()
            .take(5)
            .map(|e| ev("ibdiagnet -E-", e.clone())),
    );
    vec![finding(
        IBDIAGNET,
        Severity::Warning,
        "fabric",
        format!(
            "ibdiagnet found errors in the fabric: {}",
            failing
                .iter()
                .map(|c| format!("{} ({})", c.stage, c.errors))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        evidence,
        "Read the details in ibdiagnet's log (`/var/tmp/ibdiagnet2/ibdiagnet2.log`, the `-E-` lines) and fix the links or nodes it names; rerun after clearing counters (`ibdiagnet -pc`).",
    )]
}

/// Rule [`FABRIC_LINK`]: "Fabric link slower than both its ends support".
pub fn fabric_link(node: &Node) -> Vec<Finding> {
    let Some(f) = &node.fabric else { return vec![] };
    let mut out = vec![];
    for l in &f.links {
        let Some(c) = l.could_be.as_deref().filter(|c| c.contains("Could be")) else {
            continue;
        };
        let subject = format!("{} port {}", l.node, l.port);
        out.push(finding(
            FABRIC_LINK,
            Severity::Warning,
            subject.clone(),
            format!(
                "the link from {subject} to {} runs at {} {} although both ends support more ({c})",
                l.peer.as_deref().unwrap_or("its peer"),
                l.width.as_deref().unwrap_or("?"),
                l.speed.as_deref().unwrap_or("?")
            ),
            vec![ev(format!("iblinkinfo: {subject}"), c.to_string())],
            "Reseat or replace the cable of that link (lanes that failed to train lower the width; a lower-rated cable lowers the speed).",
        ));
    }
    out
}
