//! What can go wrong with RDMA verbs, each worded so that the user knows what to do next.

use std::io;

/// Everything that can fail in the verbs layer and the RDMA benchmarks.
#[derive(Debug, thiserror::Error)]
pub enum VerbsError {
    /// libibverbs could not be opened.
    #[error(
        "cannot load {name}: {reason} (install rdma-core: `apt install libibverbs1 \
         ibverbs-providers` or `dnf install libibverbs`)"
    )]
    LibraryNotFound {
        /// The name given to dlopen.
        name: String,
        /// dlerror's text.
        reason: String,
    },
    /// libibverbs lacks a call fabrik needs.
    #[error("{library} has no symbol `{symbol}`: rdma-core is too old")]
    MissingSymbol {
        /// The library's name.
        library: String,
        /// The missing symbol.
        symbol: &'static str,
    },
    /// `ibv_get_device_list` returned no device.
    #[error(
        "no RDMA device found (is a driver such as mlx5_ib or rdma_rxe loaded, ib_uverbs \
         loaded, and /dev/infiniband present in this container?)"
    )]
    NoDevices,
    /// No device has the name asked for.
    #[error("RDMA device `{name}` not found; available: {}", list(.available))]
    DeviceNotFound {
        /// The name asked for.
        name: String,
        /// The devices there are.
        available: Vec<String>,
    },
    /// The device has no such port.
    #[error("{device} has {count} port(s); port {port} does not exist")]
    PortNotFound {
        /// The device.
        device: String,
        /// The port asked for (from 1).
        port: u8,
        /// How many ports the device has.
        count: u8,
    },
    /// The port is not ACTIVE, so no QP can use it.
    #[error("{device} port {port} is {state}, not ACTIVE")]
    PortNotActive {
        /// The device.
        device: String,
        /// The port.
        port: u8,
        /// Its state's name (`DOWN`, `INIT`...).
        state: String,
    },
    /// The GID index lies outside the port's GID table.
    #[error(
        "GID index {index} is out of range on {device} port {port} (table size {len}); \
         `fabrik inventory` lists the valid GIDs"
    )]
    GidIndexOutOfRange {
        /// The device.
        device: String,
        /// The port.
        port: u8,
        /// The index asked for.
        index: u32,
        /// The table's size.
        len: u32,
    },
    /// The GID table slot asked for holds no GID.
    #[error(
        "GID index {index} on {device} port {port} is empty (all zeros); pick a populated \
         one: `fabrik inventory` lists them"
    )]
    GidEmpty {
        /// The device.
        device: String,
        /// The port.
        port: u8,
        /// The empty slot.
        index: u32,
    },
    /// Memory registration failed and the locked-memory limit is the likely cause.
    #[error(
        "cannot register {bytes} bytes of memory: {err}; the locked-memory limit is {}: \
         raise it (`ulimit -l unlimited`, or LimitMEMLOCK=infinity / `--ulimit memlock=-1` \
         in containers)",
        limit_text(*.limit)
    )]
    MemlockTooLow {
        /// The size of the region, in bytes.
        bytes: usize,
        /// The soft `RLIMIT_MEMLOCK` in bytes; `None` when unlimited or unknown.
        limit: Option<u64>,
        /// Shown in the message, so not a `source` (an error chain would print it twice).
        err: io::Error,
    },
    /// A verbs call returned an error.
    #[error("{call} failed: {err}")]
    Call {
        /// The call, e.g. `ibv_modify_qp(RTR)`.
        call: &'static str,
        /// The errno it set. Shown in the message, so not a `source`.
        err: io::Error,
    },
    /// A work completion came back with an error status.
    #[error(
        "{op} completion failed on QP {qp_num}: {status_str} (status {status}, vendor error \
         {vendor_err:#x}){}",
        completion_hint(*.status)
    )]
    Completion {
        /// The operation (`RDMA write`, `send`...).
        op: String,
        /// The local QP number.
        qp_num: u32,
        /// The `ibv_wc_status`.
        status: i32,
        /// `ibv_wc_status_str`'s text for it.
        status_str: String,
        /// The provider's vendor error code.
        vendor_err: u32,
    },
    /// A wait on the peer or on completions passed its deadline.
    #[error(
        "timed out after {secs:.1} s waiting for {what} (is the peer alive and reachable over \
         RDMA?)"
    )]
    Timeout {
        /// What was waited for.
        what: String,
        /// The deadline, in seconds.
        secs: f64,
    },
    /// The peer's control connection closed or failed while this end waited on it.
    #[error(
        "the peer {peer} {what} while this end waited for {waiting}: it was killed, crashed or \
         lost its network"
    )]
    PeerGone {
        /// The peer's address.
        peer: String,
        /// What happened to its connection (`closed the control connection`...).
        what: String,
        /// What this end was waiting for.
        waiting: String,
    },
    /// The peer wrote on the control channel in the middle of a data phase, where it only does so
    /// to report a failure; the caller reads that message.
    #[error("the peer interrupted the data phase with a control message")]
    PeerSpoke,
    /// A request this device, build or peer cannot serve, in words.
    #[error("{0}")]
    Unsupported(String),
    /// Options that contradict each other, in words (what to change).
    #[error("{0}")]
    Options(String),
    /// Allocating or registering GPU memory failed.
    #[error("GPU memory: {0}")]
    Cuda(String),
    /// The control channel failed or the peer broke the protocol.
    #[error("control channel: {0}")]
    Control(String),
}

