//! The counters between two samples (`top`, `diff`) as text: one line per RDMA port and per
//! netdev, with the counters that moved; `diff` adds the interval, problems and findings.

use std::fmt::Write as _;

use fabrik_model::counters::{is_traffic, Change, CounterChange, Presence, Report, Traffic};
use fabrik_model::text::visible;
use fabrik_model::Finding;

/// `16.00 Gb/s`, `3.20 kb/s`; `-` when unknown.
pub fn bits(v: Option<f64>) -> String {
    let Some(v) = v else {
        return "-".to_string();
    };
    let (scaled, unit) = if v >= 1e9 {
        (v / 1e9, "Gb/s")
    } else if v >= 1e6 {
        (v / 1e6, "Mb/s")
    } else if v >= 1e3 {
        (v / 1e3, "kb/s")
    } else {
        (v, "b/s")
    };
    format!("{scaled:.2} {unit}")
}

/// `1.2M/s`, `350/s`; `-` when unknown.
pub fn per_s(v: Option<f64>) -> String {
    let Some(v) = v else {
        return "-".to_string();
    };
    if v >= 1e6 {
        format!("{:.1}M/s", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k/s", v / 1e3)
    } else {
        format!("{v:.0}/s")
    }
}

/// Bytes moved, when the interval is unknown: `4.0 kB`.
pub fn bytes(v: Option<u64>) -> String {
    let Some(v) = v else {
        return "-".to_string();
    };
    let f = v as f64;
    if f >= 1e9 {
        format!("{:.1} GB", f / 1e9)
    } else if f >= 1e6 {
        format!("{:.1} MB", f / 1e6)
    } else if f >= 1e3 {
        format!("{:.1} kB", f / 1e3)
    } else {
        format!("{v} B")
    }
}

/// The counters worth a look: trouble counters that moved, and any counter that reset,
/// saturated, vanished or could not be read.
pub fn notable(c: &CounterChange) -> bool {
    match c.change {
        Change::Unchanged => false,
        Change::Moved { .. } | Change::Appeared => !is_traffic(c.source, &c.name),
        Change::Reset | Change::Saturated { .. } | Change::Unreadable { .. } | Change::Vanished => {
            true
        }
    }
}

/// `symbol_error +15 (1.50/s)`, `rp_cnp_handled reset`.
pub fn note(c: &CounterChange) -> String {
    match (&c.change, c.per_second) {
        (Change::Moved { delta }, Some(r)) => format!("{} +{delta} ({r:.1}/s)", c.name),
        (Change::Moved { delta }, None) => format!("{} +{delta}", c.name),
        (Change::Reset, _) => format!("{} reset", c.name),
        (Change::Saturated { .. }, _) => format!("{} saturated", c.name),
        (Change::Unreadable { reason }, _) => format!("{} unreadable: {reason}", c.name),
        (Change::Appeared, _) => format!("{} appeared", c.name),
        (Change::Vanished, _) => format!("{} vanished", c.name),
        (Change::Unchanged, _) => c.name.clone(),
    }
}

const RED: &str = "\x1b[1;31m";
const YELLOW: &str = "\x1b[33m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

struct Row {
    name: String,
    kind: String,
    state: String,
    traffic: Traffic,
    notes: Vec<String>,
    alarm: bool,
}

/// How a `top` frame is laid out after the one before it.
#[derive(Debug, Clone, Copy)]
pub enum TopLayout<'a> {
    /// Refreshed in place on a terminal, ending with a hint on how to quit.
    InPlace {
        /// The first frame clears the screen.
        first: bool,
        /// `(q to quit)`.
        hint: &'a str,
    },
    /// Plain lines, a blank line between frames.
    Lines {
        /// The first frame has no blank line before it.
        first: bool,
    },
}

/// One `top` frame: the heading (bold in place), then the table's lines.
pub fn top_frame(head: &str, lines: &[String], layout: TopLayout<'_>) -> String {
    let mut buf = String::new();
    match layout {
        TopLayout::InPlace { first, hint } => {
            // Home the cursor and overwrite in place; clear each line's tail and the rest of
            // the screen so no stale characters remain.
            buf.push_str("\x1b[H");
            if first {
                buf.push_str("\x1b[2J\x1b[H");
            }
            let _ = write!(buf, "\x1b[1m{head}\x1b[0m\x1b[K\r\n");
            for l in lines {
                buf.push_str(l);
                buf.push_str("\x1b[K\r\n");
            }
            let _ = write!(buf, "{hint}\x1b[K\x1b[J");
        }
        TopLayout::Lines { first } => {
            if !first {
                buf.push('\n');
            }
            let _ = writeln!(buf, "{head}");
            for l in lines {
                let _ = writeln!(buf, "{l}");
            }
        }
    }
    buf
}

