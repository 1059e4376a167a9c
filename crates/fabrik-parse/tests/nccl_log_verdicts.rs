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
    assert_eq!(r.summary.errors, 1);
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

fn rules_of<'a>(r: &'a LogReport, host: &str) -> Vec<&'a str> {
    r.processes
        .iter()
        .filter(|p| p.host.as_deref() == Some(host))
        .flat_map(|p| p.issues.iter().map(|i| i.rule.as_str()))
        .collect()
}

/// NCCL 2.28: ibvwrap.cc `Call to ibv_modify_qp failed with %d %s, %s` (qpMsg `on dev %s:%d,
/// curr state %s, next state %s, local GID index %d, local GID %s, remote GID %s`), the
/// NCCLCHECK trace `%s:%d -> %d`, and proxy.cc `[Proxy Service %d] Failed to execute operation
/// %s from rank %d, retcode %d`. Rank 1 (node-b) fails first, but node-a's lines come first.
const QP_FAILURE: &str = "\
node-a:100:100 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 commId 0xabc - Init START
node-b:200:200 [0] NCCL INFO ncclCommInitRank comm 0x2 rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 commId 0xabc - Init START
node-a:100:130 [0] NCCL INFO transport/net.cc:1120 -> 6
node-a:100:130 [0] NCCL INFO proxy.cc:1500 -> 6
node-b:200:230 [0] misc/ibvwrap.cc:307 NCCL WARN Call to ibv_modify_qp failed with 110 Connection timed out, on dev mlx5_0:1, curr state INIT, next state RTR, local GID index 3, local GID ::ffff:10.0.0.2, remote GID ::ffff:10.0.9.1
node-b:200:230 [0] NCCL INFO transport/net_ib.cc:1105 -> 2
node-b:200:230 [0] NCCL INFO transport/net_ib.cc:1290 -> 2
node-b:200:230 [0] NCCL INFO transport/net.cc:708 -> 3
node-b:200:230 [0] NCCL INFO proxy.cc:1545 -> 3
node-b:200:230 [0] proxy.cc:1734 NCCL WARN [Proxy Service 1] Failed to execute operation Connect from rank 1, retcode 3
node-a:100:100 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1b000 - Abort COMPLETE
[rank0]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank 0] Process group watchdog thread terminated with exception: NCCL error: remote process exited or there was a network error, NCCL version 2.28.9
";

#[test]
fn rdma_setup_failure_is_the_root_cause_not_a_timeout_or_tcp_break() {
    let r = analyze_str("qp.log", QP_FAILURE);
    let b = rules_of(&r, "node-b");
    assert_eq!(b, vec!["FAB-NCCL-IB-SETUP", "FAB-NCCL-PROXY-OP"]);
    assert!(!b.contains(&"FAB-NCCL-TIMEOUT") && !b.contains(&"FAB-NCCL-SOCKET"));
    let pb = r
        .processes
        .iter()
        .find(|p| p.host.as_deref() == Some("node-b"))
        .unwrap();
    // The modify_qp WARN returned ncclSystemError; the proxy op reports ncclInternalError.
    assert_eq!(pb.issues[0].result.as_deref(), Some("ncclSystemError (2)"));
    assert_eq!(
        pb.issues[1].result.as_deref(),
        Some("ncclInternalError (3)")
    );
    // node-a only saw consequences: a remote error through its proxy, then the watchdog.
    assert_eq!(rules_of(&r, "node-a"), vec!["FAB-NCCL-REMOTE-ERROR"]);
    let first = &r.findings[0];
    assert_eq!(first.rule, "FAB-NCCL-FIRST-FAILURE");
    assert_eq!(first.subject, "node-b:200");
    assert!(
        first.message.contains("rank 1 (GPU 0) (node-b, pid 200)"),
        "{}",
        first.message
    );
    assert!(first.message.contains("ibv_modify_qp"), "{}", first.message);
    assert!(
        first.message.contains("FAB-NCCL-REMOTE-ERROR"),
        "{}",
        first.message
    );
    // IB was the network, though no `Using network` line was printed.
    assert_eq!(r.summary.transport, Transport::Ib);
}

#[test]
fn result_codes_are_named_wherever_they_appear() {
    use fabrik_parse::nccl_log::{result_code, result_name};
    assert_eq!(
        result_code(
            b"[Proxy Service 9] Failed to execute operation Connect from rank 9, retcode 3"
        ),
        Some(3)
    );
    assert_eq!(result_code(b"[Service thread] Error encountered progressing operation=Connect, res=3, closing connection"), Some(3));
    assert_eq!(result_code(b"group.cc:75 -> 2 [Async thread]"), Some(2));
    assert_eq!(result_name(3), Some("ncclInternalError"));
    // proxy.cc's service-thread form is a proxy operation failure with its code, not a TCP break.
    let r = analyze_str(
        "svc.log",
        "h:1:2 [4] proxy.cc:1448 NCCL WARN [Service thread] Error encountered progressing operation=Connect, res=3, closing connection\n",
    );
    let i = &r.processes[0].issues[0];
    assert_eq!(i.rule, "FAB-NCCL-PROXY-OP");
    assert_eq!(i.result.as_deref(), Some("ncclInternalError (3)"));
    assert_eq!(result_name(6), Some("ncclRemoteError"));
    assert_eq!(result_name(8), None);
    // init.cc ncclGetErrorString text in a program's error line.
    let r = analyze_str(
        "torch.log",
        "h:1:1 [0] NCCL INFO Using network IB\n\
         RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:219, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.1\n",
    );
    let i = &r.processes[0].issues[0];
    assert_eq!(i.rule, "FAB-NCCL-SYSTEM-ERROR");
    assert_eq!(i.result.as_deref(), Some("ncclSystemError (2)"));
    let r = analyze_str(
        "usage.log",
        "h:1:1 [0] NCCL INFO Using network IB\n\
         torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.20.5\n",
    );
    assert_eq!(r.processes[0].issues[0].rule, "FAB-NCCL-INVALID-USAGE");
    assert_eq!(
        r.processes[0].issues[0].result.as_deref(),
        Some("ncclInvalidUsage (5)")
    );
}

