//! `/proc/net/route`: the IPv4 routing table.

use std::net::Ipv4Addr;

use super::Format;

/// One line of `/proc/net/route`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteEntry {
    /// The interface (`Iface`).
    pub iface: String,
    /// The destination network (`Destination`).
    pub destination: Ipv4Addr,
    /// The gateway, `0.0.0.0` for a directly connected network.
    pub gateway: Ipv4Addr,
    /// `RTF_*` flags (`Flags`, hex).
    pub flags: u32,
    /// The destination's mask (`Mask`).
    pub mask: Ipv4Addr,
}

impl RouteEntry {
    /// The mask's prefix length.
    pub fn prefix_len(&self) -> u32 {
        u32::from(self.mask).count_ones()
    }

    /// Whether `addr` is inside the destination network.
    pub fn contains(&self, addr: Ipv4Addr) -> bool {
        let m = u32::from(self.mask);
        u32::from(addr) & m == u32::from(self.destination) & m
    }
}

/// `/proc/net/route`: addresses are little-endian hex as the kernel stores them.
pub struct ProcRoute;

impl Format for ProcRoute {
    type Facts = Vec<RouteEntry>;
    const EXPECTED: &'static str = "/proc/net/route";

    fn parse(text: &str) -> Option<Vec<RouteEntry>> {
        Some(parse_proc_route(text))
    }
}

fn parse_proc_route(raw: &str) -> Vec<RouteEntry> {
    let hex_addr = |s: &str| {
        u32::from_str_radix(s, 16)
            .ok()
            .map(|v| Ipv4Addr::from(v.swap_bytes()))
    };
    raw.lines()
        .skip(1)
        .filter_map(|line| {
            let w: Vec<&str> = line.split_whitespace().collect();
            if w.len() < 8 {
                return None;
            }
            Some(RouteEntry {
                iface: w[0].to_string(),
                destination: hex_addr(w[1])?,
                gateway: hex_addr(w[2])?,
                flags: u32::from_str_radix(w[3], 16).ok()?,
                mask: hex_addr(w[7])?,
            })
        })
        .collect()
}