/// The table, one line per port and netdev. With `color`, the notes column is highlighted
/// (red for error counters, yellow for resets/saturation/unreadable files).
pub fn table(report: &Report, color: bool) -> Vec<String> {
    let mut rows = Vec::new();
    for p in &report.ports {
        let mut notes: Vec<String> = p.changes.iter().filter(|c| notable(c)).map(note).collect();
        notes.extend(p.problems.iter().cloned());
        let kind = match (p.link_layer.as_deref(), p.device.starts_with("rxe")) {
            (_, true) => "rxe".to_string(),
            (Some("InfiniBand"), _) => "IB".to_string(),
            (Some("Ethernet"), _) => "RoCE".to_string(),
            (Some(o), _) => o.to_string(),
            (None, _) => "?".to_string(),
        };
        rows.push(Row {
            name: p.subject(),
            kind,
            state: state_word(p.state.as_deref(), p.presence),
            traffic: p.traffic,
            alarm: p
                .changes
                .iter()
                .any(|c| notable(c) && matches!(c.change, Change::Moved { .. })),
            notes,
        });
    }
    for n in &report.netdevs {
        let mut notes: Vec<String> = n.changes.iter().filter(|c| notable(c)).map(note).collect();
        notes.extend(n.problems.iter().cloned());
        let kind = if n.rdma_ports.is_empty() {
            "netdev".to_string()
        } else {
            format!("netdev>{}", n.rdma_ports.join(","))
        };
        rows.push(Row {
            name: n.name.clone(),
            kind,
            state: match n.presence {
                Presence::Both => n.operstate.clone().unwrap_or_else(|| "?".into()),
                Presence::Vanished => "GONE".into(),
                Presence::Appeared => "NEW".into(),
            },
            traffic: n.traffic,
            alarm: n
                .changes
                .iter()
                .any(|c| notable(c) && matches!(c.change, Change::Moved { .. })),
            notes,
        });
    }
    // Names, states and problems were read from the root: shown, never sent to the terminal.
    for r in &mut rows {
        for field in [&mut r.name, &mut r.kind, &mut r.state]
            .into_iter()
            .chain(r.notes.iter_mut())
        {
            if let std::borrow::Cow::Owned(v) = visible(field) {
                *field = v;
            }
        }
    }
    let rated = report.interval_s.is_some();
    let name_w = rows.iter().map(|r| r.name.len()).max().unwrap_or(4).max(4);
    let kind_w = rows.iter().map(|r| r.kind.len()).max().unwrap_or(4).max(4);
    let mut out = Vec::with_capacity(rows.len() + 1);
    let head = if rated {
        format!(
            "{:<name_w$}  {:<kind_w$}  {:<8}  {:>11}  {:>11}  {:>9}  {:>9}  COUNTERS",
            "NAME", "KIND", "STATE", "TX", "RX", "TX PKT", "RX PKT"
        )
    } else {
        format!(
            "{:<name_w$}  {:<kind_w$}  {:<8}  {:>11}  {:>11}  {:>9}  {:>9}  COUNTERS",
            "NAME", "KIND", "STATE", "TX BYTES", "RX BYTES", "TX PKTS", "RX PKTS"
        )
    };
    out.push(if color {
        format!("{BOLD}{head}{RESET}")
    } else {
        head
    });
    for r in rows {
        let t = &r.traffic;
        let (a, b, c, d) = if rated {
            (
                bits(t.tx_bits_per_s),
                bits(t.rx_bits_per_s),
                per_s(t.tx_packets_per_s),
                per_s(t.rx_packets_per_s),
            )
        } else {
            (
                bytes(t.tx_bytes),
                bytes(t.rx_bytes),
                t.tx_packets.map_or("-".into(), |v| v.to_string()),
                t.rx_packets.map_or("-".into(), |v| v.to_string()),
            )
        };
        let notes = r.notes.join("; ");
        let notes = if color && !notes.is_empty() {
            let c = if r.alarm { RED } else { YELLOW };
            format!("{c}{notes}{RESET}")
        } else {
            notes
        };
        let line = format!(
            "{:<name_w$}  {:<kind_w$}  {:<8}  {a:>11}  {b:>11}  {c:>9}  {d:>9}  {notes}",
            r.name, r.kind, r.state
        );
        out.push(line.trim_end().to_string());
    }
    out
}

