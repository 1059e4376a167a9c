//! Every NCCL log fixture against the ground truth in fixtures/nccl-logs/README.md.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use fabrik_model::Severity;
use fabrik_parse::nccl_log::{analyze_paths, LogReport, PluginStatus, ProcessReport, Transport};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/nccl-logs")
        .join(name)
}

fn load(name: &str) -> LogReport {
    analyze_paths(&[fixture(name)]).expect("fixture readable")
}

fn proc<'a>(r: &'a LogReport, host: &str, pid: u64) -> &'a ProcessReport {
    r.processes
        .iter()
        .find(|p| p.host.as_deref() == Some(host) && p.pid == Some(pid))
        .unwrap_or_else(|| panic!("no process {host}:{pid}"))
}

fn rules(r: &LogReport) -> Vec<&str> {
    r.processes
        .iter()
        .flat_map(|p| p.issues.iter().map(|i| i.rule.as_str()))
        .collect()
}

#[test]
fn f01_nccl_2_5_ib_two_nodes() {
    let r = load("01-nccl-2.5.6-ib-two-nodes.log");
    assert_eq!(r.summary.transport, Transport::Ib);
    assert_eq!(r.summary.gdr, None);
    assert!(!r.summary.socket_fallback);
    assert_eq!(r.summary.nccl_version.as_deref(), Some("2.5.6"));
    assert_eq!(r.host_names, vec!["master_node", "secondary_node"]);
    assert_eq!(r.summary.processes, 8);
    let p = proc(&r, "master_node", 24570);
    assert_eq!(p.ib_nics.len(), 1);
    assert_eq!(p.ib_nics[0].device, "mlx5_0");
    assert_eq!(p.ib_nics[0].port, Some(1));
    assert_eq!(p.ib_nics[0].link.as_deref(), Some("IB"));
    assert!(!p.relaxed_ordering);
    assert_eq!(p.ib_oob.as_ref().unwrap().interface, "ib0");
    assert_eq!(
        p.ib_oob.as_ref().unwrap().address.as_deref(),
        Some("192.168.11.1")
    );
    assert_eq!(p.plugin.status, PluginStatus::NotFound);
    assert_eq!(p.env.get("NCCL_IB_DISABLE").map(String::as_str), Some("0"));
    // The bare version line follows this process's lines.
    assert_eq!(p.nccl_version.as_deref(), Some("2.5.6"));
    assert_eq!(p.cuda_runtime.as_deref(), Some("10.0"));
    assert_eq!(r.summary.errors, 0);
}

#[test]
fn f02_gdrdma_channels_old_channel_form() {
    let r = load("02-nccl-ib-gdrdma-a100-completion-error.log");
    assert_eq!(r.summary.transport, Transport::Ib);
    assert_eq!(r.summary.gdr, Some(true));
    assert_eq!(r.summary.processes, 1);
    let p = proc(&r, "10-90-43-152", 120890);
    assert_eq!(p.cuda_devices, vec![0, 1, 2, 3]);
    assert_eq!(p.channels.get("NET/IB/GDRDMA"), Some(&12));
    assert_eq!(p.network.as_deref(), Some("IB"));
    // Ranks from the channel lines: source of a send, destination of a receive.
    let ranks: Vec<(u32, Option<u32>)> = p.ranks.iter().map(|x| (x.rank, x.cuda_dev)).collect();
    assert_eq!(
        ranks,
        vec![(0, Some(0)), (1, Some(1)), (2, Some(2)), (3, Some(3))]
    );
}

#[test]
fn f03_nccl_2_28_info_version_line() {
    let r = load("03-nccl-2.28.9-env-plugin-socket-ifname.log");
    assert_eq!(r.summary.transport, Transport::Unknown);
    assert_eq!(r.summary.nccl_version.as_deref(), Some("2.28.9"));
    assert_eq!(r.summary.processes, 3);
    let p = proc(&r, "cn76", 154);
    assert_eq!(p.cuda_runtime.as_deref(), Some("13.0"));
    assert_eq!(p.cuda_driver.as_deref(), Some("13.0"));
    assert_eq!(
        p.env.get("NCCL_SOCKET_IFNAME").map(String::as_str),
        Some("ibs17")
    );
    assert_eq!(p.cuda_devices, vec![4]);
}

#[test]
fn f04_destroy_lines_give_ranks() {
    let r = load("04-nccl-destroy-with-nccl-tests-tail.log");
    assert_eq!(r.summary.processes, 1);
    let p = proc(&r, "swat1-04", 2017630);
    let ranks: Vec<(u32, Option<u32>, Option<u32>)> = p
        .ranks
        .iter()
        .map(|x| (x.rank, x.nranks, x.cuda_dev))
        .collect();
    assert_eq!(ranks, vec![(1, Some(16), Some(1)), (2, Some(16), Some(2))]);
    assert_eq!(p.ranks[1].bus_id.as_deref(), Some("48000"));
}

#[test]
fn f05_aks_ib_gdr_and_cumem() {
    let r = load("05-nccl-aks-ib-gdrdma-cumem.log");
    assert_eq!(r.summary.transport, Transport::Ib);
    assert_eq!(r.summary.gdr, Some(true));
    assert_eq!(r.summary.hosts, 2);
    let net: u64 = r
        .processes
        .iter()
        .filter_map(|p| p.channels.get("NET/IB/GDRDMA"))
        .sum();
    let cumem: u64 = r
        .processes
        .iter()
        .filter_map(|p| p.channels.get("P2P/CUMEM"))
        .sum();
    assert_eq!((net, cumem), (8, 4));
}

