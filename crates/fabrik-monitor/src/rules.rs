//! Counter rules: what moving counters mean, as findings with evidence and a fix (pure).
//!
//! Every rule has a stable id `FAB-CNT-NNN`, documented in docs/monitor.md.

use std::time::Duration;

use fabrik_model::{Evidence, Finding, Severity};

use crate::delta::{compare, Change, CounterChange, Presence, Report};
use crate::ethtool::priority_pause;
use crate::sample::{Sample, Source};

/// Rates above which congestion counters become findings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    /// PFC pause frames per second, per priority and direction (`rx_prio3_pause`...).
    pub pause_frames_per_s: f64,
    /// CNPs per second (`np_cnp_sent`, `rp_cnp_handled`).
    pub cnp_per_s: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            pause_frames_per_s: 1000.0,
            cnp_per_s: 1000.0,
        }
    }
}

/// A rule that fires when any of its counters grows at all.
struct GrowRule {
    id: &'static str,
    severity: Severity,
    counters: &'static [(Source, &'static str)],
    what: &'static str,
    fix: &'static str,
}

use Source::{Counters as C, Ethtool as E, HwCounters as H, Statistics as S};

const PORT_RULES: &[GrowRule] = &[
    GrowRule {
        id: "FAB-CNT-101",
        severity: Severity::Warning,
        counters: &[(C, "symbol_error")],
        what: "symbol errors grew: the physical link corrupts bits (cable, transceiver or port)",
        fix: "Reseat or replace the cable and transceivers of this port and of its switch port; \
              check BER and FEC with `mlxlink -d DEV -p PORT -m` (or `ethtool -m IF`); clear the \
              counters with `perfquery -x -R` and watch again",
    },
    GrowRule {
        id: "FAB-CNT-102",
        severity: Severity::Error,
        counters: &[(C, "link_downed"), (H, "link_downed")],
        what: "the link went down during the interval (link_downed grew): a flapping link",
        fix: "Check the cable, transceivers and the switch port's log for flaps; check \
              `dmesg` for the driver's link events; replace the cable if it flaps again",
    },
    GrowRule {
        id: "FAB-CNT-103",
        severity: Severity::Warning,
        counters: &[(C, "link_error_recovery")],
        what: "link error recovery grew: the link retrained after errors",
        fix: "A marginal link: check cable and transceivers (`mlxlink -m` for BER), and the \
              switch port; replace the cable if it keeps recovering",
    },
    GrowRule {
        id: "FAB-CNT-104",
        severity: Severity::Warning,
        counters: &[
            (C, "port_rcv_errors"),
            (C, "port_rcv_remote_physical_errors"),
        ],
        what: "receive errors grew: malformed or corrupt packets arrive on this port",
        fix: "Check the link's physical health (symbol errors, BER with `mlxlink -m`) and the \
              sending side; replace the cable if errors keep growing",
    },
    GrowRule {
        id: "FAB-CNT-105",
        severity: Severity::Warning,
        counters: &[(C, "port_xmit_discards")],
        what: "transmit discards grew: the port dropped packets it could not send (congestion, \
               link down, or a wrong partition key)",
        fix: "Look for congestion (port_xmit_wait, PFC pauses) and link flaps on this port; \
              check the subnet manager's partition config (P_Key) for this node",
    },
    GrowRule {
        id: "FAB-CNT-106",
        severity: Severity::Warning,
        counters: &[(C, "excessive_buffer_overrun_errors")],
        what: "excessive buffer overrun errors grew: the receive buffer overflowed (flow \
               control between this port and its peer is broken)",
        fix: "Check the link's credit/flow-control settings and the peer switch port; on \
              RoCE check that PFC is enabled on the same priority at both ends",
    },
    GrowRule {
        id: "FAB-CNT-107",
        severity: Severity::Warning,
        counters: &[(C, "local_link_integrity_errors")],
        what: "local link integrity errors grew: the physical link exceeded its error \
               threshold",
        fix: "Check cable and transceivers (`mlxlink -m`), reseat or replace them",
    },
    GrowRule {
        id: "FAB-CNT-110",
        severity: Severity::Warning,
        counters: &[
            (H, "out_of_sequence"),
            (H, "out_of_seq_request"),
            (H, "packet_seq_err"),
            (H, "implied_nak_seq_err"),
            (H, "local_ack_timeout_err"),
            (H, "rnr_nak_retry_err"),
            (H, "duplicate_request"),
            (H, "rcvd_seq_err"),
            (H, "rcvd_rnr_err"),
            (H, "send_rnr_err"),
            (H, "completer_retry_err"),
            (H, "roce_adp_retrans"),
            (H, "roce_adp_retrans_to"),
        ],
        what: "RDMA retransmission counters grew: packets are lost or arrive out of order, and \
               RC queue pairs retransmit (each costs a timeout or a go-back-N)",
        fix: "On RoCE, make the fabric lossless for RDMA traffic: PFC on the RoCE priority at \
              the NIC (`mlnx_qos -i IF --pfc 0,0,0,1,0,0,0,0`) and every switch hop, ECN/DCQCN \
              enabled; check for link errors on the path; RNR counters mean the receiver posts \
              receives too slowly",
    },
    GrowRule {
        id: "FAB-CNT-111",
        severity: Severity::Error,
        counters: &[
            (H, "retry_exceeded_err"),
            (H, "retry_rnr_exceeded_err"),
            (H, "req_transport_retries_exceeded"),
            (H, "req_rnr_retries_exceeded"),
        ],
        what: "retries were exhausted: queue pairs went to the error state and the job's \
               connection failed",
        fix: "Find why packets are lost (link errors, congestion without PFC, a peer that \
              stopped); raise the QP retry count/timeout only after that (NCCL_IB_TIMEOUT, \
              NCCL_IB_RETRY_CNT)",
    },
    GrowRule {
        id: "FAB-CNT-112",
        severity: Severity::Warning,
        counters: &[(H, "out_of_buffer")],
        what: "out_of_buffer grew: packets were dropped because no receive buffer was posted",
        fix: "The receiving application posts receive WQEs too slowly or too few; enlarge its \
              receive queue, or check that the host is not starved of CPU",
    },
];

