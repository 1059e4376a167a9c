//! The one place this crate quotes text for the languages it writes: bash words and comments,
//! YAML scalars for Ansible. Strict on purpose: every word is single-quoted and control
//! characters are refused, never escaped into something a reader might still mis-split. Kept
//! private and small so it can be replaced by the project's shared quoting layer.

/// A value that cannot be written as data.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{}` holds a control character and cannot be written into {what}", .value.escape_debug())]
pub struct Refused {
    /// The value.
    pub value: String,
    /// Where it was going.
    pub what: &'static str,
}

fn refuse_controls(s: &str, what: &'static str) -> Result<(), Refused> {
    if s.chars().any(char::is_control) {
        return Err(Refused {
            value: s.to_string(),
            what,
        });
    }
    Ok(())
}

/// One bash word: `'...'` with each `'` written as `'\''`. Inside single quotes bash expands
/// nothing, so the word is its bytes.
pub fn word(s: &str) -> Result<String, Refused> {
    refuse_controls(s, "a shell script")?;
    Ok(format!("'{}'", s.replace('\'', r"'\''")))
}

/// Words joined by spaces, each quoted.
pub fn words<S: AsRef<str>>(argv: &[S]) -> Result<String, Refused> {
    let quoted: Result<Vec<String>, Refused> = argv.iter().map(|a| word(a.as_ref())).collect();
    Ok(quoted?.join(" "))
}

/// Text for a `#` comment line (bash or YAML): a comment ends at the line's end, so control
/// characters are shown escaped and the text stays on its line.
pub fn comment(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// A YAML scalar Ansible never templates: the `!unsafe` tag on a single-quoted scalar (each
/// `'` doubled), so `{{ }}` and `{% %}` in a value stay text.
pub fn yaml(s: &str) -> Result<String, Refused> {
    refuse_controls(s, "a playbook")?;
    Ok(format!("!unsafe '{}'", s.replace('\'', "''")))
}

/// A file's text for a playbook: an `!unsafe` double-quoted scalar whose newlines are written
/// `\n` and whose `"` and `\` are escaped; any other control character is refused.
pub fn yaml_text(s: &str) -> Result<String, Refused> {
    if s.chars().any(|c| c.is_control() && c != '\n') {
        return Err(Refused {
            value: s.to_string(),
            what: "a playbook",
        });
    }
    let mut out = String::from("!unsafe \"");
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('"');
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn words_are_single_quoted_and_controls_refused() {
        assert_eq!(word("eth0").unwrap(), "'eth0'");
        assert_eq!(word("it's").unwrap(), r"'it'\''s'");
        assert!(word("a\nb").is_err());
        assert!(word("a\u{1b}b").is_err());
        assert_eq!(yaml("a'b {{ x }}").unwrap(), "!unsafe 'a''b {{ x }}'");
        assert!(yaml("a\rb").is_err());
        assert_eq!(comment("x\ny"), "x\\u{a}y");
    }

    proptest::proptest! {
        /// Whatever the text, bash reads the quoted word back as exactly that text.
        #[test]
        fn bash_reads_back_the_word(s in "[^\\x00-\\x1f\\x7f-\\u{9f}]{0,40}") {
            let out = std::process::Command::new("bash")
                .arg("-c")
                .arg(format!("printf '%s' {}", word(&s).unwrap()))
                .output()
                .unwrap();
            proptest::prop_assert_eq!(String::from_utf8_lossy(&out.stdout), s);
        }
    }
}