#[test]
fn f06_plugin_load_returned_2() {
    let r = load("06-nccl-2.18.1-plugin-load-returned-2.log");
    assert_eq!(r.summary.nccl_version.as_deref(), Some("2.18.1"));
    assert_eq!(r.summary.processes, 4);
    let p = proc(&r, "user", 852750);
    let b = p.bootstrap.as_ref().unwrap();
    assert_eq!(
        (b.interface.as_str(), b.address.as_deref()),
        ("ibs85f0", Some("192.168.1.14"))
    );
    assert_eq!(p.plugin.status, PluginStatus::NotFound);
    assert_eq!(p.cuda_driver.as_deref(), Some("12.2"));
    assert_eq!(p.nccl_version.as_deref(), Some("2.18.1"));
}

#[test]
fn f07_unusable_plugin_on_a_one_rank_job_is_not_a_fallback() {
    let r = load("07-nccl-2.19.3-gcp-socket-no-ib.log");
    assert_eq!(r.summary.transport, Transport::Socket);
    assert_eq!(r.summary.nccl_version.as_deref(), Some("2.19.3"));
    let p = proc(&r, "instance-8g-96c-2", 525781);
    assert!(p.ib_no_device);
    assert_eq!(p.plugin.status, PluginStatus::Unusable);
    assert_eq!(p.socket_interfaces[0].interface, "ens7");
    assert_eq!(p.ranks[0].rank, 0);
    assert_eq!(p.ranks[0].nranks, Some(1));
    assert_eq!(p.ranks[0].bus_id.as_deref(), Some("30"));
    // A libnccl-net.so was there but unusable (a warning of its own); the communicator has
    // one rank, so nothing crossed the network and sockets fell back from nothing. (The
    // ground truth said fallback before: corrected, a one-rank job is healthy.)
    assert!(!r.summary.socket_fallback);
    assert!(rules(&r).contains(&"FAB-NCCL-PLUGIN-UNUSABLE"));
    assert!(!r
        .findings
        .iter()
        .any(|f| f.severity == fabrik_model::Severity::Error));
}

#[test]
fn f08_torchrun_rank_prefix() {
    let r = load("08-nccl-torchrun-rank-prefix.log");
    assert_eq!(r.host_names, vec!["node0", "node2"]);
    assert_eq!(r.summary.processes, 3);
    let p = proc(&r, "node2", 22556);
    assert_eq!(p.cuda_devices, vec![1]);
    assert_eq!(p.cuda_driver.as_deref(), Some("11.7"));
    assert_eq!(
        p.bootstrap.as_ref().unwrap().address.as_deref(),
        Some("10.10.7.109")
    );
    assert_eq!(
        p.env.get("NCCL_SOCKET_IFNAME").map(String::as_str),
        Some("en,eth,em,bond")
    );
}

#[test]
fn f09_nccl_2_4_aws_ofi_rings() {
    let r = load("09-nccl-2.4-aws-ofi-ring-mpirun-prefix.log");
    assert_eq!(r.summary.transport, Transport::Ofi);
    assert_eq!(r.summary.plugin.as_deref(), Some("AWS Libfabric"));
    assert_eq!(r.summary.gdr, Some(false));
    assert_eq!(r.summary.hosts, 4);
    assert_eq!(r.summary.processes, 10);
    assert_eq!(r.summary.errors, 1);
    // `NET/OFI Couldn't open AV`: creating the libfabric address vector failed.
    assert!(rules(&r).contains(&"FAB-NCCL-OFI-LIBFABRIC"));
    let p = proc(&r, "ip-172-32-36-209", 8716);
    assert_eq!(p.channels.get("P2P/IPC"), Some(&1));
    assert_eq!(p.ranks[0].rank, 26);
    assert_eq!(proc(&r, "ip-172-32-38-1", 21471).ranks[0].rank, 7);
}

#[test]
fn f10_efa_libfabric() {
    let r = load("10-nccl-efa-ofi-libfabric.log");
    assert_eq!(r.summary.transport, Transport::Ofi);
    assert_eq!(r.summary.hosts, 2);
    assert_eq!(
        proc(&r, "8h200-3", 6310).ofi_provider.as_deref(),
        Some("efa")
    );
    assert_eq!(
        proc(&r, "8h200-2", 6831).network.as_deref(),
        Some("Libfabric")
    );
    assert!(!r.summary.socket_fallback);
}

#[test]
fn f11_cloudwatch_duplicated_prefixes() {
    let r = load("11-nccl-2.21.5-cloudwatch-efa-empty.log");
    assert_eq!(r.host_names, vec!["ip-10-36-29-253"]);
    assert_eq!(r.summary.processes, 1);
    let p = proc(&r, "ip-10-36-29-253", 79);
    assert_eq!(p.bootstrap.as_ref().unwrap().interface, "eth0");
    assert_eq!(
        p.bootstrap.as_ref().unwrap().address.as_deref(),
        Some("10.36.29.253")
    );
    assert_eq!(p.cuda_driver.as_deref(), Some("12.4"));
    assert_eq!(r.summary.nccl_version.as_deref(), Some("2.21.5"));
}

#[test]
fn f12_missing_socket_ifname() {
    let r = load("12-nccl-2.27.7-socket-ifname-missing.log");
    assert_eq!(r.host_names, vec!["twshared1016"]);
    let got = rules(&r);
    assert!(got.contains(&"FAB-NCCL-INTERNAL-ERROR"), "{got:?}");
    assert!(got.contains(&"FAB-NCCL-BOOTSTRAP-NOIF"), "{got:?}");
    assert_eq!(r.summary.errors, 2);
}