#[test]
fn a_trace_that_stays_inside_plugin_loading_is_no_failure() {
    // Fixture 13's `net.cc:79 -> 3`: NCCL tried a disabled plugin and moved on.
    let r = analyze_str(
        "x.log",
        "axa:1:2 [0] NCCL INFO NCCL_IBEXT_DISABLE set by environment to 1.\n\
         axa:1:2 [0] NCCL INFO net.cc:79 -> 3\n\
         axa:1:2 [0] NCCL INFO Using network Socket\n",
    );
    assert!(r.processes[0].issues.is_empty());
    // A trace without a WARN that reaches init.cc is a failure of its own, named by its code.
    let r = analyze_str(
        "y.log",
        "h:1:2 [0] NCCL INFO graph/topo.cc:700 -> 3\n\
         h:1:2 [0] NCCL INFO init.cc:1100 -> 3\n\
         h:1:2 [0] NCCL INFO group.cc:75 -> 3 [Async thread]\n",
    );
    let i = &r.processes[0].issues[0];
    assert_eq!(i.rule, "FAB-NCCL-RESULT");
    assert_eq!(i.message, "graph/topo.cc:700 -> 3");
    assert_eq!(i.result.as_deref(), Some("ncclInternalError (3)"));
}

#[test]
fn completion_status_of_2_28_is_read_by_its_code() {
    // net_ib.cc 2.28: `NET/IB: Got completion from peer %s with status=%s(%d) opcode=%s(%d) ...`
    let r = analyze_str(
        "c.log",
        "h:1:2 [3] transport/net_ib.cc:2543 NCCL WARN NET/IB: Got completion from peer 10.0.0.7<41234> with status=transport retry counter exceeded(12) opcode=RDMA_WRITE(1) reqSize=524288 vendor_err=129 req_type=Send localGid ::ffff:10.0.0.6 remoteGids ::ffff:10.0.0.7 hca mlx5_3\n",
    );
    assert_eq!(r.processes[0].issues[0].rule, "FAB-NCCL-IB-TIMEOUT");
    assert_eq!(r.summary.transport, Transport::Ib);
}

#[test]
fn plugin_names_and_lines_name_the_transport() {
    // nccl-rdma-sharp-plugins v8: `P2P plugin v8 IBext_v8`; older: `Loaded net plugin NCCL RDMA
    // Plugin (v4)`. Both are the IB transport.
    let r = analyze_str(
        "p.log",
        "w0:5663:5712 [0] NCCL INFO P2P plugin v8 IBext_v8\n\
         w0:5663:5712 [0] NCCL INFO Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so\n",
    );
    assert_eq!(r.processes[0].plugin.name.as_deref(), Some("IBext_v8"));
    assert_eq!(r.summary.transport, Transport::Ib);
    let r = analyze_str(
        "q.log",
        "q:1:1 [1] NCCL INFO NET/Plugin: Loaded net plugin NCCL RDMA Plugin (v4)\n",
    );
    assert_eq!(r.summary.transport, Transport::Ib);
    // Google's FastSocket plugin without a `Using network` line is sockets by design.
    let r = analyze_str(
        "fs.log",
        "n:1:1 [0] NCCL INFO NET/Plugin: Loaded net plugin FastSocket (v6)\n\
         n:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/FastSocket/0\n",
    );
    assert_eq!(r.summary.transport, Transport::Socket);
    assert!(!r.summary.socket_fallback);
    // aws-ofi-nccl turning GDR off says so at INFO level.
    let r = analyze_str(
        "ofi.log",
        "g:1:1 [0] NCCL INFO NET/OFI Could not disable CUDA API usage for HMEM, disabling GDR\n\
         g:1:1 [0] NCCL INFO NET/OFI Need to force simple protocol: GDR not supported\n",
    );
    assert_eq!(r.summary.transport, Transport::Ofi);
    assert_eq!(r.summary.gdr, Some(false));
}

#[test]
fn an_unclassified_warn_followed_by_a_propagated_chain_is_an_error() {
    // NCCL 2.28+'s allocator WARN `No allocation found at offset=0x%lx`, which no cause class
    // claims, then `-> 3` up to init: the chain makes it the failure.
    let r = analyze_str(
        "b.log",
        "0: n1:7:7 [0] allocator.cc:77 NCCL WARN No allocation found at offset=0x40\n\
         0: n1:7:7 [0] NCCL INFO allocator.cc:502 -> 3\n\
         0: n1:7:7 [0] NCCL INFO init.cc:1100 -> 3\n",
    );
    let p = &r.processes[0];
    assert!(p.issues.iter().any(|i| i.severity == Severity::Error
        && i.rule == "FAB-NCCL-RESULT"
        && i.message.contains("No allocation found")
        && i.result.as_deref() == Some("ncclInternalError (3)")));
    assert!(errors(&r).contains(&"FAB-NCCL-FIRST-FAILURE"));
    // A classified WARN keeps its class and carries the chain's result.
    let r = analyze_str(
        "b.log",
        "0: n1:7:7 [0] bootstrap.cc:77 NCCL WARN Message truncated : received 256 bytes instead of 4\n\
         0: n1:7:7 [0] NCCL INFO bootstrap.cc:502 -> 3\n\
         0: n1:7:7 [0] NCCL INFO init.cc:1100 -> 3\n",
    );
    assert!(r.processes[0]
        .issues
        .iter()
        .any(|i| i.severity == Severity::Error
            && i.rule == "FAB-NCCL-BOOTSTRAP-MISMATCH"
            && i.result.as_deref() == Some("ncclInternalError (3)")));
}

