//! Small text helpers shared by the table parsers.

/// Removes what pastes and launchers put before every line, in any nesting: Markdown and e-mail
/// quotes (`> `, `>> `), srun `--label` (`0: `, ` 12: `), mpirun `--tag-output`
/// (`[1,0]<stdout>:`), and `[rank0]:`/`[0] ` tags.
pub fn strip_launcher_prefix(line: &[u8]) -> &[u8] {
    let mut cur = line;
    // Each pass removes one layer; a few layers is all real pastes carry (a quoted srun log).
    for _ in 0..4 {
        let next = strip_one(cur);
        if next.len() == cur.len() {
            break;
        }
        cur = next;
    }
    cur
}

/// Removes only quote marks and srun labels, keeping an MPI rank tag for the caller to read.
pub fn strip_quotes_and_labels(line: &[u8]) -> &[u8] {
    let mut cur = line;
    for _ in 0..4 {
        let next = strip_quote_or_label(cur);
        if next.len() == cur.len() {
            break;
        }
        cur = next;
    }
    cur
}

fn strip_quote_or_label(line: &[u8]) -> &[u8] {
    let t = line.trim_ascii_start();
    if let Some(rest) = t.strip_prefix(b">") {
        return rest.strip_prefix(b" ").unwrap_or(rest);
    }
    // srun --label writes `%d: ` (right-aligned to the task count's width) before each line.
    let digits = t.iter().take_while(|b| b.is_ascii_digit()).count();
    if (1..=6).contains(&digits) && t.get(digits) == Some(&b':') {
        let rest = &t[digits + 1..];
        if rest.is_empty() || rest[0] == b' ' || rest[0] == b'\t' {
            return rest;
        }
    }
    line
}

fn strip_one(line: &[u8]) -> &[u8] {
    let stripped = strip_quote_or_label(line);
    if stripped.len() != line.len() {
        return stripped;
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_of_quotes_and_launchers() {
        let cases: &[(&[u8], &[u8])] = &[
            (b"> #  Rank  0", b"#  Rank  0"),
            (b">> x", b"x"),
            (b" 0:        8   2  float", b"        8   2  float"),
            (b"12: ---", b" ---"),
            (b"[1,0]<stdout>: 8 2", b" 8 2"),
            (b"> [1,3]<stderr>:Couldn't", b"Couldn't"),
            (b"> 0: #bytes", b" #bytes"),
            // A table row is not a label: no colon after its first number.
            (b"   1048576  262144  float", b"   1048576  262144  float"),
            // Neither is a time of day.
            (b"12:30:01 start", b"12:30:01 start"),
        ];
        for (input, want) in cases {
            assert_eq!(
                strip_launcher_prefix(input),
                *want,
                "{}",
                String::from_utf8_lossy(input)
            );
        }
    }
}