#[test]
fn f13_socket_on_lo_with_ib_disabled_is_not_a_fallback() {
    let r = load("13-nccl-socket-lo-ib-disabled.log");
    assert_eq!(r.summary.transport, Transport::Socket);
    assert_eq!(r.summary.gdr, Some(false));
    assert!(!r.summary.socket_fallback);
    let p = proc(&r, "axa", 3048391);
    assert_eq!(p.gdr_hcas.len(), 1);
    assert_eq!(p.gdr_hcas[0].hca, "lo");
    assert_eq!(p.env.get("NCCL_IB_DISABLE").map(String::as_str), Some("1"));
}

#[test]
fn f14_roce_without_host_prefix() {
    let r = load("14-nccl-2.5.7-roce-no-host-prefix.log");
    assert_eq!(r.summary.transport, Transport::Ib);
    assert_eq!(r.summary.gdr, Some(false));
    assert_eq!(r.summary.hosts, 0);
    assert_eq!(r.summary.nccl_version.as_deref(), Some("2.5.7"));
    let p = &r.processes[0];
    assert_eq!(p.ib_nics[0].link.as_deref(), Some("RoCE"));
    assert_eq!(p.bootstrap.as_ref().unwrap().interface, "br0");
    assert_eq!(p.channels.get("NET/IB"), Some(&2));
    assert_eq!(p.channels.get("P2P/IPC"), Some(&2));
    assert_eq!(p.channels.get("SHM"), Some(&1));
    assert_eq!(
        p.env.get("NCCL_IB_GID_INDEX").map(String::as_str),
        Some("3")
    );
    assert!(r.findings.iter().any(|f| f.rule == "FAB-NCCL-GDR-OFF"));
}

#[test]
fn f15_nccl_2_4_sockets_without_ib() {
    let r = load("15-nccl-2.4.7-aws-socket-no-ib.log");
    assert_eq!(r.summary.transport, Transport::Socket);
    assert!(!r.summary.socket_fallback);
    assert_eq!(r.summary.nccl_version.as_deref(), Some("2.4.7"));
    assert_eq!(r.summary.hosts, 8);
    // Eight hosts entirely on sockets: said so, as a warning with the reason.
    let f = r
        .findings
        .iter()
        .find(|f| f.rule == "FAB-NCCL-SOCKET-ONLY")
        .expect("socket-only finding");
    assert_eq!(f.severity, fabrik_model::Severity::Warning);
    assert!(f.message.contains("8-host"), "{}", f.message);
    assert!(f.message.contains("No device found"), "{}", f.message);
}

#[test]
fn f16_nccl_2_4_bootstrap_socket_lines_do_not_mean_sockets() {
    let r = load("16-nccl-2.4.7-ib-socket-bootstrap.log");
    assert_eq!(r.summary.transport, Transport::Ib);
    assert!(!r.summary.socket_fallback);
    assert_eq!(r.summary.processes, 5);
    assert_eq!(r.summary.hosts, 2);
}

#[test]
fn f17_ib_without_gdr() {
    let r = load("17-nccl-ib-no-gdr-unhandled-system-error.log");
    assert_eq!(r.summary.transport, Transport::Ib);
    assert_eq!(r.summary.gdr, Some(false));
    let p = proc(&r, "aigc-maas-instance-leader-0", 88);
    assert_eq!(
        p.env.get("NCCL_IB_GID_INDEX").map(String::as_str),
        Some("0")
    );
}

#[test]
fn f18_two_hosts_gdr_and_p2p() {
    let r = load("18-nccl-two-hosts-ib-gdrdma-p2p-ipc-read.log");
    assert_eq!(r.summary.gdr, Some(true));
    assert_eq!(r.summary.hosts, 2);
    let sum = |k: &str| -> u64 { r.processes.iter().filter_map(|p| p.channels.get(k)).sum() };
    assert_eq!(sum("NET/IB/GDRDMA"), 2);
    assert_eq!(sum("P2P/IPC"), 11);
}

#[test]
fn f19_reg_mr_failure_without_prefix() {
    let r = load("19-nccl-2.27.3-ibv-reg-mr-iova2-failed.log");
    assert_eq!(rules(&r), vec!["FAB-NCCL-IB-REGMR"]);
    assert_eq!(r.summary.errors, 1);
}

#[test]
fn f20_retry_exceeded_counted_once_with_count() {
    let r = load("20-nccl-ib-plugin-completion-error-12.log");
    let p = proc(&r, "kp-ddp-worker-0", 3468);
    assert_eq!(p.issues.len(), 1);
    assert_eq!(p.issues[0].rule, "FAB-NCCL-IB-TIMEOUT");
    assert_eq!(p.issues[0].count, 3);
    assert!(p.issues[0].first_seen.ends_with(":1"));
}

#[test]
fn f21_roce_relaxed_ordering_gdr_disabled() {
    let r = load("21-nccl-roce-ro-gdr-disabled.log");
    assert_eq!(r.summary.transport, Transport::Ib);
    assert_eq!(r.summary.gdr, Some(false));
    let p = proc(&r, "hostname1", 25668);
    assert!(p.relaxed_ordering);
    let links: Vec<&str> = p.ib_nics.iter().filter_map(|n| n.link.as_deref()).collect();
    assert_eq!(links, vec!["RoCE", "RoCE"]);
    assert!(p.gdr_hcas.iter().all(|h| !h.enabled));
    assert_eq!(p.gdr_hcas.len(), 2);
    assert_eq!(p.ranks[0].nranks, Some(16));
    assert_eq!(r.summary.nranks, Some(16));
}

