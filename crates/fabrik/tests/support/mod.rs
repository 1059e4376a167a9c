//! Helpers shared by the CLI's integration tests.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::path::{Path, PathBuf};
use std::process::Output;

pub use fabrik_testbed::fixtures::repo;

/// A file under `fixtures/`: `fixture("nccl-tests", "name.txt")`.
pub fn fixture(dir: &str, name: &str) -> PathBuf {
    repo().join("fixtures").join(dir).join(name)
}

/// The `fabrik` binary under test.
pub fn fabrik() -> assert_cmd::Command {
    assert_cmd::Command::cargo_bin("fabrik").unwrap()
}

/// Runs `fabrik ARGS --format json`: its exit code and the JSON it printed (a failure to
/// print JSON shows its stderr).
pub fn json_of(args: &[&str]) -> (i32, serde_json::Value) {
    let out = fabrik()
        .args(args)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap(), v)
}

/// Asserts a command exited 0; a failure shows its stderr.
pub fn assert_ok(out: &Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The JSON a command printed, once it exited 0 (a failure shows its stderr).
pub fn json_ok(out: &Output) -> serde_json::Value {
    assert_ok(out);
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Copies a fixture tree over `to`, creating what is missing: a test node whose counters a test
/// changes by copying the `after` side of a pair.
pub fn copy_tree(from: &Path, to: &Path) {
    fabrik_testbed::fixtures::copy_tree(from, to)
        .unwrap_or_else(|e| panic!("copying {} to {}: {e}", from.display(), to.display()));
}

/// Distinct colours in a PNG (any bit depth and colour type the `png` crate expands to 8-bit
/// samples): a blank plot or page has one or two.
pub fn png_colours(path: &Path) -> usize {
    let mut decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    ));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder
        .read_info()
        .unwrap_or_else(|e| panic!("{} is not a PNG: {e}", path.display()));
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let bpp = info.color_type.samples();
    // Colour only: pixels differing in alpha alone are one colour.
    let colour = match info.color_type {
        png::ColorType::Grayscale | png::ColorType::GrayscaleAlpha => 1,
        _ => 3,
    };
    let mut seen = std::collections::HashSet::new();
    for px in buf[..info.buffer_size()].chunks(bpp) {
        seen.insert(px[..colour].to_vec());
    }
    seen.len()
}

/// Chromium on PATH (`chromium`, or `chromium-browser` as Ubuntu names it), or `None`.
pub fn find_chromium() -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser"].iter().find_map(|name| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
}

/// Headless Chromium that loads `html` and writes a 1200x1600 screenshot to `shot`, with its
/// profile in `profile` and nothing fetched from the network on its own account. Its logging
/// to stderr is on, so a test can read the page's console messages.
pub fn chromium_screenshot(
    chromium: &Path,
    html: &Path,
    shot: &Path,
    profile: &Path,
) -> std::process::Command {
    let mut c = std::process::Command::new(chromium);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--enable-logging=stderr",
        "--v=0",
        "--window-size=1200,1600",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .arg(format!("--screenshot={}", shot.display()))
    .arg(format!("file://{}", html.display()));
    c
}
