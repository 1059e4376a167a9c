//! `/proc/net/fib_trie`: the machine's local IPv4 addresses.

use std::net::Ipv4Addr;

use super::Format;

/// Local IPv4 addresses from `/proc/net/fib_trie`: the `/32 host LOCAL` leaves.
pub struct FibTrieLocal;

impl Format for FibTrieLocal {
    type Facts = Vec<Ipv4Addr>;
    const EXPECTED: &'static str = "/proc/net/fib_trie";

    fn parse(text: &str) -> Option<Vec<Ipv4Addr>> {
        let mut out = Vec::new();
        let mut last_leaf: Option<Ipv4Addr> = None;
        for line in text.lines() {
            let t = line.trim();
            if let Some(addr) = t.strip_prefix("|-- ") {
                last_leaf = addr.trim().parse().ok();
                continue;
            }
            if t.starts_with('/') {
                let words: Vec<&str> = t.split_whitespace().collect();
                if words.len() >= 3
                    && words[0] == "/32"
                    && words[1] == "host"
                    && words[2] == "LOCAL"
                {
                    if let Some(a) = last_leaf {
                        out.push(a);
                    }
                }
            } else if !t.starts_with('|') {
                last_leaf = None;
            }
        }
        out.sort();
        out.dedup();
        Some(out)
    }
}
