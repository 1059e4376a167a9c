//! What an NCCL warning or error most likely means, and what fixes it. Keyed on the stable parts
//! of NCCL's own messages (and those of the plugins and of PyTorch that surface NCCL errors).

use fabrik_model::Severity;

/// One entry of the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Diagnosis {
    pub rule: &'static str,
    pub severity: Severity,
    pub cause: &'static str,
    pub fix: &'static str,
}

const BOOTSTRAP_NO_IF: Diagnosis = Diagnosis {
    rule: "FAB-NCCL-BOOTSTRAP-NOIF",
    severity: Severity::Error,
    cause: "NCCL found no usable IP interface for bootstrap: NCCL_SOCKET_IFNAME names an interface that does not exist or has no address on this host",
    fix: "Set NCCL_SOCKET_IFNAME to an interface that exists on every host (`ip -br addr`), or use an exclusion list such as `^lo,docker`; run `fabrik doctor` to list the interfaces",
};
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
    fix: "Check that both NICs can talk with `ib_write_bw` (`fabrik bench`), set NCCL_IB_GID_INDEX to the RoCE v2 GID of the routed interface, check PFC/ECN; raising NCCL_IB_TIMEOUT only helps a congested but working fabric",
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
const SOCKET_ERR: Diagnosis = Diagnosis {
    rule: "FAB-NCCL-SOCKET",
    severity: Severity::Error,
    cause: "A TCP connection between ranks broke (connection closed or reset by the peer): the peer process died, or a firewall or an interface mismatch cut the connection",
    fix: "Find the first rank that failed (its own log shows the real error); make NCCL_SOCKET_IFNAME pick the same network on every host and open the ports between hosts",
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
        if has(message, "error 12") || has(message, "status=12") {
            return IB_RETRY_EXCEEDED;
        }
        if has(message, "error 4,")
            || has(message, "status=4 ")
            || has(message, "error 10,")
            || has(message, "status=10 ")
        {
            return IB_LOCAL_PROT;
        }
        return IB_COMPLETION;
    }
    if has(src, "tcpx") || has(message, "tcpx") {
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
        || has(message, "Failed to execute operation")
    {
        return SOCKET_ERR;
    }
    if has_ci(message, "timeout") || has_ci(message, "timed out") {
        return TIMEOUT;
    }
    if has_ci(message, "abort") {
        return ABORT;
    }
    if has(message, "Cuda failure") || has(message, "CUDA") && has(message, "failed") {
        return CUDA;
    }
    // `Failed to open libnvidia-ml.so.1`, `NVML failure`, `nvmlInit() failed`
    if has(message, "libnvidia-ml") || has(message, "NVML") || has(message, "nvmlInit") {
        return NVML;
    }
    if has(message, "libibverbs") {
        return IB_NO_VERBS;
    }
    // NCCL's message catalog (crate::catalog), derived from NCCL's and the plugins' sources.
    if let Some(c) = crate::catalog::classify(message) {
        return Diagnosis {
            rule: c.rule,
            severity: c.severity,
            cause: c.means,
            fix: c.fix,
        };
    }
    GENERIC_WARN
}

/// Diagnoses a line that is not an NCCL line but reports an NCCL failure (PyTorch, Horovod, the
/// `Last error:` detail). `None` when the line is not such a report.
pub fn diagnose_program_line(line: &[u8]) -> Option<Diagnosis> {
    if has(line, "ncclSystemError") || has(line, "unhandled system error") {
        return Some(SYSTEM_ERROR);
    }
    if has(line, "ncclRemoteError") || has(line, "remote process exited") {
        return Some(REMOTE_ERROR);
    }
    if has(line, "ncclInternalError") {
        return Some(INTERNAL_ERROR);
    }
    if has(line, "ncclUnhandledCudaError") || has(line, "unhandled cuda error") {
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
    None
}

/// Diagnoses INFO lines that are really problems NCCL chose to print at INFO level.
pub fn diagnose_info(message: &[u8]) -> Option<Diagnosis> {
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
