//! The report's inputs: fabrik's JSON result files, each recognised by its shape.

use fabrik_model::{ClusterDoctorReport, CollectiveReport, Finding, Node, P2pReport, PairMatrix};
use serde_json::Value;

use super::ReportError;

/// One input file, recognised by its shape.
#[derive(Debug, Clone)]
pub enum ReportInput {
    /// A collective run: `bench collective --format json` or `parse nccl-tests --format json`.
    Collective(CollectiveReport),
    /// A point-to-point run: `bench p2p --format json` or `parse perftest --format json`.
    P2p(Box<P2pReport>),
    /// `cluster matrix --format json`: every pair's bandwidth and the analysis of it.
    Matrix(Box<PairMatrix>),
    /// `cluster doctor --format json`: the nodes checked and their findings.
    Doctor(ClusterDoctorReport),
    /// `fabrik doctor --format json`: the node names its findings use.
    NodeDoctor {
        /// The names of the nodes checked.
        nodes: Vec<String>,
    },
    /// `fabrik inventory --format json`: one node's inventory.
    Node(Box<Node>),
    /// `fabrik logs --format json`: its summary line and each process's transport and GDR.
    Logs(Box<LogDoc>),
    /// A list of findings, or any document with only findings to show.
    Findings,
}

/// What the report shows of an NCCL log analysis. Read from the JSON as values, so the page
/// keeps working while the log analysis gains fields.
#[derive(Debug, Clone, Default)]
pub struct LogDoc {
    /// The analysis's one-line summary.
    pub summary: String,
    /// host, pid, ranks, transport, GDR.
    pub processes: Vec<[String; 5]>,
}

/// A named input and the findings it carries (a doctor's, a log's, a parsed run's checks).
#[derive(Debug, Clone)]
pub struct Named {
    /// The file name, with ` #k` for the k-th run of a list.
    pub name: String,
    /// What the file holds.
    pub input: ReportInput,
    /// The findings it carries.
    pub findings: Vec<Finding>,
}

/// Recognises a fabrik JSON document: a collective run (fabrik's or a parsed nccl-tests run,
/// one or a list), a point-to-point run (fabrik's or a parsed perftest run), a pair matrix, a
/// cluster or node doctor report, an NCCL log analysis, a node inventory, or a list of
/// findings.
pub fn classify(name: &str, text: &str) -> Result<Vec<Named>, ReportError> {
    let v: Value = serde_json::from_str(text)
        .map_err(|e| ReportError::Input(format!("{name}: not JSON: {e}")))?;
    match v {
        Value::Array(items) if items.iter().any(|i| i.get("rows").is_some()) => items
            .into_iter()
            .enumerate()
            .map(|(k, item)| classify_value(&format!("{name} #{}", k + 1), item))
            .collect(),
        other => Ok(vec![classify_value(name, other)?]),
    }
}

fn findings_of(v: &Value, name: &str) -> Result<Vec<Finding>, ReportError> {
    match v.get("findings") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(f) => serde_json::from_value(f.clone())
            .map_err(|e| ReportError::Input(format!("{name}: bad findings: {e}"))),
    }
}

fn classify_value(name: &str, v: Value) -> Result<Named, ReportError> {
    let bad = |why: String| ReportError::Input(format!("{name}: {why}"));
    let has = |k: &str| v.get(k).is_some();
    let nodes_are_names = v
        .get("nodes")
        .and_then(Value::as_array)
        .is_some_and(|n| n.iter().all(Value::is_string));
    let (input, findings) = if v.is_array() {
        let f =
            serde_json::from_value(v).map_err(|e| bad(format!("not a list of findings: {e}")))?;
        (ReportInput::Findings, f)
    } else if has("rows") && has("op") {
        let f = findings_of(&v, name)?;
        let r =
            serde_json::from_value(v).map_err(|e| bad(format!("bad collective report: {e}")))?;
        (ReportInput::Collective(r), f)
    } else if has("results") && has("test") && has("transport") {
        let f = findings_of(&v, name)?;
        let r = serde_json::from_value(v)
            .map_err(|e| bad(format!("bad point-to-point report: {e}")))?;
        (ReportInput::P2p(Box::new(r)), f)
    } else if has("links") && has("analysis") {
        let m = serde_json::from_value(v).map_err(|e| bad(format!("bad pair matrix: {e}")))?;
        (ReportInput::Matrix(Box::new(m)), Vec::new())
    } else if has("nodes") && has("findings") && nodes_are_names {
        let f = findings_of(&v, name)?;
        let nodes = v["nodes"]
            .as_array()
            .map(|n| {
                n.iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        (ReportInput::NodeDoctor { nodes }, f)
    } else if has("nodes") && has("findings") {
        let d: ClusterDoctorReport = serde_json::from_value(v)
            .map_err(|e| bad(format!("bad cluster doctor report: {e}")))?;
        let f = d.findings.clone();
        (ReportInput::Doctor(d), f)
    } else if has("processes") && has("summary") && has("findings") {
        let f = findings_of(&v, name)?;
        (ReportInput::Logs(Box::new(log_doc(&v))), f)
    } else if has("rdma_devices") && has("net_interfaces") {
        let n = serde_json::from_value(v).map_err(|e| bad(format!("bad node inventory: {e}")))?;
        (ReportInput::Node(Box::new(n)), Vec::new())
    } else if has("findings") {
        (ReportInput::Findings, findings_of(&v, name)?)
    } else {
        return Err(bad(
            "not a fabrik result (collective or point-to-point run, pair matrix, doctor report, \
             NCCL log analysis, inventory or findings)"
                .into(),
        ));
    };
    Ok(Named {
        name: name.to_string(),
        input,
        findings,
    })
}

fn log_doc(v: &Value) -> LogDoc {
    let text = |x: &Value| match x {
        Value::Null => "-".to_string(),
        Value::String(s) => s.clone(),
        Value::Bool(true) => "yes".to_string(),
        Value::Bool(false) => "no".to_string(),
        other => other.to_string(),
    };
    let processes = v["processes"]
        .as_array()
        .map(|ps| {
            ps.iter()
                .map(|p| {
                    let ranks: Vec<String> = p["ranks"]
                        .as_array()
                        .map(|r| r.iter().map(|x| text(&x["rank"])).collect())
                        .unwrap_or_default();
                    [
                        text(&p["host"]),
                        text(&p["pid"]),
                        if ranks.is_empty() {
                            "-".into()
                        } else {
                            ranks.join(", ")
                        },
                        text(&p["transport"]),
                        text(&p["gdr"]),
                    ]
                })
                .collect()
        })
        .unwrap_or_default();
    LogDoc {
        summary: text(&v["summary"]["text"]),
        processes,
    }
}
