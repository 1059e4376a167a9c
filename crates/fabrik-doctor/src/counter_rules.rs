//! Counter rules: what moving counters mean, as findings with evidence and a fix (pure).
//!
//! Every rule has a stable id `FAB-CNT-NNN`; its page (severity, fix, sources) is beside it in
//! the rule catalog, [`crate::catalog::counters`], and documented in docs/monitor.md. The rules
//! read a comparison of two samples ([`fabrik_model::counters::Report`]), which `fabrik-monitor`
//! makes.

use fabrik_model::counters::{priority_pause, Change, CounterChange, Presence, Report, Source};
use fabrik_model::{Evidence, Finding, Rule, Severity};

use crate::catalog::counters::RULES;

/// Rates above which congestion counters become findings. Both defaults (1000/s) are fabrik's
/// own line, not a vendor's figure (no NIC or switch vendor publishes an alert level for
/// either), so every command that runs these rules takes them as flags, `--pause-threshold`
/// and `--cnp-threshold` (`diff`, `top`, `doctor --watch`, `exporter`), documented in
/// docs/monitor.md.
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    /// PFC pause frames per second, per priority and direction (`rx_prio3_pause`...). A healthy
    /// lossless fabric pauses rarely; each frame may stop the priority for up to 65535 quanta of
    /// 512 bit times (IEEE 802.1Qbb: 335 µs at 100 Gb/s), so a thousand a second means the
    /// priority is held up much of the time. Default 1000.
    #[cfg_attr(feature = "clap", arg(
        long = "pause-threshold",
        value_name = "PER_S",
        default_value_t = Thresholds::default().pause_frames_per_s,
        value_parser = rate,
        help = "PFC pause frames per second (per priority and direction) above which FAB-CNT-108 fires"
    ))]
    pub pause_frames_per_s: f64,
    /// CNPs per second (`np_cnp_sent`, `rp_cnp_handled`). CNPs are DCQCN at work (Zhu et al.,
    /// "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015), so a trickle is
    /// normal; a thousand a second means ECN marks this port's RoCE traffic continuously and
    /// its senders keep cutting their rate. Default 1000.
    #[cfg_attr(feature = "clap", arg(
        long = "cnp-threshold",
        value_name = "PER_S",
        default_value_t = Thresholds::default().cnp_per_s,
        value_parser = rate,
        help = "CNPs per second above which FAB-CNT-109 fires"
    ))]
    pub cnp_per_s: f64,
}

/// A rate per second on the command line: a number, 0 or more.
#[cfg(feature = "clap")]
fn rate(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!(
            "{s:?} is not a rate per second (a number, 0 or more)"
        )),
    }
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            pause_frames_per_s: 1000.0,
            cnp_per_s: 1000.0,
        }
    }
}

/// The page of a counter rule this module emits.
fn page(id: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.id == id)
}

/// The fix a finding of rule `id` carries: its page's.
fn fix_of(id: &str) -> String {
    page(id).map_or_else(String::new, |r| r.fix.to_string())
}

/// A rule that fires when any of its counters grows at all.
/// Its severity and fix are its page's in [`RULES`].
struct GrowRule {
    id: &'static str,
    counters: &'static [(Source, &'static str)],
    what: &'static str,
}

use Source::{Counters as C, Ethtool as E, HwCounters as H, Statistics as S};

const PORT_RULES: &[GrowRule] = &[
    GrowRule {
        id: "FAB-CNT-101",
        counters: &[(C, "symbol_error")],
        what: "symbol errors grew: the physical link corrupts bits (cable, transceiver or port)",
    },
    GrowRule {
        id: "FAB-CNT-102",
        counters: &[(C, "link_downed"), (H, "link_downed")],
        what: "the link went down during the interval (link_downed grew): a flapping link",
    },
    GrowRule {
        id: "FAB-CNT-103",
        counters: &[(C, "link_error_recovery")],
        what: "link error recovery grew: the link retrained after errors",
    },
    GrowRule {
        id: "FAB-CNT-104",
        counters: &[
            (C, "port_rcv_errors"),
            (C, "port_rcv_remote_physical_errors"),
        ],
        what: "receive errors grew: malformed or corrupt packets arrive on this port",
    },
    GrowRule {
        id: "FAB-CNT-105",
        counters: &[(C, "port_xmit_discards")],
        what: "transmit discards grew: the port dropped packets it could not send (congestion, \
               link down, or a wrong partition key)",
    },
    GrowRule {
        id: "FAB-CNT-106",
        counters: &[(C, "excessive_buffer_overrun_errors")],
        what: "excessive buffer overrun errors grew: the receive buffer overflowed (flow \
               control between this port and its peer is broken)",
    },
    GrowRule {
        id: "FAB-CNT-107",
        counters: &[(C, "local_link_integrity_errors")],
        what: "local link integrity errors grew: the physical link exceeded its error \
               threshold",
    },
    GrowRule {
        id: "FAB-CNT-110",
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
    },
    GrowRule {
        id: "FAB-CNT-111",
        counters: &[
            (H, "retry_exceeded_err"),
            (H, "retry_rnr_exceeded_err"),
            (H, "req_transport_retries_exceeded"),
            (H, "req_rnr_retries_exceeded"),
        ],
        what: "retries were exhausted: queue pairs went to the error state and the job's \
               connection failed",
    },
    GrowRule {
        id: "FAB-CNT-112",
        counters: &[(H, "out_of_buffer")],
        what: "out_of_buffer grew: packets were dropped because no receive buffer was posted",
    },
];

