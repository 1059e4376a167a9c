//! `/proc/PID/limits`: the locked-memory limit.

use fabrik_model::MemlockLimit;

/// The `Max locked memory` line of `/proc/PID/limits`.
pub fn parse_memlock(raw: &str) -> Option<MemlockLimit> {
    let line = raw.lines().find(|l| l.starts_with("Max locked memory"))?;
    let rest = line.strip_prefix("Max locked memory")?;
    let mut w = rest.split_whitespace();
    let value = |s: Option<&str>| -> Option<Option<u64>> {
        match s? {
            "unlimited" => Some(None),
            n => n.parse().ok().map(Some),
        }
    };
    let soft = value(w.next())?;
    let hard = value(w.next())?;
    Some(MemlockLimit {
        soft_bytes: soft,
        hard_bytes: hard,
    })
}
