//! `fabrik report` takes every result fabrik writes, marks what went wrong at the top, and the
//! page renders in a real browser (headless Chromium) without console errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use assert_cmd::Command;

fn fixture(p: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(p)
}

/// Runs fabrik and writes its stdout to `dir/name`.
fn save(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let out = Command::cargo_bin("fabrik")
        .unwrap()
        .args(args)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert!(
        out.status.code().is_some_and(|c| c < 2),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p = dir.join(name);
    std::fs::write(&p, &out.stdout).unwrap();
    p
}

fn report(inputs: &[PathBuf], html: &Path) -> std::process::Output {
    Command::cargo_bin("fabrik")
        .unwrap()
        .arg("report")
        .args(inputs)
        .arg("-o")
        .arg(html)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn every_result_fabrik_writes_is_taken() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let init = fixture("doctor/nodes/port-001-init");
    let pfc = fixture("doctor/nodes/qos-001-pfc-off");
    let doctor = save(
        d,
        "doctor.json",
        &[
            "doctor",
            "--format",
            "json",
            "--root",
            s(&init),
            "--root",
            s(&pfc),
        ],
    );
    let p2p = save(
        d,
        "p2p.json",
        &[
            "bench", "p2p", "--local", "-s", "64K", "-n", "50", "--format", "json",
        ],
    );
    let perftest = save(
        d,
        "perftest.json",
        &[
            "parse",
            "perftest",
            "--format",
            "json",
            s(&fixture("perftest/01-ib_write_bw-post-list-gbits-roce.txt")),
        ],
    );
    // Seven complete rows and a cut one: the run did not finish.
    let cut = save(
        d,
        "cut.json",
        &[
            "parse",
            "nccl-tests",
            "--format",
            "json",
            s(&fixture(
                "nccl-tests/04-reduce-scatter-wrong-column-zero-size.txt",
            )),
        ],
    );
    let logs = save(
        d,
        "logs.json",
        &[
            "logs",
            "--format",
            "json",
            s(&fixture(
                "nccl-logs/18-nccl-two-hosts-ib-gdrdma-p2p-ipc-read.log",
            )),
        ],
    );
    let html = d.join("report.html");
    let out = report(&[doctor, p2p, perftest, cut, logs], &html);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(&html).unwrap();
    // Verdict, date and version come first.
    let verdict = page.find("Verdict: not healthy").expect("a verdict line");
    assert!(verdict < page.find("<h2>").unwrap());
    assert!(page.contains(&format!("by fabrik {}", env!("CARGO_PKG_VERSION"))));
    assert!(page.contains(" 20"), "a date: {page}");
    // Point-to-point runs have their own section, fabrik's and perftest's.
    assert!(page.contains("<h2>Point-to-point</h2>"));
    assert!(page.contains("p2p.json (fabrik: bw, tcp"), "{page}");
    assert!(page.contains("perftest.json (perftest: bw"), "{page}");
    // The cut nccl-tests run is not shown as a finished, green run.
    assert!(
        page.contains("incomplete: no &quot;# Avg bus bandwidth&quot; line"),
        "{page}"
    );
    // Doctor findings, worst first.
    let first_error = page.find("<td class=\"error\">").expect("an error row");
    let first_warning = page.find("<td class=\"warning\">").expect("a warning row");
    assert!(first_error < first_warning);
    // The log under its own title with its summary and per-process transport and GDR.
    assert!(page.contains("<h2>NCCL log findings</h2>"));
    assert!(page.contains("transport IB, GPUDirect RDMA used"));
    assert!(page.contains("<th>GPUDirect RDMA</th>"));
}

#[test]
fn a_parsed_perftest_run_is_not_an_empty_page() {
    let dir = tempfile::tempdir().unwrap();
    let perftest = save(
        dir.path(),
        "perftest.json",
        &[
            "parse",
            "perftest",
            "--format",
            "json",
            s(&fixture("perftest/01-ib_write_bw-post-list-gbits-roce.txt")),
        ],
    );
    let html = dir.path().join("r.html");
    assert_eq!(report(&[perftest], &html).status.code(), Some(0));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(!page.contains("No results given"));
    // perftest's own figure for this run: 8 B, 0.48 Gb/s average (the README's ground truth).
    assert!(page.contains("<td>8</td>"), "{page}");
    assert!(page.contains("0.480"), "{page}");
}

#[test]
fn the_page_renders_in_headless_chromium_without_console_errors() {
    let Some(chromium) = support::find_chromium() else {
        fabrik_testbed::skip(
            "the headless Chromium check",
            "no chromium on PATH (scripts/apt/test/cluster.txt installs it)",
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let doctor = save(
        d,
        "doctor.json",
        &[
            "doctor",
            "--format",
            "json",
            "--root",
            s(&fixture("doctor/nodes/port-001-init")),
        ],
    );
    let coll = save(
        d,
        "coll.json",
        &[
            "parse",
            "nccl-tests",
            "--format",
            "json",
            s(&fixture(
                "nccl-tests/12-rccl-tests-mi300x-two-runs-rccl-version-block.txt",
            )),
        ],
    );
    // A node inventory, so the page holds the evidence below the link state (PCIe paths).
    let inv = save(
        d,
        "node.json",
        &[
            "inventory",
            "--format",
            "json",
            "--root",
            s(&support::repo().join("fixtures/nodes/roce-dualport")),
        ],
    );
    let html = d.join("report.html");
    assert_eq!(report(&[doctor, coll, inv], &html).status.code(), Some(0));
    assert!(std::fs::read_to_string(&html)
        .unwrap()
        .contains("<h4>PCIe paths</h4>"));
    let shot = d.join("shot.png");
    let out = support::chromium_screenshot(&chromium, &html, &shot, &d.join("chrome"))
        .output()
        .unwrap();
    support::assert_ok(&out);
    // Chromium logs every console message, error or not, as `:CONSOLE`: the page has no
    // script, so any such line is something the browser refused or failed to load.
    let log = String::from_utf8_lossy(&out.stderr);
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "{console:#?}");
    let n = support::png_colours(&shot);
    assert!(n >= 50, "the screenshot looks blank ({n} colours)");
}