#[test]
fn f22_ibext_sharp_plugin() {
    let r = load("22-nccl-2.12.9-ibext-sharp-plugin.log");
    assert_eq!(r.summary.transport, Transport::Ib);
    assert_eq!(r.summary.plugin.as_deref(), Some("IBext"));
    let p = proc(&r, "ad5b8ae33076", 28331);
    assert_eq!(p.plugin.status, PluginStatus::Loaded);
    assert_eq!(
        p.plugin.path.as_deref(),
        Some("/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so")
    );
    assert_eq!(p.ib_nics.len(), 8);
    assert!(p.ib_nics.iter().all(|n| n.sharp));
    assert_eq!(p.sharp, Some(true));
    assert_eq!(r.summary.nccl_version.as_deref(), Some("2.12.9"));
}

#[test]
fn f23_ib_hca_env_and_relaxed_ordering() {
    let r = load("23-nccl-ib-ro-hca-env-nvls-host.log");
    assert_eq!(r.summary.transport, Transport::Ib);
    assert_eq!(r.summary.processes, 7);
    let p = proc(&r, "user", 5183);
    assert_eq!(
        p.env.get("NCCL_IB_HCA").map(String::as_str),
        Some("mlx5_2:1,mlx5_0:1")
    );
    assert!(p.relaxed_ordering);
    assert_eq!(p.ib_nics.len(), 2);
}

#[test]
fn f24_zero_nvls_channels() {
    let r = load("24-nccl-h800-zero-nvls-channels.log");
    assert_eq!(r.summary.nvls, Some(false));
    assert_eq!(r.summary.transport, Transport::Unknown);
    let p = &r.processes[0];
    assert_eq!(p.channels.get("P2P/direct pointer"), Some(&2));
    assert!(p.env.get("NCCL_ALGO").is_some_and(|v| v.contains("NVLS")));
}

#[test]
fn f25_nvls_used() {
    let r = load("25-nccl-nvls-comm-heads.log");
    assert_eq!(r.summary.nvls, Some(true));
}

#[test]
fn f26_collnet_sharp() {
    let r = load("26-nccl-collnet-sharp-lock-failed.log");
    assert_eq!(r.summary.collnet, Some(true));
    // The SHARP plugin's own WARN has its class in the catalog, which wins over the word key.
    assert!(rules(&r).contains(&"FAB-NCCL-SHARP-INIT"));
    let p = proc(&r, "node", 176);
    assert_eq!(p.channels.get("COLLNET/SHARP/GDRDMA"), Some(&1));
    assert_eq!(proc(&r, "node", 174).sharp, Some(true));
}

#[test]
fn f27_socket_errors() {
    let r = load("27-nccl-2.14.3-socket-broken-pipe.log");
    let p = proc(&r, "a100-st-p4d24xlarge-22", 183006);
    // The broken pipe and the connection closed by the peer are one socket issue; the proxy's
    // `Failed to execute operation Connect ..., retcode 6` is its own report of the failed
    // operation, not a third TCP break (the ground truth counted it as one before: corrected).
    let got: Vec<&str> = p.issues.iter().map(|i| i.rule.as_str()).collect();
    assert_eq!(got, vec!["FAB-NCCL-SOCKET", "FAB-NCCL-PROXY-OP"]);
    assert_eq!(p.issues[0].count, 2);
    // The `-> 6` chain after the broken pipe names its result.
    assert_eq!(p.issues[0].result.as_deref(), Some("ncclRemoteError (6)"));
    assert_eq!(p.issues[1].result.as_deref(), Some("ncclRemoteError (6)"));
    assert_eq!(r.summary.errors, 2);
    let first = &r.findings[0];
    assert_eq!(first.rule, "FAB-NCCL-FIRST-FAILURE");
    assert!(first.message.contains("Broken pipe"), "{}", first.message);
}

#[test]
fn f28_local_protection_error() {
    let r = load("28-nccl-ib-completion-error-4-service-thread.log");
    // kolyoz1's progress thread got ncclRemoteError (`proxy.cc:878 -> 6 [Progress Thread]`):
    // a consequence of kolyoz2's local protection error, which is the first failure.
    assert_eq!(
        rules(&r),
        vec!["FAB-NCCL-REMOTE-ERROR", "FAB-NCCL-IB-PROTECTION"]
    );
    let first = &r.findings[0];
    assert_eq!(first.rule, "FAB-NCCL-FIRST-FAILURE");
    assert_eq!(first.subject, "kolyoz2:25146");
    assert!(
        first
            .message
            .contains("rank unknown, GPU 0 (kolyoz2, pid 25146)"),
        "{}",
        first.message
    );
    assert!(
        first
            .message
            .contains("1 other process(es) failed after it (FAB-NCCL-REMOTE-ERROR)"),
        "{}",
        first.message
    );
    assert_eq!(r.summary.hosts, 2);
    assert_eq!(proc(&r, "kolyoz2", 25146).issues[0].count, 1);
}

#[test]
fn f29_sockets_when_no_ib_device() {
    let r = load("29-nccl-2.18.5-deepspeed-socket-fallback.log");
    assert_eq!(r.summary.transport, Transport::Socket);
    assert!(!r.summary.socket_fallback);
    assert_eq!(r.summary.nccl_version.as_deref(), Some("2.18.5"));
    assert_eq!(r.summary.processes, 2);
}

