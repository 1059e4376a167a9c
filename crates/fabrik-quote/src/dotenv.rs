//! dotenv files (`NAME=VALUE` lines, as docker compose and python-dotenv read them).

use std::borrow::Cow;

use crate::Refused;

/// `s` as the value of a `NAME=VALUE` line: bare when plain, otherwise in double quotes with
/// `\`, `"`, `$`, newline, carriage return and tab escaped, so the value stays on its line and
/// no reader expands a variable in it. A NUL byte cannot be carried.
pub fn value(s: &str) -> Result<Cow<'_, str>, Refused> {
    if s.contains('\0') {
        return Err(Refused::new(
            s,
            "cannot be written in a dotenv file: it contains a NUL byte",
        ));
    }
    let plain = s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "=:,._/-+@%^".contains(c));
    if plain {
        return Ok(Cow::Borrowed(s));
    }
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '$' => out.push_str("\\$"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    Ok(Cow::Owned(out))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn values_stay_on_their_line() {
        assert_eq!(value("mlx5_0:1,mlx5_1:1").unwrap(), "mlx5_0:1,mlx5_1:1");
        assert_eq!(value("^docker,lo").unwrap(), "^docker,lo");
        assert_eq!(value("a b").unwrap(), "\"a b\"");
        assert_eq!(value("x\nY=1").unwrap(), "\"x\\nY=1\"");
        assert_eq!(value("$HOME\\\"").unwrap(), "\"\\$HOME\\\\\\\"\"");
        assert!(value("a\0").is_err());
    }
}
