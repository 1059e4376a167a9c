//! The report's page: one self-contained HTML file. Plots are inline SVG; the page loads
//! nothing from anywhere (no scripts, fonts or images by URL).

use std::fmt::Write as _;

use fabrik_model::{CollectiveReport, Finding, Node, P2pReport, P2pRows, ResultSource, Severity};

/// Whether a run is a complete result is a property of the result (`fabrik parse` says the
/// same of the same file).
pub use fabrik_model::passline::collective_incomplete;
use fabrik_model::passline::p2p_incomplete;

use super::escape::esc;
use super::svg::{busbw_plot, heatmap, run_label};
use super::{LogDoc, Named, ReportError, ReportInput};

/// A rendered page and its plots (name, SVG) for `--svg`.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// The page.
    pub html: String,
    /// Each plot as (file stem, SVG), in page order.
    pub plots: Vec<(String, String)>,
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
pub fn render(inputs: &[Named]) -> Result<Rendered, ReportError> {
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
pub fn render_with(inputs: &[Named], meta: &PageMeta) -> Result<Rendered, ReportError> {
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
            (r.streams > 1).then(|| crate::plural(r.streams.into(), "stream", "streams")),
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
                crate::plural(m.ranks.into(), "rank", "ranks"),
                crate::plural(m.rounds.into(), "round", "rounds"),
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
        for (name, n) in &nodes {
            super::evidence::node_evidence(&mut body, name, n);
        }
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
            format!(
                ", {}",
                crate::plural(warnings as u64, "warning", "warnings")
            )
        } else {
            String::new()
        };
        return format!("<p class=\"verdict ok\">Verdict: no errors{w}.</p>");
    }
    let mut parts = Vec::new();
    if errors > 0 {
        parts.push(crate::plural(
            errors as u64,
            "error finding",
            "error findings",
        ));
    }
    if warnings > 0 {
        parts.push(crate::plural(warnings as u64, "warning", "warnings"));
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
