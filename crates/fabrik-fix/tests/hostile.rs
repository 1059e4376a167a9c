//! Values from a hostile snapshot (its host name, interface names) stay data in the script and
//! the playbook: the script is run with its commands logged instead of executed (and files
//! written under a scratch root), and no injected command runs; Ansible's own YAML loader reads
//! the node's name back as the exact string, untemplated.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use fabrik_doctor::{diagnose, name_nodes};
use fabrik_fix::{ansible, plan, script};
use proptest::prelude::*;

fn node_with(hostname: &str, netdev: &str) -> Vec<fabrik_doctor::NamedNode> {
    let root =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/doctor/nodes/mtu-001-roce-1500");
    let mut n = fabrik_probe::probe(&root).unwrap();
    n.hostname = Some(hostname.to_string());
    let old = n.rdma_devices[0].ports[0].netdev.clone().unwrap();
    for d in &mut n.rdma_devices {
        for p in &mut d.ports {
            if p.netdev.as_deref() == Some(old.as_str()) {
                p.netdev = Some(netdev.to_string());
            }
        }
    }
    for i in &mut n.net_interfaces {
        if i.name == old {
            i.name = netdev.to_string();
        }
    }
    name_nodes(vec![n])
}

fn hostile() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "'",
            "\"",
            "$(touch CANARY)",
            "`touch CANARY`",
            ";touch CANARY;",
            "&&",
            "|",
            "\\",
            "{{ lookup('pipe','touch CANARY') }}",
            "%",
            "*",
            "?",
            "[",
            "]",
            "~",
            "#",
            "!",
            " ",
            "-",
            "eth0",
            "ens1f0np0",
            "$IFS",
            "${x}",
            "é",
            "\u{202e}",
        ]),
        1..6,
    )
    .prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]
    #[test]
    fn hostile_names_stay_data_in_the_script(host in hostile(), netdev in hostile()) {
        let nodes = node_with(&host, &netdev);
        let report = diagnose(&nodes, None);
        let p = plan(&report.findings, &nodes, None, &[]);
        let text = script::render(&p).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fix.sh");
        std::fs::write(&path, &text).unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(&root).unwrap();
        let log = dir.path().join("log");
        let out = Command::new("bash")
            .arg(&path)
            .current_dir(dir.path())
            .env("FABRIK_FIX_ROOT", &root)
            .env("FABRIK_FIX_DRY_RUN", &log)
            .env("FABRIK_FIX_DRAINED", "1")
            .output()
            .unwrap();
        prop_assert!(out.status.success(), "{}\n{}", String::from_utf8_lossy(&out.stderr), text);
        prop_assert!(!dir.path().join("CANARY").exists(), "an injected command ran:\n{text}");
        // Every command logged is one the plan holds, word for word.
        let logged = std::fs::read_to_string(&log).unwrap_or_default();
        let planned: Vec<String> = p
            .steps
            .iter()
            .flat_map(|s| s.change.apply())
            .map(|op| match op {
                fabrik_doctor::remedy::Op::Run { argv } => argv.join("\u{1f}"),
                fabrik_doctor::remedy::Op::Write { path, value } => {
                    format!("fabrik-write\u{1f}{path}\u{1f}{value}")
                }
            })
            .collect();
        for line in logged.lines().filter(|l| !l.starts_with("udevadm")) {
            prop_assert!(planned.iter().any(|p| p == line), "unplanned command {line:?}");
        }
        // A name the checks refuse is never planned as a change: it stays a sentence.
        if p.steps.is_empty() {
            prop_assert!(p.items.iter().any(|i| i.manual.iter().any(|m| m.starts_with("Not planned"))));
        }
    }
}

/// The Python that runs ansible-playbook (its `#!` line), which has Ansible's YAML loader.
fn ansible_python() -> Option<String> {
    let paths = std::env::var_os("PATH")?;
    let bin = std::env::split_paths(&paths)
        .map(|d| d.join("ansible-playbook"))
        .find(|p| p.is_file())?;
    let text = std::fs::read_to_string(bin).ok()?;
    let line = text.lines().next()?.strip_prefix("#!")?.trim().to_string();
    Some(line.split_whitespace().last()?.to_string())
}

#[test]
fn ansible_reads_hostile_names_back_untemplated() {
    let Some(python) = ansible_python() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "ansible-core is missing (scripts/setup.sh --tests)"
        );
        eprintln!("hostile: ansible is not installed, skipped");
        return;
    };
    for host in [
        "gpu{{ lookup('pipe','touch CANARY') }}",
        "a'b\"c$(x)",
        "x: y\n- z",
    ] {
        let nodes = node_with(host, "ens1f0np0");
        let report = diagnose(&nodes, None);
        let p = plan(&report.findings, &nodes, None, &[]);
        let rendered = ansible::render(&p);
        if host.contains('\n') {
            assert!(rendered.is_err(), "a control character must be refused");
            continue;
        }
        let yml = rendered.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fix.yml");
        std::fs::write(&path, &yml).unwrap();
        let check = "import sys, yaml\nfrom ansible.parsing.yaml.loader import AnsibleLoader\nfrom ansible.utils.unsafe_proxy import AnsibleUnsafeText\nd = yaml.load(open(sys.argv[1]), Loader=AnsibleLoader)\nv = d[0]['vars']['fabrik_node']\nassert isinstance(v, AnsibleUnsafeText), type(v)\nsys.stdout.write(v)\n";
        let out = Command::new(&python)
            .args(["-c", check])
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}\n{yml}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout), host);
        let syntax = Command::new("ansible-playbook")
            .args(["-i", "localhost,", "--syntax-check"])
            .arg(&path)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(
            syntax.status.success(),
            "{}",
            String::from_utf8_lossy(&syntax.stdout)
        );
        assert!(!dir.path().join("CANARY").exists());
    }
}
