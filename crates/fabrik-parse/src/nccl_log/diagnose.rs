//! What an NCCL warning or error most likely means, and what fixes it. Keyed on the stable parts
//! of NCCL's own messages (and those of the plugins and of PyTorch that surface NCCL errors).

use std::sync::LazyLock;

use fabrik_model::Severity;
use memchr::memmem;

/// One entry of the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Diagnosis {
    /// The rule id its findings carry.
    pub rule: &'static str,
    /// Its severity.
    pub severity: Severity,
    /// What the message means.
    pub cause: &'static str,
    /// What fixes it.
    pub fix: &'static str,
}

const BOOTSTRAP_NO_IF: Diagnosis = Diagnosis {
    rule: "FAB-NCCL-BOOTSTRAP-NOIF",
    severity: Severity::Error,
    cause: "NCCL found no usable IP interface for bootstrap: NCCL_SOCKET_IFNAME names an interface that does not exist or has no address on this host",
    fix: "Set NCCL_SOCKET_IFNAME to an interface that exists on every host (`ip -br addr`), or use an exclusion list such as `^lo,docker`; run `fabrik doctor` to list the interfaces",
};
const ADDRESS_FAMILY: Diagnosis = Diagnosis {
    rule: "FAB-NCCL-ADDRESS-FAMILY",
    severity: Severity::Error,
    cause: "NCCL was handed a peer address that is neither IPv4 nor IPv6 (misc/socket.cc `connecting to address with family N is neither AF_INET nor AF_INET6`): the connection information the ranks exchanged was garbage, which happens when ranks disagree on what they are doing (ncclSend/ncclRecv not paired inside one group, mismatched collectives, different NCCL builds across ranks) rather than from the network",
    fix: "Check that every rank calls the same NCCL operations in the same order (pair sends and receives inside ncclGroupStart/End), and that every rank runs the same NCCL; if NCCL_SOCKET_IFNAME is set, check the interface exists on every host",
};

/// `neither AF_INET nor AF_INET6` names a missing bootstrap interface only when
/// NCCL_SOCKET_IFNAME points somewhere (fixture 12: `eth2` on a host without it); otherwise the
/// exchanged address itself was garbage.
pub(super) fn refine(d: Diagnosis, message: &[u8], ifname_set: bool) -> Diagnosis {
    if d.rule == BOOTSTRAP_NO_IF.rule && has(message, "neither AF_INET") && !ifname_set {
        ADDRESS_FAMILY
    } else {
        d
    }
}

