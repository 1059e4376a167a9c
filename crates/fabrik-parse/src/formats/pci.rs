//! PCI addresses (`DDDD:BB:DD.F`) and a device's `current_link_speed`.

use super::Format;

/// `current_link_speed`/`max_link_speed`: `16.0 GT/s PCIe`, `8 GT/s`, `2.5 GT/s`, `Unknown`.
pub struct PciSpeed;

impl Format for PciSpeed {
    type Facts = f64;
    const EXPECTED: &'static str = "a PCIe speed (`16.0 GT/s PCIe`)";

    fn parse(text: &str) -> Option<f64> {
        let text = text.trim();
        if !text.contains("GT/s") {
            return None;
        }
        text.split_whitespace()
            .next()
            .and_then(|n| n.parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v > 0.0)
    }
}

/// Normalises an lspci address: `17:00.0` → `0000:17:00.0`.
pub fn normalize_bdf(raw: &str) -> Option<String> {
    let t = raw.trim();
    let full = if t.matches(':').count() == 1 {
        format!("0000:{t}")
    } else {
        t.to_string()
    };
    is_bdf(&full).then(|| full.to_ascii_lowercase())
}

/// `DDDD:BB:DD.F` (a longer domain, as VMD uses, is accepted).
pub fn is_bdf(s: &str) -> bool {
    let Some((rest, func)) = s.rsplit_once('.') else {
        return false;
    };
    let parts: Vec<&str> = rest.split(':').collect();
    if parts.len() != 3 || func.len() != 1 {
        return false;
    }
    let hex = |p: &str, n: usize| p.len() == n && p.chars().all(|c| c.is_ascii_hexdigit());
    parts[0].len() >= 4
        && parts[0].chars().all(|c| c.is_ascii_hexdigit())
        && hex(parts[1], 2)
        && hex(parts[2], 2)
        && func.chars().all(|c| c.is_digit(8))
}
