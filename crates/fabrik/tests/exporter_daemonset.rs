//! The exporter as deploy/kubernetes/exporter-daemonset.yaml runs it, with the manifest's exact
//! arguments: the host's root mounted at `/host`, the pod on the host's network, no
//! capabilities. A private mount and network namespace plays the node: a root tree at `/host`
//! whose RDMA netdev exists in the namespace (as the host's do for a pod with
//! `hostNetwork: true`), and an `ethtool` that answers for it. The exporter must call the root
//! live and read `ethtool -S` for the netdev, and must not when the netdev is not in its
//! namespace (a pod on its own network). Needs root (unshare, veth); skips otherwise.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_yaml_ng::Value;
use support::repo;

/// The exporter container's command line from the DaemonSet: entry point and arguments.
fn daemonset_command() -> (Vec<String>, Value) {
    let text =
        std::fs::read_to_string(repo().join("deploy/kubernetes/exporter-daemonset.yaml")).unwrap();
    let ds = serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| <Value as serde::Deserialize>::deserialize(d).unwrap())
        .find(|d| d["kind"] == "DaemonSet")
        .unwrap();
    let spec = ds["spec"]["template"]["spec"].clone();
    let c = spec["containers"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "exporter")
        .unwrap()
        .clone();
    let args = c["args"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    (args, spec)
}

