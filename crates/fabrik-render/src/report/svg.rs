//! The report's plots, drawn as SVG with plotters: bus bandwidth against size for collective
//! runs, and the pair matrix as a heatmap.

use fabrik_model::{CollectiveReport, PairMatrix, ResultSource, SlowLink};
use plotters::prelude::*;

use super::ReportError;

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

fn plot_err<E: std::fmt::Display>(e: E) -> ReportError {
    ReportError::Plot(e.to_string())
}

pub(super) fn run_label(name: &str, r: &CollectiveReport) -> String {
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
pub fn busbw_plot(op: &str, runs: &[(String, &CollectiveReport)]) -> Result<String, ReportError> {
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
pub fn heatmap(m: &PairMatrix) -> Result<String, ReportError> {
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
