//! deploy/prometheus/prometheus.yml creates the scrape job the alerts use: a real Prometheus
//! (Debian's) runs its `fabrik` job with its relabelling unchanged over targets that carry the
//! labels Kubernetes endpoint discovery gives the DaemonSet's pods. The kept target is up under
//! `job="fabrik"` with `instance` and `node` set to the node's name, another Service's endpoint
//! is dropped, and a node whose exporter is down makes FabrikExporterDown's expression true.
//! Debian's Prometheus is built without Kubernetes discovery, so the discovery block is swapped
//! for file-based discovery holding the same `__meta_kubernetes_*` labels; the rest of the file
//! passes `promtool check config` as written.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value as Json;
use serde_yaml_ng::Value;
use support::repo;

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn query(port: u16, q: &str) -> Json {
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "10", "-G", "--data-urlencode"])
        .arg(format!("query={q}"))
        .arg(format!("http://127.0.0.1:{port}/api/v1/query"))
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or(Json::Null)
}

/// The Service name and port name of the DaemonSet manifest.
fn service() -> (String, String) {
    let text =
        std::fs::read_to_string(repo().join("deploy/kubernetes/exporter-daemonset.yaml")).unwrap();
    let svc = serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| <Value as serde::Deserialize>::deserialize(d).unwrap())
        .find(|d| d["kind"] == "Service")
        .unwrap();
    (
        svc["metadata"]["name"].as_str().unwrap().to_string(),
        svc["spec"]["ports"][0]["name"]
            .as_str()
            .unwrap()
            .to_string(),
    )
}

#[test]
fn the_shipped_scrape_config_makes_the_job_and_labels_the_alerts_use() {
    let Some(promtool) = fabrik_testbed::tools::require("promtool", "Debian package prometheus")
    else {
        return;
    };
    let Some(prometheus) =
        fabrik_testbed::tools::require("prometheus", "Debian package prometheus")
    else {
        return;
    };
    if fabrik_testbed::tools::require("curl", "Debian package curl").is_none() {
        return;
    }
    let shipped = repo().join("deploy/prometheus/prometheus.yml");
    let mut config: Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(&shipped).unwrap()).unwrap();
    let job = &config["scrape_configs"][0];
    assert_eq!(job["job_name"], "fabrik");
    // The alert names the same job.
    let alerts =
        std::fs::read_to_string(repo().join("deploy/prometheus/fabrik-alerts.yml")).unwrap();
    assert!(alerts.contains("expr: up{job=\"fabrik\"} == 0"), "{alerts}");
    let (svc, port_name) = service();
    let keep = &job["relabel_configs"][0];
    assert_eq!(keep["action"], "keep");
    assert_eq!(
        keep["regex"].as_str().unwrap(),
        format!("{svc};{port_name}")
    );

    // As written, everything but the discovery passes promtool (which lacks Kubernetes here).
    let work = tempfile::tempdir().unwrap();
    let rules = repo().join("deploy/prometheus/fabrik-alerts.yml");
    config["rule_files"] = Value::Sequence(vec![Value::String(rules.display().to_string())]);
    let exp_port = fabrik_testbed::free_port().unwrap();
    let dead_port = fabrik_testbed::free_port().unwrap();
    let targets = work.path().join("targets.json");
    let endpoint = |port: u16, svc: &str, node: &str| {
        serde_json::json!({
            "targets": [format!("127.0.0.1:{port}")],
            "labels": {
                "__meta_kubernetes_namespace": "fabrik",
                "__meta_kubernetes_service_name": svc,
                "__meta_kubernetes_endpoint_port_name": port_name,
                "__meta_kubernetes_pod_node_name": node,
            }
        })
    };
    std::fs::write(
        &targets,
        serde_json::to_string(&[
            endpoint(exp_port, &svc, "gpu-node-1"),
            endpoint(dead_port, &svc, "gpu-node-2"),
            endpoint(exp_port, "some-other-service", "gpu-node-3"),
        ])
        .unwrap(),
    )
    .unwrap();
    let sd = serde_yaml_ng::to_value(serde_json::json!([{
        "files": [targets.display().to_string()],
        "refresh_interval": "1s",
    }]))
    .unwrap();
    let job = config["scrape_configs"][0].as_mapping_mut().unwrap();
    job.remove("kubernetes_sd_configs").unwrap();
    job.insert("file_sd_configs".into(), sd);
    config["global"]["scrape_interval"] = "1s".into();
    config["global"]["scrape_timeout"] = "1s".into();
    config["global"]["evaluation_interval"] = "1s".into();
    let path = work.path().join("prometheus.yml");
    std::fs::write(&path, serde_yaml_ng::to_string(&config).unwrap()).unwrap();
    let checked = Command::new(&promtool)
        .args(["check", "config"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        checked.status.success(),
        "{}{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );

    let root = repo().join("fixtures/counters/mlx5-roce/after");
    let _exporter = Killed(
        Command::new(env!("CARGO_BIN_EXE_fabrik"))
            .args([
                "exporter",
                "--listen",
                &format!("127.0.0.1:{exp_port}"),
                "--root",
            ])
            .arg(&root)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let prom_port = fabrik_testbed::free_port().unwrap();
    let _server = Killed(
        Command::new(prometheus)
            .arg(format!("--config.file={}", path.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                work.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let start = Instant::now();
    let (up, down) = loop {
        let v = query(prom_port, "up");
        let series: Vec<Json> = v["data"]["result"].as_array().cloned().unwrap_or_default();
        let node = |n: &str| {
            series
                .iter()
                .find(|s| s["metric"]["instance"] == n)
                .cloned()
        };
        if let (Some(a), Some(b)) = (node("gpu-node-1"), node("gpu-node-2")) {
            if a["value"][1] == "1" {
                assert_eq!(
                    series.len(),
                    2,
                    "the other Service's endpoint was kept: {v}"
                );
                break (a, b);
            }
        }
        assert!(start.elapsed() < Duration::from_secs(60), "{v}");
        std::thread::sleep(Duration::from_millis(250));
    };
    assert_eq!(up["metric"]["job"], "fabrik", "{up}");
    assert_eq!(up["metric"]["node"], "gpu-node-1", "{up}");
    assert_eq!(down["value"][1], "0", "{down}");
    // FabrikExporterDown's expression, as the rule file writes it, names the dead node.
    let expr = alerts
        .lines()
        .skip_while(|l| !l.contains("alert: FabrikExporterDown"))
        .find_map(|l| l.trim().strip_prefix("expr: "))
        .unwrap();
    let v = query(prom_port, expr);
    let firing = v["data"]["result"].as_array().cloned().unwrap_or_default();
    assert_eq!(firing.len(), 1, "{v}");
    assert_eq!(firing[0]["metric"]["instance"], "gpu-node-2");
    // The exporter's own series carry the same job and node labels.
    let v = query(
        prom_port,
        "fabrik_port_state{job=\"fabrik\",node=\"gpu-node-1\"}",
    );
    assert!(!v["data"]["result"].as_array().unwrap().is_empty(), "{v}");
}
