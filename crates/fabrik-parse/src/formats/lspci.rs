//! `lspci -vvv` captures: the ACS control bits of each function.

use std::collections::BTreeMap;

use super::normalize_bdf;

/// `lspci -vvv`: for each function that has an `ACSCtl:` line, the bits shown with `+`.
/// A device header is any line whose first word is a PCI address (`17:00.0` or `0000:17:00.0`,
/// indented or not, as pastes and `-D` print them); a line cut after `ACSCtl:` continues it.
pub fn parse_lspci_acs(raw: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    let mut continuing: Option<String> = None;
    let plus_bits = |text: &str| -> Vec<String> {
        text.split_whitespace()
            .filter_map(|w| w.strip_suffix('+'))
            .filter(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric()))
            .map(str::to_string)
            .collect()
    };
    for line in raw.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("ACSCtl:") {
            continuing = None;
            if let Some(addr) = &current {
                out.insert(addr.clone(), plus_bits(rest));
                continuing = Some(addr.clone());
            }
            continue;
        }
        let first = t.split_whitespace().next().unwrap_or("");
        if let Some(addr) = normalize_bdf(first) {
            current = Some(addr);
            continuing = None;
            continue;
        }
        match continuing.take() {
            // A wrapped ACSCtl line: only flag words, no `Key:` of its own.
            Some(addr)
                if !t.is_empty()
                    && !t.contains(':')
                    && t.split_whitespace()
                        .all(|w| w.ends_with('+') || w.ends_with('-')) =>
            {
                if let Some(bits) = out.get_mut(&addr) {
                    bits.extend(plus_bits(t));
                }
            }
            _ => {}
        }
    }
    out
}
