//! The event stream of RAS monitor mode (`ncclras -m[GROUPS]`, the RAS protocol's `MONITOR`
//! command; NCCL 2.28+), in text or JSON, as src/ras/client_support.cc's rasClientsNotifyEvent
//! prints it:
//!
//! - text: `[2026-06-01 10:00:00] PEER_DEAD: Process 1234 on node 10.0.0.2 managing GPU 0 ` (a
//!   known peer), `[..] PEER_UNRESPONSIVE: 10.0.0.2<28028> peer not responding for 5s (connect
//!   timeout)` (only its RAS address known), `[..] EVENT: details` (no peer);
//! - JSON: one object per event, `{"timestamp", "group": "LIFECYCLE"|"TRACE", "event", "peer":
//!   {"host", "pid", "cuda_devs", "nvml_devs"} | {"addr"}, "details"}`, printed over several lines.
//!
//! The events (src/ras/peers.cc, ras.cc, rasnet.cc): PEER_NEW, PEER_DEAD (lifecycle);
//! PEER_CONNECTING, PEER_CONNECTED, PEER_RECOVERED, PEER_RETRY, PEER_UNRESPONSIVE,
//! PEER_SEND_STUCK, PEER_KEEPALIVE_TIMEOUT, PEER_INIT_TIMEOUT, PEER_DISCONNECTED,
//! PEER_TIMEOUT_DEAD (trace). [`PeerTable`] keeps the state of every peer seen, so that a reader
//! of a live stream always knows which peers are dead or unreachable and where they run.

use fabrik_model::{Evidence, Finding, Severity};

/// Largest JSON event buffered (NCCL's own buffer is 2048 bytes).
const MAX_EVENT_JSON: usize = 16 << 10;

/// The events and the table of peers are model types: every renderer reads them.
pub use fabrik_model::ras::{describe, MonitorEvent, Peer, PeerRow, PeerState, PeerTable};

/// The state each event leaves its peer in; None for events that say nothing of it.
pub fn state_of(event: &str) -> Option<PeerState> {
    Some(match event {
        "PEER_NEW" | "PEER_CONNECTED" | "PEER_RECOVERED" => PeerState::Alive,
        "PEER_DEAD" | "PEER_TIMEOUT_DEAD" => PeerState::Dead,
        "PEER_UNRESPONSIVE"
        | "PEER_SEND_STUCK"
        | "PEER_KEEPALIVE_TIMEOUT"
        | "PEER_INIT_TIMEOUT"
        | "PEER_DISCONNECTED"
        | "PEER_RETRY" => PeerState::Unreachable,
        _ => return None,
    })
}

/// `Process 1234 on node HOST managing GPU[s] 0,1 (NVML 2,3)` followed by details, or
/// `HOST<PORT> details`.
fn peer_text(s: &str) -> (Option<Peer>, String) {
    if let Some(rest) = s.strip_prefix("Process ") {
        let mut it = rest.splitn(2, ' ');
        let pid = it.next().and_then(|p| p.parse().ok());
        let tail = it.next().unwrap_or("");
        let host = tail
            .strip_prefix("on node ")
            .and_then(|t| t.split_whitespace().next())
            .map(str::to_string);
        let (gpus, details) = match tail.find(" managing GPU") {
            Some(p) => {
                let g = tail[p + 13..].trim_start_matches('s').trim_start();
                // The GPU list is `0,1` optionally followed by ` (NVML 2,3)`.
                let mut end = g.find(' ').unwrap_or(g.len());
                if g[end..].trim_start().starts_with("(NVML") {
                    end = g.find(')').map_or(g.len(), |e| e + 1);
                }
                (Some(g[..end].to_string()), g[end..].trim().to_string())
            }
            None => (None, String::new()),
        };
        return (
            Some(Peer {
                host,
                pid,
                gpus,
                addr: None,
            }),
            details,
        );
    }
    let first = s.split_whitespace().next().unwrap_or("");
    if let Some(lt) = first.find('<') {
        if first.ends_with('>') && lt > 0 {
            return (
                Some(Peer {
                    host: Some(first[..lt].to_string()),
                    pid: None,
                    gpus: None,
                    addr: Some(first.to_string()),
                }),
                s[first.len()..].trim().to_string(),
            );
        }
    }
    (None, s.trim().to_string())
}

/// One text event line: `[%F %T] EVENT: ...`.
pub fn parse_text_event(line: &str) -> Option<MonitorEvent> {
    let t = line.trim();
    let start = t.find('[')?;
    let t = &t[start + 1..];
    let (time, rest) = t.split_once("] ")?;
    let (event, body) = rest.split_once(':')?;
    if !event.starts_with("PEER_")
        && !event
            .chars()
            .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit())
    {
        return None;
    }
    if event.is_empty() || time.len() > 32 {
        return None;
    }
    let (peer, details) = peer_text(body.trim());
    Some(MonitorEvent {
        time: time.to_string(),
        group: None,
        event: event.to_string(),
        peer,
        details,
    })
}

