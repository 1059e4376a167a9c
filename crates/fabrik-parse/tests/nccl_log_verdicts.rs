//! Verdicts on logs written line by line from NCCL's own format strings (NVIDIA/nccl src/ at
//! the tags named in each test), for the mistakes a new user's real logs exposed: false
//! alarms on healthy hosts, silence, the wrong cause, `Unknown` where a line names the
//! transport.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use fabrik_model::Severity;
use fabrik_parse::nccl_log::{analyze_str, LogReport, Transport};

fn has_rule(r: &LogReport, rule: &str) -> bool {
    r.findings.iter().any(|f| f.rule == rule)
}

fn errors(r: &LogReport) -> Vec<&str> {
    r.findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .map(|f| f.rule.as_str())
        .collect()
}

/// NCCL 2.27/2.28 on a host without RDMA: plugin/plugin_open.cc `%s/Plugin: Could not
/// find:%s. %s`, net_ib.cc `NET/IB : No device found.`, plugin/net.cc `Failed to initialize
/// NET plugin %s` (its `fail:` path when `devices()` returns 0), net_socket.cc `NET/Socket :
/// Using%s`, `Initialized NET plugin %s`, init.cc `Using network %s`.
fn no_rdma_host(host: &str, pid: u32, addr: &str, rank: u32, nranks: u32) -> String {
    format!(
        "{host}:{pid}:{pid} [0] NCCL INFO NCCL version 2.27.7+cuda12.9\n\
         {host}:{pid}:{pid} [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal net plugin.\n\
         {host}:{pid}:{pid} [0] NCCL INFO NET/IB : No device found.\n\
         {host}:{pid}:{pid} [0] NCCL INFO Failed to initialize NET plugin IB\n\
         {host}:{pid}:{pid} [0] NCCL INFO NET/Socket : Using [0]eth0:{addr}<0>\n\
         {host}:{pid}:{pid} [0] NCCL INFO Initialized NET plugin Socket\n\
         {host}:{pid}:{pid} [0] NCCL INFO Assigned NET plugin Socket to comm\n\
         {host}:{pid}:{pid} [0] NCCL INFO Using network Socket\n\
         {host}:{pid}:{pid} [0] NCCL INFO ncclCommInitRank comm 0x55d0c8e0 rank {rank} nranks {nranks} cudaDev 0 nvmlDev 0 busId 1000 commId 0x1b2c3d4e5f60718 - Init START\n"
    )
}

#[test]
fn no_rdma_device_on_2_27_is_the_normal_path_not_a_fallback() {
    let r = analyze_str("one.log", &no_rdma_host("vm-1", 4242, "10.0.0.5", 0, 1));
    assert_eq!(r.summary.transport, Transport::Socket);
    assert!(!r.summary.socket_fallback);
    assert!(errors(&r).is_empty(), "{:?}", r.findings);
    assert!(!r.summary.text.contains("FELL BACK"));
    // Two ranks on one host: still healthy, and no multi-host warning.
    let log = no_rdma_host("vm-1", 4242, "10.0.0.5", 0, 2)
        + &no_rdma_host("vm-1", 4243, "10.0.0.5", 1, 2);
    let r = analyze_str("two.log", &log);
    assert!(!r.summary.socket_fallback);
    assert!(errors(&r).is_empty());
    assert!(!has_rule(&r, "FAB-NCCL-SOCKET-ONLY"));
}

#[test]
fn multi_host_socket_job_is_a_warning_with_its_reason() {
    let log = no_rdma_host("node-a", 100, "10.0.0.1", 0, 2)
        + &no_rdma_host("node-b", 200, "10.0.0.2", 1, 2);
    let r = analyze_str("job.log", &log);
    assert_eq!(r.summary.hosts, 2);
    assert!(!r.summary.socket_fallback);
    assert!(errors(&r).is_empty());
    let f = r
        .findings
        .iter()
        .find(|f| f.rule == "FAB-NCCL-SOCKET-ONLY")
        .unwrap();
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.message.contains("2-host"), "{}", f.message);
    assert!(f.message.contains("No device found"), "{}", f.message);
    assert_eq!(f.evidence.len(), 2);
}