fn list(v: &[String]) -> String {
    if v.is_empty() {
        "none".to_string()
    } else {
        v.join(", ")
    }
}

fn limit_text(limit: Option<u64>) -> String {
    match limit {
        None => "unknown".to_string(),
        Some(u64::MAX) => "unlimited".to_string(),
        Some(b) => format!("{} KiB", b / 1024),
    }
}

fn completion_hint(status: i32) -> &'static str {
    match status {
        // IBV_WC_RETRY_EXC_ERR, IBV_WC_RNR_RETRY_EXC_ERR
        12 | 13 => ": the peer stopped answering (killed, or unreachable)",
        // IBV_WC_REM_ACCESS_ERR
        10 => ": the peer refused the remote key or address",
        // IBV_WC_WR_FLUSH_ERR
        5 => ": the queue pair had already failed",
        _ => "",
    }
}

impl From<fabrik_gpu::dl::DlError> for VerbsError {
    fn from(e: fabrik_gpu::dl::DlError) -> Self {
        match e {
            fabrik_gpu::dl::DlError::Open { lib, reason } => {
                VerbsError::LibraryNotFound { name: lib, reason }
            }
            fabrik_gpu::dl::DlError::Symbol { lib, symbol } => VerbsError::MissingSymbol {
                library: lib,
                symbol,
            },
        }
    }
}

impl VerbsError {
    pub(crate) fn call(call: &'static str) -> Self {
        VerbsError::Call {
            call,
            err: io::Error::last_os_error(),
        }
    }

    /// For verbs that return an errno value rather than setting `errno`.
    pub(crate) fn call_rc(call: &'static str, rc: i32) -> Self {
        VerbsError::Call {
            call,
            err: io::Error::from_raw_os_error(rc.abs()),
        }
    }
}

/// The locked-memory soft limit in bytes from `/proc/self/limits` text (`Max locked memory`),
/// `u64::MAX` for unlimited.
pub fn parse_memlock_limit(limits: &str) -> Option<u64> {
    fabrik_model::MemlockLimit::from_proc_limits(limits).map(|l| l.soft_bytes.unwrap_or(u64::MAX))
}

/// This process's locked-memory limit, when `/proc` tells it.
pub fn memlock_limit() -> Option<u64> {
    std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|t| parse_memlock_limit(&t))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn memlock_from_proc_limits() {
        let text = "Limit                     Soft Limit           Hard Limit           Units     \n\
                    Max cpu time              unlimited            unlimited            seconds   \n\
                    Max locked memory         65536                65536                bytes     \n";
        assert_eq!(parse_memlock_limit(text), Some(65536));
        let text = "Max locked memory         unlimited            unlimited            bytes\n";
        assert_eq!(parse_memlock_limit(text), Some(u64::MAX));
        assert_eq!(parse_memlock_limit("Max open files 1024 1024 files"), None);
    }

    #[test]
    fn memlock_error_says_ulimit() {
        let e = VerbsError::MemlockTooLow {
            bytes: 1 << 20,
            limit: Some(65536),
            err: io::Error::from_raw_os_error(12),
        };
        let msg = e.to_string();
        assert!(msg.contains("ulimit -l"), "{msg}");
        assert!(msg.contains("64 KiB"), "{msg}");
    }

    #[test]
    fn retry_exceeded_names_the_peer() {
        let e = VerbsError::Completion {
            op: "write".into(),
            qp_num: 17,
            status: 12,
            status_str: "transport retry counter exceeded".into(),
            vendor_err: 0,
        };
        assert!(e.to_string().contains("peer stopped answering"));
    }

    /// `{:#}` of an error through anyhow, as the CLI prints it: its message, then each source's.
    fn chain(e: VerbsError) -> String {
        format!("{:#}", anyhow::Error::new(e))
    }

    #[test]
    fn the_chain_names_the_os_error_once() {
        let os = io::Error::from_raw_os_error(12);
        let text = os.to_string();
        let e = VerbsError::MemlockTooLow {
            bytes: 1 << 20,
            limit: Some(65536),
            err: io::Error::from_raw_os_error(12),
        };
        let c = chain(e);
        assert_eq!(c.matches(&text).count(), 1, "{c}");
        let e = VerbsError::Call {
            call: "ibv_reg_mr",
            err: os,
        };
        assert_eq!(chain(e), format!("ibv_reg_mr failed: {text}"));
    }

    proptest::proptest! {
        #[test]
        fn memlock_parser_never_panics(s in ".*") {
            let _ = parse_memlock_limit(&s);
        }
    }
}
