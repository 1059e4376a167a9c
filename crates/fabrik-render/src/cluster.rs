//! `cluster doctor`: the ranks gathered, one line each. The findings follow, rendered by the
//! doctor's table.

use std::fmt::Write as _;

use fabrik_model::ClusterDoctorReport;

/// The whole text report: [`doctor_nodes`], the findings in the doctor's table (nodes named as
/// the findings name them, `names` in rank order), then each note as a `# ` line.
pub fn doctor(report: &ClusterDoctorReport, names: Vec<String>) -> String {
    let mut out = doctor_nodes(report);
    out.push_str(&crate::doctor::shared(names, &report.findings));
    for note in &report.notes {
        let _ = writeln!(out, "# {note}");
    }
    out
}

/// The rank count, then one line per rank: its host and how many RDMA devices, network
/// interfaces and GPUs its inventory holds, and its kernel.
pub fn doctor_nodes(report: &ClusterDoctorReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# cluster doctor: {} ranks", report.ranks);
    let _ = writeln!(
        out,
        "{:>5}  {:<20} {:>5} {:>5} {:>5}  kernel",
        "rank", "host", "rdma", "nics", "gpus"
    );
    for n in &report.nodes {
        let _ = writeln!(
            out,
            "{:>5}  {:<20} {:>5} {:>5} {:>5}  {}",
            n.rank,
            n.host,
            n.node.rdma_devices.len(),
            n.node.net_interfaces.len(),
            n.node.gpus.len(),
            n.node.os.kernel.as_deref().unwrap_or("?")
        );
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use fabrik_model::RankNode;

    #[test]
    fn one_line_per_rank_with_its_inventory_counts() {
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/nodes/real-procfs");
        let node = fabrik_probe::probe(&fixture).unwrap();
        let report = ClusterDoctorReport {
            schema_version: fabrik_model::SCHEMA_VERSION,
            ranks: 2,
            nodes: vec![
                RankNode {
                    rank: 0,
                    host: "gpu01".into(),
                    node: node.clone(),
                },
                RankNode {
                    rank: 1,
                    host: "gpu02".into(),
                    node: node.clone(),
                },
            ],
            findings: vec![],
            notes: vec![],
        };
        let t = doctor_nodes(&report);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "# cluster doctor: 2 ranks");
        assert_eq!(lines.len(), 4, "{t}");
        let want = format!(
            "{:>5}  {:<20} {:>5} {:>5} {:>5}  {}",
            1,
            "gpu02",
            node.rdma_devices.len(),
            node.net_interfaces.len(),
            node.gpus.len(),
            node.os.kernel.as_deref().unwrap_or("?")
        );
        assert_eq!(lines[3], want);
    }
}
