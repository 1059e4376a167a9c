//! Values of `#SBATCH` lines.
//!
//! sbatch reads `#SBATCH` lines with its own small parser (src/sbatch/opt.c, `_get_argument`),
//! not with a shell: whitespace ends a value, `#` starts a comment, `\` escapes, and double
//! quotes group, with single quotes added in later releases. Rather than quote for one
//! release's reader, values are held to characters every release reads literally; anything
//! else is refused.

use crate::{chars, Refused};

/// `s` if every sbatch release reads it back as itself on an `#SBATCH --opt=VALUE` line.
pub fn value(s: &str) -> Result<&str, Refused> {
    if s.is_empty() {
        return Err(Refused::new(s, "cannot be an #SBATCH value: it is empty"));
    }
    match s.chars().find(|c| !literal(*c)) {
        None => Ok(s),
        Some(c) => Err(Refused::new(
            s,
            format!(
                "cannot be an #SBATCH value: it contains {} (sbatch reads letters, digits and _.+@%,:=/- as written)",
                chars::describe(c)
            ),
        )),
    }
}

fn literal(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_.+@%,:=/-".contains(c)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn only_literal_values_pass() {
        assert_eq!(value("train"), Ok("train"));
        assert_eq!(value("node-0,node-1"), Ok("node-0,node-1"));
        for bad in [
            "node-[0-1]",
            "",
            "a b",
            "a#b",
            "a\"b",
            "a'b",
            "a\\b",
            "a\nb",
            "a\u{85}b",
        ] {
            assert_eq!(value(bad).unwrap_err().value, bad);
        }
    }
}