#[test]
fn f30_tcpx_timeouts() {
    let r = load("30-nccl-gcp-tcpx-rx-ctrl-timeout.log");
    assert_eq!(r.summary.transport, Transport::GpuDirectTcpx);
    let i = &r.processes[0].issues;
    assert_eq!(i.len(), 1);
    // `rx ctrl timeout cnt 7331502, nanos 10000000585`: the receive waited 10 s for its peer's
    // control message, millions of polls without progress: a stalled connection.
    assert_eq!((i[0].rule.as_str(), i[0].count), ("FAB-NCCL-TCPX-STALL", 2));
    assert_eq!(i[0].severity, Severity::Error);
    assert_eq!(r.findings[0].rule, "FAB-NCCL-FIRST-FAILURE");
}

#[test]
fn f31_ibext_v8_channels() {
    let r = load("31-nccl-ibext-v8-channels-sharp.log");
    assert_eq!(r.summary.transport, Transport::Ib);
    assert_eq!(r.summary.plugin.as_deref(), Some("IBext_v8"));
    assert_eq!(r.summary.gdr, Some(true));
    let p = &r.processes[0];
    assert_eq!(p.channels.get("NET/IBext_v8/GDRDMA"), Some(&2));
    assert_eq!(p.ib_nics.len(), 8);
    assert!(p.relaxed_ordering);
}

#[test]
fn several_files_make_one_job() {
    let r = analyze_paths(&[
        fixture("01-nccl-2.5.6-ib-two-nodes.log"),
        fixture("16-nccl-2.4.7-ib-socket-bootstrap.log"),
    ])
    .unwrap();
    assert_eq!(r.inputs.len(), 2);
    assert_eq!(r.summary.processes, 13);
    assert!(r.findings.iter().any(|f| f.rule == "FAB-NCCL-VERSION-MIX"));
}

#[test]
fn json_report_has_the_contract_keys() {
    let r = load("21-nccl-roce-ro-gdr-disabled.log");
    let v = serde_json::to_value(&r).unwrap();
    for k in [
        "transport",
        "plugin",
        "gdr",
        "socket_fallback",
        "nccl_version",
        "hosts",
        "processes",
        "errors",
    ] {
        assert!(v["summary"].get(k).is_some(), "summary.{k}");
    }
    assert_eq!(v["summary"]["transport"], "IB");
    assert_eq!(v["schema_version"], 1);
    assert!(v["processes"].is_array());
    let back: LogReport = serde_json::from_value(v).unwrap();
    assert_eq!(back, r);
}

#[test]
fn f32_roce_ro_with_timestamped_nvml_warn() {
    let r = load("32-nccl-2.26.2-roce-ro-nvml-missing-timestamp-warn.log");
    assert_eq!(r.summary.transport, Transport::Ib);
    assert_eq!(r.summary.gdr, None);
    assert!(!r.summary.socket_fallback);
    assert_eq!(r.summary.nccl_version.as_deref(), Some("2.26.2"));
    assert_eq!(r.summary.processes, 1);
    let p = proc(&r, "gpu0301", 842624);
    assert_eq!(p.cuda_devices, vec![0, 1, 2]);
    assert_eq!(p.cuda_driver.as_deref(), Some("12.6"));
    assert_eq!(p.bootstrap.as_ref().unwrap().interface, "int0");
    assert_eq!(p.ib_nics.len(), 1);
    assert_eq!(p.ib_nics[0].link.as_deref(), Some("RoCE"));
    assert!(p.relaxed_ordering);
    assert_eq!(p.plugin.status, PluginStatus::NotFound);
    // The WARN behind a `[2025-06-12 16:57:52] ` collector timestamp is still read.
    let rules = rules(&r);
    assert!(rules.contains(&"FAB-NCCL-NVML"), "{rules:?}");
    assert!(rules.contains(&"FAB-NCCL-SYSTEM-ERROR"), "{rules:?}");
}

#[test]
fn f33_bare_version_line_in_2_19_with_four_roce_nics() {
    let r = load("33-nccl-2.19.3-roce-4nics-bare-version-torchrun.log");
    assert_eq!(r.summary.transport, Transport::Ib);
    assert_eq!(r.summary.nccl_version.as_deref(), Some("2.19.3"));
    assert_eq!(r.summary.processes, 4);
    assert_eq!(r.summary.nranks, Some(4));
    assert_eq!(r.summary.errors, 0);
    let p = proc(&r, "dsw95381-5f7b687f66-w5sjz", 87933);
    assert_eq!(p.ranks.len(), 1);
    assert_eq!((p.ranks[0].rank, p.ranks[0].nranks), (3, Some(4)));
    assert_eq!(p.ib_nics.len(), 4);
    assert!(p.ib_nics.iter().all(|n| n.link.as_deref() == Some("RoCE")));
    assert_eq!(p.plugin.status, PluginStatus::NotFound);
    assert_eq!(p.channels.get("P2P/CUMEM"), Some(&2));
    assert_eq!(p.cuda_driver.as_deref(), Some("12.4"));
}

#[test]
fn f34_srun_labels_and_the_ofi_plugin_banner() {
    let r = load("34-nccl-2.26.2-srun-label-ofi-plugin.log");
    assert_eq!(r.summary.transport, Transport::Ofi);
    assert_eq!(r.host_names, vec!["p5-dy-gpu-3", "p5-dy-gpu-4"]);
    assert_eq!(r.summary.processes, 3);
    let p = proc(&r, "p5-dy-gpu-4", 930643);
    assert_eq!(p.plugin.status, PluginStatus::Loaded);
    assert_eq!(p.plugin.name.as_deref(), Some("aws-ofi-nccl 1.13.2-aws"));
    assert!(!r.summary.socket_fallback);
    assert_eq!(
        proc(&r, "p5-dy-gpu-3", 47936).cuda_driver.as_deref(),
        Some("12.8")
    );
}