/// A shell word for the script below.
fn q(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Runs the DaemonSet's exporter against `root` mounted at `/host` in a private namespace;
/// `netdev_in_namespace` creates the root's RDMA netdev there. Returns `/metrics`, `/healthz`,
/// the exporter's stderr and what the fake ethtool was asked.
fn run_node(root: &Path, netdev_in_namespace: bool) -> (String, String, String, String) {
    let (args, spec) = daemonset_command();
    assert_eq!(spec["hostNetwork"], Value::Bool(true));
    let mount = spec["volumes"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "host")
        .unwrap();
    assert_eq!(mount["hostPath"]["path"], "/");
    assert!(args.iter().any(|a| a == "--root=/host"), "{args:?}");
    let port = args
        .iter()
        .find_map(|a| a.strip_prefix("--listen=0.0.0.0:"))
        .unwrap()
        .to_string();

    let work = tempfile::tempdir().unwrap();
    let nr = work.path().join("newroot");
    for d in [
        "usr",
        "etc",
        "host",
        "proc",
        "fakebin",
        "tmp",
        "fabrik-bin",
        "dev",
    ] {
        std::fs::create_dir_all(nr.join(d)).unwrap();
    }
    for (link, to) in [
        ("bin", "usr/bin"),
        ("lib", "usr/lib"),
        ("lib64", "usr/lib64"),
        ("sbin", "usr/sbin"),
    ] {
        std::os::unix::fs::symlink(to, nr.join(link)).unwrap();
    }
    std::fs::copy(env!("CARGO_BIN_EXE_fabrik"), nr.join("fabrik-bin/fabrik")).unwrap();
    // The image installs ethtool; this one answers for ens1f0 with values no capture holds.
    std::fs::write(
        nr.join("fakebin/ethtool"),
        "#!/bin/sh\necho \"$*\" >> /tmp/ethtool.log\nprintf 'NIC statistics:\\n     rx_prio3_pause: 777777\\n     tx_prio3_pause: 1\\n     rx_discards_phy: 5\\n'\n",
    )
    .unwrap();
    std::fs::set_permissions(
        nr.join("fakebin/ethtool"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"]
        .iter()
        .find(|p| Path::new(p).exists())
        .map(|p| {
            // securityContext: capabilities drop ALL, allowPrivilegeEscalation false.
            format!("{p} --no-new-privs --inh-caps=-all --bounding-set=-all")
        })
        .unwrap_or_default();
    let exporter = format!(
        "{setpriv} /fabrik-bin/fabrik {}",
        args.iter().map(|a| q(a)).collect::<Vec<_>>().join(" ")
    );
    let veth = if netdev_in_namespace {
        "ip link add ens1f0 type veth peer name fabpeer0\nip link set ens1f0 up\n\
         ip -o link show dev ens1f0 | cut -d: -f1 > \"$ROOT/sys/class/net/ens1f0/ifindex\"\n"
    } else {
        "echo 2 > \"$ROOT/sys/class/net/ens1f0/ifindex\"\n"
    };
    let script = format!(
        r#"set -eu
ip link set lo up
{veth}
for d in usr etc dev; do mount --rbind /$d "$NR/$d"; done
mount --bind "$ROOT" "$NR/host"
mount -t proc proc "$NR/proc"
PATH=/fakebin:/usr/bin:/usr/sbin chroot "$NR" {exporter} 2> "$WORK/stderr" &
pid=$!
for i in $(seq 1 300); do
  if curl -fsS "http://127.0.0.1:{port}/metrics" > "$WORK/metrics" 2>/dev/null; then break; fi
  sleep 0.1
done
curl -sS "http://127.0.0.1:{port}/healthz" > "$WORK/healthz" || true
kill $pid; wait $pid || true
"#
    );
    let out = Command::new("unshare")
        .args([
            "--mount",
            "--net",
            "--fork",
            "--propagation",
            "private",
            "sh",
            "-c",
            &script,
        ])
        .env("NR", &nr)
        .env("ROOT", root)
        .env("WORK", work.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let read = |p: PathBuf| std::fs::read_to_string(p).unwrap_or_default();
    (
        read(work.path().join("metrics")),
        read(work.path().join("healthz")),
        read(work.path().join("stderr")),
        read(nr.join("tmp/ethtool.log")),
    )
}

/// A copy of a fixture node's counter tree as a live host's root holds it (no snapshot files).
fn host_root(dir: &Path) -> PathBuf {
    let root = dir.join("host");
    support::copy_tree(&repo().join("fixtures/counters/mlx5-roce/after"), &root);
    std::fs::remove_file(root.join("fabrik/captured_at")).unwrap();
    root
}

fn is_root() -> bool {
    let root = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .is_some_and(|l| l.split_whitespace().nth(1) == Some("0"));
    let tools = ["unshare", "ip", "curl", "chroot"]
        .iter()
        .all(|t| fabrik_testbed::tools::find(t).is_some());
    if !(root && tools) {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI runs as root with unshare, ip, curl and chroot"
        );
        eprintln!("skipped: needs root, unshare, ip, curl and chroot");
    }
    root && tools
}

#[test]
fn the_daemonset_reads_ethtool_counters_of_the_host_it_reaches() {
    if !is_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = host_root(dir.path());
    let (metrics, healthz, stderr, asked) = run_node(&root, true);
    assert!(
        stderr.contains("live: this process reaches its interfaces"),
        "{stderr}"
    );
    assert_eq!(healthz, "ok\n");
    assert_eq!(asked.lines().next(), Some("-S ens1f0"), "{asked}\n{stderr}");
    assert!(
        metrics.contains(
            "fabrik_netdev_pause_frames_total{interface=\"ens1f0\",direction=\"rx\",priority=\"3\"} 777777"
        ),
        "{metrics}"
    );
    assert!(metrics
        .contains("fabrik_port_transmit_bytes_total{device=\"mlx5_2\",port=\"1\"} 20500000000"));

    // The same root from a pod on its own network: its interfaces are not this process's,
    // so no ethtool runs and the values are what the root holds.
    let dir = tempfile::tempdir().unwrap();
    let root = host_root(dir.path());
    let (metrics, _, stderr, asked) = run_node(&root, false);
    assert!(stderr.contains("not live"), "{stderr}");
    assert!(asked.is_empty(), "{asked}");
    assert!(!metrics.contains("777777"), "{metrics}");
    assert!(metrics.contains(
        "fabrik_netdev_pause_frames_total{interface=\"ens1f0\",direction=\"rx\",priority=\"3\"} 200100"
    ));
}