const REG_MR: Diagnosis = Diagnosis {
    rule: "FAB-NCCL-IB-REGMR",
    severity: Severity::Error,
    cause: "Memory registration with the RDMA NIC failed: locked-memory limit too low, GPU memory not registrable (nvidia-peermem not loaded and no DMA-BUF), or PCIe relaxed ordering / IOMMU refusing the mapping",
    fix: "Set `ulimit -l unlimited` (containers: `--ulimit memlock=-1`), load nvidia_peermem or use a DMA-BUF capable driver and kernel; in VMs try NCCL_IB_PCI_RELAXED_ORDERING=0",
};
const IB_RETRY_EXCEEDED: Diagnosis = Diagnosis {
    rule: "FAB-NCCL-IB-TIMEOUT",
    severity: Severity::Error,
    cause: "RDMA transport retries exceeded (IBV_WC_RETRY_EXC_ERR, status 12 / vendor err 129): the peer NIC is unreachable over RDMA (wrong GID index or RoCE routing, link down, ACL) or the fabric drops packets under congestion",
    fix: "Check that both NICs can talk with `ib_write_bw` (`fabrik bench`); on RoCE set NCCL_IB_GID_INDEX to the RoCE v2 GID that carries the routed IPv4 address, the same kind on both hosts (`show_gids`; often 3, the confirmed fix of NVIDIA/nccl#426); check PFC/ECN; raising NCCL_IB_TIMEOUT only helps a congested but working fabric",
};
const IB_LOCAL_PROT: Diagnosis = Diagnosis {
    rule: "FAB-NCCL-IB-PROTECTION",
    severity: Severity::Error,
    cause: "RDMA local protection or access error (status 4 or 10 / vendor err 81): the NIC could not access registered memory, usually GPUDirect RDMA through a broken path (ACS enabled on a PCIe switch, IOMMU, stale nvidia-peermem)",
    fix: "Disable ACS on the PCIe switches between GPU and NIC (bare metal), check the IOMMU mode, reload nvidia_peermem; NCCL_NET_GDR_LEVEL=LOC confirms by disabling GDR",
};
const IB_COMPLETION: Diagnosis = Diagnosis {
    rule: "FAB-NCCL-IB-COMPLETION",
    severity: Severity::Error,
    cause: "An RDMA work request completed with an error: the connection to the named peer broke",
    fix: "Look at the first rank that failed and at the NIC counters of both hosts (`fabrik doctor`); run `ib_write_bw` between the two hosts",
};
const IB_SETUP: Diagnosis = Diagnosis {
    rule: "FAB-NCCL-IB-SETUP",
    severity: Severity::Error,
    cause: "Setting up the RDMA connection to a peer failed (queue pair, completion queue, protection domain, device or GID): ibv_modify_qp to RTR/RTS is refused or times out when the peer's address is not reachable over RDMA (wrong or different NCCL_IB_GID_INDEX, RoCE v1 vs v2 or IPv4 vs IPv6 GIDs on the two hosts, different subnets without routing, MTU mismatch); ibv_create_qp/ibv_create_cq/ibv_alloc_pd fail when the NIC is out of resources or the locked-memory limit is low; a device that cannot be opened is missing from the container",
    fix: "Compare the GID tables of both hosts (`show_gids`, `fabrik doctor`) and set NCCL_IB_GID_INDEX to the RoCE v2 GID with an IPv4 address on both; check that the two NICs reach each other (`ib_write_bw -x <gid>`); set `ulimit -l unlimited`; pass /dev/infiniband into the container",
};
const PROXY_OP: Diagnosis = Diagnosis {
    rule: "FAB-NCCL-PROXY-OP",
    severity: Severity::Error,
    cause: "NCCL's proxy service thread failed an operation it ran for a rank (Connect: setting up a network connection to a peer; Setup, Register, ...), with the ncclResult code shown: the reason is in the WARN and `-> N` lines of this process just before it (an RDMA set-up failure, a peer that died, a memory registration)",
    fix: "Read the first WARN of this process before this line and the first failing process of the job; this line only reports that the operation failed",
};
const SOCKET_ERR: Diagnosis = Diagnosis {
    rule: "FAB-NCCL-SOCKET",
    severity: Severity::Error,
    cause: "A TCP connection between ranks broke (connection closed or reset by the peer): the peer process died, or a firewall or an interface mismatch cut the connection",
    fix: "Find the first rank that failed (its own log shows the real error); make NCCL_SOCKET_IFNAME pick the same network on every host and open the ports between hosts",
};
const CONNECT_UNREACHABLE: Diagnosis = Diagnosis {
    rule: "FAB-NCCL-CONNECT-UNREACHABLE",
    severity: Severity::Error,
    cause: "NCCL gave up connecting to another rank's address: the connection timed out or there was no route (a peer that died refuses the connection instead). The address that rank advertised is not reachable from here: NAT, a container or WSL address, a firewall that drops the ports, or an interface that does not route between the hosts",
    fix: "Make NCCL_SOCKET_IFNAME pick an interface whose address every host can reach (`ip -br addr`, ping it from the peer) and open the ports between hosts",
};
const TIMEOUT: Diagnosis = Diagnosis {
    rule: "FAB-NCCL-TIMEOUT",
    severity: Severity::Error,
    cause: "A collective or a connection timed out: a rank stopped progressing (crash, hang, or a network path that silently drops traffic)",
    fix: "Find the rank that did not arrive; check connectivity between every pair of hosts (`fabrik bench --all-pairs`)",
};
const ABORT: Diagnosis = Diagnosis {
    rule: "FAB-NCCL-ABORT",
    severity: Severity::Error,
    cause: "The communicator was aborted, usually after another error or a timeout on some rank",
    fix: "Look for the first error before the abort, on every rank",
};
const OFI: Diagnosis = Diagnosis {
    rule: "FAB-NCCL-OFI",
    severity: Severity::Error,
    cause: "The AWS OFI plugin (libfabric/EFA) failed: EFA provider missing or not exposed to the process, or libfabric and the plugin do not match",
    fix: "Check `fi_info -p efa` on the host and in the container (expose /dev/infiniband/uverbs*), use the EFA installer's libfabric and aws-ofi-nccl, set FI_PROVIDER=efa",
};
const SHARP: Diagnosis = Diagnosis {
    rule: "FAB-NCCL-SHARP",
    severity: Severity::Warning,
    cause: "SHARP (CollNet) setup failed: the aggregation manager refused or ran out of trees/resources",
    fix: "Check sharp_am on the subnet manager host and the job's SHARP quota; NCCL_COLLNET_ENABLE=0 runs without in-network reduction",
};
const TCPX: Diagnosis = Diagnosis {
    rule: "FAB-NCCL-TCPX",
    severity: Severity::Warning,
    cause: "The GPUDirect-TCPX plugin timed out on a data NIC (rx ctrl timeout): receive-datapath manager not running or the plugin and driver versions do not match",
    fix: "Check the tcpx receive-datapath-manager (rxdm) container on every node, NCCL_GPUDIRECTTCPX_* interface lists, and pin a plugin version that matches the GPU driver",
};
const SYSTEM_ERROR: Diagnosis = Diagnosis {
    rule: "FAB-NCCL-SYSTEM-ERROR",
    severity: Severity::Error,
    cause: "A system call failed inside NCCL (socket, ibverbs, shared memory); the WARN before it names the call",
    fix: "Read the preceding NCCL WARN; common causes are a small /dev/shm in containers (`--shm-size` or `--ipc=host`), memlock limits, or a missing interface",
};
const INTERNAL_ERROR: Diagnosis = Diagnosis {
    rule: "FAB-NCCL-INTERNAL-ERROR",
    severity: Severity::Error,
    cause: "NCCL reported an internal error; the `Last error:` line or the preceding WARN names the cause",
    fix: "Read the last error; rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET to see where it stopped",
};
const REMOTE_ERROR: Diagnosis = Diagnosis {
    rule: "FAB-NCCL-REMOTE-ERROR",
    severity: Severity::Error,
    cause: "A remote rank exited or the network failed (ncclRemoteError)",
    fix: "Find the rank that failed first; check NIC counters and the link between the hosts",
};
const SHM: Diagnosis = Diagnosis {
    rule: "FAB-NCCL-SHM",
    severity: Severity::Error,
    cause: "Creating a shared-memory segment failed: /dev/shm is too small (64 MB by default in Docker)",
    fix: "Run the container with `--shm-size=1g` or `--ipc=host`",
};
const CUDA: Diagnosis = Diagnosis {
    rule: "FAB-NCCL-CUDA",
    severity: Severity::Error,
    cause: "A CUDA call failed inside NCCL",
    fix:
        "Check the driver and CUDA versions and the GPU state (`nvidia-smi`, Xid errors in `dmesg`)",
};
const NVML: Diagnosis = Diagnosis {
    rule: "FAB-NCCL-NVML",
    severity: Severity::Error,
    cause: "NCCL could not load or use NVML (libnvidia-ml.so.1) to read the GPU topology: the driver's user-space libraries are missing or do not match the kernel driver",
    fix: "Install the driver's user-space libraries matching the kernel module (in containers: the NVIDIA container toolkit mounts them); `nvidia-smi` must work in the same environment",
};
const IB_NO_VERBS: Diagnosis = Diagnosis {
    rule: "FAB-NCCL-NO-VERBS",
    severity: Severity::Info,
    cause: "libibverbs could not be loaded, so NCCL cannot use InfiniBand or RoCE",
    fix: "Install rdma-core (libibverbs1) in the image, or ignore on hosts without RDMA NICs",
};
const PLUGIN_SYMBOL: Diagnosis = Diagnosis {
    rule: "FAB-NCCL-PLUGIN-UNUSABLE",
    severity: Severity::Warning,
    cause: "A network plugin library was found but exports no plugin API this NCCL accepts, so NCCL ignored it",
    fix: "Install the plugin build that matches this NCCL version (TCPX/FasTrak on GCP, aws-ofi-nccl on AWS, nccl-rdma-sharp-plugins on IB), or set NCCL_NET_PLUGIN=none if it is not wanted",
};
const INVALID_USAGE: Diagnosis = Diagnosis {
    rule: "FAB-NCCL-INVALID-USAGE",
    severity: Severity::Error,
    cause: "NCCL reported invalid usage or an invalid argument (ncclInvalidUsage 5, ncclInvalidArgument 4): the program called NCCL wrongly (two ranks on one GPU, mismatched collectives, a bad communicator), not a network fault",
    fix: "Run with NCCL_DEBUG=WARN to see the message; check the rank-to-GPU mapping (LOCAL_RANK) and that every rank calls the same collectives in the same order",
};
const CRASH: Diagnosis = Diagnosis {
    rule: "FAB-NCCL-CRASH",
    severity: Severity::Error,
    cause: "A process died on a fatal signal (segmentation fault, abort, bus error): UCX's `Caught signal 11 (Segmentation fault ...)`, Open MPI's `*** Process received signal ***`; the backtrace after it says where (libnccl.so frames: inside NCCL or a plugin it loaded), and every peer of this process fails after it",
    fix: "Read the backtrace: frames in libnccl.so or libnccl-net.so point at NCCL or its plugin (upgrade, or try without the plugin: NCCL_NET_PLUGIN=none), frames in libucs/libucp at UCX (UCX_* settings, its version); get a core dump (`ulimit -c unlimited`) for a bug report",
};
const RESULT_CHAIN: Diagnosis = Diagnosis {
    rule: "FAB-NCCL-RESULT",
    severity: Severity::Error,
    cause: "An NCCL call failed and the error propagated up to the caller (the `file.cc:N -> code` lines); the first line of the chain is where it started and the code names the kind of failure",
    fix: "Read the WARN lines just before the chain, if any; rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET for more context",
};
const GENERIC_WARN: Diagnosis = Diagnosis {
    rule: "FAB-NCCL-WARN",
    severity: Severity::Warning,
    cause: "NCCL printed a warning",
    fix: "Read the message; rerun with NCCL_DEBUG_SUBSYS=INIT,NET,ENV for context",
};