#[test]
fn unreachable_connect_retries_and_nccl_tests_cuda_failures() {
    let r = analyze_str(
        "c.log",
        "h:1:1 [0] NCCL INFO socketPollConnect: connect to 172.17.194.153<43893> returned No route to host, retrying (1/34) after sleep for 100 msec\n\
         h:1:1 [0] NCCL INFO Call to connect returned Connection refused, retrying\n",
    );
    let got: Vec<&str> = r.processes[0]
        .issues
        .iter()
        .map(|i| i.rule.as_str())
        .collect();
    assert_eq!(got, vec!["FAB-NCCL-IFNAME-UNREACHABLE"]);
    let r = analyze_str(
        "t.log",
        "node:1:1 [0] NCCL INFO Using network Socket\n\
         node: Test CUDA failure common.cu:297 'an illegal memory access was encountered'\n",
    );
    assert_eq!(r.processes[0].issues[0].rule, "FAB-NCCL-CUDA");
}

/// NCCL 2.2 printed no `NCCL` word and named its network `Using internal Network %s`; 2.3 listed
/// one IB NIC per line (`NET/IB: [%d] %s:%d/%s`).
#[test]
fn nccl_2_2_and_2_3_formats() {
    let r = analyze_str(
        "old.log",
        "gpu-1:18553:18553 [0] INFO NET : Using interface enp3s0:192.168.144.103<0>\n\
         gpu-1:18553:18553 [0] INFO Using internal Network Socket\n\
         NCCL version 2.2.13+cuda9.0\n\
         gpu-1:18553:18612 [0] INFO comm 0x7fa42c00a3b0 rank 0 nranks 2\n\
         \n\
         gpu-1:18553:18611 [0] include/socket.h:360 WARN Call to connect failed : Connection timed out\n\
         gpu-1:18553:18611 [0] INFO transport/net_socket.cu:118 -> 2\n\
         gpu-1:18553:18611 [0] INFO bootstrap.cu:119 -> 2 [bthread]\n",
    );
    assert_eq!(r.summary.transport, Transport::Socket);
    assert_eq!(r.summary.hosts, 1);
    assert_eq!(r.summary.nccl_version.as_deref(), Some("2.2.13"));
    let i = &r.processes[0].issues[0];
    assert_eq!(i.severity, Severity::Error);
    assert_eq!(i.result.as_deref(), Some("ncclSystemError (2)"));
    let r = analyze_str(
        "dgx1.log",
        "dgx1-1:13617:13617 [0] NCCL INFO NET/IB: [0] mlx5_0:1/IB \n\
         dgx1-1:13617:13617 [0] NCCL INFO NET/IB: [1] mlx5_2:1/IB \n",
    );
    assert_eq!(r.summary.transport, Transport::Ib);
    assert_eq!(r.processes[0].ib_nics.len(), 2);
    assert_eq!(r.processes[0].ib_nics[1].device, "mlx5_2");
}

/// Decorations seen in real pastes and collectors, each in front of one NCCL line of the same
/// process: the line must land on host `gpu-node-7`, pid 4242.
#[test]
fn decorations_in_front_of_nccl_lines() {
    let base = "gpu-node-7:4242:4300 [3] NCCL INFO Using network IB";
    let decorated = [
        format!("> {base}"),
        format!("> > {base}"),
        format!("`{base}`"),
        format!("```{base}"),
        format!("2025-06-01T10:00:00.123456789Z {base}"),
        format!("2025-06-01 10:00:00,123 {base}"),
        format!("[2025-06-01 10:00:00] {base}"),
        format!("Jun  1 10:00:00 gpu-node-7 python[4242]: {base}"),
        format!("0: {base}"),
        format!("[1,0]<stdout>:{base}"),
        format!("[default0]:{base}"),
        format!("[rank3]: {base}"),
        format!("(RayWorkerWrapper pid=4242, ip=10.0.0.7) {base}"),
        format!("\u{1b}[36m(RayWorkerWrapper pid=4242)\u{1b}[0m {base}"),
        format!("worker-3 | {base}"),
    ];
    for line in &decorated {
        let r = analyze_str("d.log", line);
        assert_eq!(r.processes.len(), 1, "{line}");
        let p = &r.processes[0];
        assert_eq!(
            (p.host.as_deref(), p.pid),
            (Some("gpu-node-7"), Some(4242)),
            "{line}"
        );
        assert_eq!(p.network.as_deref(), Some("IB"), "{line}");
    }
    // Host names stripped by the paster: one process without a host, transport still read.
    let r = analyze_str(
        "nohost.log",
        " [3] NCCL INFO Channel 00/0 : 0[3] -> 8[3] [send] via NET/IB/0/GDRDMA",
    );
    assert_eq!(r.summary.transport, Transport::Ib);
    assert_eq!(r.summary.gdr, Some(true));
}

/// The shape of fixture 82 of the corpus: NCCL lines whose prefix a collector stripped, then
/// WARN lines of the same (only) process with `[ts] host:pid:tid`; and program lines before the
/// first NCCL line (fixture 101). One process, not two.
#[test]
fn stripped_and_prefixed_lines_of_one_process_are_one_process() {
    let r = analyze_str(
        "82.log",
        "NCCL INFO NCCL version 2.28.3+cuda12.9\n\
         NCCL INFO NET/Plugin: Loaded net plugin AWS Libfabric (v11)\n\
         [2026-09-17 04:02:30] x3002c0s31b0n0:3333526:3333526 [0] plugin/net.cc:306 NCCL WARN Failed to initialize any NET plugin\n",
    );
    assert_eq!(r.summary.processes, 1);
    let p = &r.processes[0];
    assert_eq!(p.host.as_deref(), Some("x3002c0s31b0n0"));
    assert_eq!(p.nccl_version.as_deref(), Some("2.28.3"));
    let r = analyze_str(
        "101.log",
        "w1: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1197, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.3\n\
         w1: w1:2921:4504 [7] NCCL INFO Setting affinity for GPU 7 to ffff\n",
    );
    assert_eq!(r.summary.processes, 1);
    assert_eq!(r.processes[0].issues[0].rule, "FAB-NCCL-CUDA");
    // Two named processes and stripped lines: the stripped ones stay apart.
    let r = analyze_str(
        "two.log",
        "a:1:1 [0] NCCL INFO Using network IB\nb:2:2 [0] NCCL INFO Using network IB\nNCCL INFO Using network IB\n",
    );
    assert_eq!(r.summary.processes, 3);
}

