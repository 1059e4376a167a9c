//! [`diagnose_warn`] on real and rendered WARN messages that NCCL's message catalog classifies:
//! the catalog's class reaches the finding, after the checks that read a message's details.

use fabrik_model::Severity;

use super::diagnose_warn;
use crate::catalog::format::render_sample;
use crate::catalog::{catalog, classify, Kind};

#[test]
fn the_catalog_answers_through_diagnose_warn() {
    // Through the one hook: diagnose_warn falls back to the catalog.
    let d = diagnose_warn(
        b"Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1b000",
        Some(b"init.cc:904"),
    );
    assert_eq!(d.rule, "FAB-NCCL-DUP-GPU");
    assert_eq!(d.severity, Severity::Error);
}

/// Plugin messages whose class was read from the code around them (aws-ofi-nccl master at
/// 2daf7d303aa1, GPUDirect-TCPX HEAD 4b8ea7f2716f, TCPXO v1.0.17), rendered as the plugins
/// print them; the severity says whether the job stopped there.
#[test]
fn plugin_messages_take_the_class_their_source_gives() {
    let cases: &[(&str, &str, Severity)] = &[
        // nccl_ofi_cuda.cpp: printed when OFI_NCCL_CUDA_FLUSH_ENABLE turned flushes on.
        ("NET/OFI CUDA flush enabled", "FAB-NCCL-PLUGIN-NOTICE", Severity::Info),
        // nccl_ofi_system.cpp: no DMI product name (not EC2, or /sys masked); the plugin goes on.
        (
            "NET/OFI Error opening file: /sys/devices/virtual/dmi/id/product_name",
            "FAB-NCCL-PLUGIN-NOTICE",
            Severity::Info,
        ),
        ("NET/OFI cuMemAlloc failed: out of memory", "FAB-NCCL-CUDA", Severity::Error),
        // nccl_ofi_net.c (v1.8.0-aws): the flush is turned off and the plugin goes on.
        (
            "NET/OFI CUDA flush requested, but cuFlushGPUDirectRDMAWrites not found.",
            "FAB-NCCL-PLUGIN-NOTICE",
            Severity::Info,
        ),
        // Teardown (src/nccl_ofi_net.cpp), and an argument check: neither is a libfabric call.
        (
            "NET/OFI Freeing endpoint failed: -22",
            "FAB-NCCL-OFI-CLEANUP",
            Severity::Warning,
        ),
        (
            "NET/OFI Invalid endpoint provided",
            "FAB-NCCL-INTERNAL-CHECK",
            Severity::Error,
        ),
        // fi_cq_open with its RC (src/nccl_ofi_ofiutils.cpp), and a deregistration: they name
        // their own cause, not a step of the protocol engine.
        (
            "NET/OFI Couldn't create completion queue. RC: -12, ERROR: Cannot allocate memory",
            "FAB-NCCL-OFI-LIBFABRIC",
            Severity::Error,
        ),
        (
            "NET/OFI Unable to de-register memory. RC: -22, Error: Invalid argument",
            "FAB-NCCL-OFI-CLEANUP",
            Severity::Warning,
        ),
        // include/nccl_ofi_param_impl.h returns -EINVAL for an unparsable setting: the plugin
        // does not start. A sender larger than the receiver's buffer is a size mismatch between
        // the ranks, not a broken invariant of the plugin.
        (
            "NET/OFI WARNING: OFI_NCCL_PROTOCOL set to invalid value RDMAX",
            "FAB-NCCL-OFI-INIT",
            Severity::Error,
        ),
        (
            "NET/OFI Remote recv buffer (1024) smaller than send buffer (4096)!",
            "FAB-NCCL-COLL-MISMATCH",
            Severity::Error,
        ),
        // A libfabric call at connect time, not a completion.
        (
            "NET/OFI Unable to insert remote address into address vector for device 3. RC: -22",
            "FAB-NCCL-OFI-LIBFABRIC",
            Severity::Error,
        ),
        (
            "NET/OFI Unable to attach NIC to GPU.",
            "FAB-NCCL-OFI-TOPO",
            Severity::Error,
        ),
        // Closing a communicator that still has requests in flight: teardown after an abort.
        (
            "NET/OFI Closing recv_comm 0x55d0c8a0 with inflight requests. Invalidating domain",
            "FAB-NCCL-OFI-CLEANUP",
            Severity::Warning,
        ),
        // platform-aws.cpp returns -EINVAL: the plugin refuses to start without GDR there.
        (
            "NET/OFI GDR disabled on GDR-supported instance type p4d.24xlarge",
            "FAB-NCCL-GDR-UNAVAILABLE",
            Severity::Error,
        ),
        (
            "NET/OFI fi_sendmsg (eager) failed; RC: -5, Error: Input/output error",
            "FAB-NCCL-OFI-LIBFABRIC",
            Severity::Error,
        ),
        (
            "NET/OFI Number of forced rails (3) not a multiple of numer of rails (4)",
            "FAB-NCCL-OFI-INIT",
            Severity::Error,
        ),
        (
            "NET/OFI No free eager header buffers",
            "FAB-NCCL-OFI-ALLOC",
            Severity::Error,
        ),
        // GPUDirect-TCPX's slowness reports (src/net_tcpx.cc): a control message awaited past
        // the threshold is a stalled connection, a slow transmit completion a warning.
        (
            "0x7f2a1c0:0x7f2a000, nic 2, eth3, 10.0.1.5:3345<->10.0.2.7:4122 rx ctrl timeout cnt 12, nanos 5000000000",
            "FAB-NCCL-TCPX-STALL",
            Severity::Error,
        ),
        (
            "0x7f2a1c0 nic 2, eth3 10.0.1.5:3345 tx comp timeout poll upper 3, lower 1, cnt 2, nanos 900, range (1 2)",
            "FAB-NCCL-TCPX",
            Severity::Warning,
        ),
        ("Cannot set socket to TCP_QUICKACK", "FAB-NCCL-PLUGIN-NOTICE", Severity::Info),
        // TCPXO: the DXS control channel aborted, and a handle from another plugin release.
        (
            "NET/FasTrak 2025-01-10T10:00:00Z: SCTP Aborted: kPeerReported, peer abort",
            "FAB-NCCL-FASTRAK",
            Severity::Error,
        ),
        (
            "NET/FasTrak 2025-01-10T10:00:00Z: VERSION MISMATCH: Received Connect request with ncclSocketHandle version 3, but this plugin is version 4",
            "FAB-NCCL-VERSION-MISMATCH",
            Severity::Error,
        ),
    ];
    for (msg, rule, severity) in cases {
        let d = diagnose_warn(msg.as_bytes(), Some(b"net.cc:1"));
        assert_eq!((d.rule, d.severity), (*rule, *severity), "{msg}");
    }
}

