//! Whether GPU memory runs far below host memory on the same link, and why it might: a pure
//! decision over the two bandwidth results, so that it is tested without a GPU.

use fabrik_model::BwRow;

use crate::mem::MemKind;

/// Below this fraction of host-memory bandwidth, GPU memory gets a warning. GPUDirect RDMA on a
/// healthy node runs within a few percent of host memory (the NIC moves the same bytes over the
/// same PCIe link); the known faults (no relaxed ordering in a VM, a GPU across a CPU socket,
/// ACS sending peer traffic through the root complex) cost 2× to 10×. 0.8 sits well clear of
/// both run-to-run noise and the faults.
pub const DEFAULT_WARN_BELOW: f64 = 0.8;

/// How a memory region was registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registration {
    /// `ibv_reg_dmabuf_mr` of an exported GPU range.
    DmaBuf,
    /// `ibv_reg_mr` of a GPU pointer, which works through nvidia_peermem.
    PeerMem,
    /// `ibv_reg_mr` of a host range (host or managed memory).
    Host,
}

impl Registration {
    /// The name used in reports (`dma_buf`, `peer_mem`, `host`).
    pub fn as_str(self) -> &'static str {
        match self {
            Registration::DmaBuf => "dma_buf",
            Registration::PeerMem => "peer_mem",
            Registration::Host => "host",
        }
    }
}

/// The lowest ratio of `mem`'s BW average to `host`'s over the sizes both measured; `None`
/// when no size matches or the host measured nothing.
pub fn ratio_to_host(mem: &[BwRow], host: &[BwRow]) -> Option<f64> {
    mem.iter()
        .filter_map(|m| {
            let h = host.iter().find(|h| h.bytes == m.bytes)?;
            (h.bw_avg_gbps > 0.0 && m.bw_avg_gbps.is_finite())
                .then(|| m.bw_avg_gbps / h.bw_avg_gbps)
        })
        .min_by(f64::total_cmp)
}

/// The warning for `kind` memory at `ratio` of host memory, or `None` when it is not far below
/// (`ratio >= warn_below`) or the memory is host memory. Names the likely causes, the ones this
/// run's own settings point at first.
pub fn warning(
    kind: MemKind,
    registration: Registration,
    relaxed_ordering: bool,
    ratio: f64,
    warn_below: f64,
) -> Option<String> {
    if kind == MemKind::Host || !ratio.is_finite() || ratio >= warn_below {
        return None;
    }
    let mut causes = Vec::new();
    if kind == MemKind::Managed {
        causes.push(
            "managed memory is registered as a host range, so the NIC reaches it through page \
             migration rather than GPUDirect RDMA (use --mem cuda)",
        );
    }
    if !relaxed_ordering {
        causes.push(
            "relaxed ordering is off: in a VM (SR-IOV VF) or behind a strictly ordering PCIe \
             switch, NIC writes to GPU memory need --relaxed-ordering (and relaxed ordering \
             enabled on the device)",
        );
    }
    if registration == Registration::PeerMem {
        causes.push(
            "registered through nvidia_peermem, not dma-buf; check that nvidia_peermem is the \
             loaded peer-memory module and the GPU driver matches it",
        );
    }
    causes.push(
        "the GPU and the NIC sit across a CPU socket or host bridge (SYS/NODE in `nvidia-smi topo \
         -m`; `fabrik inventory` shows the GPU-NIC path): use the NIC nearest the GPU",
    );
    causes.push(
        "PCIe ACS or the IOMMU sends peer-to-peer traffic through the root complex (ACS enabled on \
         the switch ports, iommu not in passthrough)",
    );
    Some(format!(
        "{} memory ran at {ratio:.2}x the bandwidth of host memory on this link (warning below \
         {warn_below:.2}x). Likely causes: {}",
        kind.as_str(),
        causes
            .iter()
            .enumerate()
            .map(|(i, c)| format!("({}) {c}", i + 1))
            .collect::<Vec<_>>()
            .join("; ")
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn row(bytes: u64, avg: f64) -> BwRow {
        BwRow {
            bytes,
            iterations: 100,
            bw_peak_gbps: avg,
            bw_avg_gbps: avg,
            msg_rate_mpps: 0.0,
        }
    }

    #[test]
    fn ratio_is_the_worst_matching_size() {
        let mem = [row(4096, 50.0), row(65536, 20.0), row(1 << 20, 90.0)];
        let host = [row(4096, 50.0), row(65536, 80.0)];
        assert_eq!(ratio_to_host(&mem, &host), Some(0.25));
        assert_eq!(ratio_to_host(&mem, &[row(8, 1.0)]), None);
        assert_eq!(ratio_to_host(&mem, &[row(4096, 0.0)]), None);
        assert_eq!(ratio_to_host(&[], &host), None);
    }

    #[test]
    fn warns_only_below_the_fraction() {
        let w = |ratio| warning(MemKind::Cuda, Registration::DmaBuf, true, ratio, 0.8);
        assert!(w(0.95).is_none());
        assert!(w(0.8).is_none());
        let text = w(0.4).unwrap();
        assert!(text.starts_with("cuda memory ran at 0.40x"), "{text}");
        assert!(text.contains("below 0.80x"), "{text}");
        assert!(text.contains("CPU socket"), "{text}");
        assert!(text.contains("ACS"), "{text}");
        // Relaxed ordering was on and dma-buf used: neither is blamed.
        assert!(!text.contains("--relaxed-ordering"), "{text}");
        assert!(!text.contains("nvidia_peermem"), "{text}");
        assert!(w(f64::NAN).is_none());
        assert!(warning(MemKind::Host, Registration::Host, false, 0.1, 0.8).is_none());
    }

    #[test]
    fn causes_follow_the_run_settings() {
        let text = warning(MemKind::Cuda, Registration::PeerMem, false, 0.3, 0.8).unwrap();
        let ro = text.find("--relaxed-ordering").unwrap();
        let socket = text.find("CPU socket").unwrap();
        assert!(
            ro < socket,
            "relaxed ordering, set by this run, comes first: {text}"
        );
        assert!(text.contains("nvidia_peermem"), "{text}");
        let text = warning(MemKind::Managed, Registration::Host, true, 0.3, 0.8).unwrap();
        assert!(text.starts_with("managed memory"), "{text}");
        assert!(text.contains("--mem cuda"), "{text}");
    }
}
