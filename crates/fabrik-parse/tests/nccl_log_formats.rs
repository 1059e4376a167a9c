//! Message shapes of NCCL and its plugins that no fixture carries, written as NCCL prints them
//! (format strings of NVIDIA/nccl src/, aws-ofi-nccl, the GCP TCPX/FasTrak plugins).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use fabrik_parse::nccl_log::{analyze_str, PluginStatus, Transport};

#[test]
fn gcp_tcpx_and_fastrak_networks() {
    let r = analyze_str(
        "tcpx.log",
        "a3-0:10:10 [0] NCCL INFO NET/Plugin: Loaded net plugin GPUDirectTCPX_v7 (v7)\n\
         a3-0:10:10 [0] NCCL INFO Using network GPUDirectTCPX_v7\n\
         a3-0:10:20 [0] NCCL INFO Channel 00/0 : 8[0] -> 0[0] [receive] via NET/GPUDirectTCPX_v7/0\n",
    );
    assert_eq!(r.summary.transport, Transport::GpuDirectTcpx);
    assert_eq!(r.summary.plugin.as_deref(), Some("GPUDirectTCPX_v7"));
    assert!(!r.summary.socket_fallback);
    let r = analyze_str(
        "fastrak.log",
        "a3m-1:7:7 [2] NCCL INFO Initializing network FasTrak, version: 1.0.17\n\
         a3m-1:7:7 [2] NCCL INFO Using network FasTrak\n",
    );
    assert_eq!(r.summary.transport, Transport::FasTrak);
    assert_eq!(r.processes[0].plugin.status, PluginStatus::Loaded);
}

#[test]
fn gcp_socket_after_failed_tcpx_is_a_fallback() {
    let r = analyze_str(
        "fallback.log",
        "a3-0:10:10 [0] NCCL INFO NET/Plugin: Failed to find ncclNetPlugin symbol (>= v5). ncclNetPlugin symbols v4 and lower are not supported.\n\
         a3-0:10:10 [0] NCCL INFO NET/IB : No device found.\n\
         a3-0:10:10 [0] NCCL INFO NET/Socket : Using [0]eth0:10.128.0.2<0>\n\
         a3-0:10:10 [0] NCCL INFO Using network Socket\n\
         a3-0:10:30 [0] NCCL INFO Channel 00/0 : 8[0] -> 0[0] [receive] via NET/Socket/0\n",
    );
    assert_eq!(r.summary.transport, Transport::Socket);
    assert!(r.summary.socket_fallback);
    assert_eq!(r.summary.gdr, Some(false));
}

#[test]
fn sockets_despite_ib_nics_is_a_fallback_but_fastsocket_is_not() {
    let r = analyze_str(
        "x.log",
        "h:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE ; OOB eth0:10.0.0.1<0>\n\
         h:1:1 [0] NCCL INFO Using network Socket\n",
    );
    assert!(r.summary.socket_fallback);
    assert!(r
        .findings
        .iter()
        .any(|f| f.rule == "FAB-NCCL-SOCKET-FALLBACK"));
    let r = analyze_str(
        "y.log",
        "h:1:1 [0] NCCL INFO NET/Plugin: Loaded net plugin FastSocket (v4)\n\
         h:1:1 [0] NCCL INFO Using network FastSocket\n",
    );
    assert_eq!(r.summary.transport, Transport::Socket);
    assert!(!r.summary.socket_fallback);
}

#[test]
fn one_host_on_sockets_beside_ib_hosts_is_a_fallback() {
    let r = analyze_str(
        "mixed.log",
        "a:1:1 [0] NCCL INFO Using network IB\n\
         b:2:2 [0] NCCL INFO NET/IB : No device found.\n\
         b:2:2 [0] NCCL INFO Using network Socket\n",
    );
    assert_eq!(r.summary.transport, Transport::Mixed);
    assert!(r.summary.socket_fallback);
}

