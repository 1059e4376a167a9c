//! Interface address listings: `ip -o addr` and the `fabrik/addresses.txt` of a snapshot.

use super::{non_empty, Format};

/// One address: (interface, family `inet`/`inet6`, `addr/len`).
pub type Address = (String, String, String);

/// `ip -o addr` (iproute2 `ipaddress.c`, one line per address: `3: eth0    inet 10.0.0.5/24 ...`).
pub struct IpOAddr;

impl Format for IpOAddr {
    type Facts = Vec<Address>;
    const EXPECTED: &'static str = "`ip -o addr` lines (`2: eth0    inet 10.0.0.5/24 ...`)";

    fn parse(text: &str) -> Option<Vec<Address>> {
        let mut out = Vec::new();
        for line in text.lines() {
            let w: Vec<&str> = line.split_whitespace().collect();
            if w.len() < 4 || !w[0].ends_with(':') {
                continue;
            }
            let name = w[1].split('@').next().unwrap_or(w[1]).trim_end_matches(':');
            let family = w[2];
            if family != "inet" && family != "inet6" {
                continue;
            }
            if w[3].contains('/') {
                out.push((name.to_string(), family.to_string(), w[3].to_string()));
            }
        }
        out.sort();
        out.dedup();
        non_empty(out)
    }
}

/// `fabrik/addresses.txt`, which a snapshot of a live machine holds: `IFNAME inet|inet6 ADDR/LEN`.
pub struct AddressesFile;

impl Format for AddressesFile {
    type Facts = Vec<Address>;
    const EXPECTED: &'static str = "`IFNAME inet|inet6 ADDR/LEN` lines";

    fn parse(text: &str) -> Option<Vec<Address>> {
        let mut out: Vec<Address> = text
            .lines()
            .filter_map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                match w.as_slice() {
                    [name, fam @ ("inet" | "inet6"), cidr] if cidr.contains('/') => {
                        Some((name.to_string(), fam.to_string(), cidr.to_string()))
                    }
                    _ => None,
                }
            })
            .collect();
        out.sort();
        out.dedup();
        // A snapshot of a machine without addresses writes an empty file: that is a fact.
        Some(out)
    }
}
