//! `/proc/net/if_inet6`: IPv6 addresses per interface.

use std::net::Ipv6Addr;

use super::Format;

/// `/proc/net/if_inet6`: `fe80000000000000020c29fffe123456 02 40 20 80 eth0` → (iface, `addr/len`).
pub struct IfInet6;

impl Format for IfInet6 {
    type Facts = Vec<(String, String)>;
    const EXPECTED: &'static str = "/proc/net/if_inet6";

    fn parse(text: &str) -> Option<Vec<(String, String)>> {
        let mut out: Vec<(String, String)> = text
            .lines()
            .filter_map(|line| {
                let w: Vec<&str> = line.split_whitespace().collect();
                if w.len() < 6 || w[0].len() != 32 {
                    return None;
                }
                let bits = u128::from_str_radix(w[0], 16).ok()?;
                let plen = u8::from_str_radix(w[2], 16).ok().filter(|p| *p <= 128)?;
                Some((w[5].to_string(), format!("{}/{plen}", Ipv6Addr::from(bits))))
            })
            .collect();
        out.sort();
        out.dedup();
        Some(out)
    }
}