#[test]
fn plugins_and_collnet_sharp() {
    let r = analyze_str(
        "sharp.log",
        "n:5:5 [0] NCCL INFO NET/Plugin: Loaded net plugin NCCL RDMA Plugin v8 (v8)\n\
         n:5:5 [0] NCCL INFO NET/Plugin: Loaded collnet plugin SHARP (v8)\n\
         n:5:5 [0] NCCL INFO Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so\n\
         n:5:5 [0] NCCL INFO Using network IBext_v8\n\
         n:5:5 [0] NCCL INFO 16 coll channels, 16 collnet channels, 0 nvls channels, 16 p2p channels, 2 p2p channels per peer\n",
    );
    let p = &r.processes[0];
    assert_eq!(p.plugin.name.as_deref(), Some("NCCL RDMA Plugin v8"));
    assert_eq!(p.plugin.collnet.as_deref(), Some("SHARP"));
    assert_eq!(p.sharp, Some(true));
    assert_eq!(p.collnet, Some(true));
    assert_eq!(p.nvls, Some(false));
    assert_eq!(r.summary.transport, Transport::Ib);
}

#[test]
fn old_gdr_lines_and_new_bootstrap_form() {
    let r = analyze_str(
        "old.log",
        "h:9:9 [1] NCCL INFO Bootstrap: Using eth0:fe80::1%eth0<0>\n\
         h:9:9 [1] NCCL INFO GPU Direct RDMA Enabled for GPU 1[1] / HCA 0 (distance 4 <= 4), read 0\n\
         h:9:9 [1] NCCL INFO GPU Direct RDMA Disabled for GPU 2[2] / HCA 0 (distance 5 > 4)\n",
    );
    let p = &r.processes[0];
    let b = p.bootstrap.as_ref().unwrap();
    assert_eq!(b.interface, "eth0");
    assert_eq!(b.address.as_deref(), Some("fe80::1%eth0"));
    assert_eq!(p.gdr_hcas.len(), 2);
    assert_eq!(p.gdr, Some(true));
}

#[test]
fn channel_shapes_of_every_version() {
    let r = analyze_str(
        "ch.log",
        "h:1:1 [0] NCCL INFO Ring 00 : 0[0] -> 1[1] via P2P/IPC\r\n\
         h:1:1 [0] NCCL INFO Channel 00 : 0[1b000] -> 1[1c000] via P2P/direct pointer/read\r\n\
         h:1:1 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via SHM/direct/direct\r\n\
         h:1:1 [0] NCCL INFO Channel 02/1 : 0[0] -> 8[0] [send] via NET/IB/0(1)/GDRDMA/Shared\r\n\
         h:1:1 [0] NCCL INFO CollNet 00/0 : 0 [send] via COLLNET/SHARP/0/GDRDMA\r\n",
    );
    let c = &r.processes[0].channels;
    assert_eq!(c.get("P2P/IPC"), Some(&1));
    assert_eq!(c.get("P2P/direct pointer"), Some(&1));
    assert_eq!(c.get("SHM"), Some(&1));
    assert_eq!(c.get("NET/IB/GDRDMA"), Some(&1));
    assert_eq!(c.get("COLLNET/SHARP/GDRDMA"), Some(&1));
}

#[test]
fn pytorch_watchdog_timeout_and_abort() {
    let r = analyze_str(
        "torch.log",
        "[rank3]:[E1122 10:00:00.000 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.\n\
         [rank3]: NCCL communicator was aborted on rank 3.\n",
    );
    let rules: Vec<&str> = r.processes[0]
        .issues
        .iter()
        .map(|i| i.rule.as_str())
        .collect();
    assert_eq!(rules, vec!["FAB-NCCL-TIMEOUT", "FAB-NCCL-ABORT"]);
}

