//! The mutation campaign over the probe, run by CI within a bounded budget:
//! - every capture parser fed the real captures (fixtures/doctor/captures, the nodes' own
//!   `fabrik/cmd` and `/proc` files) mutated by `fuzz_support`;
//! - the probe on real node trees (fixtures/nodes: real-procfs, sandbox-vm, roce-dualport)
//!   mutated as a hostile snapshot would be: files garbled, turned into FIFOs, directories, huge
//!   sparse files or links out of the root, links retargeted into loops, to `/`, out of the root.
//!
//! Each probe must finish (a hang fails the test), not panic, and never show a byte of the
//! file planted outside the root. `FABRIK_FUZZ_SECS=60 cargo test -p fabrik-probe --test fuzz
//! -- --nocapture` is the longer run for release checks (docs/benchmarks/fuzz.md).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../fabrik-parse/tests/fuzz_support/mod.rs"]
mod fuzz_support;
mod fuzz_trees;

use std::path::{Path, PathBuf};

use fabrik_parse::formats as p;
use fuzz_support::{campaign, check, mutated};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut v: Vec<_> = rd.flatten().map(|e| e.path()).collect();
    v.sort();
    for path in v {
        let Ok(m) = path.symlink_metadata() else {
            continue;
        };
        if m.is_dir() {
            files_under(&path, out);
        } else if m.is_file() {
            out.push(path);
        }
    }
}

fn run_parsers(s: &str) {
    use p::Format;
    for t in p::paste::Tool::ALL {
        let _ = t.read(s);
    }
    let _ = p::ProcModules::parse(s);
    let _ = p::ProcLimits::parse(s);
    let _ = p::FibTrieLocal::parse(s);
    let _ = p::ProcRoute::parse(s);
    let _ = p::IfInet6::parse(s);
    let _ = p::IpOAddr::parse(s);
    let _ = p::AddressesFile::parse(s);
    let _ = p::OsRelease::parse(s);
    let _ = p::OfedInfo::parse(s);
    let _ = p::NvidiaVersion::parse(s);
    let _ = p::NvidiaGpuInformation::parse(s);
    let _ = p::IommuCmdline::parse(s);
    // The one-value parsers, on each line as sysfs would hold it.
    for line in s.lines().take(200) {
        let _ = p::IbRate::parse(line);
        let _ = p::PciSpeed::parse(line);
        let _ = p::Decimal::parse(line);
        let _ = p::DecimalOrHex::parse(line);
        let _ = p::NumaNode::parse(line);
        let _ = p::normalize_bdf(line);
        let _ = p::is_bdf(line);
        let _ = fabrik_model::gid::ipv4_of_text(line);
        let _ = fabrik_model::gid::is_zero_text(line);
    }
}

#[test]
fn capture_parsers() {
    let mut paths = Vec::new();
    files_under(&fixtures().join("doctor/captures"), &mut paths);
    for node in [
        "sandbox-vm",
        "roce-dualport",
        "ib-ndr-8gpu",
        "gcp-a3",
        "aws-p5",
    ] {
        files_under(
            &fixtures().join("nodes").join(node).join("fabrik"),
            &mut paths,
        );
        files_under(
            &fixtures().join("nodes").join(node).join("proc"),
            &mut paths,
        );
    }
    let corpus: Vec<Vec<u8>> = paths
        .iter()
        .filter_map(|p| std::fs::read(p).ok())
        .filter(|b| !b.is_empty())
        .collect();
    assert!(corpus.len() > 20, "{} captures", corpus.len());
    let o = campaign(
        "probe-parsers",
        move |rng| {
            let d = mutated(rng, &corpus);
            (d.clone(), d)
        },
        |d: &Vec<u8>| run_parsers(&String::from_utf8_lossy(d)),
    );
    check(&o);
}

#[test]
fn probe_on_hostile_trees() {
    let o = fuzz_trees::campaign(
        "probe-trees",
        &[
            "nodes/real-procfs",
            "nodes/sandbox-vm",
            "nodes/roce-dualport",
        ],
        |root: &Path| {
            let node = fabrik_probe::probe(root).unwrap();
            let json = serde_json::to_string(&node).unwrap();
            assert!(
                !json.contains(fuzz_trees::SECRET),
                "read outside the root: {json}"
            );
        },
    );
    check(&o);
}
