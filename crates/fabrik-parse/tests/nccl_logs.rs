//! Every NCCL log fixture against the ground truth in fixtures/nccl-logs/README.md.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

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
fn f07_socket_after_unusable_plugin_is_a_fallback() {
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
    // A libnccl-net.so was there but unusable, and sockets carried the traffic.
    assert!(r.summary.socket_fallback);
    assert!(rules(&r).contains(&"FAB-NCCL-PLUGIN-UNUSABLE"));
    assert!(r
        .findings
        .iter()
        .any(|f| f.rule == "FAB-NCCL-SOCKET-FALLBACK"));
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
    assert!(rules(&r).contains(&"FAB-NCCL-OFI"));
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
    assert!(rules(&r).contains(&"FAB-NCCL-SHARP"));
    let p = proc(&r, "node", 176);
    assert_eq!(p.channels.get("COLLNET/SHARP/GDRDMA"), Some(&1));
    assert_eq!(proc(&r, "node", 174).sharp, Some(true));
}

#[test]
fn f27_socket_errors() {
    let r = load("27-nccl-2.14.3-socket-broken-pipe.log");
    let p = proc(&r, "a100-st-p4d24xlarge-22", 183006);
    assert_eq!(p.issues.len(), 1);
    assert_eq!(p.issues[0].rule, "FAB-NCCL-SOCKET");
    assert_eq!(p.issues[0].count, 3);
    assert_eq!(r.summary.errors, 1);
}

#[test]
fn f28_local_protection_error() {
    let r = load("28-nccl-ib-completion-error-4-service-thread.log");
    assert_eq!(rules(&r), vec!["FAB-NCCL-IB-PROTECTION"]);
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
    assert_eq!((i[0].rule.as_str(), i[0].count), ("FAB-NCCL-TCPX", 2));
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
