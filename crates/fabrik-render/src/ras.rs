//! `fabrik parse ras` and `fabrik parse inspector` as text: NCCL RAS reports, DIAG runs, the
//! RAS monitor's live events and its table of troubled peers, and the Inspector's stragglers.
//! Peers, hosts and event details come from outside, so every text passes through
//! [`visible_lines`] on its way to a terminal.

use std::fmt::Write as _;

use fabrik_model::inspector::InspectorReport;
use fabrik_model::logs::LogReport;
use fabrik_model::ras::{describe, MonitorEvent, PeerRow};
use fabrik_model::text::visible_lines;

/// Stragglers listed in the table (the findings name every rank that held up its communicator).
const MAX_STRAGGLER_ROWS: usize = 20;

/// One monitor event as it arrives on a `ncclras -m` pipe, with the running count of dead and
/// unreachable peers.
pub fn monitor_event(e: &MonitorEvent, dead: usize, unreachable: usize) -> String {
    let peer = e.peer.as_ref().map(describe).unwrap_or_default();
    let line = format!(
        "[{}] {} {} {} (dead {dead}, unreachable {unreachable})\n",
        e.time, e.event, peer, e.details
    );
    visible_lines(&line).into_owned()
}

fn peer_row(r: &PeerRow) -> String {
    format!(
        "{:<11} {:<40} {:<22} {} {}",
        format!("{:?}", r.state).to_lowercase(),
        describe(&r.peer),
        r.event,
        r.since,
        r.details
    )
    .trim_end()
    .to_string()
}

/// The dead and unreachable peers, one row each.
pub fn peer_table(rows: &[&PeerRow]) -> String {
    if rows.is_empty() {
        return "No dead or unreachable peer.\n".into();
    }
    let mut s = format!(
        "{:<11} {:<40} {:<22} {}\n",
        "STATE", "PEER", "LAST EVENT", "SINCE"
    );
    for r in rows {
        s.push_str(&peer_row(r));
        s.push('\n');
    }
    visible_lines(&s).into_owned()
}

/// What RAS's outputs in a log said: the report's summary, each DIAG run, the monitor's counts
/// and troubled peers, then the findings.
pub fn report(report: &LogReport) -> String {
    let mut s = String::new();
    if let Some(r) = &report.ras {
        s.push_str(&fabrik_model::ras::summary_text(r, report.summary.errors));
        s.push('\n');
    }
    for d in &report.diag {
        let _ = writeln!(
            s,
            "NCCL {} diagnostics from {}: {} result line(s){}",
            d.kind,
            d.host.as_deref().unwrap_or("?"),
            d.lines.len(),
            d.completed_ms
                .map(|ms| format!(", completed in {ms} ms"))
                .unwrap_or_default()
        );
    }
    if let Some(t) = &report.ras_monitor {
        let (alive, unreachable, dead) = t.counts();
        let _ = writeln!(
            s,
            "RAS monitor: {} event(s); peers alive {alive}, unreachable {unreachable}, dead {dead}",
            t.events
        );
        s.push_str(&peer_table(&t.troubled()));
    }
    let mut out = visible_lines(&s).into_owned();
    out.push_str(&crate::findings::text(&report.findings));
    out
}

/// The Inspector's verdict: how many collectives could be compared, the stragglers (at most
/// [`MAX_STRAGGLER_ROWS`] rows), then the findings.
pub fn inspector(report: &InspectorReport) -> String {
    let mut s = format!(
        "NCCL Inspector: {} record(s), {} collective(s) seen by two ranks or more, {} with a straggler{}\n",
        report.records,
        report.compared,
        report.stragglers.len(),
        if report.dropped > 0 {
            format!(
                " ({} record(s) over the memory bound not analysed)",
                report.dropped
            )
        } else {
            String::new()
        }
    );
    if !report.stragglers.is_empty() {
        let _ = writeln!(
            s,
            "{:<20} {:<14} {:>8} {:>6} {:<24} {:>10} {:>10}",
            "COMM", "OP", "SN", "RANK", "HOST", "LAG us", "MEDIAN us"
        );
        for st in report.stragglers.iter().take(MAX_STRAGGLER_ROWS) {
            let _ = writeln!(
                s,
                "{:<20} {:<14} {:>8} {:>6} {:<24} {:>10.0} {:>10.0}",
                st.comm,
                st.op,
                st.sn,
                st.rank,
                st.host.as_deref().unwrap_or("?"),
                st.lag_us,
                st.median_us
            );
        }
    }
    let mut out = visible_lines(&s).into_owned();
    out.push_str(&crate::findings::text(&report.findings));
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn fixture(rel: &str) -> std::path::PathBuf {
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/nccl-logs")
            .join(rel)
    }

    #[test]
    fn monitor_events_feed_the_peer_table() {
        let path = fixture("ras-monitor/01-nccl-ras-monitor-peer-dead-text.txt");
        let r = fabrik_parse::nccl_log::analyze_paths(&[path]).unwrap();
        let text = report(&r);
        assert!(text.contains("RAS monitor: "), "{text}");
        let t = r.ras_monitor.as_ref().unwrap();
        let (_, unreachable, dead) = t.counts();
        assert!(dead + unreachable > 0);
        assert!(text.contains("STATE       PEER"), "{text}");
        assert!(text.contains(if dead > 0 { "dead " } else { "unreachable " }));
    }

    #[test]
    fn a_live_event_line_names_the_running_counts() {
        let text = std::fs::read_to_string(fixture(
            "ras-monitor/01-nccl-ras-monitor-peer-dead-text.txt",
        ))
        .unwrap();
        let mut p = fabrik_parse::ras::monitor::MonitorParser::new();
        let e = text.lines().find_map(|l| p.line(l)).expect("an event");
        let line = monitor_event(&e, 1, 0);
        assert!(
            line.starts_with(&format!("[{}] {}", e.time, e.event)),
            "{line}"
        );
        assert!(line.ends_with("(dead 1, unreachable 0)\n"), "{line}");
    }

    #[test]
    fn terminal_controls_in_event_details_are_shown_not_obeyed() {
        let mut p = fabrik_parse::ras::monitor::MonitorParser::new();
        let e = p
            .line("[2025-12-19 13:07:07] PEER_DEAD: Process 1524345 on node 172.16.64.245 managing GPU 1 \u{1b}[2J")
            .expect("an event");
        assert!(!monitor_event(&e, 1, 0).contains('\u{1b}'));
    }

    #[test]
    fn inspector_stragglers_are_tabled() {
        let mut insp = fabrik_parse::inspector::Inspector::new();
        let f = fixture("inspector/example-hostname-pid438776-verbose.log");
        insp.read(
            &f.display().to_string(),
            fabrik_parse::input::open_input(&f).unwrap(),
        )
        .unwrap();
        let r = insp.finish(&Default::default());
        let text = inspector(&r);
        assert!(text.starts_with("NCCL Inspector: "), "{text}");
        assert!(text.contains(&format!("{} record(s)", r.records)));
        if !r.stragglers.is_empty() {
            assert!(text.contains("LAG us"));
        }
    }
}
