//! nccl-tests' text output, reproduced column for column so that tools (and eyes) reading
//! nccl-tests tables read fabrik's the same way. Widths and number formats follow nccl-tests'
//! `writeResultHeader`, `writeBenchmarkLinePreamble`/`Body` and `writeResultFooter`.

pub use fabrik_model::RunParams;
use fabrik_model::{CollTiming, CollectiveRow, RankDevice};

/// C's `%g` (6 significant digits, trailing zeros trimmed).
pub fn c_g(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    if !v.is_finite() {
        return if v.is_nan() {
            "nan".into()
        } else if v > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    let exp = v.abs().log10().floor() as i32;
    // %g rounds to 6 significant digits first; the exponent after rounding decides the style.
    let sci = format!("{:.5e}", v);
    let exp_r: i32 = sci
        .split('e')
        .nth(1)
        .and_then(|e| e.parse().ok())
        .unwrap_or(exp);
    if (-4..6).contains(&exp_r) {
        let decimals = (5 - exp_r).max(0) as usize;
        trim_zeros(&format!("{v:.decimals$}"))
    } else {
        let (mant, e) = sci.split_once('e').unwrap_or((&sci, "0"));
        let e: i32 = e.parse().unwrap_or(0);
        format!(
            "{}e{}{:02}",
            trim_zeros(mant),
            if e < 0 { '-' } else { '+' },
            e.abs()
        )
    }
}

fn trim_zeros(s: &str) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s.to_string()
    }
}

/// C's `%.{prec}e` (exponent with sign and at least two digits).
fn c_e(v: f64, prec: usize) -> String {
    let s = format!("{v:.prec$e}");
    match s.split_once('e') {
        Some((m, e)) => {
            let e: i32 = e.parse().unwrap_or(0);
            format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
        }
        None => s,
    }
}

/// nccl-tests' `getFloatStr`: two decimals if they fit the width, then one, then none, then
/// scientific.
pub fn float_str(v: f64, width: usize) -> String {
    for prec in [2usize, 1, 0] {
        let s = format!("{v:>width$.prec$}");
        if s.len() <= width {
            return s;
        }
    }
    let s = c_e(v, if width >= 7 { 1 } else { 0 });
    format!("{s:>width$}")
}

/// The lines before the table: run parameters and one line per rank.
pub fn header(p: &RunParams<'_>, devices: &[RankDevice]) -> String {
    let RunParams {
        op,
        min_bytes,
        max_bytes,
        ref step,
        warmup,
        iters,
        check,
    } = *p;
    let mut s = String::new();
    s.push_str(&format!("# Collective test starting: {op} (fabrik)\n"));
    s.push_str(&format!(
        "# nThread 1 nGpus 1 minBytes {min_bytes} maxBytes {max_bytes} step: {step} warmup iters: {warmup} iters: {iters} agg iters: 1 validation: {} graph: 0\n",
        u8::from(check)
    ));
    s.push_str("#\n# Using devices\n");
    for d in devices {
        s.push_str(&format!(
            "#  Rank {:2} Group {:2} Pid {:6} on {:>10} device {:2} [{}] {}\n",
            d.rank,
            d.group.unwrap_or(0),
            d.pid.unwrap_or(0),
            d.host,
            d.device.unwrap_or(0),
            d.bus_id.as_deref().unwrap_or("host"),
            d.name.as_deref().unwrap_or("host memory"),
        ));
    }
    s.push_str("#\n");
    s.push_str(&format!(
        "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}           out-of-place                       in-place          \n",
        "", "", "", "", ""
    ));
    s.push_str(&format!(
        "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6} \n",
        "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
        "busbw", "#wrong"
    ));
    s.push_str(&format!(
        "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6} \n",
        "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", ""
    ));
    s
}

fn timing_cols(t: Option<&CollTiming>) -> String {
    match t {
        None => format!("  {:>7}  {:>6}  {:>6}  {:>6}", "", "", "", ""),
        Some(t) => {
            let wrong = match t.wrong {
                Some(w) => format!("{:>6}", c_g(w as f64)),
                None => "   N/A".to_string(),
            };
            format!(
                "  {:>7}  {:>6}  {:>6}  {}",
                float_str(t.time_us, 7),
                float_str(t.algbw, 6),
                float_str(t.busbw, 6),
                wrong
            )
        }
    }
}

/// One table row, without the trailing newline.
pub fn row(r: &CollectiveRow) -> String {
    format!(
        "{:>12}  {:>12}  {:>8}  {:>6}  {:>6}{}{}",
        r.size,
        r.count,
        r.dtype,
        r.redop.as_deref().unwrap_or("none"),
        r.root.unwrap_or(-1),
        timing_cols(r.out_of_place.as_ref()),
        timing_cols(r.in_place.as_ref()),
    )
}

