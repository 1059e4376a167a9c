//! The cluster suite. The report of a real run: its PNG plots decode and are drawn, the page
//! refers to nothing outside itself and renders in headless Chromium (skipped without it).
//! Eight network-namespace hosts (root only; skipped with a message otherwise): every
//! collective verified, the pair matrix with one directed link shaped slow, a rank killed
//! mid-sweep and a rank with the wrong token. Ignored by a plain `cargo test` (it takes
//! minutes on a small machine); `scripts/test.d/cluster.sh` runs it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use fabrik_cluster::collective::CollOp;
use fabrik_testbed::{skip_reason, Testbed};
use serde_json::Value;

/// One test at a time: the timing bounds and the matrix verdict assume the machine is not
/// also running another eight ranks.
static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

fn fabrik() -> PathBuf {
    assert_cmd::cargo::cargo_bin("fabrik")
}

/// Waits for `child` until `deadline`; kills it and returns `None` past it.
fn wait_until(child: &mut Child, deadline: Instant) -> Option<ExitStatus> {
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Words of a command line (no quoting: the tests' arguments have no spaces).
fn argv(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// Runs `fabrik LINE` in `dir` and returns its exit code and standard error.
fn run_fabrik(dir: &Path, line: &str) -> (Option<i32>, String) {
    let out = Command::new(fabrik())
        .current_dir(dir)
        .args(argv(line))
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
#[ignore = "the cluster suite, minutes on a small machine: scripts/test.d/cluster.sh runs it"]
fn the_report_of_a_run_has_drawn_plots_refers_to_nothing_outside_and_renders() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for op in ["all_reduce", "all_gather"] {
        let line =
            format!("bench collective {op} --local 3 -b 1K -e 256K -n 2 -w 1 --output {op}.json");
        let (code, err) = run_fabrik(d, &line);
        assert_eq!(code, Some(0), "{op}: {err}");
    }
    // The matrix's verdict depends on the machine's load; only the matrix it writes matters.
    let _ = run_fabrik(d, "cluster matrix --local 4 --size 256K --output m.json");
    assert!(
        std::fs::metadata(d.join("m.json")).is_ok_and(|m| m.len() > 0),
        "cluster matrix --local 4 wrote no matrix"
    );
    let (code, err) = run_fabrik(
        d,
        "report all_reduce.json all_gather.json m.json -o report.html --svg svg --png png",
    );
    assert_eq!(code, Some(0), "{err}");
    if err.contains("no font found") {
        eprintln!("no system font: the PNG plots have no text (scripts/apt/test/cluster.txt installs fonts-dejavu-core)");
    }
    let listing = |sub: &str| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(d.join(sub))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        v.sort();
        v
    };
    let svgs = listing("svg");
    assert_eq!(svgs.len(), 3, "expected 3 SVG plots: {svgs:?}");
    let pngs = listing("png");
    assert_eq!(pngs.len(), 3, "expected 3 PNG plots: {pngs:?}");
    for p in &pngs {
        let n = support::png_colours(p);
        assert!(
            n >= 20,
            "{} looks blank ({n} distinct colours)",
            p.display()
        );
    }
    let page = std::fs::read_to_string(d.join("report.html")).unwrap();
    assert_eq!(outside_references(&page), Vec::<String>::new());
    let Some(chromium) = support::find_chromium() else {
        fabrik_testbed::skip(
            "the browser check",
            "no chromium (scripts/apt/test/cluster.txt installs it)",
        );
        return;
    };
    let shot = d.join("shot.png");
    let mut browser =
        support::chromium_screenshot(&chromium, &d.join("report.html"), &shot, &d.join("chrome"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
    let status = wait_until(&mut browser, Instant::now() + Duration::from_secs(120));
    assert!(
        status.is_some_and(|s| s.success()),
        "chromium could not render the report: {status:?}"
    );
    let n = support::png_colours(&shot);
    assert!(n >= 50, "the screenshot looks blank ({n} distinct colours)");
    eprintln!("report renders in chromium ({n} distinct colours)");
}

/// `src=`, `href=`, `<script` and URLs other than the SVG namespace: anything the page would
/// load from outside itself.
fn outside_references(page: &str) -> Vec<String> {
    let mut found: Vec<String> = ["src=", "href=", "<script"]
        .iter()
        .filter(|m| page.contains(*m))
        .map(|m| m.to_string())
        .collect();
    for scheme in ["http://", "https://"] {
        for (at, _) in page.match_indices(scheme) {
            let url: String = page[at..].chars().take_while(|c| *c != '"').collect();
            if !url.contains("http://www.w3.org/2000/svg") {
                found.push(url);
            }
        }
    }
    found
}

const HOSTS: usize = 8;

/// Eight hosts with one link each, or `None` (with the reason printed) where namespaces cannot
/// be made.
fn eight_hosts() -> Option<Testbed> {
    if let Some(why) = skip_reason() {
        fabrik_testbed::skip("the namespace cluster test", &why);
        return None;
    }
    Some(Testbed::builder().hosts(HOSTS).build().unwrap())
}

/// One rank per host, started with fabrik's launcher variables; stdout and stderr go to
/// `r<h>.out` and `r<h>.err` in `dir`, so a test can watch a rank's progress as it runs.
struct Ranks {
    children: Vec<Child>,
    dir: PathBuf,
}

impl Ranks {
    /// Starts `fabrik LINE --name node<h>` on every host, in `dir`, with token `token(h)`.
    fn start(tb: &Testbed, dir: &Path, line: &str, token: impl Fn(usize) -> &'static str) -> Self {
        let fabrik = fabrik();
        let children = (0..tb.hosts())
            .map(|h| {
                tb.command(h, &fabrik.to_string_lossy())
                    .current_dir(dir)
                    .args(argv(line))
                    .args(["--name", &format!("node{h}")])
                    .env("RANK", h.to_string())
                    .env("WORLD_SIZE", tb.hosts().to_string())
                    .env("LOCAL_RANK", "0")
                    .env("MASTER_ADDR", tb.addr(0, 0).to_string())
                    .env("MASTER_PORT", "29555")
                    .env("FABRIK_TOKEN", token(h))
                    .stdin(Stdio::null())
                    .stdout(File::create(dir.join(format!("r{h}.out"))).unwrap())
                    .stderr(File::create(dir.join(format!("r{h}.err"))).unwrap())
                    .spawn()
                    .unwrap()
            })
            .collect();
        Ranks {
            children,
            dir: dir.to_path_buf(),
        }
    }

    /// Every rank's exit code, in rank order; a rank still running after `limit` is killed
    /// and counts as `None`.
    fn wait(&mut self, limit: Duration) -> Vec<Option<i32>> {
        let deadline = Instant::now() + limit;
        self.children
            .iter_mut()
            .map(|c| wait_until(c, deadline).and_then(|s| s.code()))
            .collect()
    }

    fn out(&self, h: usize) -> String {
        std::fs::read_to_string(self.dir.join(format!("r{h}.out"))).unwrap_or_default()
    }

    fn err(&self, h: usize) -> String {
        std::fs::read_to_string(self.dir.join(format!("r{h}.err"))).unwrap_or_default()
    }

    fn all_err(&self) -> String {
        (0..self.children.len())
            .map(|h| format!("rank {h}: {}", self.err(h)))
            .collect()
    }
}

#[test]
#[ignore = "the cluster suite, minutes on a small machine: scripts/test.d/cluster.sh runs it"]
fn every_collective_is_verified_on_eight_hosts() {
    let _one = one_at_a_time();
    let Some(tb) = eight_hosts() else { return };
    let dir = tempfile::tempdir().unwrap();
    // Every operation the library has, by the name the CLI takes.
    for op in CollOp::ALL.map(CollOp::name) {
        let line = format!(
            "bench collective {op} -b 1K -e 1M -f 4 -n 2 -w 1 -c 1 -r 3 --timeout 60 --format json"
        );
        let mut ranks = Ranks::start(&tb, dir.path(), &line, |_| "tok");
        let codes = ranks.wait(Duration::from_secs(120));
        assert_eq!(
            codes,
            vec![Some(0); HOSTS],
            "{op} on {HOSTS} hosts: {}",
            ranks.all_err()
        );
        let v: Value = serde_json::from_str(&ranks.out(0)).unwrap();
        let rows = v["rows"].as_array().unwrap();
        // 1K to 1M by 4: 1K, 4K, 16K, 64K, 256K, 1M.
        assert_eq!(rows.len(), 6, "{op}: {v}");
        let wrong: u64 = rows
            .iter()
            .flat_map(|r| [&r["out_of_place"]["wrong"], &r["in_place"]["wrong"]])
            .map(|w| w.as_u64().unwrap())
            .sum();
        assert_eq!(wrong, 0, "{op}: {v}");
        assert_eq!(v["ranks"], HOSTS, "{op}: {v}");
        eprintln!("{op} on {HOSTS} hosts: {} sizes verified", rows.len());
    }
}

#[test]
#[ignore = "the cluster suite, minutes on a small machine: scripts/test.d/cluster.sh runs it"]
fn the_matrix_names_the_one_directed_link_shaped_slow() {
    let _one = one_at_a_time();
    let Some(tb) = eight_hosts() else { return };
    let dir = tempfile::tempdir().unwrap();
    // Host 2 -> host 5 only, through a 20 Mb/s htb class.
    tb.shape_path(2, 0, 5, "20mbit").unwrap();
    // The verdict must not depend on luck: the matrix runs several times.
    for attempt in 1..=3 {
        let mut ranks = Ranks::start(
            &tb,
            dir.path(),
            "cluster matrix --size 1M --iters 2 --format json --timeout 60",
            |_| "tok",
        );
        let codes = ranks.wait(Duration::from_secs(120));
        // Rank 0 judges and finds the slow link; the others only measure.
        assert_eq!(codes[0], Some(1), "run {attempt}: {}", ranks.err(0));
        assert!(
            codes[1..].iter().all(|c| matches!(c, Some(0 | 1))),
            "run {attempt}: {codes:?}: {}",
            ranks.all_err()
        );
        let v: Value = serde_json::from_str(&ranks.out(0)).unwrap();
        let slow: Vec<(u64, u64)> = v["analysis"]["slow_links"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| (l["src"].as_u64().unwrap(), l["dst"].as_u64().unwrap()))
            .collect();
        assert_eq!(
            slow.first(),
            Some(&(2, 5)),
            "run {attempt}: the slowest flagged link is not 2 -> 5: {slow:?}\n{v}\n{}",
            ranks.err(0)
        );
        eprintln!("matrix run {attempt} names the shaped link 2 -> 5 (flagged: {slow:?})");
    }
}

#[test]
#[ignore = "the cluster suite, minutes on a small machine: scripts/test.d/cluster.sh runs it"]
fn a_rank_killed_mid_sweep_is_named_in_time_and_the_rows_so_far_are_kept() {
    let _one = one_at_a_time();
    let Some(tb) = eight_hosts() else { return };
    let dir = tempfile::tempdir().unwrap();
    let partial = dir.path().join("partial.json");
    let mut ranks = Ranks::start(
        &tb,
        dir.path(),
        "bench collective all_reduce -b 1K -e 64M -f 2 -n 5 -w 1 --timeout 10 --output partial.json",
        |_| "tok",
    );
    // Rank 0's table prints one indented row per size: wait for three.
    let rows_printed = |r: &Ranks| r.out(0).lines().filter(|l| l.starts_with(' ')).count();
    let started = Instant::now() + Duration::from_secs(60);
    while rows_printed(&ranks) < 3 && Instant::now() < started {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        rows_printed(&ranks) >= 3,
        "the sweep did not start: {}",
        ranks.err(0)
    );
    ranks.children[5].kill().unwrap();
    let killed = Instant::now();
    let code = wait_until(&mut ranks.children[0], killed + Duration::from_secs(60));
    let took = killed.elapsed();
    let others = ranks.wait(Duration::from_secs(60));
    assert_ne!(
        code.map(|s| s.success()),
        Some(true),
        "rank 0 succeeded although rank 5 was killed"
    );
    assert!(
        took <= Duration::from_secs(30),
        "rank 0 took {took:?} to notice (timeout 10 s)"
    );
    let err = ranks.err(0);
    assert!(
        err.contains("rank 5 (node5"),
        "rank 0's error does not name rank 5: {err}"
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&partial).unwrap()).unwrap();
    let kept = v["rows"].as_array().unwrap().len();
    assert!(kept >= 3, "only {kept} rows kept after the failure: {v}");
    eprintln!("killed rank 5 named by rank 0 after {took:?}; {kept} rows kept; the others exited {others:?}");
}

#[test]
#[ignore = "the cluster suite, minutes on a small machine: scripts/test.d/cluster.sh runs it"]
fn a_rank_with_the_wrong_token_is_rejected_and_named() {
    let _one = one_at_a_time();
    let Some(tb) = eight_hosts() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut ranks = Ranks::start(
        &tb,
        dir.path(),
        "bench collective all_reduce -b 1K -e 1K -n 1 -w 0 --timeout 8",
        |h| if h == 3 { "wrong" } else { "tok" },
    );
    ranks.wait(Duration::from_secs(60));
    let (r3, r0) = (ranks.err(3), ranks.err(0));
    assert!(
        r3.contains("token differs"),
        "rank 3 was not told its token differs: {r3}"
    );
    assert!(
        r0.contains("rank 3 never joined"),
        "rank 0 does not name rank 3: {r0}"
    );
    assert!(
        r0.contains("wrong token"),
        "rank 0 does not say a token was wrong: {r0}"
    );
}