fn has(hay: &[u8], needle: &str) -> bool {
    memchr::memmem::find(hay, needle.as_bytes()).is_some()
}

fn has_ci(hay: &[u8], needle: &str) -> bool {
    let n = needle.as_bytes();
    hay.windows(n.len()).any(|w| w.eq_ignore_ascii_case(n))
}

/// Diagnoses an NCCL `WARN` message (and its source location, which names the plugin).
pub fn diagnose_warn(message: &[u8], source: Option<&[u8]>) -> Diagnosis {
    // NCCL's RAS subsystem runs beside the collectives and NCCL discards its failures (ras.cc:
    // `(void)rasClientInitSocket();`): a WARN printed from src/ras/ (`ras/client_support.cc:181
    // NCCL WARN Call to bind failed: Address already in use`, another job's RAS holding the
    // client port) is RAS's own trouble, whatever the generic macro text says, never the job's
    // failure.
    if source.is_some_and(from_ras) {
        if let Some(d) = class_diagnosis(RAS_THREAD_RULE) {
            return d;
        }
    }
    // RCCL 2.27+ (ROCm/rocm-systems projects/rccl/src/misc/amdsmi_wrap.cc, newer than the
    // RCCL releases of data/rccl-messages.tsv) says at WARN level that it reads the GPUs
    // without AMD SMI, then goes on with its internal reader: a notice.
    if has(message, "RCCL_USE_AMD_SMI_LIB not set") {
        if let Some(d) = class_diagnosis(RCCL_NOTICE_RULE) {
            return d;
        }
    }
    // The file name only: build paths carry any word (`.../all_os_profiles/src/...` has "ofi").
    let src = source.unwrap_or(b"");
    let src = src.rsplit(|b| *b == b'/').next().unwrap_or(src);
    if has(message, "no socket interface found")
        || has(message, "No usable listening interface")
        || has(message, "neither AF_INET")
    {
        return BOOTSTRAP_NO_IF;
    }
    if has(message, "ibv_reg_mr") || has(message, "ibv_reg_dmabuf_mr") {
        return REG_MR;
    }
    if has(message, "Got completion") {
        return match completion_status(message) {
            // IBV_WC_RETRY_EXC_ERR
            Some(12) => IB_RETRY_EXCEEDED,
            // IBV_WC_LOC_PROT_ERR, IBV_WC_REM_ACCESS_ERR
            Some(4) | Some(10) => IB_LOCAL_PROT,
            _ => IB_COMPLETION,
        };
    }
    // Before the socket and timeout keys: `Call to ibv_modify_qp failed with 110 Connection
    // timed out, on dev mlx5_0:1, curr state INIT, next state RTR, ...` is an RDMA set-up
    // failure, not a collective timeout.
    if [
        "ibv_modify_qp",
        "ibv_create_qp",
        "ibv_create_cq",
        "ibv_alloc_pd",
        "ibv_query_gid",
        "ibv_open_device",
        "ibv_query_port",
        "Unable to open device",
        "connect incompatible devices",
        "async fatal event on QP",
        "GID table changed",
    ]
    .iter()
    .any(|k| has(message, k))
    {
        return IB_SETUP;
    }
    // misc/socket.cc retries ETIMEDOUT and EHOSTUNREACH and warns when the retries ran out;
    // NCCL 2.2's socket.h warns `Call to connect failed : Connection timed out` at once.
    if has(message, "onnect")
        && (has(message, "Connection timed out")
            || has(message, "No route to host")
            || has(message, "Network is unreachable"))
    {
        return CONNECT_UNREACHABLE;
    }
    // `[Proxy Service N] Failed to execute operation Connect from rank N, retcode 3` and
    // `[Service thread] Error encountered progressing operation=Connect, res=3, closing
    // connection` (proxy.cc) report a failed proxy operation, not a broken TCP connection.
    if has(message, "Failed to execute operation")
        || has(message, "Error encountered progressing operation")
    {
        return PROXY_OP;
    }
    let cuda_failure =
        has(message, "Cuda failure") || has(message, "CUDA") && has(message, "failed");
    // NVLS's driver calls (cuMulticastCreate, cuMulticastAddDevice, cuMulticastBindMem ...) fail
    // through CUCHECK's bare `Cuda failure N '...'`; the file that printed it (transport/nvls.cc)
    // says it was the NVLS set-up, whose fix is the fabric manager, not the CUDA stack.
    if cuda_failure && src.starts_with(b"nvls.") {
        if let Some(d) = class_diagnosis(NVLS_RULE) {
            return d;
        }
    }
    // NCCL's message catalog (crate::catalog), derived from NCCL's and the plugins' sources:
    // a message's own class wins over the word keys below (plugin names, SHARP, sockets,
    // time-outs, CUDA): `Failed to bind NVLink SHARP (NVLS) Multicast memory ... : CUDA error
    // 401 '...'` is an NVLS failure, neither CollNet's SHARP nor a CUDA one.
    if let Some(c) = crate::catalog::classify(message) {
        // GPUDirect-TCPX's slowness report `%p:%p, nic %d, %s, %s %s ctrl timeout cnt %lu, nanos
        // %lu` (net_tcpx.cc tcpxCommProgress): a receive (`rx`) or send waited longer than the
        // threshold for its peer's control message and keeps polling (cnt) without progress. The
        // format is shared with passing slowness, so the words say which: a stalled connection
        // holds every collective that crosses it.
        if c.rule == TCPX_RULE && has(message, " ctrl timeout cnt ") {
            if let Some(d) = class_diagnosis(TCPX_STALL_RULE) {
                return d;
            }
        }
        return diagnosis_of(c);
    }
    if has(src, "tcpx") || has(message, "tcpx") || has(message, "TCPX") {
        return TCPX;
    }
    if has(message, "NET/OFI") || has(src, "ofi") {
        return OFI;
    }
    if has(message, "SHARP") || has(src, "sharp") {
        return SHARP;
    }
    if has(message, "shm_open") || has(message, "/dev/shm") || has(message, "shared memory segment")
    {
        return SHM;
    }
    if has(message, "Connection closed by")
        || has(message, "Connection reset")
        || has(message, "Connection refused")
        || has(message, "Broken pipe")
        || has(message, "Call to recv")
        || has(message, "Call to send")
        || has(message, "Call to connect")
        || has(message, "socketProgress")
    {
        return SOCKET_ERR;
    }
    if has_ci(message, "timeout") || has_ci(message, "timed out") {
        return TIMEOUT;
    }
    if has_ci(message, "abort") {
        return ABORT;
    }
    if cuda_failure {
        return CUDA;
    }
    // `Failed to open libnvidia-ml.so.1`, `NVML failure`, `nvmlInit() failed`
    if has(message, "libnvidia-ml") || has(message, "NVML") || has(message, "nvmlInit") {
        return NVML;
    }
    if has(message, "libibverbs") {
        return IB_NO_VERBS;
    }
    GENERIC_WARN
}

