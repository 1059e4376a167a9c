//! `fabrik report`: one self-contained HTML page from result files. Plots are inline SVG drawn
//! with plotters; the page loads nothing from anywhere (no scripts, fonts or images by URL).

use std::fmt::Write as _;

use fabrik_model::{
    ClusterDoctorReport, CollectiveReport, Finding, Node, P2pReport, P2pRows, PairMatrix,
    ResultSource, Severity, SlowLink,
};
use plotters::prelude::*;
use serde_json::Value;

use crate::ClusterError;

/// One input file, recognised by its shape.
#[derive(Debug, Clone)]
pub enum ReportInput {
    Collective(CollectiveReport),
    /// A point-to-point run: `bench p2p --format json` or `parse perftest --format json`.
    P2p(Box<P2pReport>),
    Matrix(PairMatrix),
    Doctor(ClusterDoctorReport),
    /// `fabrik doctor --format json`: the node names its findings use.
    NodeDoctor {
        nodes: Vec<String>,
    },
    Node(Box<Node>),
    /// `fabrik logs --format json`: its summary line and each process's transport and GDR.
    Logs(Box<LogDoc>),
    Findings,
}

/// What the report shows of an NCCL log analysis. Read from the JSON as values, so the page
/// keeps working while the log analysis gains fields.
#[derive(Debug, Clone, Default)]
pub struct LogDoc {
    pub summary: String,
    /// host, pid, ranks, transport, GDR.
    pub processes: Vec<[String; 5]>,
}

/// A named input and the findings it carries (a doctor's, a log's, a parsed run's checks).
#[derive(Debug, Clone)]
pub struct Named {
    pub name: String,
    pub input: ReportInput,
    pub findings: Vec<Finding>,
}

/// Recognises a fabrik JSON document: a collective run (fabrik's or a parsed nccl-tests run,
/// one or a list), a point-to-point run (fabrik's or a parsed perftest run), a pair matrix, a
/// cluster or node doctor report, an NCCL log analysis, a node inventory, or a list of
/// findings.
pub fn classify(name: &str, text: &str) -> Result<Vec<Named>, ClusterError> {
    let v: Value = serde_json::from_str(text)
        .map_err(|e| ClusterError::Invalid(format!("{name}: not JSON: {e}")))?;
    match v {
        Value::Array(items) if items.iter().any(|i| i.get("rows").is_some()) => items
            .into_iter()
            .enumerate()
            .map(|(k, item)| classify_value(&format!("{name} #{}", k + 1), item))
            .collect(),
        other => Ok(vec![classify_value(name, other)?]),
    }
}

fn findings_of(v: &Value, name: &str) -> Result<Vec<Finding>, ClusterError> {
    match v.get("findings") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(f) => serde_json::from_value(f.clone())
            .map_err(|e| ClusterError::Invalid(format!("{name}: bad findings: {e}"))),
    }
}