#[test]
fn a_program_json_document_is_not_buffered_as_ras() {
    let r = analyze_str("j.log", "{\n  \"loss\": 0.5,\n  \"step\": 10\n}\n");
    assert!(r.ras.is_none());
}

/// misc/socket.cc `ncclSocketInit: connecting to address %s with family %d is neither AF_INET(%d)
/// nor AF_INET6(%d)`: a missing interface only when NCCL_SOCKET_IFNAME names one (fixture 12);
/// otherwise garbage connection info, as in the corpus's fixture 80 (ungrouped send/recv).
#[test]
fn address_family_warning_depends_on_the_interface_setting() {
    let w = "h:1:2 [0] misc/socket.cc:537 NCCL WARN ncclSocketInit: connecting to address  with family 1 is neither AF_INET(2) nor AF_INET6(10)\n";
    let r = analyze_str("a.log", w);
    assert_eq!(r.processes[0].issues[0].rule, "FAB-NCCL-ADDRESS-FAMILY");
    let r = analyze_str(
        "b.log",
        &format!("h:1:2 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth2\n{w}"),
    );
    assert_eq!(r.processes[0].issues[0].rule, "FAB-NCCL-BOOTSTRAP-NOIF");
}

/// A process killed by a signal: UCX (`[host:pid:tid:thread] Caught signal 11 (Segmentation fault:
/// ...)`, as in the corpus's fixture 120) and Open MPI (`[host:pid] *** Process received signal
/// ***`).
#[test]
fn crashes_on_a_signal_are_errors() {
    let r = analyze_str(
        "ucx.log",
        "h:288505:288505 [0] NCCL INFO Using network IB\n\
         [h:288505:0:296459] Caught signal 11 (Segmentation fault: address not mapped to object at address 0x48)\n\
         ==== backtrace (tid: 296459) ====\n",
    );
    assert_eq!(r.processes[0].issues[0].rule, "FAB-NCCL-CRASH");
    assert_eq!(r.processes[0].issues[0].severity, Severity::Error);
    let r = analyze_str(
        "ompi.log",
        "h:1:1 [0] NCCL INFO Using network IB\n[rtptest1621:405884] *** Process received signal ***\n",
    );
    assert_eq!(r.processes[0].issues[0].rule, "FAB-NCCL-CRASH");
    // The word alone in program output is nothing.
    let r = analyze_str(
        "ok.log",
        "h:1:1 [0] NCCL INFO Using network IB\ninstalled a signal handler for SIGTERM\n",
    );
    assert!(r.processes[0].issues.is_empty());
}

/// One process driving two GPUs (ranks 4 and 5): the failing line's `[1]` names rank 5.
#[test]
fn the_failing_gpu_picks_the_rank_of_a_multi_gpu_process() {
    let r = analyze_str(
        "mg.log",
        "h:9:9 [0] NCCL INFO comm 0xa rank 4 nranks 8 cudaDev 0 busId 1b000 - Init COMPLETE\n\
         h:9:9 [1] NCCL INFO comm 0xb rank 5 nranks 8 cudaDev 1 busId 1c000 - Init COMPLETE\n\
         h:9:30 [1] misc/ibvwrap.cc:140 NCCL WARN Call to ibv_create_qp failed\n",
    );
    let first = &r.findings[0];
    assert_eq!(first.rule, "FAB-NCCL-FIRST-FAILURE");
    assert!(
        first.message.contains("rank 5 (GPU 1) (h, pid 9)"),
        "{}",
        first.message
    );
}

/// The rule of the first issue of the first process of a one-file log.
fn first_rule(log: &str) -> String {
    let r = analyze_str("t.log", log);
    r.processes[0].issues[0].rule.clone()
}