#[test]
fn nccl_2_27_plugin_messages_and_rank_tagged_init() {
    // init.cc and plugin/net.cc of NCCL 2.27+.
    let r = analyze_str(
        "new.log",
        "h:1:1 [0] NCCL INFO Failed to initialize NET plugin GPUDirectTCPX_v7\n\
         h:1:1 [0] NCCL INFO Initialized NET plugin Socket\n\
         h:1:1 [0] NCCL INFO Using network Socket\n\
         h:1:1 [0] NCCL INFO [Rank 3] ncclCommInitRankConfig comm 0x5f0 rank 3 nranks 16 cudaDev 3 nvmlDev 3 busId 3b000 commId 0xabc - Init START\n\
         h:1:1 [0] NCCL INFO NVLS Created Multicast group 1f nranks 8 size 2097152 on rank 3\n",
    );
    let p = &r.processes[0];
    assert_eq!(p.plugin.status, PluginStatus::Unusable);
    assert_eq!(p.plugin.name.as_deref(), Some("GPUDirectTCPX_v7"));
    assert!(r.summary.socket_fallback);
    assert_eq!(p.ranks[0].rank, 3);
    assert_eq!(p.ranks[0].nranks, Some(16));
    assert_eq!(p.ranks[0].bus_id.as_deref(), Some("3b000"));
    assert_eq!(p.nvls, Some(true));
    let r = analyze_str(
        "ok.log",
        "h:1:1 [0] NCCL INFO Initialized NET plugin IB\n\
         h:1:1 [0] NCCL INFO Using network IB\n",
    );
    assert_eq!(r.processes[0].plugin.status, PluginStatus::Unknown);
    assert_eq!(r.summary.plugin, None);
}

#[test]
fn ofi_provider_forms_and_tcp_provider_fallback() {
    let r = analyze_str(
        "efa.log",
        "[1,0]<stdout>:test-nccl-efa-worker-0:21:21 [0] NCCL INFO NET/OFI Selected Provider is efa (found 1 nics)\n\
         [1,0]<stdout>:test-nccl-efa-worker-0:21:21 [0] NCCL INFO Using network AWS Libfabric\n\
         [1,0]<stdout>:NCCL version 2.12.7+cuda11.4\n\
         p6:5:5 [0] NCCL INFO NET/OFI Selected provider is efa, fabric is efa-direct (found 32 nics)\n",
    );
    assert_eq!(r.summary.transport, Transport::Ofi);
    assert!(!r.summary.socket_fallback);
    assert!(r
        .processes
        .iter()
        .all(|p| p.ofi_provider.as_deref() == Some("efa")));
    assert_eq!(r.summary.nccl_version.as_deref(), Some("2.12.7"));
    let r = analyze_str(
        "tcp.log",
        "w:9:9 [0] NCCL INFO NET/OFI Selected provider is tcp, fabric is 10.0.0.0/16 (found 1 nics)\n\
         w:9:9 [0] NCCL INFO Using network Libfabric\n",
    );
    assert_eq!(r.summary.transport, Transport::Ofi);
    assert!(r.summary.socket_fallback);
}

#[test]
fn colour_crlf_gzip_and_debug_file_inputs() {
    use std::io::Write;
    let text = "\x1b[32mnode3:77:78 [1] NCCL INFO\x1b[0m Using network IB\r\n\
                node3:77:78 [1] NCCL INFO Channel 00/0 : 9[1] -> 1[1] [receive] via NET/IB/1/GDRDMA\r\n\
                node3:77:78 [1] NCCL INFO NCCL_IB_GID_INDEX set by environment to 3.\r\n";
    let dir = tempfile::tempdir().unwrap();
    let gz = dir.path().join("node3.77.log.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(text.as_bytes()).unwrap();
    std::fs::write(&gz, enc.finish().unwrap()).unwrap();
    // A second NCCL_DEBUG_FILE of another process, plain and cut mid-line.
    let plain = dir.path().join("node4.12.log");
    std::fs::write(
        &plain,
        "node4:12:12 [0] NCCL INFO Using network IB\nnode4:12:12 [0] NCCL INFO Chan",
    )
    .unwrap();
    let r = fabrik_parse::nccl_log::analyze_paths(&[gz, plain]).unwrap();
    assert_eq!(r.summary.processes, 2);
    assert_eq!(r.summary.transport, Transport::Ib);
    assert_eq!(r.summary.gdr, Some(true));
    let p = &r.processes[0];
    assert_eq!(
        p.env.get("NCCL_IB_GID_INDEX").map(String::as_str),
        Some("3")
    );
    assert_eq!(p.channels.get("NET/IB/GDRDMA"), Some(&1));
    assert_eq!(p.ranks[0].rank, 1);
}
