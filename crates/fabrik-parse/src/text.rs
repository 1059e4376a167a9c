//! Small text helpers shared by the table parsers.

/// Removes the prefix launchers put before every line: `[1,0]<stdout>:`, `[rank0]:`, `[0] `.
pub fn strip_launcher_prefix(line: &[u8]) -> &[u8] {
    let t = line.trim_ascii_start();
    if t.first() == Some(&b'[') {
        if let Some(close) = memchr::memchr(b']', t) {
            let rest = &t[close + 1..];
            let rest = rest
                .strip_prefix(b"<stdout>")
                .or_else(|| rest.strip_prefix(b"<stderr>"))
                .unwrap_or(rest);
            if let Some(r) = rest.strip_prefix(b":") {
                return r;
            }
        }
    }
    line
}

pub fn parse_f64(tok: &str) -> Option<f64> {
    let v: f64 = tok.parse().ok()?;
    v.is_finite().then_some(v)
}
