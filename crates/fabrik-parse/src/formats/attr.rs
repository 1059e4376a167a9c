//! Single-value sysfs attributes: decimal or hex numbers, `numa_node`.

/// An unsigned decimal attribute (`mtu`, `current_link_width`, counters).
pub fn parse_u64(raw: &str) -> Option<u64> {
    raw.trim().parse().ok()
}

/// A sysfs numeric attribute that may be written in hex (`0x12`) or decimal.
pub fn parse_int_auto(raw: &str) -> Option<u64> {
    let t = raw.trim();
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => t.parse().ok(),
    }
}

/// `numa_node`: `-1` means the platform gave no NUMA information.
pub fn parse_numa(raw: &str) -> Option<Option<i32>> {
    let v: i32 = raw.trim().parse().ok()?;
    Some(if v < 0 { None } else { Some(v) })
}