#[test]
fn unclassified_real_warnings_fall_back_to_the_generic_finding() {
    // Real NCCL WARN formats whose meaning the catalog does not establish, and a line NCCL never
    // printed.
    for msg in [
        "Could not find real path of /sys/class/net/eth0 (/sys/devices/virtual/net/eth0)",
        "Allocation failed. No suitable space found to accommodate size=0x200000 within limit=0x100000",
        "something NCCL never printed",
    ] {
        let d = diagnose_warn(msg.as_bytes(), Some(b"init.cc:1"));
        assert_eq!(d.rule, "FAB-NCCL-WARN", "{msg}");
        assert!(classify(msg.as_bytes()).is_none(), "{msg}");
    }
    // A catalogued format that no class claims: known to the catalog, still generic.
    let m = catalog()
        .lookup(b"Could not find real path of /sys/class/net/eth0 (/sys/devices/virtual/net/eth0)")
        .map(|m| (m.source, m.class));
    assert_eq!(m, Some(("nccl", None)));
    // A format of the target areas left unclaimed on purpose (docs/logs.md says why): a user
    // buffer registration that NCCL 2.24-2.25 gives up on and copies instead.
    let msg = "rank 3 failed to NET register userbuff 0x7f2a40000000 buffSize 1048576 GDR flag 0";
    let d = diagnose_warn(msg.as_bytes(), Some(b"net.cc:1561"));
    assert_eq!(d.rule, "FAB-NCCL-WARN", "{msg}");
    assert_eq!(
        catalog().lookup(msg.as_bytes()).map(|m| m.class),
        Some(None)
    );
}

