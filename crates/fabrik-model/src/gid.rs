//! GIDs as text, the way the kernel writes them in `/sys/class/infiniband/DEV/ports/N/gids/I`:
//! eight groups of four hex digits (`fe80:0000:0000:0000:5054:00ff:fe12:3401`). The one place
//! that reads, writes and interprets that text; the probe, the GID policy and the bench use it.

use std::net::Ipv6Addr;

pub mod policy;

/// Parses a GID as sysfs writes it (8 groups of up to 4 hex digits; surrounding whitespace is
/// ignored). The compressed IPv6 form (`fe80::1`) is not what sysfs writes and is refused.
pub fn parse(s: &str) -> Option<[u8; 16]> {
    let groups: Vec<&str> = s.trim().split(':').collect();
    if groups.len() != 8 {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, g) in groups.iter().enumerate() {
        if g.is_empty() || g.len() > 4 {
            return None;
        }
        let v = u16::from_str_radix(g, 16).ok()?;
        out[2 * i..2 * i + 2].copy_from_slice(&v.to_be_bytes());
    }
    Some(out)
}

/// Formats a GID as sysfs does.
pub fn format(raw: &[u8; 16]) -> String {
    raw.chunks(2)
        .map(|c| format!("{:02x}{:02x}", c[0], c[1]))
        .collect::<Vec<_>>()
        .join(":")
}

/// The IPv4 address of an IPv4-mapped GID (`::ffff:a.b.c.d`), as RoCE v2 GIDs of an IPv4
/// address are.
pub fn ipv4(raw: &[u8; 16]) -> Option<String> {
    Ipv6Addr::from(*raw)
        .to_ipv4_mapped()
        .map(|v4| v4.to_string())
}

/// [`ipv4`] of a GID's text.
pub fn ipv4_of_text(gid: &str) -> Option<String> {
    parse(gid).as_ref().and_then(ipv4)
}

/// Whether a GID's text is all zeros: an empty slot of the table (the kernel lists every slot).
pub fn is_zero_text(gid: &str) -> bool {
    gid.chars()
        .all(|c| c == '0' || c == ':' || c.is_whitespace())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn sysfs_text_round_trips_and_maps_ipv4() {
        let t = "fe80:0000:0000:0000:5054:00ff:fe12:3401";
        assert_eq!(format(&parse(t).unwrap()), t);
        assert_eq!(parse("fe80::1"), None);
        assert_eq!(
            ipv4_of_text("0000:0000:0000:0000:0000:ffff:c0a8:6401\n").as_deref(),
            Some("192.168.100.1")
        );
        assert_eq!(
            ipv4_of_text("fe80:0000:0000:0000:0000:5eff:fe00:0001"),
            None
        );
        assert!(is_zero_text("0000:0000:0000:0000:0000:0000:0000:0000\n"));
        assert!(!is_zero_text("fe80:0000:0000:0000:0000:5eff:fe00:0001"));
    }
}
