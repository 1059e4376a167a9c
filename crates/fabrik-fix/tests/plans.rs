//! Golden plans on snapshot trees: the doctor runs on each tree (real snapshots and the rule
//! fixtures), `fabrik_fix::plan` plans, and the text, script and playbook are compared byte for
//! byte with `fixtures/golden/fix/`. `FABRIK_BLESS=1 cargo test -p fabrik-fix --test plans`
//! rewrites them. Every script passes `bash -n` and `shellcheck`, every playbook
//! `ansible-playbook --syntax-check`; those tools are installed by `scripts/setup.sh --tests`
//! and a missing one fails the test under CI (`CI` set) and is reported otherwise.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use fabrik_doctor::remedy::REMEDIES;
use fabrik_doctor::{diagnose, name_nodes, Expectations, NamedNode};
use fabrik_fix::{ansible, plan, script, text, Plan};

use fabrik_testbed::fixtures::repo;

fn load(roots: &[&str]) -> Vec<NamedNode> {
    let nodes = roots
        .iter()
        .map(|r| fabrik_probe::probe(&repo().join(r)).unwrap())
        .collect();
    name_nodes(nodes)
}

fn plan_of(roots: &[&str], expect: Option<&Expectations>) -> Plan {
    let nodes = load(roots);
    let mut report = diagnose(&nodes, None);
    if let Some(e) = expect {
        fabrik_doctor::add_expectations(&mut report, &nodes, e, None);
    }
    plan(&report.findings, &nodes, expect, &[])
}

/// (golden name, roots, expectations TOML)
fn cases() -> Vec<(&'static str, Vec<&'static str>, Option<&'static str>)> {
    let node = |n: &'static str| format!("fixtures/doctor/nodes/{n}");
    let mut v: Vec<(&'static str, Vec<&'static str>, Option<&'static str>)> = vec![
        ("roce-dualport", vec!["fixtures/nodes/roce-dualport"], None),
        ("softroce-rxe", vec!["fixtures/nodes/softroce-rxe"], None),
        (
            "cluster-roce",
            vec![
                "fixtures/doctor/cluster-roce/node1",
                "fixtures/doctor/cluster-roce/node2",
                "fixtures/doctor/cluster-roce/node3",
            ],
            None,
        ),
        (
            "cluster-roce-expect-mtu-4200",
            vec![
                "fixtures/doctor/cluster-roce/node1",
                "fixtures/doctor/cluster-roce/node2",
                "fixtures/doctor/cluster-roce/node3",
            ],
            Some("[rdma]\nnetdev_mtu = 4200\n"),
        ),
        (
            "cluster-ib",
            vec![
                "fixtures/doctor/cluster/node1",
                "fixtures/doctor/cluster/node2",
                "fixtures/doctor/cluster/node3",
                "fixtures/doctor/cluster/node4",
            ],
            None,
        ),
    ];
    for n in [
        "mtu-001-roce-1500",
        "qos-001-pfc-off",
        "qos-002-ecn-off",
        "rdma-002-no-uverbs",
        "rdma-003-memlock",
        "rdma-004-sriov-vf",
        "rdma-005-no-mlx5-ib",
        "gdr-001-no-peermem",
        "pci-002-acs",
        "port-002-polling",
    ] {
        v.push((n, vec![Box::leak(node(n).into_boxed_str())], None));
    }
    v
}

fn tool(name: &str) -> bool {
    let ok = Command::new(name).arg("--version").output().is_ok();
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "{name} is missing (scripts/setup.sh --tests installs it)"
        );
        eprintln!("plans: {name} is not installed, its check is skipped");
    }
    ok
}