/// Messages of NCCL's net, transport, proxy, bootstrap, init and graph code and of
/// nccl-rdma-sharp-plugins, as `diagnose_warn` answers them (the catalog comes after the checks
/// that read a message's details, so this also shows that none of those takes them first).
#[test]
fn net_graph_and_plugin_messages_reach_their_class() {
    let cases: &[(&str, &[u8], &str, Severity)] = &[
        // NVIDIA/nccl#1905 (2.21.5): printed after `async fatal event on QP ... local access
        // violation work queue error`.
        (
            "communicator encountered a fatal error (detected in ncclIbTest)",
            b"transport/net_ib.cc:139",
            "FAB-NCCL-IB-ASYNC",
            Severity::Error,
        ),
        // NVIDIA/nccl#487, aws/aws-ofi-nccl#64, NVIDIA/nccl-tests#352: NCCL goes on with the
        // simple order (and prints it at INFO from 2.27), so it is no error on its own.
        (
            "Could not find a path for pattern 4, falling back to simple order",
            b"graph/search.cc:765",
            "FAB-NCCL-PATH-FALLBACK",
            Severity::Warning,
        ),
        // The lines below are rendered from the format strings of NCCL 2.30 and of
        // nccl-rdma-sharp-plugins master with the arguments the code passes.
        // NCCL_ALGO=trees (parseList, src/graph/tuning.cc)
        (
            "Unrecognized element token \"trees\" when parsing \"trees\"",
            b"graph/tuning.cc:109",
            "FAB-NCCL-SETTING-INVALID",
            Severity::Error,
        ),
        (
            "NET/IB: OOO RQ is force enabled but AR is not enabled, which is required for OOO RQ (device=mlx5_0)",
            b"transport/net_ib/connect.cc:512",
            "FAB-NCCL-SETTING-INVALID",
            Severity::Error,
        ),
        (
            "Invalid NCCL_NTHREADS 300 (must be a multiple of 32)",
            b"graph/tuning.cc:141",
            "FAB-NCCL-SETTING-IGNORED",
            Severity::Warning,
        ),
        (
            "ucx_isend: unable to send message (Endpoint timeout)",
            b"ucx_plugin.c:1010",
            "FAB-NCCL-UCX",
            Severity::Error,
        ),
        (
            "Failed to open iface for tl_name=rc_mlx5 dev_name=mlx5_0:1",
            b"ucx_uct_lib.c:190",
            "FAB-NCCL-UCX",
            Severity::Error,
        ),
        (
            "UCT accept for dev=0 using unsupported state 7",
            b"ucx_uct_lib.c:700",
            "FAB-NCCL-INTERNAL-CHECK",
            Severity::Error,
        ),
        (
            "Failed to malloc 137438953472 bytes",
            b"include/alloc.h:178",
            "FAB-NCCL-HOST-MEMORY",
            Severity::Error,
        ),
        (
            "Warning: remote FLID configured as zero even when endpoints are on different subnets, using dlid as fallback",
            b"transport/net_ib/connect.cc:260",
            "FAB-NCCL-PATH-FALLBACK",
            Severity::Warning,
        ),
        (
            "KV Convert to int : could not find value of '' in dictionary",
            b"graph/xml.h:151",
            "FAB-NCCL-TOPO-DETECT",
            Severity::Error,
        ),
        (
            "SHARP reduce_scatter failed",
            b"sharp_plugin.c:900",
            "FAB-NCCL-SHARP-INIT",
            Severity::Warning,
        ),
        (
            "[Proxy Service UDS] Get listenSock fd fails",
            b"proxy.cc:1900",
            "FAB-NCCL-PROXY",
            Severity::Error,
        ),
    ];
    for (msg, at, rule, severity) in cases {
        assert_eq!(
            classify(msg.as_bytes()).map(|c| c.rule),
            Some(*rule),
            "{msg}"
        );
        let d = diagnose_warn(msg.as_bytes(), Some(at));
        assert_eq!((d.rule, d.severity), (*rule, *severity), "{msg}");
    }
}

