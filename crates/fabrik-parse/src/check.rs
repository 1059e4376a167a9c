//! Checks on parsed benchmark results: wrong results, and bandwidth far below the link.
//! Pure: the link rate comes from the caller (`--link-gbps`) or from an inventory [`Node`].

use fabrik_model::{
    CollectiveReport, Evidence, Finding, Node, P2pReport, P2pRows, PortState, Severity,
};

use crate::nccl_tests::NcclTestsRun;

/// Below this share of the link rate, a large-message result is reported as too slow.
pub const LOW_FRACTION: f64 = 0.5;
/// Only messages this large are expected to approach the link rate.
pub const LARGE_MESSAGE: u64 = 32 << 20;

/// The link rate a node's benchmarks are measured against, in Gb/s: the slowest active RDMA
/// port (a collective runs at the pace of its slowest rail), else the slowest RDMA port of
/// unknown state, else the speed of the default-route interface (sockets/TCPX nodes).
pub fn link_gbps_from_node(node: &Node) -> Option<f64> {
    fn min(it: impl Iterator<Item = f64>) -> Option<f64> {
        it.filter(|v| *v > 0.0)
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.min(v))))
    }
    let ports = || node.rdma_devices.iter().flat_map(|d| d.ports.iter());
    let rate = |p: &fabrik_model::Port| p.rate.as_ref().and_then(|r| r.gbps);
    let active = min(ports()
        .filter(|p| {
            p.state
                .as_ref()
                .is_some_and(|s| s.port_state() == PortState::Active)
        })
        .filter_map(rate));
    // A port known to be down says nothing about the rate traffic ran at.
    let unknown = || min(ports().filter(|p| p.state.is_none()).filter_map(rate));
    let default_route = || {
        min(node
            .net_interfaces
            .iter()
            .filter(|i| i.default_route)
            .filter_map(|i| i.speed_mbps)
            .map(|m| m as f64 / 1000.0))
    };
    active.or_else(unknown).or_else(default_route)
}

fn subject(r: &CollectiveReport) -> String {
    format!("nccl-tests {}", r.op)
}

/// Findings for an nccl-tests run.
pub fn check_collective(run: &NcclTestsRun, link_gbps: Option<f64>) -> Vec<Finding> {
    let r = &run.report;
    let mut out = Vec::new();
    let wrong: Vec<Evidence> = r
        .rows
        .iter()
        .flat_map(|row| {
            [
                ("out-of-place", &row.out_of_place),
                ("in-place", &row.in_place),
            ]
            .into_iter()
            .filter_map(move |(place, t)| {
                let w = t.as_ref()?.wrong?;
                (w > 0).then(|| {
                    Evidence::new(format!("size {} {place}", row.size), format!("#wrong {w}"))
                })
            })
        })
        .collect();
    if !wrong.is_empty() {
        out.push(Finding {
            rule: "FAB-BENCH-WRONG".into(),
            severity: Severity::Error,
            subject: subject(r),
            message: format!("{} result(s) with #wrong above zero: the collective produced corrupt data", wrong.len()),
            evidence: wrong,
            fix: "Treat the fabric as broken until fixed: check GPU and NIC errors (Xid in dmesg, NIC counters), disable GDR (NCCL_NET_GDR_LEVEL=LOC) to isolate, rerun with -c 1".into(),
        });
    }
    if let Some(n) = run.out_of_bounds.filter(|n| *n > 0) {
        out.push(Finding {
            rule: "FAB-BENCH-WRONG".into(),
            severity: Severity::Error,
            subject: subject(r),
            message: format!("nccl-tests reported {n} out-of-bounds values"),
            evidence: vec![Evidence::new("Out of bounds values", n.to_string())],
            fix: "Rerun with -c 1 to find the failing size; check GPU memory errors and GDR".into(),
        });
    }
    if let Some(link) = link_gbps.filter(|l| *l > 0.0) {
        let best = r
            .rows
            .iter()
            .filter(|row| row.size >= LARGE_MESSAGE)
            .flat_map(|row| [&row.out_of_place, &row.in_place])
            .filter_map(|t| t.as_ref().map(|t| t.busbw))
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
        if let Some(busbw) = best {
            let gbps = busbw * 8.0;
            if gbps < LOW_FRACTION * link {
                out.push(Finding {
                    rule: "FAB-BENCH-LOW-BUSBW".into(),
                    severity: Severity::Warning,
                    subject: subject(r),
                    message: format!(
                        "peak busbw {busbw:.2} GB/s ({gbps:.1} Gb/s) at messages >= 32 MiB is {:.0}% of the {link} Gb/s link",
                        100.0 * gbps / link
                    ),
                    evidence: vec![Evidence::new("busbw", format!("{busbw:.2} GB/s"))],
                    fix: "Check the transport NCCL used (`fabrik logs`: socket fallback, GDR off), the GPU-NIC affinity, and the link with `fabrik bench`".into(),
                });
            }
        }
    }
    out
}

/// Findings for a perftest report.
pub fn check_p2p(r: &P2pReport, link_gbps: Option<f64>) -> Vec<Finding> {
    let mut out = Vec::new();
    let Some(link) = link_gbps.filter(|l| *l > 0.0) else {
        return out;
    };
    let P2pRows::Bw(rows) = &r.results else {
        return out;
    };
    // The largest message measured is the one expected to approach the link rate.
    let Some(row) = rows.iter().max_by_key(|row| row.bytes) else {
        return out;
    };
    // A bidirectional run adds both directions: each one is expected near the link rate.
    let directions = if crate::perftest::is_bidirectional(r) {
        2.0
    } else {
        1.0
    };
    if row.bytes >= 65536 && row.bw_avg_gbps / directions < LOW_FRACTION * link {
        out.push(Finding {
            rule: "FAB-BENCH-LOW-BW".into(),
            severity: Severity::Warning,
            subject: format!("perftest {}", r.device.as_deref().unwrap_or("?")),
            message: format!(
                "average bandwidth {:.2} Gb/s{} at {} bytes is {:.0}% of the {link} Gb/s link",
                row.bw_avg_gbps / directions,
                if directions > 1.0 { " per direction" } else { "" },
                row.bytes,
                100.0 * row.bw_avg_gbps / directions / link
            ),
            evidence: vec![Evidence::new(format!("{} bytes", row.bytes), format!("{:.2} Gb/s", row.bw_avg_gbps))],
            fix: "Check link width/speed and errors (`fabrik doctor`), PCIe width of the NIC, MTU, and that both ends use the same GID/port; try more QPs (-q 4)".into(),
        });
    }
    out
}
