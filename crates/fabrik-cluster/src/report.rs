//! `fabrik report`: one self-contained HTML page from result files. Plots are inline SVG drawn
//! with plotters; the page loads nothing from anywhere (no scripts, fonts or images by URL).

use std::fmt::Write as _;

use fabrik_model::{
    ClusterDoctorReport, CollectiveReport, Finding, Node, PairMatrix, ResultSource, SlowLink,
};
use plotters::prelude::*;
use serde_json::Value;

use crate::ClusterError;

/// One input file, recognised by its shape.
#[derive(Debug, Clone)]
pub enum ReportInput {
    Collective(CollectiveReport),
    Matrix(PairMatrix),
    Doctor(ClusterDoctorReport),
    Node(Box<Node>),
    Findings(Vec<Finding>),
}

/// A named input.
#[derive(Debug, Clone)]
pub struct Named {
    pub name: String,
    pub input: ReportInput,
}

/// Recognises a fabrik JSON document: a collective run (fabrik's or a parsed nccl-tests run),
/// a pair matrix, a cluster doctor report, a node inventory, or a list of findings.
pub fn classify(name: &str, text: &str) -> Result<Named, ClusterError> {
    let bad = |why: String| ClusterError::Invalid(format!("{name}: {why}"));
    let v: Value = serde_json::from_str(text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let has = |k: &str| v.get(k).is_some();
    let input = if v.is_array() {
        ReportInput::Findings(
            serde_json::from_value(v).map_err(|e| bad(format!("not a list of findings: {e}")))?,
        )
    } else if has("rows") && has("op") {
        ReportInput::Collective(
            serde_json::from_value(v).map_err(|e| bad(format!("bad collective report: {e}")))?,
        )
    } else if has("links") && has("analysis") {
        ReportInput::Matrix(
            serde_json::from_value(v).map_err(|e| bad(format!("bad pair matrix: {e}")))?,
        )
    } else if has("nodes") && has("findings") {
        ReportInput::Doctor(
            serde_json::from_value(v)
                .map_err(|e| bad(format!("bad cluster doctor report: {e}")))?,
        )
    } else if has("rdma_devices") && has("net_interfaces") {
        ReportInput::Node(Box::new(
            serde_json::from_value(v).map_err(|e| bad(format!("bad node inventory: {e}")))?,
        ))
    } else if let Some(f) = v.get("findings") {
        ReportInput::Findings(
            serde_json::from_value(f.clone()).map_err(|e| bad(format!("bad findings: {e}")))?,
        )
    } else {
        return Err(bad(
            "not a fabrik result (collective run, pair matrix, doctor report, inventory or findings)"
                .into(),
        ));
    };
    Ok(Named {
        name: name.to_string(),
        input,
    })
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

/// busbw against size for every run of one operation (out-of-place; in-place dashed).
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
        .filter(|(s, b)| *s > 0.0 && b.is_finite())
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
    let ymax = if ymax > 0.0 { ymax * 1.1 } else { 1.0 };
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
            .build_cartesian_2d(xmin..xmax, 0f64..ymax)
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .x_desc("size (bytes)")
            .y_desc("busbw (GB/s)")
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
                .filter(|(s, _)| *s > 0.0)
                .map(|(s, b)| (s.log2(), b))
                .collect();
            let ip: Vec<(f64, f64)> = r
                .rows
                .iter()
                .filter_map(|row| row.in_place.as_ref().map(|t| (row.size as f64, t.busbw)))
                .filter(|(s, _)| *s > 0.0)
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

/// The pair matrix as a heatmap: cell colour from slow (red) to fast (green) relative to the
/// fastest link; slow links outlined.
pub fn heatmap(m: &PairMatrix) -> Result<String, ClusterError> {
    let n = m.ranks.max(1);
    let mut svg = String::new();
    let side = (60 * n + 160).clamp(400, 1200);
    {
        let root = SVGBackend::with_string(&mut svg, (side, side)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption("pair bandwidth (Gb/s), row = sender", ("sans-serif", 20))
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
        let max = m
            .links
            .iter()
            .map(|l| l.gbps)
            .fold(0.0, f64::max)
            .max(1e-12);
        let is_slow = |s: u32, d: u32, v: &[SlowLink]| v.iter().any(|x| x.src == s && x.dst == d);
        for l in &m.links {
            if l.src >= n || l.dst >= n {
                continue;
            }
            let t = (l.gbps / max).clamp(0.0, 1.0);
            let color = RGBColor(
                (230.0 * (1.0 - t) + 20.0) as u8,
                (60.0 + 150.0 * t) as u8,
                (60.0 + 40.0 * t) as u8,
            );
            let cell = [(l.dst, l.src), (l.dst + 1, l.src + 1)];
            chart
                .draw_series(std::iter::once(Rectangle::new(cell, color.filled())))
                .map_err(plot_err)?;
            if is_slow(l.src, l.dst, &m.analysis.slow_links) {
                chart
                    .draw_series(std::iter::once(Rectangle::new(cell, BLACK.stroke_width(3))))
                    .map_err(plot_err)?;
            }
            let label = if l.gbps >= 100.0 {
                format!("{:.0}", l.gbps)
            } else {
                format!("{:.2}", l.gbps)
            };
            chart
                .draw_series(std::iter::once(Text::new(
                    label,
                    (l.dst, l.src),
                    ("sans-serif", 12).into_font().color(&WHITE),
                )))
                .map_err(plot_err)?;
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

/// Renders every input into one page.
pub fn render(inputs: &[Named]) -> Result<Rendered, ClusterError> {
    let mut body = String::new();
    let mut plots: Vec<(String, String)> = Vec::new();

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
        body.push_str("<table><tr><th>run</th><th>hosts</th><th>avg busbw (GB/s)</th><th>peak busbw (GB/s)</th><th>#wrong</th></tr>\n");
        for (name, r) in &runs {
            let peak = r
                .rows
                .iter()
                .flat_map(|x| [&x.out_of_place, &x.in_place])
                .flatten()
                .map(|t| t.busbw)
                .fold(0.0, f64::max);
            let wrong: u64 = r
                .rows
                .iter()
                .flat_map(|x| [&x.out_of_place, &x.in_place])
                .flatten()
                .filter_map(|t| t.wrong)
                .sum();
            let _ = writeln!(
                body,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{peak:.3}</td><td class=\"{}\">{wrong}</td></tr>",
                esc(&run_label(name, r)),
                esc(&r.hosts.join(", ")),
                r.avg_busbw.map(|a| format!("{a:.3}")).unwrap_or_else(|| "-".into()),
                if wrong > 0 { "bad" } else { "ok" },
            );
        }
        body.push_str("</table>\n");
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
                "<p>{} ranks, {} rounds, {} bytes x {} per direction over {}. Median link {:.3} Gb/s, MAD {:.3} Gb/s; links below {:.3} Gb/s are reported.</p>",
                m.ranks, m.rounds, m.size, m.iterations, esc(&m.transport), a.median_gbps, a.mad_gbps, a.link_threshold_gbps
            );
            if let Some(note) = &a.note {
                let _ = writeln!(body, "<p>{}</p>", esc(note));
            }
            if a.slow_links.is_empty() && a.slow_nodes.is_empty() {
                body.push_str("<p class=\"ok\">No slow links or nodes.</p>\n");
            }
            for l in &a.slow_links {
                let _ = writeln!(
                    body,
                    "<p class=\"bad\">Slow link: rank {} ({}) &rarr; rank {} ({}): {:.3} Gb/s, {:.0}% of the median.</p>",
                    l.src, esc(&l.src_host), l.dst, esc(&l.dst_host), l.gbps, l.ratio_to_median * 100.0
                );
            }
            for nd in &a.slow_nodes {
                let _ = writeln!(
                    body,
                    "<p class=\"bad\">Slow node: rank {} ({}): its links' median is {:.3} Gb/s, {:.0}% of the nodes' median.</p>",
                    nd.rank, esc(&nd.host), nd.median_gbps, nd.ratio_to_median * 100.0
                );
            }
        }
    }

    let mut findings: Vec<(String, &Finding)> = Vec::new();
    let mut nodes: Vec<(String, &Node)> = Vec::new();
    for i in inputs {
        match &i.input {
            ReportInput::Doctor(d) => {
                findings.extend(d.findings.iter().map(|f| (i.name.clone(), f)));
                nodes.extend(
                    d.nodes
                        .iter()
                        .map(|n| (format!("rank {} ({})", n.rank, n.host), &n.node)),
                );
            }
            ReportInput::Findings(f) => findings.extend(f.iter().map(|x| (i.name.clone(), x))),
            ReportInput::Node(n) => {
                nodes.push((n.hostname.clone().unwrap_or_else(|| i.name.clone()), n))
            }
            _ => {}
        }
    }
    if !findings.is_empty() {
        body.push_str("<h2>Doctor findings</h2>\n<table><tr><th>severity</th><th>rule</th><th>subject</th><th>message</th><th>fix</th></tr>\n");
        for (_, f) in &findings {
            let sev = format!("{:?}", f.severity).to_lowercase();
            let _ = writeln!(
                body,
                "<tr><td class=\"{sev}\">{sev}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&f.rule),
                esc(&f.subject),
                esc(&f.message),
                esc(&f.fix)
            );
        }
        body.push_str("</table>\n");
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
    let sources: Vec<String> = inputs.iter().map(|i| esc(&i.name)).collect();
    let html = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>fabrik report</title>\n<style>{CSS}</style></head>\n<body>\n<h1>fabrik report</h1>\n<p class=\"src\">From: {}</p>\n{body}</body></html>\n",
        sources.join(", ")
    );
    Ok(Rendered { html, plots })
}

const CSS: &str = "body{font-family:sans-serif;margin:24px;color:#222;background:#fff}\
h1{font-size:26px}h2{font-size:20px;margin-top:32px;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}\
th{background:#f0f0f0}.bad,.error{color:#b00020;font-weight:bold}.ok{color:#1b7f2a}\
.warning{color:#b26a00;font-weight:bold}figure{margin:8px 0}.src{color:#666}";

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
        }
    }

    #[test]
    fn inputs_are_recognised_by_shape() {
        let c = serde_json::to_string(&coll("all_reduce", ResultSource::Fabrik)).unwrap();
        assert!(matches!(
            classify("c.json", &c).unwrap().input,
            ReportInput::Collective(_)
        ));
        let m = serde_json::to_string(&matrix()).unwrap();
        assert!(matches!(
            classify("m.json", &m).unwrap().input,
            ReportInput::Matrix(_)
        ));
        assert!(matches!(
            classify("f.json", "[]").unwrap().input,
            ReportInput::Findings(_)
        ));
        assert!(classify("x.json", "{\"hello\": 1}").is_err());
        assert!(classify("x.json", "not json").is_err());
    }

    #[test]
    fn page_is_self_contained_and_shows_everything() {
        let inputs = vec![
            Named {
                name: "fabrik.json".into(),
                input: ReportInput::Collective(coll("all_reduce", ResultSource::Fabrik)),
            },
            Named {
                name: "nccl.json".into(),
                input: ReportInput::Collective(coll("all_reduce", ResultSource::NcclTests)),
            },
            Named {
                name: "ag.json".into(),
                input: ReportInput::Collective(coll("all_gather", ResultSource::Fabrik)),
            },
            Named {
                name: "m.json".into(),
                input: ReportInput::Matrix(matrix()),
            },
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
}