/// The class of NVLS set-up failures in `data/nccl-classes.txt`.
const NVLS_RULE: &str = "FAB-NCCL-NVLS";
/// RAS's own errors.
const RAS_THREAD_RULE: &str = "FAB-NCCL-RAS-THREAD";
/// GPUDirect-TCPX slowness reports, and the stalled connections among them.
const TCPX_RULE: &str = "FAB-NCCL-TCPX";
const TCPX_STALL_RULE: &str = "FAB-NCCL-TCPX-STALL";
/// RCCL's notices printed at warning level.
const RCCL_NOTICE_RULE: &str = "FAB-NCCL-RCCL-NOTICE";

/// A WARN's source location in NCCL's src/ras/ (`ras/client_support.cc:181`, or a build path
/// ending so): the directory before the file name is `ras`.
fn from_ras(source: &[u8]) -> bool {
    let mut parts = source.rsplit(|b| *b == b'/');
    let file = parts.next().unwrap_or(b"");
    parts.next() == Some(&b"ras"[..]) && memchr::memchr(b'.', file).is_some()
}

fn diagnosis_of(c: &'static crate::catalog::Class) -> Diagnosis {
    Diagnosis {
        rule: c.rule,
        severity: c.severity,
        cause: c.means,
        fix: c.fix,
    }
}