/// NVLS set-up failures carry their own class, not the CUDA one: transport/nvls.cc's driver calls
/// fail through CUCHECK (src/include/cudawrap.h, v2.28.9-1: `Cuda failure %d '%s'`), and 2.27+
/// prints `Failed to bind NVLink SHARP (NVLS) Multicast memory of size %ld : CUDA error %d '%s'.`
/// (transport/nvls.cc). The lines follow NVIDIA/nccl#1338 (2.21.5) and pytorch/pytorch#177472
/// (2.29.3, the `Last error:` detail); a `Cuda failure` printed by init.cc stays a CUDA failure.
#[test]
fn nvls_failures_are_nvls_not_cuda() {
    let r = analyze_str(
        "nvls.log",
        "node2:242431:242475 [1] NCCL INFO NVLS multicast support is available on dev 1\n\
         node2:242431:242475 [1] transport/nvls.cc:158 NCCL WARN Cuda failure 1 'invalid argument'\n\
         node2:242431:242475 [1] NCCL INFO transport/nvls.cc:330 -> 1\n\
         node2:242431:242475 [1] NCCL INFO init.cc:1277 -> 1\n\
         node2:242431:242475 [1] NCCL INFO group.cc:64 -> 1 [Async thread]\n",
    );
    assert_eq!(r.processes[0].issues[0].rule, "FAB-NCCL-NVLS");
    assert!(has_rule(&r, "FAB-NCCL-NVLS"));
    assert!(!has_rule(&r, "FAB-NCCL-CUDA"));
    // Newest prefix: a timestamp and the function after the source location.
    assert_eq!(
        first_rule("[2025-04-06 22:31:56] ccw-gpu-128:3485254:3487188 [0] transport/nvls.cc:598 (ncclNvlsBufferSetup) NCCL WARN Cuda failure 1 'invalid argument'\n"),
        "FAB-NCCL-NVLS"
    );
    // The bind warning, with a CUDA error string that says "failed".
    assert_eq!(
        first_rule("gpu7:4242:4300 [5] transport/nvls.cc:376 NCCL WARN Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 901 'operation failed due to a previous error during capture'.\n"),
        "FAB-NCCL-NVLS"
    );
    // PyTorch's report of the same failure: the `Last error:` detail names NVLS.
    let r = analyze_str(
        "torch.log",
        "gpu7:4242:4300 [5] NCCL INFO Using network IB\n\
         torch.distributed.DistBackendError: NCCL error in: /var/lib/jenkins/workspace/torch/csrc/distributed/c10d/NCCLUtils.cpp:93, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.29.3\n\
         ncclUnhandledCudaError: Call to CUDA function failed.\n\
         Last error:\n\
         Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 401 'the operation cannot be performed in the present state'.\n",
    );
    let rules: Vec<&str> = r.processes[0]
        .issues
        .iter()
        .map(|i| i.rule.as_str())
        .collect();
    assert!(rules.contains(&"FAB-NCCL-NVLS"), "{rules:?}");
    // The same block with no `Last error:` line (NVIDIA/nccl#2077, fixture 89): the WARN text
    // follows the line naming the ncclResult; ordinary output there adds nothing.
    let block = |detail: &str| {
        analyze_str(
            "torch2.log",
            &format!(
                "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:93, unhandled cuda error, NCCL version 2.29.7\n\
                 ncclUnhandledCudaError: Call to CUDA function failed.\n\
                 {detail}\n"
            ),
        )
    };
    let rules_of = |r: &fabrik_parse::nccl_log::LogReport| -> Vec<String> {
        r.processes
            .iter()
            .flat_map(|p| p.issues.iter().map(|i| i.rule.clone()))
            .collect()
    };
    let r = block("Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 2 'out of memory'.");
    assert!(
        rules_of(&r).iter().any(|x| x == "FAB-NCCL-NVLS"),
        "{:?}",
        rules_of(&r)
    );
    let r = block("Epoch 3 timeout while aborting the SHARP step");
    assert_eq!(rules_of(&r), vec!["FAB-NCCL-CUDA".to_string()]);
    // A CUDA failure elsewhere keeps its CUDA class.
    assert_eq!(
        first_rule("[2025-04-04 16:57:39] ip-10-0-9-191:95209:95228 [0] init.cc:416 NCCL WARN Cuda failure 'operation not supported'\n"),
        "FAB-NCCL-CUDA"
    );
}

/// aws-ofi-nccl's init failure (`NET/OFI Failed to initialize sendrecv protocol`,
/// `aws-ofi-nccl initialization failed`, `Initializing plugin failed`; src/nccl_ofi_api.cpp)
/// followed by init.cc's `Using network Socket` on a host where sockets were chosen
/// (`NCCL_IB_DISABLE=1`, as in fixture 116): NCCL dropped the plugin and ran on. The plugin is
/// reported (a warning), the job did not fail.
#[test]
fn a_plugin_that_failed_before_an_internal_network_was_chosen_is_a_warning() {
    let log = "h1:10:11 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\n\
               h1:10:11 [0] NCCL INFO NET/Plugin: Loaded net plugin Libfabric (v10)\n\
               h1:10:11 [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.17.1\n\
               h1:10:11 [0] int nccl_net_ofi_create_plugin(nccl_net_ofi_plugin_t**):208 NCCL WARN NET/OFI Failed to initialize sendrecv protocol\n\
               h1:10:11 [0] int nccl_net_ofi_create_plugin(nccl_net_ofi_plugin_t**):353 NCCL WARN NET/OFI aws-ofi-nccl initialization failed\n\
               h1:10:11 [0] NCCL INFO Using network Socket\n";
    let r = analyze_str("t", log);
    assert_eq!(r.summary.errors, 0, "{:?}", r.findings);
    let p = &r.processes[0];
    assert!(p
        .issues
        .iter()
        .any(|i| i.rule.starts_with("FAB-NCCL-OFI") && i.severity == Severity::Warning));
    // Without the internal network the same lines are the job's failure.
    let failed = log.replace("h1:10:11 [0] NCCL INFO Using network Socket\n", "");
    assert!(analyze_str("t", &failed).summary.errors > 0);
}

/// NCCL 2.2's include/socket.h `Call to connect failed : %s` and misc/socket.cc's `%s: connect
/// to %s returned %s, exceeded error retry count after %d attempts` (v2.27.3) with ETIMEDOUT or
/// EHOSTUNREACH: the address is unreachable, not a peer that died.
#[test]
fn a_connect_that_timed_out_is_an_unreachable_address() {
    for msg in [
        "include/socket.h:360 WARN Call to connect failed : Connection timed out",
        "misc/socket.cc:580 NCCL WARN socketPollConnect: connect to 10.0.0.2<43893> returned No route to host, exceeded error retry count after 35 attempts",
    ] {
        let r = analyze_str("t", &format!("gpu1:5:6 [0] {msg}\n"));
        assert!(has_rule(&r, "FAB-NCCL-CONNECT-UNREACHABLE"), "{msg}: {:?}", r.findings);
        assert!(!has_rule(&r, "FAB-NCCL-SOCKET"), "{msg}");
    }
    // A refused connection is a peer that is not listening: not this rule.
    let r = analyze_str(
        "t",
        "gpu1:5:6 [0] misc/socket.cc:580 NCCL WARN socketPollConnect: connect to 10.0.0.2<43893> returned Connection refused, exceeded error retry count after 35 attempts\n",
    );
    assert!(!has_rule(&r, "FAB-NCCL-CONNECT-UNREACHABLE"));
    // `ibv_modify_qp failed with 110 Connection timed out` stays an RDMA set-up failure.
    let r = analyze_str(
        "t",
        "gpu1:5:6 [5] misc/ibvwrap.cc:262 NCCL WARN Call to ibv_modify_qp failed with 110 Connection timed out, on dev mlx5_0:1, curr state INIT, next state RTR\n",
    );
    assert!(has_rule(&r, "FAB-NCCL-IB-SETUP"));
}