/// The closing lines.
pub fn footer(op: &str, wrong_total: u64, avg_busbw: f64) -> String {
    format!(
        "# {:<20} : {} {}\n# {:<20} : {} \n#\n# Collective test concluded: {op}\n",
        "Out of bounds values",
        wrong_total,
        if wrong_total > 0 { "FAILED" } else { "OK" },
        "Avg bus bandwidth",
        c_g(avg_busbw),
    )
}

/// What follows the table: the first wrong element of each rank that had one, then the
/// closing lines when the run finished (`None` when it was aborted).
pub fn closing(
    first_wrong: &[impl std::fmt::Display],
    finished: Option<(&str, u64, f64)>,
) -> String {
    let mut out = String::new();
    for w in first_wrong {
        out.push_str(&format!("# first wrong element: {w}\n"));
    }
    if let Some((op, wrong_total, avg_busbw)) = finished {
        out.push_str(&footer(op, wrong_total, avg_busbw));
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn c_formats() {
        assert_eq!(c_g(0.0), "0");
        assert_eq!(c_g(3.0), "3");
        assert_eq!(c_g(1234567.0), "1.23457e+06");
        assert_eq!(c_g(12.345678), "12.3457");
        assert_eq!(c_g(0.000123), "0.000123");
        assert_eq!(float_str(10.684, 7), "  10.68");
        assert_eq!(float_str(123456.7, 7), " 123457");
        assert_eq!(float_str(12345.67, 7), "12345.7");
        assert_eq!(float_str(1234567.0, 7), "1234567");
        assert_eq!(float_str(12345678.0, 7), "1.2e+07");
        assert_eq!(float_str(0.0, 6), "  0.00");
        assert_eq!(float_str(1234.5, 6), "1234.5");
    }

    #[test]
    fn a_row_lines_up_with_nccl_tests() {
        // Widths from nccl-tests' "%12li  %12li  %8s  %6s  %6s" preamble and
        // "  %7s  %6s  %6s  %6g" body (2.14 and later, which print "#wrong").
        let r = CollectiveRow {
            size: 1048576,
            count: 262144,
            dtype: "float".into(),
            redop: Some("sum".into()),
            root: Some(-1),
            out_of_place: Some(CollTiming {
                time_us: 58.81,
                algbw: 17.83,
                busbw: 33.43,
                wrong: Some(0),
            }),
            in_place: Some(CollTiming {
                time_us: 57.83,
                algbw: 18.13,
                busbw: 33.99,
                wrong: Some(0),
            }),
        };
        assert_eq!(
            row(&r),
            "     1048576        262144     float     sum      -1    58.81   17.83   33.43       0    57.83   18.13   33.99       0"
        );
    }

    #[test]
    fn header_and_footer_have_the_marker_lines() {
        let h = header(
            &RunParams {
                op: "all_reduce",
                min_bytes: 8,
                max_bytes: 1024,
                step: "2(factor)".into(),
                warmup: 5,
                iters: 20,
                check: true,
            },
            &[],
        );
        assert!(h.contains("out-of-place                       in-place"));
        assert!(h.contains("#wrong"));
        assert!(h.contains("minBytes 8 maxBytes 1024 step: 2(factor) warmup iters: 5 iters: 20"));
        let f = footer("all_reduce", 0, 1.5);
        assert!(f.contains("# Out of bounds values : 0 OK\n"));
        assert!(f.contains("# Avg bus bandwidth    : 1.5 \n"));
    }

    #[test]
    fn fabrik_output_parses_back_as_nccl_tests() {
        let params = RunParams {
            op: "reduce_scatter",
            min_bytes: 1024,
            max_bytes: 1024,
            step: "2(factor)".into(),
            warmup: 1,
            iters: 5,
            check: true,
        };
        let timing = CollTiming {
            time_us: 12.5,
            algbw: 0.08,
            busbw: 0.06,
            wrong: Some(0),
        };
        let r = CollectiveRow {
            size: 1024,
            count: 256,
            dtype: "float".into(),
            redop: Some("sum".into()),
            root: Some(-1),
            out_of_place: Some(timing.clone()),
            in_place: Some(timing),
        };
        let text = format!(
            "{}{}\n{}",
            header(&params, &[]),
            row(&r),
            footer("reduce_scatter", 0, 0.06)
        );
        let runs = fabrik_parse::nccl_tests::parse_str(&text);
        assert_eq!(runs.len(), 1);
        let rep = &runs[0].report;
        assert_eq!(rep.op, "reduce_scatter");
        assert_eq!(rep.rows.len(), 1);
        assert_eq!(rep.rows[0].size, 1024);
        assert_eq!(rep.rows[0].redop.as_deref(), Some("sum"));
    }
}