/// The diagnosis of a WARN text the catalog classifies; `None` for any other text.
pub(super) fn catalog_diagnosis(message: &[u8]) -> Option<Diagnosis> {
    crate::catalog::classify(message).map(diagnosis_of)
}

/// The diagnosis a catalog class gives, by its rule id.
fn class_diagnosis(rule: &str) -> Option<Diagnosis> {
    crate::catalog::classes()
        .iter()
        .find(|c| c.rule == rule)
        .map(diagnosis_of)
}

/// The work-completion status of a `Got completion` warning: `with error 12,` (NCCL <= 2.2x),
/// `status=12 ` and `status=transport retry counter exceeded(12)` (2.28: `status=%s(%d)`).
fn completion_status(message: &[u8]) -> Option<u32> {
    let digits = |s: &[u8]| -> Option<u32> {
        let end = s
            .iter()
            .position(|b| !b.is_ascii_digit())
            .unwrap_or(s.len());
        std::str::from_utf8(&s[..end]).ok()?.parse().ok()
    };
    if let Some(p) = memchr::memmem::find(message, b"with error ") {
        return digits(&message[p + 11..]);
    }
    let p = memchr::memmem::find(message, b"status=")?;
    let rest = &message[p + 7..];
    if rest.first().is_some_and(u8::is_ascii_digit) {
        return digits(rest);
    }
    // `status=<text>(<code>)`: the text has spaces, so look for the parenthesis before `opcode`.
    let end = memchr::memmem::find(rest, b" opcode").unwrap_or(rest.len());
    let open = memchr::memrchr(b'(', &rest[..end])?;
    digits(&rest[open + 1..])
}

