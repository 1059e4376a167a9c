//! Interface address listings: `ip -o addr` and the `fabrik/addresses.txt` of a snapshot.

/// `ip -o addr`: (iface, family `inet`/`inet6`, `addr/len`).
pub fn parse_ip_o_addr(raw: &str) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for line in raw.lines() {
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
    out
}

/// `fabrik/addresses.txt`, which a snapshot of a live machine holds: `IFNAME inet|inet6 ADDR/LEN`.
pub fn parse_addresses_file(raw: &str) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = raw
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
    out
}