/// `diff`'s text: where the interval came from, the table, the comparison's problems, then
/// the counter findings (or a line saying there are none).
pub fn diff(report: &Report, findings: &[Finding]) -> String {
    let mut out = match report.interval_s {
        Some(s) => format!("interval {s:.3} s (from fabrik/captured_at)\n"),
        None => "interval unknown (a snapshot lacks fabrik/captured_at, or the times do not \
                 increase): deltas only, no rates\n"
            .to_string(),
    };
    for line in table(report, false) {
        let _ = writeln!(out, "{line}");
    }
    for p in &report.problems {
        let _ = writeln!(out, "problem: {}", visible(p));
    }
    if findings.is_empty() {
        out.push_str("\nno counter findings\n");
    } else {
        let _ = write!(out, "\nfindings:\n{}", crate::findings::text(findings));
    }
    out
}

fn state_word(state: Option<&str>, presence: Presence) -> String {
    match presence {
        Presence::Vanished => return "GONE".into(),
        Presence::Appeared => return "NEW".into(),
        Presence::Both => {}
    }
    // `4: ACTIVE` -> `ACTIVE`.
    state
        .map(|s| s.split_once(": ").map_or(s, |(_, w)| w).to_string())
        .unwrap_or_else(|| "?".into())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(bits(Some(16e9)), "16.00 Gb/s");
        assert_eq!(bits(Some(3200.0)), "3.20 kb/s");
        assert_eq!(bits(None), "-");
        assert_eq!(per_s(Some(600_000.0)), "600.0k/s");
        assert_eq!(per_s(Some(2_500_000.0)), "2.5M/s");
        assert_eq!(bytes(Some(4000)), "4.0 kB");
    }

    #[test]
    fn text_from_the_root_is_shown_not_sent() {
        use fabrik_model::counters::{NetdevSample, Sample};
        let nd = |state: &str| NetdevSample {
            name: "eth0\x1b]0;x\x07".into(),
            physical: true,
            operstate: Some(state.into()),
            statistics: Default::default(),
            ethtool: Default::default(),
            problems: vec!["bad \u{9b}2J".into()],
            rdma_ports: vec![],
        };
        let a = Sample {
            netdevs: vec![nd("up\x1b[2J")],
            ..Sample::default()
        };
        let b = Sample {
            netdevs: vec![nd("up\x1b[2J")],
            ..Sample::default()
        };
        let lines = table(&fabrik_monitor::compare(&a, &b, None), false);
        let text = lines.join("\n");
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "{text:?}"
        );
        assert!(text.contains("eth0\\x1b]0;x\\x07"), "{text}");
        assert!(text.contains("up\\x1b[2J"), "{text}");
    }

    proptest::proptest! {
        /// Whatever a root names its netdevs, states and problems, the table has the header
        /// and one line per netdev, and sends no control character to the terminal.
        #[test]
        fn any_names_give_one_visible_line_each(
            names in proptest::collection::vec(proptest::prelude::any::<String>(), 0..6),
            state in proptest::prelude::any::<String>(),
            problem in proptest::prelude::any::<String>(),
        ) {
            use fabrik_model::counters::{NetdevSample, Sample};
            let s = Sample {
                netdevs: names
                    .iter()
                    .map(|n| NetdevSample {
                        name: n.clone(),
                        physical: true,
                        operstate: Some(state.clone()),
                        statistics: Default::default(),
                        ethtool: Default::default(),
                        problems: vec![problem.clone()],
                        rdma_ports: vec![],
                    })
                    .collect(),
                ..Sample::default()
            };
            let report = fabrik_monitor::compare(&s, &s, None);
            let lines = table(&report, false);
            proptest::prop_assert_eq!(lines.len(), report.netdevs.len() + 1);
            for l in &lines {
                proptest::prop_assert!(!l.chars().any(char::is_control), "{:?}", l);
            }
        }
    }
}