#[test]
fn f35_rank_prefix_and_mixed_link_layers() {
    let r = load("35-nccl-2.5.6-rank-prefix-mixed-ib-roce-ring.log");
    assert_eq!(r.summary.transport, Transport::Ib);
    assert_eq!(r.summary.processes, 1);
    let p = proc(&r, "crow-ib-new-nccl-256-info-19", 5330);
    assert_eq!(p.bootstrap.as_ref().unwrap().interface, "eth0");
    let links: Vec<_> = p
        .ib_nics
        .iter()
        .map(|n| n.link.as_deref().unwrap())
        .collect();
    assert_eq!(links, vec!["IB", "IB", "IB", "RoCE", "IB"]);
    assert_eq!(
        p.ranks.iter().map(|x| x.rank).collect::<Vec<_>>(),
        vec![155]
    );
    assert_eq!(p.channels.get("P2P/IPC"), Some(&3));
    assert_eq!(p.plugin.status, PluginStatus::NotFound);
}

#[test]
fn f36_nvls_and_a_cut_init_complete_line() {
    let r = load("36-nccl-2.2x-nvls-64-ranks-init-complete.log");
    assert_eq!(r.summary.processes, 5);
    assert_eq!(r.summary.nranks, Some(64));
    assert_eq!(r.summary.nvls, Some(true));
    assert_eq!(r.summary.collnet, Some(false), "0 collnet channels");
    let mut ranks: Vec<u32> = r
        .processes
        .iter()
        .flat_map(|p| p.ranks.iter().map(|x| x.rank))
        .collect();
    ranks.sort_unstable();
    assert_eq!(ranks, vec![32, 33, 34, 35, 36]);
}

#[test]
fn f37_collnet_count_that_echoes_the_coll_count_is_not_collnet() {
    let r = load("37-nccl-2.2x-rank0-prefix-collnet-count-echo.log");
    assert_eq!(r.summary.processes, 1);
    assert_eq!(r.summary.nranks, Some(24));
    assert_eq!(r.summary.nvls, Some(true));
    assert_eq!(
        r.summary.collnet, None,
        "16 collnet channels == 16 coll channels"
    );
    let p = proc(&r, "h100clust-worker-1", 497888);
    assert_eq!(p.ranks[0].bus_id.as_deref(), Some("a4000"));
}

#[test]
fn f38_intra_node_direct_pointer_only() {
    let r = load("38-nccl-2.2x-p2p-direct-pointer-pxn-gdr.log");
    assert_eq!(r.summary.transport, Transport::Unknown);
    assert_eq!(r.summary.gdr, None);
    assert!(!r.summary.socket_fallback);
    let p = proc(&r, "10-4-3-3", 97095);
    assert_eq!(p.channels.get("P2P/direct pointer"), Some(&9));
}

#[test]
fn f39_nccl_tests_header_and_dlerror_plugin_line() {
    let r = load("39-nccl-h20-nccl-tests-header-dlerror.log");
    assert_eq!(r.host_names, vec!["H20-GPU-05", "H20-GPU-06"]);
    assert_eq!(r.summary.processes, 4);
    let p = proc(&r, "H20-GPU-05", 1789224);
    assert_eq!(p.bootstrap.as_ref().unwrap().interface, "ibs1130f0");
    assert_eq!(
        p.bootstrap.as_ref().unwrap().address.as_deref(),
        Some("10.6.128.137")
    );
    assert_eq!(p.plugin.status, PluginStatus::NotFound);
    assert_eq!(p.cuda_driver.as_deref(), Some("12.4"));
}

#[test]
fn f40_ray_worker_prefix() {
    let r = load("40-nccl-2.14.3-ray-worker-prefix-indented.log");
    assert_eq!(r.summary.processes, 1);
    assert_eq!(r.summary.nccl_version.as_deref(), Some("2.14.3"));
    let p = proc(&r, "1080ti-01", 1706083);
    assert_eq!(p.bootstrap.as_ref().unwrap().interface, "eno2");
    assert_eq!(p.plugin.status, PluginStatus::NotFound);
    assert_eq!(p.cuda_driver.as_deref(), Some("11.7"));
    assert_eq!(p.cuda_runtime.as_deref(), Some("11.7"));
}

#[test]
fn f41_trace_without_host_prefix() {
    let r = load("41-nccl-2.14.3-trace-no-host-prefix-no-verbs.log");
    assert_eq!(r.summary.transport, Transport::Socket);
    assert!(!r.summary.socket_fallback);
    assert_eq!(r.summary.processes, 1);
    let p = &r.processes[0];
    assert_eq!(p.host, None);
    assert_eq!(p.plugin.status, PluginStatus::NotFound);
    assert!(rules(&r).contains(&"FAB-NCCL-NO-VERBS"));
}

#[test]
fn f42_ib_disabled_socket_list_is_the_network() {
    let r = load("42-nccl-2.26.2-ib-disabled-socket.log");
    assert_eq!(r.summary.transport, Transport::Socket);
    assert!(
        !r.summary.socket_fallback,
        "NCCL_IB_DISABLE=1 is deliberate"
    );
    let p = proc(&r, "192-222-52-239", 16629);
    assert_eq!(p.env.get("NCCL_IB_DISABLE").map(String::as_str), Some("1"));
    assert_eq!(p.socket_interfaces[0].interface, "eno1");
}