pub use fabrik_model::nccl::result_name;

/// The ncclResult code a line carries: `retcode 3` and `res=3` (proxy.cc), `file.cc:N -> 3`
/// (NCCLCHECK's trace), `NCCL error ... 3` is read by name elsewhere.
pub fn result_code(message: &[u8]) -> Option<u32> {
    let digits = |s: &[u8]| -> Option<u32> {
        let s = s.trim_ascii_start();
        let end = s
            .iter()
            .position(|b| !b.is_ascii_digit())
            .unwrap_or(s.len());
        if end == 0 || end > 3 {
            return None;
        }
        std::str::from_utf8(&s[..end]).ok()?.parse().ok()
    };
    for key in [&b"retcode "[..], b"res=", b"-> "] {
        if let Some(p) = memchr::memmem::rfind(message, key) {
            if let Some(c) = digits(&message[p + key.len()..]) {
                return Some(c);
            }
        }
    }
    None
}

/// `transport/net_ib.cc:1012 -> 3`, `group.cc:75 -> 2 [Async thread]`, `misc/socket.cc:535 ->
/// 6 (Connection refused)`: NCCLCHECK's trace of a failed call. Returns the site and the code.
pub fn chain_site(message: &[u8]) -> Option<(&[u8], u32)> {
    // The site has no space, so the arrow follows the first space: one memchr, not a substring
    // searcher built for each of the (many) INFO lines this is asked about.
    let arrow = memchr::memchr(b' ', message)?;
    if !message[arrow..].starts_with(b" -> ") {
        return None;
    }
    let site = &message[..arrow];
    let colon = memchr::memrchr(b':', site)?;
    let file = &site[..colon];
    if file.is_empty()
        || file.contains(&b' ')
        || ![&b".cc"[..], b".c", b".h", b".cpp", b".cu"]
            .iter()
            .any(|e| file.ends_with(e))
        || !site[colon + 1..].iter().all(u8::is_ascii_digit)
        || site.len() == colon + 1
    {
        return None;
    }
    let code = result_code(message)?;
    Some((site, code))
}

/// Rules that report what followed a failure elsewhere (a peer that died, an abort, a watchdog,
/// a proxy operation that failed): never the root cause of a job while another rule fired.
pub fn is_consequence(rule: &str) -> bool {
    matches!(
        rule,
        "FAB-NCCL-REMOTE-ERROR"
            | "FAB-NCCL-ABORT"
            | "FAB-NCCL-TIMEOUT"
            | "FAB-NCCL-SOCKET"
            | "FAB-NCCL-PROXY-OP"
    )
}

/// Rules that only say "something failed" without naming what: a root cause only when nothing
/// more specific fired.
pub fn is_generic(rule: &str) -> bool {
    matches!(
        rule,
        "FAB-NCCL-RESULT"
            | "FAB-NCCL-SYSTEM-ERROR"
            | "FAB-NCCL-INTERNAL-ERROR"
            | "FAB-NCCL-IB-COMPLETION"
            | "FAB-NCCL-WARN"
    )
}