const NETDEV_RULES: &[GrowRule] = &[
    GrowRule {
        id: "FAB-CNT-113",
        severity: Severity::Warning,
        counters: &[(E, "rx_discards_phy"), (E, "tx_discards_phy")],
        what: "the NIC's physical port discarded packets (rx/tx_discards_phy grew): its buffers \
               overflowed, typically a lossy RoCE fabric or a host that cannot keep up",
        fix: "Enable PFC on the RoCE priority (`mlnx_qos -i IF --pfc ...`) end to end, or ECN; \
              check PCIe bandwidth and the NIC's NUMA placement",
    },
    GrowRule {
        id: "FAB-CNT-114",
        severity: Severity::Warning,
        counters: &[
            (S, "rx_errors"),
            (S, "tx_errors"),
            (S, "rx_crc_errors"),
            (S, "rx_frame_errors"),
            (S, "rx_fifo_errors"),
            (S, "rx_missed_errors"),
            (S, "rx_over_errors"),
            (S, "rx_length_errors"),
            (S, "tx_carrier_errors"),
            (S, "tx_fifo_errors"),
            (S, "tx_aborted_errors"),
        ],
        what: "interface error counters grew",
        fix: "CRC/frame errors point at the cable or transceiver; fifo/missed/over errors at a \
              host that drains the NIC too slowly (ring size `ethtool -G`, IRQ affinity); \
              carrier errors at a flapping link",
    },
];

/// Findings for counters that moved between two samples, with default thresholds.
pub fn counter_findings(
    before: &Sample,
    after: &Sample,
    interval: Option<Duration>,
) -> Vec<Finding> {
    let report = compare(before, after, interval);
    report_findings(&report, &Thresholds::default())
}