fn check_script(path: &Path) {
    let out = Command::new("bash").arg("-n").arg(path).output().unwrap();
    assert!(
        out.status.success(),
        "bash -n {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    if tool("shellcheck") {
        let out = Command::new("shellcheck").arg(path).output().unwrap();
        assert!(
            out.status.success(),
            "shellcheck {}:\n{}",
            path.display(),
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

fn check_playbook(path: &Path) {
    if !tool("ansible-playbook") {
        return;
    }
    let out = Command::new("ansible-playbook")
        .args(["-i", "localhost,", "--syntax-check"])
        .arg(path)
        .env("ANSIBLE_LOCAL_TEMP", std::env::temp_dir())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ansible-playbook --syntax-check {}:\n{}{}",
        path.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn golden_plans_scripts_and_playbooks() {
    let dir = repo().join("fixtures/golden/fix");
    let bless = std::env::var_os("FABRIK_BLESS").is_some();
    if bless {
        std::fs::create_dir_all(&dir).unwrap();
    }
    let mut expected_files = vec![];
    for (name, roots, expect) in cases() {
        let e = expect.map(|t| Expectations::parse(name, t).unwrap());
        let p = plan_of(&roots, e.as_ref());
        let outputs = [
            (format!("{name}.txt"), text::plan(&p)),
            (format!("{name}.sh"), script::render(&p).unwrap()),
            (format!("{name}.yml"), ansible::render(&p).unwrap()),
        ];
        for (file, body) in outputs {
            let path = dir.join(&file);
            expected_files.push(file.clone());
            if bless {
                std::fs::write(&path, &body).unwrap();
            } else {
                let want = std::fs::read_to_string(&path).unwrap_or_else(|_| {
                    panic!("{} missing: FABRIK_BLESS=1 writes it", path.display())
                });
                assert_eq!(
                    body, want,
                    "{file} drifted: FABRIK_BLESS=1 rewrites it; review the diff"
                );
            }
            if file.ends_with(".sh") {
                check_script(&path);
            } else if file.ends_with(".yml") {
                check_playbook(&path);
            }
        }
    }
    // No stale goldens: every file there is one a case writes (and the README).
    for entry in std::fs::read_dir(&dir).unwrap() {
        let n = entry.unwrap().file_name().into_string().unwrap();
        assert!(
            n == "README.md" || expected_files.contains(&n),
            "stale golden {n}"
        );
    }
}

#[test]
fn every_rule_with_a_remediation_gets_steps_on_the_tree_that_fires_it() {
    // The trees named after their rule (fixtures/doctor/nodes/<rule>-...) fire it; the plan for
    // each configuration rule holds a change for its finding, never only a sentence.
    let trees = [
        ("FAB-MTU-001", "mtu-001-roce-1500"),
        ("FAB-QOS-001", "qos-001-pfc-off"),
        ("FAB-QOS-002", "qos-002-ecn-off"),
        ("FAB-RDMA-003", "rdma-003-memlock"),
        ("FAB-RDMA-004", "rdma-004-sriov-vf"),
        ("FAB-RDMA-005", "rdma-005-no-mlx5-ib"),
        ("FAB-GDR-001", "gdr-001-no-peermem"),
        ("FAB-PCI-002", "pci-002-acs"),
    ];
    for (rule, tree) in trees {
        let p = plan_of(&[&format!("fixtures/doctor/nodes/{tree}")], None);
        let items: Vec<_> = p.items.iter().filter(|i| i.rule == rule).collect();
        assert!(!items.is_empty(), "{tree} fires no {rule}");
        for i in items {
            assert!(
                !i.steps.is_empty(),
                "{rule} on {tree}: no step, only {:?}",
                i.manual
            );
        }
    }
    // FAB-RDMA-002's tree is a container: ib_uverbs is loaded on its host, so the device nodes
    // are what is missing and no modprobe helps (manual). The same tree without the module
    // loaded is a host, where the plan loads it.
    let p = plan_of(&["fixtures/doctor/nodes/rdma-002-no-uverbs"], None);
    let i = p.items.iter().find(|i| i.rule == "FAB-RDMA-002").unwrap();
    assert!(i.steps.is_empty() && i.manual[0].contains("--device=/dev/infiniband"));
    let mut nodes = load(&["fixtures/doctor/nodes/rdma-002-no-uverbs"]);
    nodes[0].node.modules.retain(|m| m.name != "ib_uverbs");
    let report = diagnose(&nodes, None);
    let p = plan(&report.findings, &nodes, None, &[]);
    let s = &p.steps[0];
    assert_eq!(
        (s.setting.as_str(), s.previous.as_deref()),
        ("module ib_uverbs", Some("not loaded"))
    );
    // The cross-node ones: MTU drift converges the odd node, the neighbour table is raised.
    let p = plan_of(
        &[
            "fixtures/doctor/cluster-roce/node1",
            "fixtures/doctor/cluster-roce/node2",
            "fixtures/doctor/cluster-roce/node3",
        ],
        None,
    );
    let x7 = p.items.iter().find(|i| i.rule == "FAB-X-007").unwrap();
    assert_eq!(x7.node, "gpu-roce-02");
    assert_eq!(x7.converge.as_ref().unwrap().value, "9000");
    assert!(!x7.steps.is_empty());
    let mut covered: Vec<&str> = trees.iter().map(|(r, _)| *r).collect();
    covered.push("FAB-RDMA-002");
    for r in REMEDIES {
        // The remedy crate's unit tests plan these on nodes built in code (the firmware
        // settings on nodes carrying a real `mstconfig q` capture), and
        // scripts/test.d/fix.sh applies and undoes FAB-MTU-002 and FAB-X-014 on live
        // namespace hosts.
        let tested_elsewhere = [
            "FAB-X-007",
            "FAB-X-011",
            "FAB-X-012",
            "FAB-X-014",
            "FAB-MTU-002",
            "FAB-FW-002",
            "FAB-EXP-004",
            "FAB-EXP-005",
            "FAB-EXP-006",
            "FAB-EXP-011",
        ];
        assert!(
            covered.contains(&r.rule) || tested_elsewhere.contains(&r.rule),
            "{} has a remediation and no tree here",
            r.rule
        );
    }
}

#[test]
fn expectations_set_the_value_to_converge_to() {
    let e = Expectations::parse("t", "[rdma]\nnetdev_mtu = 4200\n").unwrap();
    let p = plan_of(
        &[
            "fixtures/doctor/cluster-roce/node1",
            "fixtures/doctor/cluster-roce/node2",
            "fixtures/doctor/cluster-roce/node3",
        ],
        Some(&e),
    );
    let x7 = p.items.iter().find(|i| i.rule == "FAB-X-007").unwrap();
    assert_eq!(x7.converge.as_ref().unwrap().value, "4200");
    // Every node's RoCE netdevs go to 4200 (FAB-EXP-004 on each), none to 9000.
    assert!(p.steps.iter().all(|s| s.target == "4200"), "{:#?}", p.steps);
    let nodes: std::collections::BTreeSet<&str> = p.steps.iter().map(|s| s.node.as_str()).collect();
    assert_eq!(nodes.len(), 3);
}
