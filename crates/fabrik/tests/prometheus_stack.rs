//! The monitoring stack for real: `fabrik exporter` on a fixture root, scraped by Debian's
//! Prometheus server with deploy/prometheus/fabrik-alerts.yml loaded. Every query of the Grafana
//! dashboard (deploy/grafana/fabrik-dashboard.json) runs on that server without error, the core
//! panels return series, and every alert rule evaluates with health "ok".
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use fabrik_testbed::fixtures::repo;

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// GET on the Prometheus HTTP API through curl (which handles chunked answers); the JSON body.
fn api(port: u16, path: &str, query: Option<&str>) -> Value {
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "--max-time", "10", "-G"]);
    if let Some(q) = query {
        cmd.arg("--data-urlencode").arg(format!("query={q}"));
    }
    let out = cmd
        .arg(format!("http://127.0.0.1:{port}{path}"))
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

fn wait_until(what: &str, timeout: Duration, mut ok: impl FnMut() -> bool) {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    panic!("waited {} s for {what}", timeout.as_secs());
}

/// Every `expr` of the dashboard, with Grafana's variables given values a Prometheus server
/// understands (all nodes, a rate window of several scrapes).
fn dashboard_queries() -> Vec<(String, String)> {
    let d: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("deploy/grafana/fabrik-dashboard.json")).unwrap(),
    )
    .unwrap();
    let mut out = vec![];
    for p in d["panels"].as_array().unwrap() {
        for t in p["targets"].as_array().unwrap() {
            let expr = t["expr"]
                .as_str()
                .unwrap()
                .replace("$__rate_interval", "10s")
                .replace("$instance", ".*");
            out.push((p["title"].as_str().unwrap().to_string(), expr));
        }
    }
    out
}

#[test]
fn dashboard_queries_and_alert_rules_run_on_a_real_prometheus() {
    let Some(prometheus) =
        fabrik_testbed::tools::require("prometheus", "Debian package prometheus")
    else {
        return;
    };
    if fabrik_testbed::tools::require("curl", "Debian package curl").is_none() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let root = repo().join("fixtures/counters/mlx5-roce/after");
    let (exp_port, prom_port) = (
        fabrik_testbed::free_port().unwrap(),
        fabrik_testbed::free_port().unwrap(),
    );

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
    let config = work.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             rule_files:\n  - {}\n\
             scrape_configs:\n  - job_name: fabrik\n    static_configs:\n      - targets: ['127.0.0.1:{exp_port}']\n",
            repo().join("deploy/prometheus/fabrik-alerts.yml").display()
        ),
    )
    .unwrap();
    let _server = Killed(
        Command::new(prometheus)
            .arg(format!("--config.file={}", config.display()))
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

    // Five scrapes: enough samples for every rate() window of the dashboard.
    wait_until(
        "Prometheus to scrape the exporter",
        Duration::from_secs(60),
        || {
            let v = api(
                prom_port,
                "/api/v1/query",
                Some("count_over_time(up{job=\"fabrik\"}[1m])"),
            );
            v["data"]["result"][0]["value"][1]
                .as_str()
                .and_then(|n| n.parse::<u32>().ok())
                .is_some_and(|n| n >= 5)
        },
    );
    let up = api(prom_port, "/api/v1/query", Some("up{job=\"fabrik\"}"));
    assert_eq!(up["data"]["result"][0]["value"][1], "1", "{up}");

    let mut answered = 0;
    for (title, expr) in dashboard_queries() {
        let v = api(prom_port, "/api/v1/query", Some(&expr));
        assert_eq!(v["status"], "success", "panel {title:?}: {expr}\n{v}");
        let series = v["data"]["result"].as_array().map_or(0, Vec::len);
        if series > 0 {
            answered += 1;
        }
        // The fixture is a RoCE node with traffic counters and ports: these panels must show it.
        if [
            "RDMA port throughput",
            "RDMA port packets",
            "RDMA ports not ACTIVE",
            "Exporter",
        ]
        .contains(&title.as_str())
        {
            assert!(series > 0, "panel {title:?} shows nothing: {expr}\n{v}");
        }
    }
    assert!(
        answered >= 6,
        "only {answered} dashboard queries returned series"
    );

    let rule_count = std::fs::read_to_string(repo().join("deploy/prometheus/fabrik-alerts.yml"))
        .unwrap()
        .lines()
        .filter(|l| l.trim_start().starts_with("- alert:"))
        .count();
    wait_until(
        "every alert rule to be evaluated",
        Duration::from_secs(30),
        || {
            let rules = api(prom_port, "/api/v1/rules", None);
            let all: Vec<&Value> = rules["data"]["groups"]
                .as_array()
                .map(|g| {
                    g.iter()
                        .flat_map(|g| g["rules"].as_array().unwrap())
                        .collect()
                })
                .unwrap_or_default();
            all.len() == rule_count && all.iter().all(|r| r["health"] == "ok")
        },
    );
}