#[test]
fn f43_loaded_libfabric_plugin_names_the_transport() {
    let r = load("43-nccl-2.27.3-libfabric-v10-plugin-no-network-line.log");
    assert_eq!(r.summary.transport, Transport::Ofi);
    let p = proc(&r, "llama-3-8b-node-0-0", 188);
    assert_eq!(p.plugin.status, PluginStatus::Loaded);
    assert_eq!(p.plugin.name.as_deref(), Some("Libfabric"));
    assert_eq!(
        p.env.get("NCCL_SOCKET_IFNAME").map(String::as_str),
        Some("^docker0,lo")
    );
}

#[test]
fn f44_merged_virtual_nics() {
    let r = load("44-nccl-ibext-v8-merged-vnics-roce.log");
    assert_eq!(r.summary.transport, Transport::Ib);
    assert_eq!(r.summary.gdr, Some(false));
    let p = proc(&r, "bigo", 1884);
    let devs: Vec<_> = p.ib_nics.iter().map(|n| n.device.as_str()).collect();
    assert_eq!(devs, vec!["mlx5_2", "mlx5_3", "mlx5_0", "mlx5_1"]);
    assert_eq!(
        p.ib_nics.iter().map(|n| n.index).collect::<Vec<_>>(),
        vec![0, 1, 2, 3]
    );
    assert!(p
        .ib_nics
        .iter()
        .all(|n| n.port == Some(1) && n.link.as_deref() == Some("RoCE")));
    assert!(p.relaxed_ordering);
    assert_eq!((p.ranks[0].rank, p.ranks[0].nranks), (2, Some(3)));
    assert_eq!(p.channels.get("NET/IBext_v8"), Some(&3));
}

#[test]
fn f45_rdma_plugin_without_device_is_sockets_by_design() {
    let r = load("45-nccl-2.21.5-ibext-no-device-socket-fallback.log");
    assert_eq!(r.summary.transport, Transport::Socket);
    // The HPC-X plugin an NGC image ships (`/opt/hpcx/nccl_rdma_sharp_plugin`) loaded and
    // found no device, on a host with no IPoIB interface and no IB setting: nothing RDMA was
    // usable or asked for. (The ground truth said fallback before: corrected.)
    assert!(!r.summary.socket_fallback);
    assert!(!r
        .findings
        .iter()
        .any(|f| f.rule == "FAB-NCCL-SOCKET-FALLBACK"));
    assert_eq!(
        proc(&r, "llm207", 149).socket_reason.as_deref(),
        Some("NCCL found no RDMA device (`NET/IB : No device found`)")
    );
    let p = proc(&r, "llm207", 149);
    assert_eq!(p.plugin.status, PluginStatus::Loaded);
    assert_eq!(p.plugin.collnet.as_deref(), Some("SHARP"));
    assert!(p.ib_no_device);
    assert_eq!(p.socket_interfaces.len(), 4);
}

#[test]
fn f46_bootstrap_list_and_bond_roce_nics() {
    let r = load("46-nccl-2.7.8-bond-roce-9-nics-bootstrap-list.log");
    assert_eq!(r.summary.transport, Transport::Ib);
    assert_eq!(r.summary.nccl_version.as_deref(), Some("2.7.8"));
    let p = proc(&r, "k69a05298", 85517);
    assert_eq!(p.bootstrap.as_ref().unwrap().interface, "bond0");
    assert_eq!(p.ib_nics.len(), 9);
    assert_eq!(p.ib_nics[8].device, "mlx5_bond_0");
    assert!(p.ib_nics.iter().all(|n| n.link.as_deref() == Some("RoCE")));
    assert_eq!(p.env.get("NCCL_SHM_DISABLE").map(String::as_str), Some("1"));
}

#[test]
fn f47_old_socket_bootstrap_line_beside_ib() {
    let r = load("47-nccl-2.4-socket-bootstrap-empty-address-ib.log");
    assert_eq!(r.summary.transport, Transport::Ib);
    assert!(!r.summary.socket_fallback);
    assert_eq!(r.host_names, vec!["server1", "server3"]);
    assert_eq!(r.summary.processes, 7);
    let p = proc(&r, "server3", 15223);
    assert_eq!(p.socket_interfaces.len(), 2);
    assert_eq!(p.socket_interfaces[0].address, None);
}

#[test]
fn f48_rccl_version_block_and_a_build_path_that_is_not_ofi() {
    let r = load("48-rccl-2.26.6-vllm-ray-double-prefix-profiles-path.log");
    assert_eq!(r.summary.nccl_version.as_deref(), Some("2.26.6"));
    assert_eq!(r.summary.transport, Transport::Unknown);
    assert_eq!(r.summary.processes, 1);
    let rules = rules(&r);
    assert!(!rules.contains(&"FAB-NCCL-OFI"), "{rules:?}");
    assert!(rules.contains(&"FAB-NCCL-NO-VERBS"), "{rules:?}");
    let p = proc(&r, "corona", 927);
    assert_eq!(p.plugin.status, PluginStatus::NotFound);
}

#[test]
fn f49_rccl_without_ib_devices_uses_sockets() {
    let r = load("49-rccl-2.27.7-redacted-prefix-no-ib-socket.log");
    assert_eq!(r.summary.nccl_version.as_deref(), Some("2.27.7"));
    assert_eq!(r.summary.transport, Transport::Socket);
    assert!(!r.summary.socket_fallback);
    let p = &r.processes[0];
    assert!(p.ib_no_device);
    assert!(p.ib_nics.is_empty());
    assert_eq!(p.socket_interfaces.len(), 9);
    assert_eq!(r.summary.warnings, 1, "one WARN rule seen twice");
}

