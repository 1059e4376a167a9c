//! `/proc/PID/limits`: the locked-memory limit.

use fabrik_model::MemlockLimit;

/// The `Max locked memory` line of `/proc/PID/limits`.
pub fn parse_memlock(raw: &str) -> Option<MemlockLimit> {
    MemlockLimit::from_proc_limits(raw)
}
