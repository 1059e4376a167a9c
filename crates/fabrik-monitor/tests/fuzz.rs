//! The mutation campaign over the counter reader (`diff`, `top --root`, `exporter --root`,
//! `doctor --watch`), run by CI within a bounded budget: real counter trees
//! (fixtures/counters/mlx5-roce, rxe, and the real sysfs of fixtures/nodes/real-procfs) changed as
//! a hostile snapshot would be (the changes of crates/fabrik-probe/tests/fuzz_trees: garbled
//! files, FIFOs, huge sparse files, directories, links out, loops, links to `/`). Each sample
//! must finish, not panic, and never show the file planted outside the root.
//! `FABRIK_FUZZ_SECS=60 cargo test -p fabrik-monitor --test fuzz -- --nocapture` is the longer
//! run (docs/benchmarks/fuzz.md).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../fabrik-parse/tests/fuzz_support/mod.rs"]
mod fuzz_support;
#[path = "../../fabrik-probe/tests/fuzz_trees/mod.rs"]
mod fuzz_trees;

use std::path::Path;

use fabrik_monitor::{sample_with, EthtoolMode, SampleOptions};

#[test]
fn counter_reader_on_hostile_trees() {
    let o = fuzz_trees::campaign(
        "counter-trees",
        &[
            "counters/mlx5-roce/before",
            "counters/rxe/before",
            "nodes/real-procfs",
        ],
        |root: &Path| {
            let opts = SampleOptions {
                all_netdevs: true,
                ethtool: EthtoolMode::Snapshot,
            };
            let s = sample_with(root, &opts);
            let shown = format!("{s:?}");
            assert!(
                !shown.contains(fuzz_trees::SECRET),
                "read outside the root: {shown}"
            );
            // The exporter's text renders whatever was read.
            fabrik_monitor::metrics::encode(s, &[], 0.001).unwrap();
        },
    );
    fuzz_support::check(&o);
}
