//! Single-value sysfs attributes: decimal or hex numbers, `numa_node`.

use super::Format;

/// An unsigned decimal attribute (`mtu`, `current_link_width`, counters).
pub struct Decimal;

impl Format for Decimal {
    type Facts = u64;
    const EXPECTED: &'static str = "an unsigned decimal number";

    fn parse(text: &str) -> Option<u64> {
        text.trim().parse().ok()
    }
}

/// A numeric attribute that may be written in hex (`0x12`) or decimal.
pub struct DecimalOrHex;

impl Format for DecimalOrHex {
    type Facts = u64;
    const EXPECTED: &'static str = "an unsigned number, decimal or `0x` hex";

    fn parse(text: &str) -> Option<u64> {
        let t = text.trim();
        match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
            Some(hex) => u64::from_str_radix(hex, 16).ok(),
            None => t.parse().ok(),
        }
    }
}

/// `numa_node`: `-1` means the platform gave no NUMA information (`Some(None)`).
pub struct NumaNode;

impl Format for NumaNode {
    type Facts = Option<i32>;
    const EXPECTED: &'static str = "a NUMA node number or -1";

    fn parse(text: &str) -> Option<Option<i32>> {
        let v: i32 = text.trim().parse().ok()?;
        Some(if v < 0 { None } else { Some(v) })
    }
}