/// The IBext plugin that printed `NET/IB : No device found.` offered no network: its name does
/// not make the transport IB (a one-pod job on P2P/IPC only).
#[test]
fn an_ib_plugin_without_devices_is_no_transport() {
    let log =
        "pod:7:8 [0] NCCL INFO Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so\n\
               pod:7:8 [0] NCCL INFO P2P plugin IBext\n\
               pod:7:8 [0] NCCL INFO NET/IB : No device found.\n\
               pod:7:8 [0] NCCL INFO Channel 00/0 : 0[101c0] -> 1[101d0] via P2P/IPC/read\n";
    let r = analyze_str("t", log);
    assert_eq!(r.summary.transport, Transport::Unknown);
    let with_nics = log.replace(
        "NET/IB : No device found.",
        "NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>",
    );
    assert_eq!(
        analyze_str("t", &with_nics).summary.transport,
        Transport::Ib
    );
}

/// Pastes as published: ids redacted to X's (NVIDIA/nccl#2013), a head cut from its message at
/// the end of an excerpt (NVIDIA/nccl#529), an issue body whose newlines were lost
/// (vllm-project/vllm#27628): every process is still counted, once.
#[test]
fn redacted_cut_and_flattened_pastes_count_their_processes() {
    let r = analyze_str(
        "t",
        "[2026-03-13 22:26:02] host-01.example.com:XXXXXX [5] ibvwrap.c:262 NCCL WARN Call to ibv_modify_qp failed with 110 Connection timed out, on dev mlx_x:1, curr state INIT, next state RTR\n",
    );
    assert_eq!((r.summary.hosts, r.summary.processes), (1, 1));
    let r = analyze_str(
        "t",
        "a1:97:221 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\nb2:84:206\n",
    );
    assert_eq!((r.summary.hosts, r.summary.processes), (2, 2));
    let flat = "### bug ``` INFO 10-28 [pynccl.py:111] vLLM is using nccl==2.27.3 h:1:1 [0] NCCL INFO cudaDriverVersion 12010 h:1:1 [0] NCCL INFO NCCL version 2.27.3+cuda12.9 h:2:2 [1] NCCL INFO cudaDriverVersion 12010 h:2:2 [1] NCCL INFO Bootstrap: Using bond0:192.168.12.70 h:3:3 [2] NCCL INFO cudaDriverVersion 12010 ... ```";
    let r = analyze_str("t", flat);
    assert_eq!((r.summary.hosts, r.summary.processes), (1, 3));
    assert_eq!(r.summary.nccl_version.as_deref(), Some("2.27.3"));
    // A collector that printed the line twice is one record.
    let twice = "  | 2025-05-16T16:39:51.208-07:00ip-10-36-29-253:79:79 [0] NCCL INFO Bootstrap : Using eth0:10.36.29.253<0> | ip-10-36-29-253:79:79 [0] NCCL INFO Bootstrap : Using eth0:10.36.29.253<0>";
    let r = analyze_str("t", twice);
    assert_eq!(r.summary.processes, 1);
}

/// PyTorch's `Last error:` block carries the WARN text; the TCPX plugin's own messages name it
/// (`NET/%s failed to connect socket`, src/connect.cc, %s = GPUDirectTCPX), so the transport is
/// known even without any NCCL INFO line (GoogleCloudPlatform/container-engine-accelerators#414).
#[test]
fn a_last_error_naming_the_tcpx_plugin_gives_its_transport() {
    let log = "[5]:torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, internal error - please report this issue to the NCCL developers, NCCL version 2.21.5\n\
               [5]:ncclInternalError: Internal check failed.\n\
               [5]:Last error:\n\
               [5]:NET/GPUDirectTCPX failed to connect socket\n";
    let r = analyze_str("t", log);
    assert_eq!(r.summary.transport, Transport::GpuDirectTcpx);
    // The catalog knows the format: a TCP connection to another rank could not be set up.
    assert!(r
        .processes
        .iter()
        .flat_map(|p| &p.issues)
        .any(|i| i.rule == "FAB-NCCL-SOCKET-CONNECT"));
}

/// NCCL 2.29 on a host without libibverbs probes IB and GIN and moves on: the traces end in
/// src/transport/net_ib/ (`init.cc:396 -> 3`, `gdr.cc:56 -> 3`), which is no caller of NCCL's
/// API, and ibvwrap.cc's `lib wrapper not initialized.` is the missing library again
/// (NVIDIA/nccl#2094). No error.
#[test]
fn nccl_2_29_probing_ib_and_gin_without_verbs_is_no_failure() {
    let log = "[5] NCCL INFO NCCL version 2.29.7+cuda12.3\n\
               [5] NCCL INFO Failed to open libibverbs.so[.1]\n\
               [5] NCCL INFO transport/net_ib/init.cc:396 -> 3\n\
               [5] NCCL INFO Failed to initialize NET plugin IB\n\
               [5] NCCL INFO NET/Socket : Using [0]eth0:192.168.9.2<0>\n\
               [5] misc/ibvwrap.cc:173 NCCL WARN lib wrapper not initialized.\n\
               [5] NCCL INFO transport/net_ib/gdr.cc:56 -> 3\n\
               [5] NCCL INFO Failed to initialize any GIN plugin\n\
               [5] NCCL INFO Using network Socket\n";
    let r = analyze_str("t", log);
    assert_eq!(errors(&r), Vec::<&str>::new(), "{:?}", r.findings);
    assert_eq!(r.summary.warnings, 0, "{:?}", r.findings);
    assert_eq!(r.summary.transport, Transport::Socket);
    // The same trace reaching src/init.cc is a failure.
    let failed = log.replace(
        "[5] NCCL INFO Failed to initialize NET plugin IB\n",
        "[5] NCCL INFO init.cc:1493 -> 3\n",
    );
    assert!(!errors(&analyze_str("t", &failed)).is_empty());
}