/// Findings from a comparison already made.
pub fn report_findings(report: &Report, th: &Thresholds) -> Vec<Finding> {
    let mut out = Vec::new();
    let interval = report.interval_s;
    for p in &report.ports {
        let subject = p.subject();
        let path_of = |c: &CounterChange| {
            format!(
                "/sys/class/infiniband/{}/ports/{}/{}/{}",
                p.device,
                p.port,
                c.source.as_str(),
                c.name
            )
        };
        match p.presence {
            Presence::Vanished => out.push(presence_finding(&subject, "RDMA port", true)),
            Presence::Appeared => out.push(presence_finding(&subject, "RDMA port", false)),
            Presence::Both => {}
        }
        for rule in PORT_RULES {
            grow_rule(rule, &subject, &p.changes, interval, &path_of, &mut out);
        }
        // CNPs are how DCQCN works; only a high rate says the fabric is congested.
        let cnp: Vec<&CounterChange> = p
            .changes
            .iter()
            .filter(|c| {
                c.source == H && matches!(c.name.as_str(), "np_cnp_sent" | "rp_cnp_handled")
            })
            .filter(|c| c.per_second.is_some_and(|r| r > th.cnp_per_s))
            .collect();
        if !cnp.is_empty() {
            let rates: Vec<String> = cnp
                .iter()
                .map(|c| format!("{} {:.0}/s", c.name, c.per_second.unwrap_or(0.0)))
                .collect();
            out.push(Finding {
                rule: "FAB-CNT-109".into(),
                severity: Severity::Warning,
                subject: subject.clone(),
                message: format!(
                    "congestion notification rate above {:.0}/s ({}): ECN marks the RoCE \
                     traffic of this port heavily and DCQCN keeps cutting its rate",
                    th.cnp_per_s,
                    rates.join(", ")
                ),
                evidence: cnp
                    .iter()
                    .map(|c| evidence(&path_of(c), c, interval))
                    .collect(),
                fix: "Find the congested hop (incast, oversubscribed uplinks, a slow link); \
                      check switch ECN thresholds and that PFC and ECN use the same priority; \
                      spread traffic over more paths (NCCL_IB_QPS_PER_CONNECTION, adaptive \
                      routing)"
                    .into(),
            });
        }
        meta_findings(&subject, &p.changes, interval, &path_of, &mut out);
    }
    for n in &report.netdevs {
        let subject = n.name.clone();
        let path_of = |c: &CounterChange| match c.source {
            Source::Ethtool => format!("ethtool -S {}: {}", n.name, c.name),
            _ => format!("/sys/class/net/{}/statistics/{}", n.name, c.name),
        };
        match n.presence {
            Presence::Vanished => out.push(presence_finding(&subject, "interface", true)),
            Presence::Appeared => out.push(presence_finding(&subject, "interface", false)),
            Presence::Both => {}
        }
        for rule in NETDEV_RULES {
            grow_rule(rule, &subject, &n.changes, interval, &path_of, &mut out);
        }
        let pause: Vec<&CounterChange> = n
            .changes
            .iter()
            .filter(|c| c.source == E && priority_pause(&c.name).is_some())
            .filter(|c| c.per_second.is_some_and(|r| r > th.pause_frames_per_s))
            .collect();
        if !pause.is_empty() {
            let rates: Vec<String> = pause
                .iter()
                .map(|c| format!("{} {:.0}/s", c.name, c.per_second.unwrap_or(0.0)))
                .collect();
            let rdma = if n.rdma_ports.is_empty() {
                String::new()
            } else {
                format!(" (RDMA {})", n.rdma_ports.join(", "))
            };
            out.push(Finding {
                rule: "FAB-CNT-108".into(),
                severity: Severity::Warning,
                subject: subject.clone(),
                message: format!(
                    "PFC pause frames above {:.0}/s on {subject}{rdma}: {}; rx pauses mean the \
                     switch throttles this NIC, tx pauses that this host cannot drain its receive \
                     buffers (a pause storm stalls every flow on that priority)",
                    th.pause_frames_per_s,
                    rates.join(", ")
                ),
                evidence: pause
                    .iter()
                    .map(|c| evidence(&path_of(c), c, interval))
                    .collect(),
                fix: "Enable ECN/DCQCN so congestion is handled before PFC triggers; find the \
                      congested hop; for tx pauses check the host (PCIe bandwidth, NUMA, \
                      `rx_discards_phy`); enable the switch's PFC watchdog against storms"
                    .into(),
            });
        }
        meta_findings(&subject, &n.changes, interval, &path_of, &mut out);
    }
    fabrik_model::sort_findings(&mut out);
    out
}

fn grow_rule(
    rule: &GrowRule,
    subject: &str,
    changes: &[CounterChange],
    interval: Option<f64>,
    path_of: &dyn Fn(&CounterChange) -> String,
    out: &mut Vec<Finding>,
) {
    let grown: Vec<&CounterChange> = changes
        .iter()
        .filter(|c| {
            rule.counters
                .iter()
                .any(|(s, n)| *s == c.source && *n == c.name)
        })
        .filter(|c| match c.change {
            Change::Moved { delta } => delta > 0,
            Change::Saturated { delta_at_least } => delta_at_least > 0,
            _ => false,
        })
        .collect();
    if grown.is_empty() {
        return;
    }
    let summary: Vec<String> = grown.iter().map(|c| describe(c, interval)).collect();
    out.push(Finding {
        rule: rule.id.into(),
        severity: rule.severity,
        subject: subject.into(),
        message: format!("{} ({})", rule.what, summary.join(", ")),
        evidence: grown
            .iter()
            .map(|c| evidence(&path_of(c), c, interval))
            .collect(),
        fix: rule.fix.into(),
    });
}