const NETDEV_RULES: &[GrowRule] = &[
    GrowRule {
        id: "FAB-CNT-113",
        counters: &[(E, "rx_discards_phy"), (E, "tx_discards_phy")],
        what: "the NIC's physical port discarded packets (rx/tx_discards_phy grew): its buffers \
               overflowed, typically a lossy RoCE fabric or a host that cannot keep up",
    },
    GrowRule {
        id: "FAB-CNT-114",
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
    },
];

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
        out.extend(presence_of(&p.presence, &subject, "RDMA port"));
        for rule in PORT_RULES {
            grow_rule(rule, &subject, &p.changes, interval, &path_of, &mut out);
        }
        // CNPs are how DCQCN works; only a high rate says the fabric is congested.
        let (cnp, rates) = above_rate(&p.changes, th.cnp_per_s, |c| {
            c.source == H && matches!(c.name.as_str(), "np_cnp_sent" | "rp_cnp_handled")
        });
        if !cnp.is_empty() {
            out.push(Finding {
                rule: "FAB-CNT-109".into(),
                severity: Severity::Warning,
                subject: subject.clone(),
                message: format!(
                    "congestion notification rate above {:.0}/s ({}): ECN marks the RoCE \
                     traffic of this port heavily and DCQCN keeps cutting its rate",
                    th.cnp_per_s, rates
                ),
                evidence: cnp
                    .iter()
                    .map(|c| evidence(&path_of(c), c, interval))
                    .collect(),
                fix: fix_of("FAB-CNT-109"),
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
        out.extend(presence_of(&n.presence, &subject, "interface"));
        for rule in NETDEV_RULES {
            grow_rule(rule, &subject, &n.changes, interval, &path_of, &mut out);
        }
        let (pause, rates) = above_rate(&n.changes, th.pause_frames_per_s, |c| {
            c.source == E && priority_pause(&c.name).is_some()
        });
        if !pause.is_empty() {
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
                    th.pause_frames_per_s, rates
                ),
                evidence: pause
                    .iter()
                    .map(|c| evidence(&path_of(c), c, interval))
                    .collect(),
                fix: fix_of("FAB-CNT-108"),
            });
        }
        meta_findings(&subject, &n.changes, interval, &path_of, &mut out);
    }
    fabrik_model::sort_findings(&mut out);
    out
}

/// The finding of a port or interface that only one of the two samples has.
fn presence_of(presence: &Presence, subject: &str, what: &str) -> Option<Finding> {
    match presence {
        Presence::Vanished => Some(presence_finding(subject, what, true)),
        Presence::Appeared => Some(presence_finding(subject, what, false)),
        Presence::Both => None,
    }
}

/// The changes `pick` selects that moved faster than `limit` per second, and their rates as
/// a message lists them (`np_cnp_sent 5000/s, ...`).
fn above_rate(
    changes: &[CounterChange],
    limit: f64,
    pick: impl Fn(&CounterChange) -> bool,
) -> (Vec<&CounterChange>, String) {
    let fast: Vec<&CounterChange> = changes
        .iter()
        .filter(|c| pick(c))
        .filter(|c| c.per_second.is_some_and(|r| r > limit))
        .collect();
    let rates: Vec<String> = fast
        .iter()
        .map(|c| format!("{} {:.0}/s", c.name, c.per_second.unwrap_or(0.0)))
        .collect();
    (fast, rates.join(", "))
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
        severity: page(rule.id).map_or(Severity::Warning, |r| r.severity),
        subject: subject.into(),
        message: format!("{} ({})", rule.what, summary.join(", ")),
        evidence: grown
            .iter()
            .map(|c| evidence(&path_of(c), c, interval))
            .collect(),
        fix: fix_of(rule.id),
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
            fix: fix_of("FAB-CNT-120"),
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
            fix: fix_of("FAB-CNT-121"),
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
            fix: fix_of("FAB-CNT-123"),
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
        fix: fix_of("FAB-CNT-122"),
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

/// The port counters that count RDMA retransmissions, sequence errors and exhausted retries
/// (those of FAB-CNT-110 and FAB-CNT-111): what a pair test over RDMA reads as its loss.
pub fn retransmission_counters() -> Vec<(Source, &'static str)> {
    PORT_RULES
        .iter()
        .filter(|r| matches!(r.id, "FAB-CNT-110" | "FAB-CNT-111"))
        .flat_map(|r| r.counters.iter().copied())
        .collect()
}

/// Every rule id this module can emit, for docs and tests.
pub fn rule_ids() -> Vec<&'static str> {
    RULES.iter().map(|r| r.id).collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use fabrik_model::Scope;

    /// Every id the code emits has a page (whose severity and fix the findings carry), and
    /// every page belongs to an id the code emits.
    #[test]
    fn every_emitted_rule_has_its_page_and_no_page_is_orphaned() {
        let source = include_str!("counter_rules.rs");
        let mut emitted: Vec<&str> = PORT_RULES
            .iter()
            .chain(NETDEV_RULES)
            .map(|r| r.id)
            .collect();
        for id in rule_ids() {
            let quoted = format!("rule: \"{id}\".into()");
            if source.contains(&quoted) {
                emitted.push(id);
            }
        }
        emitted.sort_unstable();
        emitted.dedup();
        assert_eq!(emitted, rule_ids());
        for r in RULES {
            assert_eq!(r.scope, Scope::Counters);
            assert!(!fix_of(r.id).is_empty());
        }
        assert_eq!(page("FAB-CNT-102").unwrap().severity, Severity::Error);
    }
}
