//! deploy/kubernetes/: the exporter DaemonSet and the node-problem-detector plugin pass a strict
//! Kubernetes schema validator (kubernetes-validate --strict), and the plugin's configuration
//! holds what node-problem-detector's own Validate() demands, with `fabrik check` speaking NPD's
//! exit-code protocol (0 OK, 1 NonOK, 2 Unknown) on real fixture roots.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use fabrik_testbed::fixtures::repo;

fn manifests() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(repo().join("deploy/kubernetes"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    v.sort();
    v
}

#[test]
fn manifests_pass_strict_kubernetes_validation() {
    let Some(validate) = std::env::var_os("FABRIK_K8S_VALIDATE")
        .map(PathBuf::from)
        .or_else(|| {
            fabrik_testbed::tools::require("kubernetes-validate", "scripts/setup.sh --tests")
        })
    else {
        return;
    };
    let files = manifests();
    assert!(files.len() >= 2, "{files:?}");
    let out = Command::new(validate)
        .arg("--strict")
        .args(&files)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    // Every object was checked, not skipped as an unknown kind.
    for kind in [
        "daemonset/fabrik-exporter",
        "daemonset/fabrik-node-problem-detector",
        "configmap/fabrik-npd-config",
    ] {
        assert!(
            text.contains(&format!("passed for resource {kind}")),
            "{text}"
        );
    }
}

/// The JSON document under `fabrik-check.json: |` in the ConfigMap (a YAML block scalar: every
/// line indented deeper than its key).
fn npd_config() -> Value {
    let text = std::fs::read_to_string(repo().join("deploy/kubernetes/node-problem-detector.yaml"))
        .unwrap();
    let mut lines = text
        .lines()
        .skip_while(|l| !l.trim_end().ends_with("fabrik-check.json: |"));
    let key = lines.next().unwrap();
    let key_indent = key.len() - key.trim_start().len();
    let block: Vec<&str> = lines
        .take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() > key_indent)
        .collect();
    serde_json::from_str(&block.join("\n")).unwrap()
}

fn duration(v: &Value) -> Duration {
    humantime::parse_duration(v.as_str().unwrap()).unwrap()
}

#[test]
fn npd_plugin_config_is_valid_and_fabrik_check_speaks_its_protocol() {
    let c = npd_config();
    // node-problem-detector's CustomPluginConfig.Validate(): plugin "custom", no rule timeout
    // above the global one, and every permanent rule's condition among the default conditions.
    assert_eq!(c["plugin"], "custom");
    let global = duration(&c["pluginConfig"]["timeout"]);
    let conditions: Vec<&str> = c["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["type"].as_str().unwrap())
        .collect();
    let rules = c["rules"].as_array().unwrap();
    assert!(!rules.is_empty());
    for rule in rules {
        let timeout = duration(&rule["timeout"]);
        assert!(timeout <= global);
        if rule["type"] == "permanent" {
            assert!(conditions.contains(&rule["condition"].as_str().unwrap()));
        }
        let args: Vec<String> = rule["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .collect();
        assert_eq!(args[0], "check");
        // An expectations file is passed, one the image holds (the package's deploy/expect/).
        let expect = args
            .iter()
            .find_map(|a| a.strip_prefix("--expect=/fabrik/expect/"))
            .expect("the plugin passes --expect=/fabrik/expect/FILE");
        assert!(
            repo().join("deploy/expect").join(expect).is_file(),
            "{expect}"
        );
        // fabrik's own budget must end before NPD kills the plugin, so that NPD reads a verdict.
        let budget = args
            .iter()
            .find_map(|a| a.strip_prefix("--budget="))
            .map(|b| humantime::parse_duration(b).unwrap())
            .unwrap_or(Duration::from_secs(20));
        assert!(budget < timeout, "budget {budget:?} vs timeout {timeout:?}");

        // The same arguments on fixture roots: a healthy node is OK (0), a broken one NonOK (1)
        // with the problem on the first line, a root that cannot be read Unknown (2).
        let run = |root: &Path| {
            let args: Vec<String> = args
                .iter()
                .map(|a| {
                    if a.starts_with("--root=") {
                        format!("--root={}", root.display())
                    } else if let Some(f) = a.strip_prefix("--expect=/fabrik/expect/") {
                        // The init container copies the image's /usr/share/fabrik/expect/,
                        // which the package fills from deploy/expect/.
                        format!(
                            "--expect={}",
                            repo().join("deploy/expect").join(f).display()
                        )
                    } else {
                        a.clone()
                    }
                })
                .collect();
            let out = Command::new(env!("CARGO_BIN_EXE_fabrik"))
                .args(&args)
                .output()
                .unwrap();
            (
                out.status.code().unwrap(),
                String::from_utf8(out.stdout).unwrap(),
            )
        };
        let (code, _) = run(&repo().join("fixtures/nodes/ib-ndr-8gpu"));
        assert_eq!(code, 0);
        let (code, text) = run(&repo().join("fixtures/nodes/roce-dualport"));
        assert_eq!(code, 1);
        assert!(text.starts_with("ERROR: fabrik: FAB-"), "{text}");
        let (code, text) = run(&repo().join("fixtures/no-such-root"));
        assert_eq!(code, 2, "{text}");
    }
}
