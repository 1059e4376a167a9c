//! The renderers in the mutation campaign (docs/benchmarks/fuzz.md): values made by the byte
//! mutator from the hostile payloads and real values, each put in a random field of a random
//! renderer. A script must run with the fake launchers without running anything else and carry
//! every value; a manifest must keep the benign rendering's documents, keys and types and carry
//! its values. `FABRIK_FUZZ_SECS` sets the budget (3 s by default, as in CI).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../fabrik-parse/tests/fuzz_support/mod.rs"]
mod fuzz_support;
mod render_check;

use std::collections::BTreeMap;
use std::sync::Arc;

use fuzz_support::{campaign, check, mutated};
use render_check::*;

/// Longer values hit the kernel's limit on one argument or variable (128 KiB), not a quoting
/// question; 4 KiB is past every name and value a launch file holds.
const MAX_VALUE: usize = 4096;

#[test]
fn renderers_under_mutated_values() {
    let json = Arc::new(node_json());
    let mut corpus: Vec<Vec<u8>> = PAYLOADS.iter().map(|p| p.as_bytes().to_vec()).collect();
    for real in [
        "train",
        "node-0",
        "gpu12.cluster.local",
        "nvcr.io/nvidia/pytorch:24.04-py3",
        "train.py --config /workspace/config.yaml --lr 3e-4",
        "mlx5_0",
        "ens1f0np0",
        "rdma/hca_shared_devices_a=2",
        "p5.48xlarge",
        "=mlx5_0:1,mlx5_1:1",
        "^docker,lo",
        "INFO",
    ] {
        corpus.push(real.as_bytes().to_vec());
    }
    let mut benign: BTreeMap<String, Vec<serde_json::Value>> = BTreeMap::new();
    for out in OUTS.into_iter().filter(|o| is_yaml(*o)) {
        for i in 0..2 {
            benign.insert(format!("{out:?}{i}"), benign_docs(out, i, &json));
        }
    }
    let benign = Arc::new(benign);
    let bin = Arc::new(Bin::new());
    let outcome = campaign(
        "renderers",
        move |rng| {
            let mut bytes = mutated(rng, &corpus);
            bytes.truncate(MAX_VALUE);
            let value = String::from_utf8_lossy(&bytes).into_owned();
            let field = *rng.pick(&FIELDS);
            let out = *rng.pick(&OUTS);
            let i = rng.below(2);
            let shown = format!("{field:?} {out:?} case {i}\n{value}").into_bytes();
            ((field, out, i, value), shown)
        },
        move |(field, out, i, value)| {
            let empty = Vec::new();
            let base = benign.get(&format!("{out:?}{i}")).unwrap_or(&empty);
            match verdict(&bin, *field, value, *out, *i, &json, base) {
                Verdict::Held | Verdict::Refused => {}
                Verdict::Executed(e) => panic!("EXECUTED {field:?} = {value:?} in {out:?}: {e}"),
                Verdict::Misparsed(e) => panic!("MIS-PARSED {field:?} = {value:?} in {out:?}: {e}"),
            }
        },
    );
    check(&outcome);
}
