//! `/etc/os-release` (`KEY=value` lines).

use std::collections::BTreeMap;

use super::Format;

/// `/etc/os-release`: every `KEY=value`, quotes removed.
pub struct OsRelease;

impl Format for OsRelease {
    type Facts = BTreeMap<String, String>;
    const EXPECTED: &'static str = "`KEY=value` lines";

    fn parse(text: &str) -> Option<BTreeMap<String, String>> {
        let mut out = BTreeMap::new();
        for line in text.lines() {
            let Some((k, v)) = line.split_once('=') else {
                continue;
            };
            out.entry(k.trim().to_string())
                .or_insert_with(|| v.trim().trim_matches('"').trim_matches('\'').to_string());
        }
        Some(out)
    }
}