/// NCCL < 2.23 printed every async event of the NIC alike (src/transport/net_ib.cc): `port
/// active` after a link flap is not an error; a fatal event of 2.23+ is.
#[test]
fn async_events_are_told_apart() {
    let d = diagnose_warn(
        b"NET/IB : Got async event : port active",
        Some(b"net_ib.cc:95"),
    );
    assert_eq!(
        (d.rule, d.severity),
        ("FAB-NCCL-IB-EVENT", Severity::Warning)
    );
    let d = diagnose_warn(
        b"NET/IB : mlx5_0:1 Got non-fatal async event: client reregistration(17)",
        Some(b"common.cc:179"),
    );
    assert_eq!(
        (d.rule, d.severity),
        ("FAB-NCCL-IB-EVENT", Severity::Warning)
    );
    let d = diagnose_warn(
        b"NET/IB : mlx5_0:1 async fatal event: local catastrophic error",
        Some(b"common.cc:122"),
    );
    assert_eq!((d.rule, d.severity), ("FAB-NCCL-IB-ASYNC", Severity::Error));
}

/// Coverage as docs/logs.md reports it: per source and NCCL code area, the WARN formats
/// extracted, those the catalog classifies, and those `diagnose_warn` gives a cause for (the
/// catalog or the older heuristics before it). `cargo test -p fabrik-parse --lib coverage --
/// --nocapture` prints the table.
#[test]
fn coverage_table() {
    use std::collections::BTreeMap;
    let c = catalog();
    let mut rows: BTreeMap<(String, String), [usize; 3]> = BTreeMap::new();
    for m in c.messages.iter().filter(|m| m.kind == Kind::Warn) {
        let line = render_sample(&m.format);
        let d = diagnose_warn(line.as_bytes(), Some(m.file.as_bytes()));
        let v = [
            1,
            usize::from(m.class.is_some()),
            usize::from(d.rule != "FAB-NCCL-WARN"),
        ];
        let mut keys = vec![(m.source.to_string(), "all".to_string())];
        if m.source == "nccl" || m.source == "rccl" {
            keys.push((m.source.to_string(), m.area.to_string()));
        }
        keys.push(("all".to_string(), "all".to_string()));
        for k in keys {
            let e = rows.entry(k).or_default();
            for i in 0..3 {
                e[i] += v[i];
            }
        }
    }
    let total = rows[&("all".to_string(), "all".to_string())];
    assert_eq!(
        total[0],
        c.messages.iter().filter(|m| m.kind == Kind::Warn).count()
    );
    assert!(total[1] <= total[2] + total[0]);
    let mut out = String::from(
        "| source | area | WARN formats | classified by the catalog | given a cause by `fabrik logs` |\n| --- | --- | --- | --- | --- |\n",
    );
    for ((src, area), [n, cls, diag]) in &rows {
        out.push_str(&format!(
            "| {src} | {area} | {n} | {cls} ({:.0} %) | {diag} ({:.0} %) |\n",
            100.0 * *cls as f64 / *n as f64,
            100.0 * *diag as f64 / *n as f64
        ));
    }
    eprintln!("{out}");
}

