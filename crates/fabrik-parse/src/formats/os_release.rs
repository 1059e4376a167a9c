//! `/etc/os-release` (`KEY=value` lines).

/// A `KEY=value` file (`/etc/os-release`), quotes removed.
pub fn parse_os_release(raw: &str, key: &str) -> Option<String> {
    raw.lines().find_map(|line| {
        let (k, v) = line.split_once('=')?;
        (k.trim() == key).then(|| v.trim().trim_matches('"').trim_matches('\'').to_string())
    })
}