/// The same plugin failure on a host where RDMA was there (aws-ofi-nccl's
/// nccl_net_ofi_create_plugin `NET/OFI aws-ofi-nccl initialization failed`, plugin/net.cc's
/// `net.cc:56 -> 2`, then `Using network Socket` for a 16-rank job, as in
/// awslabs/awsome-distributed-ai#386 on p5): the job ran on, over sockets. The fallback is an
/// error and the plugin failure is its cause, so it stays an error too; with NCCL_IB_DISABLE=1
/// the sockets were chosen and the plugin is again only reported.
#[test]
fn a_plugin_failure_that_left_rdma_unused_is_the_cause_of_the_fallback() {
    let log = "p5:954:3133 [6] nccl_net_ofi_create_plugin:1067 NCCL WARN NET/OFI aws-ofi-nccl initialization failed\n\
               p5:954:3133 [6] NCCL INFO net.cc:56 -> 2\n\
               p5:954:3133 [6] NCCL INFO NET/IB : No device found.\n\
               p5:954:3133 [6] NCCL INFO NET/Socket : Using [0]eth0:10.67.132.202<0>\n\
               p5:954:3133 [6] NCCL INFO Using network Socket\n\
               p5:954:3133 [6] NCCL INFO comm 0x7f3aed3f8c00 rank 6 nranks 16 cudaDev 6 nvmlDev 6 busId b9000 commId 0xb28cabf3135b26f2 - Init START\n";
    let r = analyze_str("t", log);
    assert!(r.summary.socket_fallback, "{:?}", r.findings);
    let errs = errors(&r);
    assert!(errs.contains(&"FAB-NCCL-SOCKET-FALLBACK"), "{errs:?}");
    assert!(
        errs.iter().any(|e| e.starts_with("FAB-NCCL-OFI")),
        "{errs:?}"
    );
    let chosen = log.replace(
        "p5:954:3133 [6] NCCL INFO NET/IB",
        "p5:954:3133 [6] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\np5:954:3133 [6] NCCL INFO NET/IB",
    );
    let r = analyze_str("t", &chosen);
    assert!(!r.summary.socket_fallback);
    assert_eq!(r.summary.errors, 0, "{:?}", r.findings);
}

/// nccl-rdma-sharp-plugins registers as `NCCL RDMA Plugin vN` (src/p2p_plugin.c) and picks IB or
/// UCX in its init, which may find no device; plugin/net.cc then goes on with IB or sockets. A
/// process that only shows that load line does not outweigh one of the same job that printed
/// `Using network Socket` (vllm-project/vllm#5405: one pod, Ray workers): the job is on
/// sockets, not `Mixed`, and nothing fell back. Alone, the plugin still says IB.
#[test]
fn a_loaded_plugin_name_does_not_outweigh_the_network_a_process_printed() {
    let used = "pod-0:291:5595 [0] NCCL INFO Using network Socket\n\
                pod-0:291:5595 [0] NCCL INFO comm 0x560e24f599a0 rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId 27000 commId 0xebcd10afa0bbcee4 - Init START\n";
    let loaded = "pod-0:4095:4095 [1] NCCL INFO NET/Plugin: Failed to find ncclNetPlugin_v6 symbol.\n\
                  pod-0:4095:4095 [1] NCCL INFO NET/Plugin: Loaded net plugin NCCL RDMA Plugin (v5)\n\
                  pod-0:4095:4095 [1] NCCL INFO NET/Plugin: Loaded coll plugin SHARP (v5)\n";
    let r = analyze_str("t", &format!("{used}{loaded}"));
    assert_eq!(r.summary.transport, Transport::Socket);
    assert!(!r.summary.socket_fallback);
    assert!(errors(&r).is_empty(), "{:?}", r.findings);
    let r = analyze_str("t", loaded);
    assert_eq!(r.summary.transport, Transport::Ib);
}

/// NCCL 2.30's GIN GDAKI back end (src/transport/net_ib/gdaki/gin_host_gdaki.cc, DOCACHECK's
/// `DOCA failure %d`), with the function name that 2.30 prints after the source location: an
/// RDMA set-up failure of the GDAKI QPs (NVIDIA/nccl#2237), not a generic warning.
#[test]
fn a_doca_failure_of_gin_gdaki_is_an_rdma_setup_error() {
    let log = "worker-0:862519:862553 [0] transport/net_ib/gdaki/gin_host_gdaki.cc:431 (gdakiConnectQp) NCCL WARN DOCA failure 21\n\
               worker-0:862519:862553 [0] NCCL INFO transport/net_ib/gdaki/gin_host_gdaki.cc:683 (ncclGinGdakiCreateContext) -> 2\n";
    let r = analyze_str("t", log);
    assert!(
        errors(&r).contains(&"FAB-NCCL-IB-GDAKI"),
        "{:?}",
        r.findings
    );
    assert!(!has_rule(&r, "FAB-NCCL-WARN"));
}