/// RCCL's own messages take the classes their source gives; its copies of NCCL's formats take
/// NCCL's classes.
#[test]
fn rccl_messages_are_classified_from_rccl_sources() {
    /// A WARN message, its source location, and the rule and severity it must get.
    type Case<'a> = (&'a [u8], Option<&'a [u8]>, &'a str, Severity);
    let cases: [Case; 7] = [
        (
            b"MSCCL Internal Scheduler:  Unable to find algorithm files in /opt/rocm/share/rccl/msccl-algorithms. Please ensure that RCCL has been installed properly",
            None,
            "FAB-NCCL-RCCL-MSCCL",
            Severity::Error,
        ),
        (
            br#"Missing "iommu=pt" from kernel command line which can lead to system instablity or hang!"#,
            Some(b"/app/rccl/build/release/hipify/src/init.cc:213"),
            "FAB-NCCL-RCCL-IOMMU",
            Severity::Warning,
        ),
        (
            br#"Missing "HSA_FORCE_FINE_GRAIN_PCIE=1" from environment which can lead to low RCCL performance, system instablity or hang!"#,
            None,
            "FAB-NCCL-RCCL-HSA-ENV",
            Severity::Warning,
        ),
        (
            b"ROCm SMI init failure RSMI_STATUS_INIT_ERROR",
            None,
            "FAB-NCCL-RCCL-SMI",
            Severity::Error,
        ),
        (
            b"Add XGMI error : could not find GPU 1b000",
            None,
            "FAB-NCCL-TOPO-DETECT",
            Severity::Error,
        ),
        (
            b"RCCL_USE_AMD_SMI_LIB not set, but HIP_FABRIC_API is defined. Fabric support is only available through AMD SMI. Rerun with RCCL_USE_AMD_SMI_LIB=1 to enable AMD SMI and UALoE fabric support.",
            Some(b"src/misc/amdsmi_wrap.cc:214"),
            "FAB-NCCL-RCCL-NOTICE",
            Severity::Info,
        ),
        (
            b"NET/ANP: DATA ibv_post_send FAILED qpn=12 errno=12 (Cannot allocate memory)",
            None,
            "FAB-NCCL-IB-QP",
            Severity::Error,
        ),
    ];
    for (line, src, rule, sev) in cases {
        let d = diagnose_warn(line, src);
        assert_eq!(
            (d.rule, d.severity),
            (rule, sev),
            "{}",
            String::from_utf8_lossy(line)
        );
    }
    // A format RCCL shares with NCCL keeps NCCL's class through a `nccl:` claim.
    let c = catalog();
    let shared = c
        .messages
        .iter()
        .filter(|m| m.source == "rccl" && m.kind == Kind::Warn)
        .filter(|m| {
            c.messages
                .iter()
                .any(|n| n.source == "nccl" && n.format == m.format)
        })
        .find(|m| m.format.starts_with("RAS received unknown"));
    if let Some(m) = shared {
        assert_eq!(
            m.class.map(|i| c.classes[i].rule),
            Some("FAB-NCCL-RAS-THREAD")
        );
    }
}

/// The WARN formats NCCL 2.31 and 2.32 added (from their release libraries), one per group.
#[test]
fn nccl_2_31_and_2_32_messages_take_their_classes() {
    let cases: [(&[u8], &str, Severity); 8] = [
        (
            b"ncclCrypt: TLS connection requested without TLS support",
            "FAB-NCCL-TLS",
            Severity::Error,
        ),
        (
            b"RMA/Socket : receive socket from peer=3 closed while receiving payload",
            "FAB-NCCL-SOCKET",
            Severity::Error,
        ),
        (
            b"RMA/Socket : rma_socket requires GDRCopy; and GDR Copy is not available",
            "FAB-NCCL-GIN-UNSUPPORTED",
            Severity::Error,
        ),
        (
            b"[2] Failed to connect GDAKI QP: local_node_name=a local_gpu_id=0 local_nic_name=mlx5_0 remote_rank=1 remote_node_name=b remote_gpu_id=0 remote_nic_name=mlx5_0",
            "FAB-NCCL-IB-GDAKI",
            Severity::Error,
        ),
        (
            b"ncclSignal/ncclWaitSignal called before RMA is initialized. Register a symmetric window first, or set NCCL_RMA_EAGER_INIT=1 to initialize RMA at communicator creation.",
            "FAB-NCCL-API-MISUSE",
            Severity::Error,
        ),
        (
            b"Window registration capabilities disagree between rank 0 and rank 3",
            "FAB-NCCL-BOOTSTRAP-MISMATCH",
            Severity::Error,
        ),
        (
            b"NET/IB : mlx5_0:1 query_port failed during GID change (res=2)",
            "FAB-NCCL-IB-EVENT",
            Severity::Warning,
        ),
        (
            b"RMA/Socket : closeColl called with 2 queued sends for peer=1",
            "FAB-NCCL-INTERNAL-CHECK",
            Severity::Error,
        ),
    ];
    for (line, rule, sev) in cases {
        let d = diagnose_warn(line, None);
        assert_eq!(
            (d.rule, d.severity),
            (rule, sev),
            "{}",
            String::from_utf8_lossy(line)
        );
    }
}
