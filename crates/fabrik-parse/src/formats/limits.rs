//! `/proc/PID/limits`: the locked-memory limit.

use fabrik_model::MemlockLimit;

use super::Format;

/// The `Max locked memory` line of `/proc/PID/limits`.
pub struct ProcLimits;

impl Format for ProcLimits {
    type Facts = MemlockLimit;
    const EXPECTED: &'static str = "/proc/PID/limits with a `Max locked memory` line";

    fn parse(text: &str) -> Option<MemlockLimit> {
        MemlockLimit::from_proc_limits(text)
    }
}
