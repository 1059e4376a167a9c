//! `/proc/modules`: loaded kernel modules.

use super::Format;

/// `/proc/modules`: `mlx5_ib 446464 0 - Live 0x0000000000000000` → name and reference count.
pub struct ProcModules;

impl Format for ProcModules {
    type Facts = Vec<(String, Option<u32>)>;
    const EXPECTED: &'static str = "/proc/modules";

    fn parse(text: &str) -> Option<Vec<(String, Option<u32>)>> {
        let mut out: Vec<(String, Option<u32>)> = text
            .lines()
            .filter_map(|line| {
                let mut w = line.split_whitespace();
                let name = w.next()?;
                let _size = w.next();
                let refs = w.next().and_then(|r| r.parse().ok());
                Some((name.to_string(), refs))
            })
            .collect();
        out.sort();
        out.dedup_by(|a, b| a.0 == b.0);
        Some(out)
    }
}