/// NCCL 2.4's lines (src/transport/net_socket.cu `NET/Socket : Using%s`, net.cu `NET/%s : GPU
/// Direct RDMA Disabled for GPU %d[%d] / HCA %d (distance %d >= %d)`, net_ib.cu `NET/IB: Dev %d
/// Port %d qpn %d mtu %d LID %d`, v2.4.2-1) and 2.5's net_socket.cc `NET/Socket: Using %d threads
/// and %d sockets per thread`: each names the network without a `Using network` line.
#[test]
fn older_init_and_connection_lines_name_the_network() {
    let gdr = "n1:10:10 [0] NCCL INFO NET/Socket : GPU Direct RDMA Disabled for GPU 0[0] / HCA 0 (distance 4 >= 2)\n";
    let r = analyze_str("gdr.log", gdr);
    assert_eq!(r.processes[0].transport, Some(Transport::Socket));
    let qp = "n1:10:10 [0] NCCL INFO NET/IB: Dev 0 Port 1 qpn 1234 mtu 5 LID 7\n";
    let r = analyze_str("qp.log", qp);
    assert_eq!(r.processes[0].transport, Some(Transport::Ib));
    let socks = "n1:10:11 [0] NCCL INFO NET/Socket: Using 2 threads and 8 sockets per thread\n";
    let r = analyze_str("socks.log", socks);
    assert_eq!(r.processes[0].transport, Some(Transport::Socket));
    // 2.4 prints the socket list for its bootstrap in every process: alone it proves nothing,
    // but a process that got to its ring lines with no IB line ran on sockets.
    let list = "n1:10:10 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n";
    let r = analyze_str("list.log", list);
    assert_eq!(r.processes[0].transport, None);
    let ring = format!("{list}n1:10:20 [0] NCCL INFO Ring 00 : 0 1\nn1:10:20 [0] NCCL INFO comm 0x7f00 rank 0 nranks 2 cudaDev 0 nvmlDev 0\n");
    let r = analyze_str("ring.log", &ring);
    assert_eq!(r.processes[0].transport, Some(Transport::Socket));
    let ib = format!(
        "{ring}n1:10:10 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>\n"
    );
    let r = analyze_str("ib.log", &ib);
    assert_eq!(r.processes[0].transport, Some(Transport::Ib));
}

/// misc/socket.cc picks `lo` only when asked or when nothing else is there; net_socket.cc opens
/// connections over every interface it lists.
#[test]
fn loopback_among_socket_interfaces_across_hosts_is_an_error() {
    let host = |h: &str, pid: u32, addr: &str, rank: u32| {
        format!(
            "{h}:{pid}:{pid} [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to lo,eth0\n\
             {h}:{pid}:{pid} [0] NCCL INFO NET/IB : No device found.\n\
             {h}:{pid}:{pid} [0] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0> [1]eth0:{addr}<0>\n\
             {h}:{pid}:{pid} [0] NCCL INFO Using network Socket\n\
             {h}:{pid}:{pid} [0] NCCL INFO ncclCommInitRank comm 0x55d0 rank {rank} nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0x1 - Init START\n"
        )
    };
    let two = host("a", 1, "10.0.0.1", 0) + &host("b", 2, "10.0.0.2", 1);
    let r = analyze_str("two.log", &two);
    assert!(
        errors(&r).contains(&"FAB-NCCL-SOCKET-LOOPBACK"),
        "{:?}",
        r.findings
    );
    assert!(!has_rule(&r, "FAB-NCCL-LOOPBACK"));
    let one = host("a", 1, "10.0.0.1", 0);
    let r = analyze_str("one.log", &one);
    assert!(errors(&r).is_empty(), "{:?}", r.findings);
    let f = r
        .findings
        .iter()
        .find(|f| f.rule == "FAB-NCCL-LOOPBACK")
        .expect("named");
    assert!(
        f.message.contains("NCCL_SOCKET_IFNAME=lo,eth0"),
        "{}",
        f.message
    );
}

/// A WARN head whose message a paste wrapped onto the next lines: the wrapped text is read up to
/// a blank line, and a head followed directly by another record keeps an empty message.
#[test]
fn a_wrapped_warn_takes_its_following_lines() {
    let log = "n1:5:6 [0] transport/net_ib.cc:1615 NCCL WARN \n\
               NET/IB : Got completion from peer 10.0.0.2<4000> with status=12 opcode=0 len=0\n\
               vendor err 129 (Recv)\n\
               \n\
               program output that is not the message\n";
    let r = analyze_str("wrapped.log", log);
    let i = &r.processes[0].issues;
    assert_eq!(i.len(), 1, "{i:?}");
    assert_eq!(i[0].rule, "FAB-NCCL-IB-TIMEOUT");
    assert!(i[0].message.ends_with("vendor err 129 (Recv)"));
    let cut = "n1:5:6 [0] misc/socket.cc:1 NCCL WARN \nn1:5:6 [0] NCCL INFO Using network Socket\n";
    let r = analyze_str("cut.log", cut);
    assert_eq!(r.processes[0].network.as_deref(), Some("Socket"));
    assert_eq!(r.processes[0].issues[0].rule, "FAB-NCCL-WARN");
}

/// src/ras/'s WARNs, under any build path, are RAS's own (ras.cc discards the client socket's
/// result); the same SYSCHECK text from misc/socket.cc stays a failed system call.
#[test]
fn ras_warnings_do_not_fail_the_job() {
    let log = "n1:5:5 [0] NCCL INFO Using network IB\n\
               n1:5:5 [0] /build/nccl/src/ras/client_support.cc:181 NCCL WARN Call to bind failed: Address already in use\n\
               n1:5:5 [0] NCCL INFO RAS failed to establish a client listening socket at localhost:28028\n";
    let r = analyze_str("ras.log", log);
    assert!(errors(&r).is_empty(), "{:?}", r.findings);
    assert!(has_rule(&r, "FAB-NCCL-RAS-THREAD"));
    let r = analyze_str(
        "bind.log",
        "n1:5:5 [0] misc/socket.cc:379 NCCL WARN Call to bind failed : Cannot assign requested address\n",
    );
    assert!(!has_rule(&r, "FAB-NCCL-RAS-THREAD"));
}