/// One JSON event object.
pub fn parse_json_event(text: &str) -> Option<MonitorEvent> {
    if text.len() > MAX_EVENT_JSON {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    let s = |v: &serde_json::Value, k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_string);
    let event = s(&v, "event")?;
    let peer = v.get("peer").map(|p| {
        let devs = p.get("cuda_devs").and_then(|d| d.as_array()).map(|a| {
            a.iter()
                .filter_map(serde_json::Value::as_u64)
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(",")
        });
        let addr = s(p, "addr");
        Peer {
            host: s(p, "host").or_else(|| {
                addr.as_deref()
                    .and_then(|a| a.split('<').next())
                    .map(str::to_string)
            }),
            pid: p.get("pid").and_then(serde_json::Value::as_u64),
            gpus: devs,
            addr,
        }
    });
    Some(MonitorEvent {
        time: s(&v, "timestamp").unwrap_or_default(),
        group: s(&v, "group"),
        event,
        peer,
        details: s(&v, "details").unwrap_or_default(),
    })
}

/// Reads a monitor stream line by line and keeps the table of peers.
#[derive(Debug, Default)]
pub struct MonitorParser {
    json: Option<String>,
    table: PeerTable,
}

impl MonitorParser {
    /// A parser with nothing read yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one line; returns the event it completed, if any.
    pub fn line(&mut self, raw: &str) -> Option<MonitorEvent> {
        let t = raw.trim();
        if let Some(buf) = self.json.as_mut() {
            if buf.len() + t.len() > MAX_EVENT_JSON {
                self.json = None;
                return None;
            }
            buf.push_str(t);
            buf.push('\n');
            // The peer object closes with `  },`; the event with a bare `}` line.
            if t == "}" && buf.matches('{').count() == buf.matches('}').count() {
                let doc = self.json.take().unwrap_or_default();
                let e = parse_json_event(&doc)?;
                self.table.apply(&e, state_of(&e.event));
                return Some(e);
            }
            return None;
        }
        if t == "{" {
            self.json = Some(String::from("{\n"));
            return None;
        }
        // A one-line JSON event (a collector that joined the lines).
        if t.starts_with('{') && t.contains("\"event\"") {
            let e = parse_json_event(t)?;
            self.table.apply(&e, state_of(&e.event));
            return Some(e);
        }
        let e = parse_text_event(t)?;
        self.table.apply(&e, state_of(&e.event));
        Some(e)
    }

    /// The peer table so far.
    pub fn table(&self) -> &PeerTable {
        &self.table
    }

    /// The table, once the stream ended.
    pub fn finish(self) -> PeerTable {
        self.table
    }
}

/// Findings of the table: dead peers (error, by host), unreachable ones (warning).
pub fn findings(t: &PeerTable) -> Vec<Finding> {
    let mut out = Vec::new();
    for (state, rule, severity, what, fix) in [
        (
            PeerState::Dead,
            "FAB-NCCL-RAS-DEAD",
            Severity::Error,
            "declared dead by RAS",
            "The process or its node is gone: check the node (power, kernel log, OOM killer, GPU Xid) and drain it before restarting the job",
        ),
        (
            PeerState::Unreachable,
            "FAB-NCCL-RAS-UNREACHABLE",
            Severity::Warning,
            "not answering RAS",
            "A hung process or a broken path between the nodes named: look at the process (py-spy dump, GPU utilisation) and at the bootstrap network between these hosts; it becomes dead if it stays silent",
        ),
    ] {
        let rows: Vec<&PeerRow> = t.rows().filter(|r| r.state == state).collect();
        if rows.is_empty() {
            continue;
        }
        let mut hosts: Vec<String> = rows.iter().filter_map(|r| r.peer.host.clone()).collect();
        hosts.sort();
        hosts.dedup();
        let list: Vec<String> = rows
            .iter()
            .take(16)
            .map(|r| format!("{} ({} at {})", describe(&r.peer), r.event, r.since))
            .collect();
        out.push(Finding {
            rule: rule.into(),
            severity,
            subject: if hosts.is_empty() {
                "job".into()
            } else {
                hosts.join(",")
            },
            message: format!(
                "{} peer(s) {what}: {}{}",
                rows.len(),
                list.join("; "),
                if rows.len() > 16 { "; ..." } else { "" }
            ),
            evidence: rows
                .iter()
                .take(8)
                .map(|r| {
                    Evidence::new(
                        "ras-monitor",
                        format!("{} {} {}", r.event, describe(&r.peer), r.details).trim_end(),
                    )
                })
                .collect(),
            fix: fix.into(),
        });
    }
    out
}