fn finding<'a>(r: &'a LogReport, rule: &str) -> Option<&'a fabrik_model::Finding> {
    r.findings.iter().find(|f| f.rule == rule)
}

#[test]
fn f147_ras_client_port_in_use_is_not_the_jobs_failure() {
    let r = load("147-nccl-2.30.4-ras-client-bind-in-use-shrink-test-roce-two-hosts.log");
    assert_eq!(r.summary.transport, Transport::Ib);
    assert_eq!(r.summary.gdr, Some(false));
    assert_eq!((r.summary.hosts, r.summary.processes), (2, 4));
    assert_eq!(r.summary.errors, 0, "{:?}", r.findings);
    assert!(finding(&r, "FAB-NCCL-FIRST-FAILURE").is_none());
    for p in &r.processes {
        let ras: Vec<_> = p
            .issues
            .iter()
            .filter(|i| i.rule == "FAB-NCCL-RAS-THREAD")
            .collect();
        assert_eq!(ras.len(), 1, "{:?}", p.issues);
        assert_eq!(ras[0].severity, Severity::Warning);
        assert!(ras[0].message.contains("Address already in use"));
    }
}

#[test]
fn f148_ras_bind_failure_on_a_healthy_socket_run() {
    let r = load("148-nccl-2.27.3-ibext-no-device-socket-ras-bind-in-use-one-host.log");
    assert_eq!(r.summary.transport, Transport::Socket);
    assert!(!r.summary.socket_fallback);
    assert_eq!(r.summary.errors, 0, "{:?}", r.findings);
    assert_eq!(rules(&r), vec!["FAB-NCCL-RAS-THREAD"]);
}

#[test]
fn f149_init_lines_alone_name_the_socket_transport() {
    let r = load("149-nccl-ipoib-host-dlvsym-no-ib-init-lines-only-socket-two-hosts.log");
    assert_eq!(r.summary.transport, Transport::Socket);
    assert!(r.summary.socket_fallback);
    assert_eq!(r.summary.gdr, Some(false));
    // `Assigned NET plugin Socket to comm` (2.27+) and `NET/Socket : GPU Direct RDMA Disabled
    // for HCA 0 'ibp24s0'` each name the network of a process that printed nothing else of it.
    assert_eq!(
        proc(&r, "jzxh330", 85605).transport,
        Some(Transport::Socket)
    );
    assert_eq!(
        proc(&r, "jzxh331", 86341).transport,
        Some(Transport::Socket)
    );
    assert!(
        proc(&r, "jzxh330", 85602).socket_fallback,
        "IPoIB interfaces: IB hardware"
    );
}

#[test]
fn f150_loopback_on_one_host_is_named() {
    let r = load("150-nccl-2.10.3-one-rank-container-bootstrap-lo-ofi-efa-only.log");
    assert_eq!(r.summary.transport, Transport::Socket);
    assert_eq!(r.summary.errors, 0);
    let f = finding(&r, "FAB-NCCL-LOOPBACK").expect("loopback named");
    assert_eq!(f.severity, Severity::Info);
    assert!(
        f.evidence[0].value.contains("bootstrap lo:127.0.0.1"),
        "{:?}",
        f.evidence
    );
    assert!(f.evidence[0]
        .value
        .contains("socket transport over lo eth0"));
    assert!(finding(&r, "FAB-NCCL-SOCKET-LOOPBACK").is_none());
    // aws-ofi-nccl in a container without EFA: the plugin does not apply here.
    let ofi = r.processes[0]
        .issues
        .iter()
        .find(|i| i.rule == "FAB-NCCL-OFI-PROVIDER")
        .expect("OFI line read");
    assert_eq!(ofi.severity, Severity::Info);
}

#[test]
fn f151_tcpx_stall_through_a_harness_logger_wrapped_over_lines() {
    let r = load("151-uccl-tcpx-harness-ncclnet-logger-rx-ctrl-timeout-wrapped.log");
    assert_eq!(r.summary.transport, Transport::GpuDirectTcpx);
    assert_eq!(r.summary.processes, 1);
    let i = &r.processes[0].issues;
    assert_eq!(i.len(), 1, "{i:?}");
    assert_eq!(i[0].rule, "FAB-NCCL-TCPX-STALL");
    assert!(i[0]
        .message
        .ends_with("rx rx ctrl timeout cnt 27848, nanos 500001359"));
    assert_eq!(i[0].first_seen.rsplit(':').next(), Some("1"));
}

#[test]
fn f152_rccl_environment_warnings_have_their_cause() {
    let r = load("152-rccl-2.30.4-therock-xgmi-4-gpus-iommu-pt-amd-smi-socket.log");
    assert_eq!(r.summary.nccl_version.as_deref(), Some("2.30.4"));
    assert_eq!(r.summary.transport, Transport::Socket);
    let p = &r.processes[0];
    let iommu = p
        .issues
        .iter()
        .find(|i| i.rule == "FAB-NCCL-RCCL-IOMMU")
        .expect("iommu=pt warning classified");
    assert_eq!((iommu.severity, iommu.count), (Severity::Warning, 5));
    let notice = p
        .issues
        .iter()
        .find(|i| i.rule == "FAB-NCCL-RCCL-NOTICE")
        .expect("AMD SMI notice");
    assert_eq!(notice.severity, Severity::Info);
    assert!(!rules(&r).contains(&"FAB-NCCL-WARN"), "{:?}", rules(&r));
}