/// The diagnosis of a `-> N` chain no WARN explains: ncclRemoteError (6) says a peer died or
/// the network failed, so it is that consequence; every other code is a generic failure.
pub(super) fn result_chain(code: u32) -> Diagnosis {
    match code {
        6 => REMOTE_ERROR,
        1 => CUDA,
        _ => RESULT_CHAIN,
    }
}

/// Whether a program line holds a word without which none of the reports below can match.
/// Training programs mention NCCL on every line (`ProcessGroupNCCL.cpp:2035] step 100 loss
/// 0.2`); the words are searched with finders built once, so those lines cost a few searches
/// instead of a substring searcher built for each of the twenty keys.
fn program_gate(line: &[u8]) -> bool {
    static WORDS: LazyLock<[memmem::Finder<'static>; 6]> = LazyLock::new(|| {
        [
            // ncclSystemError, unhandled system error, NCCL error, internal error ...
            memmem::Finder::new(b"rror"),
            // ncclInvalidUsage, invalid argument ...
            memmem::Finder::new(b"nvalid"),
            memmem::Finder::new(b"remote process"),
            // `Test CUDA failure`
            memmem::Finder::new(b"failure"),
            memmem::Finder::new(b"aborted"),
            // `Caught signal `, `*** Process received signal ***`
            memmem::Finder::new(b"signal"),
        ]
    });
    // The watchdog's and ProcessGroupNCCL's time-outs are matched in any case.
    let timeout = || {
        memchr::memchr2_iter(b't', b'T', line).any(|i| {
            line.get(i..i + 7)
                .is_some_and(|w| w.eq_ignore_ascii_case(b"timeout"))
        })
    };
    WORDS.iter().any(|f| f.find(line).is_some()) || timeout()
}

/// Diagnoses a line that is not an NCCL line but reports an NCCL failure (PyTorch, Horovod, the
/// `Last error:` detail). `None` when the line is not such a report.
pub fn diagnose_program_line(line: &[u8]) -> Option<Diagnosis> {
    if !program_gate(line) {
        return None;
    }
    if has(line, "ncclSystemError") || has(line, "unhandled system error") {
        return Some(SYSTEM_ERROR);
    }
    if has(line, "ncclRemoteError") || has(line, "remote process exited") {
        return Some(REMOTE_ERROR);
    }
    let nccl_error = has(line, "NCCL error") || has(line, "NCCL Error");
    if has(line, "ncclInternalError")
        || has(line, "internal error - please report")
        || nccl_error && has(line, "internal error")
    {
        return Some(INTERNAL_ERROR);
    }
    if has(line, "ncclInvalidUsage")
        || has(line, "ncclInvalidArgument")
        || has(line, "invalid usage (run with NCCL_DEBUG=WARN")
        || has(line, "invalid argument (run with NCCL_DEBUG=WARN")
        || nccl_error && (has(line, "invalid usage") || has(line, "invalid argument"))
    {
        return Some(INVALID_USAGE);
    }
    // nccl-tests: `node: Test CUDA failure common.cu:297 'an illegal memory access ...'`.
    if has(line, "ncclUnhandledCudaError")
        || has(line, "unhandled cuda error")
        || has(line, "Test CUDA failure")
    {
        return Some(CUDA);
    }
    if has(line, "Watchdog caught collective operation timeout")
        || has(line, "ProcessGroupNCCL") && has_ci(line, "timeout")
    {
        return Some(TIMEOUT);
    }
    if has(line, "NCCL communicator was aborted") {
        return Some(ABORT);
    }
    if has(line, "Caught signal ") || has(line, "*** Process received signal ***") {
        return Some(CRASH);
    }
    None
}

const CONNECT_RETRY: Diagnosis = Diagnosis {
    rule: "FAB-NCCL-IFNAME-UNREACHABLE",
    severity: Severity::Warning,
    cause: "NCCL could not connect to a peer's address and is retrying (misc/socket.cc `connect to ... returned ..., retrying`): the address it advertised is not reachable from here (NAT, a container or WSL address, a firewall, an interface that does not route between the hosts); when the retries run out the job fails or hangs",
    fix: "Make NCCL_SOCKET_IFNAME pick an interface whose address every host can reach (`ip -br addr`, ping it from the peer), open the ports between hosts, and avoid NATed container or WSL addresses",
};

