#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Hostile strings in every field of every renderer: nothing a user, a snapshot or the process
//! environment supplies may run as code or change a manifest's structure.
//!
//! One field at a time (job name, each host, rendezvous address, image, command, RDMA
//! resource, instance type, a kept NCCL value, a kept variable's name, an RDMA device name and
//! an interface name from a node document) takes generated hostile strings: shell and YAML
//! payloads, YAML 1.1 line breaks and scalars, control and invisible characters, option-like
//! words, and random text around them. Each renderer (the torchrun, docker, slurm and hostfile
//! scripts; the Job, JobSet and PyTorchJob manifests; `fabrik env`'s shell, dotenv, docker and
//! Kubernetes forms) either refuses the input or writes a file that
//! - for a script: runs under bash with fake `srun`, `scontrol`, `torchrun`, `docker`, `mpirun`
//!   and a `pwned` command on PATH, executes nothing but those launchers (no `pwned`, no file
//!   made), exits 0, and hands every value to the launcher unchanged (arguments and environment
//!   compared byte for byte);
//! - for a manifest: parses under PyYAML (a YAML 1.1 reader) into exactly what a YAML 1.2
//!   reader reads, with the documents, keys and types of a benign rendering, and the values
//!   (environment, command words, names) unchanged.
//!
//! `FABRIK_HOSTILE_CASES` sets the cases per field and renderer (default 12: 12 fields x 12
//! renderers x 12 = 1,728 renderings).

mod render_check;

use std::collections::BTreeMap;
use std::path::PathBuf;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use render_check::*;
use serde_json::Value;

fn hostile() -> impl Strategy<Value = String> {
    let payload = proptest::sample::select(PAYLOADS).prop_map(str::to_string);
    let noise = "\\PC{0,6}|[\\x00-\\x7f\\u{85}\\u{9b}\\u{2028}\\u{2029}\\u{feff}]{0,6}";
    prop_oneof![
        3 => payload.clone(),
        3 => (noise, payload.clone(), noise).prop_map(|(a, p, b)| format!("{a}{p}{b}")),
        2 => ("[a-z0-9-]{1,8}", payload).prop_map(|(a, p)| format!("{a}{p}")),
        1 => noise.prop_map(|s: String| s),
    ]
}

#[test]
fn hostile_values_never_run_and_never_change_a_manifest() {
    let cases: usize = std::env::var("FABRIK_HOSTILE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    let json = node_json();
    let bin = Bin::new();
    let mut runner = TestRunner::deterministic();
    let strategy = hostile();
    let yaml_dir = tempfile::tempdir().unwrap();
    // (field, out, value, env, shape, text) of every manifest, checked in one PyYAML run.
    let mut manifests = Vec::new();
    let (mut total, mut refused, mut executed, mut misparsed) = (0, 0, 0, 0);
    let mut failures = Vec::new();
    let mut per_field: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for field in FIELDS {
        for out in OUTS {
            for i in 0..cases {
                let value = strategy.new_tree(&mut runner).unwrap().current();
                total += 1;
                let stats = per_field.entry(format!("{field:?}")).or_default();
                stats.0 += 1;
                let Some((env, shape)) = case(field, &value, out, i, &json) else {
                    refused += 1;
                    stats.1 += 1;
                    continue;
                };
                let Some(text) = rendered(out, &env, &shape) else {
                    refused += 1;
                    stats.1 += 1;
                    continue;
                };
                let what = format!("{field:?} = {value:?} in {out:?} (case {i})");
                if is_yaml(out) {
                    let path = yaml_dir.path().join(format!("{}.yaml", manifests.len()));
                    std::fs::write(&path, &text).unwrap();
                    manifests.push((what, out, env, shape, text, path));
                    continue;
                }
                if out == Out::EnvDotenv {
                    if let Err(e) = check_dotenv(&env, &text) {
                        misparsed += 1;
                        failures.push(format!("MIS-PARSED {what}: {e}\n{text}"));
                    }
                    continue;
                }
                let ran = run_script(&bin, &text, out == Out::EnvShell);
                if !ran.executed.is_empty() {
                    executed += 1;
                    failures.push(format!("EXECUTED {what}: {:?}\n{text}", ran.executed));
                } else if let Err(e) = check_script(out, &env, &shape, &ran) {
                    misparsed += 1;
                    failures.push(format!("MIS-PARSED {what}: {e}\n{text}"));
                }
            }
        }
    }
    if let Some(py) = pyyaml() {
        // The benign rendering of each manifest kind, read by PyYAML too.
        let mut benign_files = Vec::new();
        for out in OUTS.into_iter().filter(|o| is_yaml(*o)) {
            for i in 0..2 {
                let (env, shape) = case(Field::Name, "train", out, i, &json).unwrap();
                let p = yaml_dir
                    .path()
                    .join(format!("benign-{benign}.yaml", benign = benign_files.len()));
                std::fs::write(&p, rendered(out, &env, &shape).unwrap()).unwrap();
                benign_files.push(((out, i % 2), p));
            }
        }
        let paths: Vec<PathBuf> = benign_files.iter().map(|(_, p)| p.clone()).collect();
        let benign: BTreeMap<String, Vec<Value>> = benign_files
            .iter()
            .zip(pyyaml_docs(&py, &paths))
            .map(|((k, _), d)| (format!("{k:?}"), d.unwrap()))
            .collect();
        let paths: Vec<PathBuf> = manifests.iter().map(|m| m.5.clone()).collect();
        let parsed = pyyaml_docs(&py, &paths);
        for ((what, out, env, shape, text, _), docs11) in manifests.iter().zip(parsed) {
            let i: usize = what
                .rsplit("case ")
                .next()
                .and_then(|s| s.trim_end_matches(')').parse().ok())
                .unwrap_or(0);
            let base = &benign[&format!("{:?}", (*out, i % 2))];
            let verdict = docs11.and_then(|d| check_yaml(*out, env, shape, text, Some(d), base));
            if let Err(e) = verdict {
                misparsed += 1;
                failures.push(format!("MIS-PARSED {what}: {e}\n{text}"));
            }
        }
    }
    eprintln!(
        "hostile launch values: {total} cases over {} fields x {} renderers, {refused} refused, {} rendered ({} manifests through PyYAML); executed {executed}, mis-parsed {misparsed}",
        FIELDS.len(),
        OUTS.len(),
        total - refused,
        manifests.len()
    );
    for (f, (n, r)) in &per_field {
        eprintln!("  {f}: {n} cases, {r} refused");
    }
    assert!(
        failures.is_empty(),
        "{} failures; the first:\n{}",
        failures.len(),
        failures
            .iter()
            .take(3)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n\n")
    );
    // The refusals are not the whole story: quoting carried most hostile values.
    assert!(total - refused > total / 3, "{refused} of {total} refused");
}