fn meta_findings(
    subject: &str,
    changes: &[CounterChange],
    interval: Option<f64>,
    path_of: &dyn Fn(&CounterChange) -> String,
    out: &mut Vec<Finding>,
) {
    let pick = |f: &dyn Fn(&Change) -> bool| -> Vec<&CounterChange> {
        changes.iter().filter(|c| f(&c.change)).collect()
    };
    let resets = pick(&|c| matches!(c, Change::Reset));
    if !resets.is_empty() {
        out.push(Finding {
            rule: "FAB-CNT-120".into(),
            severity: Severity::Info,
            subject: subject.into(),
            message: format!(
                "{} counter(s) went down, so they were reset between the samples \
                 (driver reload, `perfquery -R`, device re-created); no rate is computed for them: {}",
                resets.len(),
                names(&resets)
            ),
            evidence: resets.iter().map(|c| evidence(&path_of(c), c, interval)).collect(),
            fix: "Nothing to fix if the reset was intended; otherwise look for driver reloads or \
                  a device reset in `dmesg`, and sample again"
                .into(),
        });
    }
    let sat = pick(&|c| matches!(c, Change::Saturated { .. }));
    if !sat.is_empty() {
        out.push(Finding {
            rule: "FAB-CNT-121".into(),
            severity: Severity::Warning,
            subject: subject.into(),
            message: format!(
                "{} counter(s) are saturated (stuck at their maximum, as IB PMA \
                 counters stop rather than wrap), so further errors are invisible: {}",
                sat.len(),
                names(&sat)
            ),
            evidence: sat
                .iter()
                .map(|c| evidence(&path_of(c), c, interval))
                .collect(),
            fix: "Clear the port's counters (`perfquery -x -R LID PORT` on InfiniBand), then \
                  watch them again; a saturated error counter usually hides a long-standing link \
                  problem"
                .into(),
        });
    }
    let bad = pick(&|c| matches!(c, Change::Unreadable { .. }));
    if !bad.is_empty() {
        out.push(Finding {
            rule: "FAB-CNT-123".into(),
            severity: Severity::Info,
            subject: subject.into(),
            message: format!(
                "{} counter(s) could not be read as numbers: {}",
                bad.len(),
                names(&bad)
            ),
            evidence: bad
                .iter()
                .map(|c| {
                    let reason = match &c.change {
                        Change::Unreadable { reason } => reason.clone(),
                        _ => String::new(),
                    };
                    Evidence::new(path_of(c), reason)
                })
                .collect(),
            fix: "Check the driver version and `dmesg`; a counter that the device does not \
                  support reads as an error on some kernels"
                .into(),
        });
    }
}

fn presence_finding(subject: &str, kind: &str, vanished: bool) -> Finding {
    let (what, sev) = if vanished {
        (
            "vanished between the two samples (device removed, driver unloaded or reset)",
            Severity::Warning,
        )
    } else {
        ("appeared between the two samples", Severity::Info)
    };
    Finding {
        rule: "FAB-CNT-122".into(),
        severity: sev,
        subject: subject.into(),
        message: format!("{kind} {subject} {what}"),
        evidence: vec![Evidence::new(
            subject,
            if vanished {
                "present before, absent after"
            } else {
                "absent before, present after"
            },
        )],
        fix: "Look in `dmesg` for a driver reload, PCI error or firmware reset of this device"
            .into(),
    }
}

fn names(cs: &[&CounterChange]) -> String {
    cs.iter()
        .map(|c| c.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn describe(c: &CounterChange, interval: Option<f64>) -> String {
    match (&c.change, c.per_second, interval) {
        (Change::Moved { delta }, Some(r), Some(i)) => {
            format!("{} +{delta} in {i:.1} s, {r:.2}/s", c.name)
        }
        (Change::Moved { delta }, _, _) => format!("{} +{delta}", c.name),
        (Change::Saturated { delta_at_least }, _, _) => {
            format!("{} +{delta_at_least} or more, saturated", c.name)
        }
        _ => c.name.clone(),
    }
}

/// `before 10, after 25, interval 10.0 s`: the three facts a counter finding rests on.
fn evidence(path: &str, c: &CounterChange, interval: Option<f64>) -> Evidence {
    let show = |v: Option<u64>| v.map_or("unreadable".to_string(), |v| v.to_string());
    let iv = interval.map_or("interval unknown".to_string(), |i| {
        format!("interval {i:.3} s")
    });
    let tail = match (&c.change, c.per_second) {
        (Change::Moved { delta }, Some(r)) => format!(" (+{delta}, {r:.2}/s)"),
        (Change::Moved { delta }, None) => format!(" (+{delta})"),
        (Change::Reset, _) => " (reset)".to_string(),
        (Change::Saturated { .. }, _) => " (saturated)".to_string(),
        _ => String::new(),
    };
    Evidence::new(
        path,
        format!(
            "before {}, after {}, {iv}{tail}",
            show(c.before),
            show(c.after)
        ),
    )
}

/// Every rule id this module can emit, for docs and tests.
pub fn rule_ids() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = PORT_RULES
        .iter()
        .chain(NETDEV_RULES.iter())
        .map(|r| r.id)
        .collect();
    v.extend([
        "FAB-CNT-108",
        "FAB-CNT-109",
        "FAB-CNT-120",
        "FAB-CNT-121",
        "FAB-CNT-122",
        "FAB-CNT-123",
    ]);
    v.sort_unstable();
    v
}