/// Diagnoses INFO lines that are really problems NCCL chose to print at INFO level.
pub fn diagnose_info(message: &[u8]) -> Option<Diagnosis> {
    // Every INFO line is asked; one prebuilt searcher and two prefix tests turn away the
    // ordinary ones before any other search.
    static RETRYING: LazyLock<memmem::Finder<'static>> =
        LazyLock::new(|| memmem::Finder::new(b"retrying"));
    let nvm =
        message.starts_with(b"NET/Plugin") || message.starts_with(b"Failed to open libibverbs");
    if !nvm && RETRYING.find(message).is_none() {
        return None;
    }
    // `socketPollConnect: connect to 172.17.194.153<43893> returned No route to host, retrying
    // (1/34) after sleep for 100 msec` (2.2x); refused connections during start-up are normal
    // while the peer is not listening yet, so only unreachable routes and time-outs count.
    if has(message, "connect to ")
        && has(message, "retrying")
        && (has(message, "No route to host")
            || has(message, "Network is unreachable")
            || has(message, "timed out"))
    {
        return Some(CONNECT_RETRY);
    }
    if message.starts_with(b"Failed to open libibverbs") {
        return Some(IB_NO_VERBS);
    }
    if message.starts_with(b"NET/Plugin")
        && has(message, "Failed to find ncclNetPlugin symbol")
        && has(message, "not supported")
    {
        return Some(PLUGIN_SYMBOL);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ras_warnings_are_ras_own() {
        let d = diagnose_warn(
            b"Call to bind failed: Address already in use",
            Some(b"ras/client_support.cc:181"),
        );
        assert_eq!(d.rule, "FAB-NCCL-RAS-THREAD");
        assert_eq!(d.severity, Severity::Warning);
        // The same macro text elsewhere is a failed system call.
        let d = diagnose_warn(
            b"Call to bind failed: Address already in use",
            Some(b"misc/socket.cc:379"),
        );
        assert_ne!(d.rule, "FAB-NCCL-RAS-THREAD");
        assert!(from_ras(b"/build/nccl/src/ras/ras.cc:391"));
        assert!(!from_ras(b"collectives.cc:12"));
        assert!(!from_ras(b"graph/ras"));
    }

    #[test]
    fn tcpx_control_timeouts_are_stalls() {
        let d = diagnose_warn(
            b"0xadca8062b70:0xadca805d0f0, nic 0, enp12s0, 172.16.0.11<39187><-172.16.0.95<46723> rx rx ctrl timeout cnt 7331502, nanos 10000000585",
            Some(b"tcpxResult_t tcpxCommProgress(tcpxComm*):1231"),
        );
        assert_eq!(d.rule, "FAB-NCCL-TCPX-STALL");
        assert_eq!(d.severity, Severity::Error);
    }

    #[test]
    fn completion_errors_are_told_apart() {
        let m = b"NET/IB : Got completion from peer 10.0.0.1<1> with status=12 opcode=0 len=0 vendor err 129 (Recv)";
        assert_eq!(diagnose_warn(m, None).rule, "FAB-NCCL-IB-TIMEOUT");
        let m = b"NET/IB : Got completion from peer 10.0.35.1<49189> with error 4, opcode 5327, len 5327, vendor err 81 (Send)";
        assert_eq!(diagnose_warn(m, None).rule, "FAB-NCCL-IB-PROTECTION");
        let m = b"NET/IB : Got completion with error 12, opcode 0, len 0, vendor err 129";
        assert_eq!(diagnose_warn(m, None).rule, "FAB-NCCL-IB-TIMEOUT");
    }

    #[test]
    fn catalogue_entries() {
        assert_eq!(
            diagnose_warn(b"Bootstrap : no socket interface found", None).rule,
            "FAB-NCCL-BOOTSTRAP-NOIF"
        );
        assert_eq!(
            diagnose_warn(
                b"Call to ibv_reg_mr_iova2 failed with error Invalid argument",
                None
            )
            .rule,
            "FAB-NCCL-IB-REGMR"
        );
        assert_eq!(
            diagnose_warn(
                b"0xad, nic 0, enp12s0, rx ctrl timeout",
                Some(b"tcpxCommProgress(tcpxComm*):1231")
            )
            .rule,
            "FAB-NCCL-TCPX"
        );
        assert_eq!(diagnose_warn(b"something new", None).rule, "FAB-NCCL-WARN");
        assert_eq!(
            diagnose_program_line(b"[rank0]: ncclInternalError: Internal check failed.")
                .map(|d| d.rule),
            Some("FAB-NCCL-INTERNAL-ERROR")
        );
        assert!(diagnose_program_line(b"loss = 0.2, step = 100").is_none());
    }
}

#[cfg(test)]
mod catalog_tests;
