//! `fabrik bench collective`, `cluster matrix` and `report` end to end, with `--local` ranks.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::Value;
use support::fabrik;

#[test]
fn local_all_reduce_prints_an_nccl_tests_table_with_verified_rows() {
    let out = fabrik()
        .args([
            "bench",
            "collective",
            "all_reduce",
            "--local",
            "3",
            "-b",
            "1K",
            "-e",
            "64K",
            "-f",
            "4",
        ])
        .args(["-n", "2", "-w", "1", "-c", "1"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("#  Rank  2 Group  0 Pid"), "{text}");
    assert!(
        text.contains("out-of-place                       in-place"),
        "{text}"
    );
    assert!(text.contains("# Out of bounds values : 0 OK"), "{text}");
    assert!(text.contains("# Avg bus bandwidth    : "), "{text}");
    // 1-64 KiB is recursive doubling's range under `--algo auto`.
    assert!(
        text.contains("# Algorithm (auto): rd 1024-65536 B\n"),
        "{text}"
    );
    let rows: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(rows.len(), 4, "{text}");
    for r in rows {
        let cols: Vec<&str> = r.split_whitespace().collect();
        assert_eq!(cols.len(), 13, "{r}");
        assert_eq!(
            (cols[2], cols[3], cols[4], cols[8], cols[12]),
            ("float", "sum", "-1", "0", "0")
        );
    }
}

#[test]
fn local_json_is_a_collective_report_with_backend_and_hosts() {
    let out = fabrik()
        .args([
            "bench",
            "collective",
            "reduce_scatter",
            "--local",
            "2",
            "-b",
            "4K",
            "-e",
            "4K",
        ])
        .args([
            "-n", "1", "-w", "0", "-d", "bfloat16", "-o", "max", "--format", "json",
        ])
        .output()
        .unwrap();
    support::assert_ok(&out);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["op"], "reduce_scatter");
    assert_eq!(v["backend"], "tcp");
    assert_eq!(v["ranks"], 2);
    assert_eq!(v["hosts"].as_array().unwrap().len(), 1);
    let row = &v["rows"][0];
    assert_eq!(
        (row["size"].as_u64(), row["count"].as_u64()),
        (Some(4096), Some(1024))
    );
    assert_eq!(
        (row["type"].as_str(), row["redop"].as_str()),
        (Some("bfloat16"), Some("max"))
    );
    assert_eq!(row["in_place"]["wrong"], 0);
}

#[test]
fn bad_options_are_clear_errors() {
    let out = fabrik()
        .args(["bench", "collective", "all_scatter"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown collective"));
    let out = fabrik()
        .args(["bench", "collective", "all_reduce", "-d", "complex"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown data type"));
    let out = fabrik()
        .args(["bench", "collective", "all_reduce", "--algo", "bruck"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("ring, rd, tree or auto"));
}

#[test]
fn matrix_then_report() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m.json");
    let out = fabrik()
        .args([
            "cluster", "matrix", "--local", "3", "--size", "64K", "--iters", "1", "--format",
            "json",
        ])
        .arg("--output")
        .arg(&m)
        .output()
        .unwrap();
    // Exit 0 (nothing slow) or 1 (loopback noise on a busy machine flagged something).
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (v["ranks"].as_u64(), v["rounds"].as_u64()),
        (Some(3), Some(3))
    );
    assert_eq!(v["links"].as_array().unwrap().len(), 6);
    let html = dir.path().join("r.html");
    let (svgs, pngs) = (dir.path().join("svg"), dir.path().join("png"));
    fabrik()
        .arg("report")
        .arg(&m)
        .arg("-o")
        .arg(&html)
        .arg("--svg")
        .arg(&svgs)
        .arg("--png")
        .arg(&pngs)
        .assert()
        .success();
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<svg") && page.contains("Pair matrix: m.json"));
    // The PNG is the SVG's plot: a valid PNG signature and an IHDR of the SVG's own size.
    let svg = std::fs::read_to_string(svgs.join("matrix-0.svg")).unwrap();
    let attr = |name: &str| -> u32 {
        let at = svg.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
        svg[at..].split('"').next().unwrap().parse().unwrap()
    };
    let png = std::fs::read(pngs.join("matrix-0.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(&png[12..16], b"IHDR");
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    assert_eq!(
        (be(&png[16..20]), be(&png[20..24])),
        (attr("width"), attr("height"))
    );
    assert!(png.len() > 2000, "a drawn heatmap, not a blank image");
}

/// stderr is a pipe here, as in CI and logs: progress comes as plain lines from rank 0 only,
/// one per finished size, and never into the JSON on stdout.
#[test]
fn progress_is_plain_lines_on_stderr_when_not_a_terminal() {
    let out = fabrik()
        .args([
            "bench",
            "collective",
            "all_gather",
            "--local",
            "3",
            "-b",
            "1K",
            "-e",
            "16K",
            "-f",
            "4",
            "-n",
            "1",
            "-w",
            "0",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("# progress:"))
        .collect();
    assert!(!err.contains('\u{1b}'), "no terminal escapes: {err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    let expected: Vec<String> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            format!(
                "# progress: all_gather {}/3 sizes done ({} B)",
                i + 1,
                r["size"]
            )
        })
        .collect();
    assert_eq!(lines, expected, "{err}");
}

#[test]
fn matrix_progress_counts_rounds_done() {
    let out = fabrik()
        .args([
            "cluster", "matrix", "--local", "4", "--size", "64K", "--iters", "1", "--format",
            "json",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code().is_some_and(|c| c <= 1), "{err}");
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("# progress:"))
        .collect();
    assert_eq!(
        lines,
        [
            "# progress: matrix 1/3 rounds done",
            "# progress: matrix 2/3 rounds done",
            "# progress: matrix 3/3 rounds done",
        ],
        "{err}"
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["rounds"], 3);
}
