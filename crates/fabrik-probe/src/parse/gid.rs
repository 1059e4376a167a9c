//! GIDs as sysfs writes them (`ports/N/gids/I`, eight groups of four hex digits).

use std::net::Ipv6Addr;

/// The IPv4 address inside an IPv4-mapped GID (`0000:...:ffff:c0a8:0101`).
pub fn gid_ipv4(gid: &str) -> Option<String> {
    let hex: String = gid.chars().filter(|c| *c != ':').collect();
    if hex.len() != 32 {
        return None;
    }
    let bits = u128::from_str_radix(&hex, 16).ok()?;
    Ipv6Addr::from(bits)
        .to_ipv4_mapped()
        .map(|v4| v4.to_string())
}

/// Whether a GID is all zeros (an empty slot).
pub fn gid_is_zero(gid: &str) -> bool {
    gid.chars()
        .all(|c| c == '0' || c == ':' || c.is_whitespace())
}