#[test]
fn ib_disabled_multi_host_says_why() {
    let log = "a:1:1 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\n\
               a:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n\
               a:1:1 [0] NCCL INFO Using network Socket\n\
               b:2:2 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\n\
               b:2:2 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.2<0>\n\
               b:2:2 [0] NCCL INFO Using network Socket\n";
    let r = analyze_str("x.log", log);
    let f = r
        .findings
        .iter()
        .find(|f| f.rule == "FAB-NCCL-SOCKET-ONLY")
        .unwrap();
    assert!(f.message.contains("NCCL_IB_DISABLE=1"), "{}", f.message);
}

#[test]
fn loopback_across_hosts_is_an_error_but_not_on_one_host() {
    let lo = |h: &str, pid: u32| {
        format!(
            "{h}:{pid}:{pid} [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to lo\n\
             {h}:{pid}:{pid} [0] NCCL INFO NET/IB : No device found.\n\
             {h}:{pid}:{pid} [0] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0>\n\
             {h}:{pid}:{pid} [0] NCCL INFO Using network Socket\n"
        )
    };
    let r = analyze_str("lo.log", &(lo("n1", 10) + &lo("n2", 20)));
    let f = r
        .findings
        .iter()
        .find(|f| f.rule == "FAB-NCCL-SOCKET-LOOPBACK")
        .unwrap();
    assert_eq!(f.severity, Severity::Error);
    assert!(f.evidence[0].value.contains("lo:127.0.0.1"));
    let r = analyze_str("lo1.log", &(lo("n1", 10) + &lo("n1", 11)));
    assert!(!has_rule(&r, "FAB-NCCL-SOCKET-LOOPBACK"));
    assert!(errors(&r).is_empty());
}

/// The shape of https://github.com/NVIDIA/nccl/issues/952: the HPC-X plugin of an NGC image,
/// bootstrap on the IPoIB interface `ibp12s0`, and `NET/IB : No device found.`: the host has an
/// InfiniBand HCA that the container cannot see, so sockets are a real fallback.
#[test]
fn ipoib_interface_with_no_device_is_a_fallback() {
    let log = "node:924:924 [5] NCCL INFO Bootstrap : Using ibp12s0:10.149.0.32<0>\n\
               node:924:1152 [5] NCCL INFO Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so\n\
               node:924:1152 [5] NCCL INFO P2P plugin IBext\n\
               node:924:1152 [5] NCCL INFO NET/IB : No device found.\n\
               node:924:1152 [5] NCCL INFO NET/Socket : Using [0]ibp12s0:10.149.0.32<0>\n\
               node:924:1152 [5] NCCL INFO Using network Socket\n";
    let r = analyze_str("952.log", log);
    assert_eq!(r.summary.transport, Transport::Socket);
    assert!(r.summary.socket_fallback);
    assert!(has_rule(&r, "FAB-NCCL-SOCKET-FALLBACK"));
}

#[test]
fn ib_settings_with_sockets_is_a_fallback() {
    let log = "h:1:1 [0] NCCL INFO NCCL_IB_HCA set to mlx5_0\n\
               h:1:1 [0] NCCL INFO NET/IB : No device found.\n\
               h:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n\
               h:1:1 [0] NCCL INFO Using network Socket\n";
    let r = analyze_str("hca.log", log);
    assert!(r.summary.socket_fallback);
}

#[test]
fn a_file_without_nccl_lines_says_how_to_get_them() {
    let r = analyze_str("train.log", "epoch 1 loss 0.5\nepoch 2 loss 0.4\n");
    let f = r
        .findings
        .iter()
        .find(|f| f.rule == "FAB-NCCL-NO-LINES")
        .unwrap();
    assert_eq!(f.severity, Severity::Info);
    assert!(f.fix.contains("NCCL_DEBUG=INFO"));
    assert!(f.fix.contains("NCCL_DEBUG_SUBSYS=INIT,NET"));
    let r = analyze_str("nccl.log", "h:1:1 [0] NCCL INFO Using network IB\n");
    assert!(!has_rule(&r, "FAB-NCCL-NO-LINES"));
}