fn classify_value(name: &str, v: Value) -> Result<Named, ClusterError> {
    let bad = |why: String| ClusterError::Invalid(format!("{name}: {why}"));
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
        (ReportInput::Matrix(m), Vec::new())
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

/// A rendered page and its plots (name, SVG) for `--svg`.
#[derive(Debug, Clone)]
pub struct Rendered {
    pub html: String,
    pub plots: Vec<(String, String)>,
}

const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

fn plot_err<E: std::fmt::Display>(e: E) -> ClusterError {
    ClusterError::Invalid(format!("drawing a plot: {e}"))
}

fn run_label(name: &str, r: &CollectiveReport) -> String {
    let who = match (&r.source, &r.backend) {
        (ResultSource::Fabrik, Some(b)) => format!("fabrik {b}"),
        (ResultSource::NcclTests, _) => "nccl-tests".into(),
        (ResultSource::RcclTests, _) => "rccl-tests".into(),
        (s, _) => format!("{s:?}").to_lowercase(),
    };
    let ranks = r.ranks.map(|n| format!(", {n} ranks")).unwrap_or_default();
    format!("{name} ({who}{ranks})")
}

/// busbw against size for every run of one operation (out-of-place; in-place dashed), on a
/// log axis: a TCP run at 1 GB/s and an NVLink run at 400 GB/s both stay readable.
pub fn busbw_plot(op: &str, runs: &[(String, &CollectiveReport)]) -> Result<String, ClusterError> {
    let mut svg = String::new();
    let points: Vec<(f64, f64)> = runs
        .iter()
        .flat_map(|(_, r)| r.rows.iter())
        .flat_map(|row| {
            [&row.out_of_place, &row.in_place]
                .into_iter()
                .flatten()
                .map(move |t| (row.size as f64, t.busbw))
        })
        .filter(|(s, b)| *s > 0.0 && b.is_finite() && *b > 0.0)
        .collect();
    let xmin = points.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let xmax = points.iter().map(|p| p.0).fold(0.0, f64::max);
    let ymax = points.iter().map(|p| p.1).fold(0.0, f64::max);
    let (xmin, xmax) = if points.is_empty() {
        (1.0, 2.0)
    } else if xmax <= xmin {
        (xmin / 2.0, xmax * 2.0)
    } else {
        (xmin, xmax)
    };
    let ymin = points.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let (ymin, ymax) = if points.is_empty() {
        (0.01, 1.0)
    } else {
        // Whole decades, so the ticks are 0.1, 1, 10, 100 GB/s.
        let lo = 10f64.powf(ymin.log10().floor());
        let hi = 10f64.powf(ymax.log10().ceil());
        (lo, if hi > lo { hi } else { lo * 10.0 })
    };
    // Sizes are powers of two in nearly every sweep: a log2 axis gives ticks at 1K, 4K, 1M...
    let (xmin, xmax) = (xmin.log2().floor(), xmax.log2().ceil());
    {
        let root = SVGBackend::with_string(&mut svg, (900, 480)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("{op}: bus bandwidth"), ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(48)
            .y_label_area_size(64)
            .build_cartesian_2d(xmin..xmax, (ymin..ymax).log_scale())
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .x_desc("size (bytes)")
            .y_desc("busbw (GB/s, log scale)")
            .y_label_formatter(&|v| {
                if *v >= 1.0 {
                    format!("{v:.0}")
                } else {
                    format!("{v}")
                }
            })
            .x_labels(((xmax - xmin) as usize + 1).min(24))
            .x_label_formatter(&|v| human_bytes(v.exp2()))
            .draw()
            .map_err(plot_err)?;
        for (i, (name, r)) in runs.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let oop: Vec<(f64, f64)> = r
                .rows
                .iter()
                .filter_map(|row| {
                    row.out_of_place
                        .as_ref()
                        .map(|t| (row.size as f64, t.busbw))
                })
                .filter(|(s, b)| *s > 0.0 && *b > 0.0)
                .map(|(s, b)| (s.log2(), b))
                .collect();
            let ip: Vec<(f64, f64)> = r
                .rows
                .iter()
                .filter_map(|row| row.in_place.as_ref().map(|t| (row.size as f64, t.busbw)))
                .filter(|(s, b)| *s > 0.0 && *b > 0.0)
                .map(|(s, b)| (s.log2(), b))
                .collect();
            chart
                .draw_series(LineSeries::new(oop.clone(), color.stroke_width(2)))
                .map_err(plot_err)?
                .label(run_label(name, r))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
            chart
                .draw_series(oop.iter().map(|&p| Circle::new(p, 3, color.filled())))
                .map_err(plot_err)?;
            chart
                .draw_series(DashedLineSeries::new(ip, 5, 4, color.stroke_width(1)))
                .map_err(plot_err)?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(plot_err)?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

fn human_bytes(v: f64) -> String {
    let units = [(1u64 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")];
    for (u, s) in units {
        let u = u as f64;
        if v >= u {
            let x = v / u;
            return if (x - x.round()).abs() < 1e-9 {
                format!("{}{s}", x.round())
            } else {
                format!("{x:.1}{s}")
            };
        }
    }
    format!("{}", v.round())
}

/// Cell colours with one meaning on every page: the colour says what the analysis concluded,
/// never how a link compares with the fastest one, so a matrix with no slow link has no red.
const LINK_OK: RGBColor = RGBColor(27, 127, 42);
const LINK_BELOW_MEDIAN: RGBColor = RGBColor(178, 106, 0);
const LINK_SLOW: RGBColor = RGBColor(176, 0, 32);
const LINK_MISSING: RGBColor = RGBColor(150, 150, 150);

/// The pair matrix as a heatmap: green for a link at its median's pace, amber for one more
/// than 10% below the median but above the slow-link threshold, red only for the links the
/// analysis reports slow, with a legend; each cell shows Gb/s and, when measured, latency.
pub fn heatmap(m: &PairMatrix) -> Result<String, ClusterError> {
    let n = m.ranks.max(1);
    let mut svg = String::new();
    let side = (80 * n + 160).clamp(420, 1400);
    let legend_h = 56;
    {
        let root = SVGBackend::with_string(&mut svg, (side, side + legend_h)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let (area, legend) = root.split_vertically(side);
        let mut chart = ChartBuilder::on(&area)
            .caption("pair bandwidth, row = sender", ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(40)
            .build_cartesian_2d(0u32..n, n..0u32)
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc("receiver rank")
            .y_desc("sender rank")
            .x_labels(n as usize + 1)
            .y_labels(n as usize + 1)
            .draw()
            .map_err(plot_err)?;
        let a = &m.analysis;
        let is_slow = |s: u32, d: u32, v: &[SlowLink]| v.iter().any(|x| x.src == s && x.dst == d);
        let mut used: Vec<RGBColor> = Vec::new();
        for l in &m.links {
            if l.src >= n || l.dst >= n {
                continue;
            }
            let color = if is_slow(l.src, l.dst, &a.slow_links) {
                LINK_SLOW
            } else if !l.gbps.is_finite() {
                LINK_MISSING
            } else if a.median_gbps > 0.0 && l.gbps < 0.9 * a.median_gbps {
                LINK_BELOW_MEDIAN
            } else {
                LINK_OK
            };
            if !used.contains(&color) {
                used.push(color);
            }
            let cell = [(l.dst, l.src), (l.dst + 1, l.src + 1)];
            chart
                .draw_series(std::iter::once(Rectangle::new(cell, color.filled())))
                .map_err(plot_err)?;
            chart
                .draw_series(std::iter::once(Rectangle::new(cell, WHITE.stroke_width(1))))
                .map_err(plot_err)?;
            let bw = if l.gbps >= 100.0 {
                format!("{:.0} Gb/s", l.gbps)
            } else {
                format!("{:.2} Gb/s", l.gbps)
            };
            let lat = l
                .latency_us
                .map(|u| format!("{u:.1} \u{b5}s"))
                .unwrap_or_default();
            let font = ("sans-serif", 11).into_font().color(&WHITE);
            chart
                .draw_series(std::iter::once(
                    EmptyElement::at((l.dst, l.src))
                        + Text::new(bw, (4, 4), font.clone())
                        + Text::new(lat, (4, 18), font),
                ))
                .map_err(plot_err)?;
        }
        // Only the colours drawn: a legend's red swatch would put red on a page with no slow
        // link. The threshold is said either way.
        let slow_label = if used.contains(&LINK_SLOW) {
            format!("slow: below {:.2} Gb/s", a.link_threshold_gbps)
        } else {
            String::new()
        };
        let entries = [
            (LINK_OK, "at the median's pace".to_string()),
            (LINK_BELOW_MEDIAN, "over 10% below the median".to_string()),
            (LINK_SLOW, slow_label),
            (LINK_MISSING, "not measured".to_string()),
        ];
        let font = ("sans-serif", 13).into_font().color(&BLACK);
        let mut x = 14i32;
        if !used.contains(&LINK_SLOW) {
            legend
                .draw(&Text::new(
                    format!("no slow link (threshold {:.2} Gb/s)", a.link_threshold_gbps),
                    (x, 40),
                    font.clone(),
                ))
                .map_err(plot_err)?;
        }
        for (color, label) in entries.into_iter().filter(|(c, _)| used.contains(c)) {
            legend
                .draw(&Rectangle::new([(x, 16), (x + 18, 34)], color.filled()))
                .map_err(plot_err)?;
            legend
                .draw(&Text::new(label.clone(), (x + 24, 19), font.clone()))
                .map_err(plot_err)?;
            x += 32 + 7 * label.len() as i32;
        }
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

/// What the page says about itself at the top.
#[derive(Debug, Clone)]
pub struct PageMeta {
    /// When the page was made (RFC 3339).
    pub generated: String,
    /// The fabrik version that made it.
    pub version: String,
}

/// Why a collective run is not a complete result, if it is not: fabrik's own run noted that it
/// was aborted (`bench collective --output` keeps the rows so far when a run fails), no rows at
/// all, or (parsed nccl-tests output) no `# Avg bus bandwidth` line, which nccl-tests prints
/// once every size has run.
pub fn collective_incomplete(r: &CollectiveReport) -> Option<String> {
    if let Some(note) = r.notes.iter().find(|n| n.starts_with("aborted")) {
        return Some(note.clone());
    }
    if r.rows.is_empty() {
        return Some("aborted: no result rows".into());
    }
    if r.source != ResultSource::Fabrik && r.avg_busbw.is_none() {
        return Some(
            "incomplete: no \"# Avg bus bandwidth\" line (the run stopped before its last \
             size, or the output was cut)"
                .into(),
        );
    }
    None
}

fn p2p_incomplete(r: &P2pReport) -> Option<String> {
    let empty = match &r.results {
        P2pRows::Bw(rows) => rows.is_empty(),
        P2pRows::Lat(rows) => rows.is_empty(),
    };
    empty.then(|| "aborted: no result rows".to_string())
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn findings_table(body: &mut String, findings: &[(String, Finding)]) {
    body.push_str("<table><tr><th>severity</th><th>rule</th><th>subject</th><th>message</th><th>evidence</th><th>fix</th><th>from</th></tr>\n");
    for (from, f) in findings {
        let sev = f.severity.as_str();
        let evidence: Vec<String> = f
            .evidence
            .iter()
            .map(|e| format!("{}: {}", esc(&e.path), esc(&e.value)))
            .collect();
        let _ = writeln!(
            body,
            "<tr><td class=\"{sev}\">{sev}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&f.rule),
            esc(&f.subject),
            esc(&f.message),
            evidence.join("<br>"),
            esc(&f.fix),
            esc(from)
        );
    }
    body.push_str("</table>\n");
}

/// Renders every input into one page, dated now.
pub fn render(inputs: &[Named]) -> Result<Rendered, ClusterError> {
    render_with(
        inputs,
        &PageMeta {
            generated: "-".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
    )
}

/// Renders every input into one page: a verdict line, then collectives, point-to-point runs,
/// pair matrices, findings (node, benchmark and NCCL log findings apart, worst first) and nodes.
pub fn render_with(inputs: &[Named], meta: &PageMeta) -> Result<Rendered, ClusterError> {
    let mut body = String::new();
    let mut plots: Vec<(String, String)> = Vec::new();
    let mut problems: Vec<String> = Vec::new();

    // Collective runs: one plot per operation, every run of it overlaid.
    let mut ops: Vec<String> = Vec::new();
    for i in inputs {
        if let ReportInput::Collective(r) = &i.input {
            if !ops.contains(&r.op) {
                ops.push(r.op.clone());
            }
        }
    }
    if !ops.is_empty() {
        body.push_str("<h2>Collectives</h2>\n");
    }
    for op in &ops {
        let runs: Vec<(String, &CollectiveReport)> = inputs
            .iter()
            .filter_map(|i| match &i.input {
                ReportInput::Collective(r) if &r.op == op => Some((i.name.clone(), r)),
                _ => None,
            })
            .collect();
        let svg = busbw_plot(op, &runs)?;
        let _ = writeln!(body, "<figure>{svg}</figure>");
        plots.push((format!("busbw-{}", slug(op)), svg));
        body.push_str("<table><tr><th>run</th><th>hosts</th><th>status</th><th>avg busbw (GB/s)</th><th>peak busbw (GB/s)</th><th>#wrong</th></tr>\n");
        for (name, r) in &runs {
            let timings: Vec<_> = r
                .rows
                .iter()
                .flat_map(|x| [&x.out_of_place, &x.in_place])
                .flatten()
                .collect();
            let peak = timings.iter().map(|t| t.busbw).fold(0.0, f64::max);
            let checked: Vec<u64> = timings.iter().filter_map(|t| t.wrong).collect();
            let wrong: u64 = checked.iter().sum();
            let incomplete = collective_incomplete(r);
            if let Some(why) = &incomplete {
                problems.push(format!("{}: {why}", run_label(name, r)));
            }
            if wrong > 0 {
                problems.push(format!("{}: {wrong} wrong values", run_label(name, r)));
            }
            // A green 0 only when the values were checked and the run finished.
            let (wrong_class, wrong_text) = if wrong > 0 {
                ("bad", wrong.to_string())
            } else if checked.is_empty() {
                ("", "not checked".to_string())
            } else if incomplete.is_some() {
                ("", format!("{wrong} (of the rows there)"))
            } else {
                ("ok", "0".to_string())
            };
            let _ = writeln!(
                body,
                "<tr><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td>{}</td><td>{peak:.3}</td><td class=\"{wrong_class}\">{wrong_text}</td></tr>",
                esc(&run_label(name, r)),
                esc(&r.hosts.join(", ")),
                if incomplete.is_some() { "bad" } else { "ok" },
                esc(incomplete.as_deref().unwrap_or("complete")),
                r.avg_busbw.map(|a| format!("{a:.3}")).unwrap_or_else(|| "-".into()),
            );
        }
        body.push_str("</table>\n");
    }

    let p2p: Vec<(&str, &P2pReport)> = inputs
        .iter()
        .filter_map(|i| match &i.input {
            ReportInput::P2p(r) => Some((i.name.as_str(), r.as_ref())),
            _ => None,
        })
        .collect();
    if !p2p.is_empty() {
        body.push_str("<h2>Point-to-point</h2>\n");
    }
    for (name, r) in &p2p {
        let source = match r.source {
            ResultSource::Fabrik => "fabrik",
            ResultSource::Perftest => "perftest",
            _ => "other",
        };
        let what = [
            Some(format!("{:?}", r.test).to_lowercase()),
            Some(r.transport.clone()),
            r.op.clone(),
            r.device.clone(),
            r.memory.as_ref().map(|m| format!("{} memory", m.kind)),
            (r.streams > 1).then(|| plural(r.streams as usize, "stream", "streams")),
        ];
        let what: Vec<String> = what.into_iter().flatten().collect();
        let _ = writeln!(
            body,
            "<h3>{} ({source}: {})</h3>",
            esc(name),
            esc(&what.join(", "))
        );
        if let Some(why) = p2p_incomplete(r) {
            problems.push(format!("{name}: {why}"));
            let _ = writeln!(body, "<p class=\"bad\">{}</p>", esc(&why));
        }
        match &r.results {
            P2pRows::Bw(rows) if !rows.is_empty() => {
                body.push_str("<table><tr><th>bytes</th><th>iterations</th><th>peak Gb/s</th><th>average Gb/s</th><th>Mpps</th></tr>\n");
                for x in rows {
                    let _ = writeln!(
                        body,
                        "<tr><td>{}</td><td>{}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td></tr>",
                        x.bytes, x.iterations, x.bw_peak_gbps, x.bw_avg_gbps, x.msg_rate_mpps
                    );
                }
                body.push_str("</table>\n");
            }
            P2pRows::Lat(rows) if !rows.is_empty() => {
                body.push_str("<table><tr><th>bytes</th><th>iterations</th><th>min \u{b5}s</th><th>typical \u{b5}s</th><th>average \u{b5}s</th><th>max \u{b5}s</th><th>p99 \u{b5}s</th></tr>\n");
                for x in rows {
                    let _ = writeln!(
                        body,
                        "<tr><td>{}</td><td>{}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{}</td></tr>",
                        x.bytes,
                        x.iterations,
                        x.t_min_us,
                        x.t_typical_us,
                        x.t_avg_us,
                        x.t_max_us,
                        x.p99_us.map(|p| format!("{p:.2}")).unwrap_or_else(|| "-".into())
                    );
                }
                body.push_str("</table>\n");
            }
            _ => {}
        }
        if let Some(w) = r.memory.as_ref().and_then(|m| m.warning.as_ref()) {
            let _ = writeln!(body, "<p class=\"warning\">{}</p>", esc(w));
        }
        for note in &r.notes {
            let _ = writeln!(body, "<p class=\"src\">{}</p>", esc(note));
        }
    }

    for (k, i) in inputs.iter().enumerate() {
        if let ReportInput::Matrix(m) = &i.input {
            let _ = writeln!(body, "<h2>Pair matrix: {}</h2>", esc(&i.name));
            let svg = heatmap(m)?;
            let _ = writeln!(body, "<figure>{svg}</figure>");
            plots.push((format!("matrix-{k}"), svg));
            let a = &m.analysis;
            let _ = writeln!(
                body,
                "<p>{}, {}, {} bytes x {} per direction over {}. Median link {:.3} Gb/s, MAD {:.3} Gb/s; links below {:.3} Gb/s are reported.</p>",
                plural(m.ranks as usize, "rank", "ranks"),
                plural(m.rounds as usize, "round", "rounds"),
                m.size, m.iterations, esc(&m.transport), a.median_gbps, a.mad_gbps, a.link_threshold_gbps
            );
            if let Some(note) = &a.note {
                let _ = writeln!(body, "<p>{}</p>", esc(note));
            }
            if a.slow_links.is_empty() && a.slow_nodes.is_empty() {
                body.push_str("<p class=\"ok\">No slow links or nodes.</p>\n");
            }
            for l in &a.slow_links {
                problems.push(format!(
                    "{}: slow link rank {} \u{2192} rank {}",
                    i.name, l.src, l.dst
                ));
                let _ = writeln!(
                    body,
                    "<p class=\"bad\">Slow link: rank {} ({}) &rarr; rank {} ({}): {:.3} Gb/s, {:.0}% of the median.</p>",
                    l.src, esc(&l.src_host), l.dst, esc(&l.dst_host), l.gbps, l.ratio_to_median * 100.0
                );
            }
            for nd in &a.slow_nodes {
                problems.push(format!("{}: slow node rank {}", i.name, nd.rank));
                let _ = writeln!(
                    body,
                    "<p class=\"bad\">Slow node: rank {} ({}): its links' median is {:.3} Gb/s, {:.0}% of the nodes' median.</p>",
                    nd.rank, esc(&nd.host), nd.median_gbps, nd.ratio_to_median * 100.0
                );
            }
        }
    }

    // Findings, by where they come from, each group worst first.
    let mut node_findings: Vec<(String, Finding)> = Vec::new();
    let mut bench_findings: Vec<(String, Finding)> = Vec::new();
    let mut log_findings: Vec<(String, Finding)> = Vec::new();
    let mut logs: Vec<(&str, &LogDoc)> = Vec::new();
    let mut nodes: Vec<(String, &Node)> = Vec::new();
    for i in inputs {
        let tagged = i.findings.iter().map(|f| (i.name.clone(), f.clone()));
        match &i.input {
            ReportInput::Doctor(d) => {
                node_findings.extend(tagged);
                nodes.extend(
                    d.nodes
                        .iter()
                        .map(|n| (format!("rank {} ({})", n.rank, n.host), &n.node)),
                );
            }
            ReportInput::NodeDoctor { .. } | ReportInput::Findings => node_findings.extend(tagged),
            ReportInput::Logs(l) => {
                log_findings.extend(tagged);
                logs.push((i.name.as_str(), l));
            }
            ReportInput::Node(n) => {
                node_findings.extend(tagged);
                nodes.push((n.hostname.clone().unwrap_or_else(|| i.name.clone()), n))
            }
            ReportInput::Collective(_) | ReportInput::P2p(_) | ReportInput::Matrix(_) => {
                bench_findings.extend(tagged)
            }
        }
    }
    let all: Vec<&Finding> = node_findings
        .iter()
        .chain(&bench_findings)
        .chain(&log_findings)
        .map(|(_, f)| f)
        .collect();
    let errors = all.iter().filter(|f| f.severity == Severity::Error).count();
    let warnings = all
        .iter()
        .filter(|f| f.severity == Severity::Warning)
        .count();
    for (title, mut group) in [
        ("Doctor findings", node_findings),
        ("Benchmark findings", bench_findings),
    ] {
        if group.is_empty() {
            continue;
        }
        sort_tagged(&mut group);
        let _ = writeln!(body, "<h2>{title}</h2>");
        findings_table(&mut body, &group);
    }
    if !logs.is_empty() || !log_findings.is_empty() {
        body.push_str("<h2>NCCL log findings</h2>\n");
        for (name, l) in &logs {
            let _ = writeln!(body, "<h3>{}</h3>\n<p>{}</p>", esc(name), esc(&l.summary));
            if !l.processes.is_empty() {
                body.push_str("<table><tr><th>host</th><th>pid</th><th>ranks</th><th>transport</th><th>GPUDirect RDMA</th></tr>\n");
                for p in &l.processes {
                    body.push_str("<tr>");
                    for cell in p {
                        let _ = write!(body, "<td>{}</td>", esc(cell));
                    }
                    body.push_str("</tr>\n");
                }
                body.push_str("</table>\n");
            }
        }
        if log_findings.is_empty() {
            body.push_str("<p class=\"ok\">No log findings.</p>\n");
        } else {
            sort_tagged(&mut log_findings);
            findings_table(&mut body, &log_findings);
        }
    }
    if !nodes.is_empty() {
        body.push_str("<h2>Nodes</h2>\n<table><tr><th>node</th><th>kernel</th><th>OS</th><th>RDMA devices</th><th>network interfaces</th><th>GPUs</th></tr>\n");
        for (name, n) in &nodes {
            let rdma: Vec<String> = n.rdma_devices.iter().map(|d| d.name.clone()).collect();
            let nics: Vec<String> = n.net_interfaces.iter().map(|d| d.name.clone()).collect();
            let gpus: Vec<String> = n
                .gpus
                .iter()
                .map(|g| g.model.clone().unwrap_or_else(|| g.pci.address.clone()))
                .collect();
            let _ = writeln!(
                body,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(name),
                esc(n.os.kernel.as_deref().unwrap_or("?")),
                esc(n.os.distro.as_deref().unwrap_or("?")),
                esc(&rdma.join(", ")),
                esc(&nics.join(", ")),
                esc(&gpus.join(", "))
            );
        }
        body.push_str("</table>\n");
    }
    if body.is_empty() {
        body.push_str("<p>No results given.</p>\n");
    }
    let verdict = verdict_line(errors, warnings, &problems);
    let sources: Vec<String> = inputs.iter().map(|i| esc(&i.name)).collect();
    let html = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>fabrik report</title>\n<style>{CSS}</style></head>\n<body>\n<h1>fabrik report</h1>\n{verdict}\n<p class=\"src\">Made {} by fabrik {} from: {}</p>\n{body}</body></html>\n",
        esc(&meta.generated),
        esc(&meta.version),
        sources.join(", ")
    );
    Ok(Rendered { html, plots })
}

/// Worst first, in the order `sort_findings` gives everywhere else, each beside its origin.
fn sort_tagged(group: &mut [(String, Finding)]) {
    group.sort_by(|(na, a), (nb, b)| {
        b.severity
            .cmp(&a.severity)
            .then_with(|| a.rule.cmp(&b.rule))
            .then_with(|| a.subject.cmp(&b.subject))
            .then_with(|| na.cmp(nb))
    });
}

/// One line at the top that a reader can act on: what is wrong, or that nothing is.
fn verdict_line(errors: usize, warnings: usize, problems: &[String]) -> String {
    if errors == 0 && problems.is_empty() {
        let w = if warnings > 0 {
            format!(", {}", plural(warnings, "warning", "warnings"))
        } else {
            String::new()
        };
        return format!("<p class=\"verdict ok\">Verdict: no errors{w}.</p>");
    }
    let mut parts = Vec::new();
    if errors > 0 {
        parts.push(plural(errors, "error finding", "error findings"));
    }
    if warnings > 0 {
        parts.push(plural(warnings, "warning", "warnings"));
    }
    parts.extend(problems.iter().cloned());
    let list: Vec<String> = parts.iter().map(|p| esc(p)).collect();
    format!(
        "<p class=\"verdict bad\">Verdict: not healthy: {}.</p>",
        list.join("; ")
    )
}

const CSS: &str = "body{font-family:sans-serif;margin:24px;color:#222;background:#fff}\
h1{font-size:26px}h2{font-size:20px;margin-top:32px;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}\
th{background:#f0f0f0}.bad,.error{color:#b00020;font-weight:bold}.ok{color:#1b7f2a}\
.warning{color:#b26a00;font-weight:bold}figure{margin:8px 0}.src{color:#666}\
.verdict{font-size:18px;padding:8px;border:2px solid currentColor}";

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use fabrik_model::{CollTiming, CollectiveRow, LinkMeasurement};

    fn coll(op: &str, source: ResultSource) -> CollectiveReport {
        CollectiveReport {
            schema_version: 1,
            source,
            op: op.into(),
            backend: Some("tcp".into()),
            ranks: Some(4),
            hosts: vec!["a".into(), "b".into()],
            devices: vec![],
            rows: (3..20)
                .map(|k| CollectiveRow {
                    size: 1 << k,
                    count: 1 << (k - 2),
                    dtype: "float".into(),
                    redop: Some("sum".into()),
                    root: Some(-1),
                    out_of_place: Some(CollTiming {
                        time_us: 10.0,
                        algbw: k as f64,
                        busbw: k as f64 * 1.5,
                        wrong: Some(0),
                    }),
                    in_place: Some(CollTiming {
                        time_us: 10.0,
                        algbw: k as f64,
                        busbw: k as f64 * 1.4,
                        wrong: Some(0),
                    }),
                })
                .collect(),
            avg_busbw: Some(12.5),
            notes: vec![],
        }
    }

    fn matrix() -> PairMatrix {
        let mut links = Vec::new();
        for s in 0..4 {
            for d in 0..4 {
                if s != d {
                    links.push(LinkMeasurement {
                        src: s,
                        dst: d,
                        gbps: 10.0,
                        latency_us: Some(20.0),
                        round: 0,
                    });
                }
            }
        }
        links[5].gbps = 0.1;
        let hosts: Vec<String> = (0..4).map(|r| format!("node<{r}>")).collect();
        let analysis = crate::pairs::analyze(&links, &hosts, 4);
        PairMatrix {
            schema_version: 1,
            transport: "tcp".into(),
            size: 1 << 20,
            iterations: 3,
            ranks: 4,
            hosts,
            rounds: 3,
            links,
            analysis,
            rail: None,
            isolation: None,
        }
    }

    fn named(name: &str, input: ReportInput) -> Named {
        Named {
            name: name.into(),
            input,
            findings: vec![],
        }
    }

    #[test]
    fn inputs_are_recognised_by_shape() {
        let c = serde_json::to_string(&coll("all_reduce", ResultSource::Fabrik)).unwrap();
        assert!(matches!(
            classify("c.json", &c).unwrap()[0].input,
            ReportInput::Collective(_)
        ));
        let m = serde_json::to_string(&matrix()).unwrap();
        assert!(matches!(
            classify("m.json", &m).unwrap()[0].input,
            ReportInput::Matrix(_)
        ));
        assert!(matches!(
            classify("f.json", "[]").unwrap()[0].input,
            ReportInput::Findings
        ));
        // Several runs in one file (a parsed nccl-tests log with two runs).
        let two = format!("[{c},{c}]");
        assert_eq!(classify("two.json", &two).unwrap().len(), 2);
        assert!(classify("x.json", "{\"hello\": 1}").is_err());
        assert!(classify("x.json", "not json").is_err());
    }

    #[test]
    fn page_is_self_contained_and_shows_everything() {
        let inputs = vec![
            named(
                "fabrik.json",
                ReportInput::Collective(coll("all_reduce", ResultSource::Fabrik)),
            ),
            named(
                "nccl.json",
                ReportInput::Collective(coll("all_reduce", ResultSource::NcclTests)),
            ),
            named(
                "ag.json",
                ReportInput::Collective(coll("all_gather", ResultSource::Fabrik)),
            ),
            named("m.json", ReportInput::Matrix(matrix())),
        ];
        let r = render(&inputs).unwrap();
        assert_eq!(r.plots.len(), 3);
        assert!(r.html.contains("<svg"));
        assert!(r.html.contains("all_reduce: bus bandwidth"));
        assert!(r.html.contains("nccl.json (nccl-tests, 4 ranks)"));
        // The planted slow link is named, with the host names escaped.
        assert!(
            r.html
                .contains("Slow link: rank 1 (node&lt;1&gt;) &rarr; rank 3"),
            "{}",
            r.html
        );
        // Nothing is fetched: no external references of any kind (the SVG namespace name is an
        // identifier, never loaded).
        let page = r.html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
        for needle in [
            "http://", "https://", "<script", "<link", "@import", "url(", "href=", "src=",
        ] {
            assert!(!page.contains(needle), "found {needle}");
        }
    }

    #[test]
    fn heatmap_red_means_a_reported_slow_link_and_nothing_else() {
        let red = "#B00020";
        let slow = heatmap(&matrix()).unwrap();
        assert!(
            slow.to_uppercase().contains(red),
            "the planted slow link is red"
        );
        assert!(slow.contains("slow: below"), "a legend");
        assert!(slow.contains("20.0 \u{b5}s"), "latency in the cells");
        // Every link alike, one at 80% of the others: no slow link is reported, so no red.
        let mut even = matrix();
        for l in &mut even.links {
            l.gbps = 10.0;
        }
        even.links[5].gbps = 9.5;
        let hosts = even.hosts.clone();
        even.analysis = crate::pairs::analyze(&even.links, &hosts, 4);
        assert!(even.analysis.slow_links.is_empty());
        let svg = heatmap(&even).unwrap().to_uppercase();
        assert!(!svg.contains(red));
        let page = render(&[named("m.json", ReportInput::Matrix(even))]).unwrap();
        assert!(page.html.contains("No slow links or nodes."));
        assert!(page.html.contains("Verdict: no errors."));
    }

    #[test]
    fn busbw_uses_a_log_axis() {
        let mut slow = coll("all_reduce", ResultSource::Fabrik);
        for r in &mut slow.rows {
            if let Some(t) = r.out_of_place.as_mut() {
                t.busbw /= 300.0;
            }
        }
        let fast = coll("all_reduce", ResultSource::NcclTests);
        let svg = busbw_plot(
            "all_reduce",
            &[("tcp".into(), &slow), ("nvlink".into(), &fast)],
        )
        .unwrap();
        assert!(svg.contains("log scale"));
        // Decade ticks spanning both runs (a linear axis to 100 would label 0, 20, 40...).
        let labels: Vec<&str> = svg.lines().map(str::trim).collect();
        for tick in ["0.1", "1", "10", "100"] {
            assert!(labels.contains(&tick), "{tick}");
        }
        assert!(!labels.contains(&"20"));
    }

    #[test]
    fn an_aborted_or_cut_run_is_never_a_green_zero() {
        let mut aborted = coll("all_reduce", ResultSource::Fabrik);
        aborted
            .notes
            .push("aborted: rank 1 (node-b): connection reset".into());
        let mut cut = coll("all_reduce", ResultSource::NcclTests);
        cut.avg_busbw = None;
        let done = coll("all_gather", ResultSource::NcclTests);
        assert!(collective_incomplete(&done).is_none());
        let page = render(&[
            named("aborted.json", ReportInput::Collective(aborted)),
            named("cut.json", ReportInput::Collective(cut)),
            named("done.json", ReportInput::Collective(done)),
        ])
        .unwrap()
        .html;
        assert!(page.contains("aborted: rank 1 (node-b): connection reset"));
        assert!(page.contains("incomplete: no &quot;# Avg bus bandwidth&quot; line"));
        assert_eq!(page.matches("<td class=\"ok\">0</td>").count(), 1, "{page}");
        assert!(page.contains("Verdict: not healthy"));
    }
}
