//! POSIX shell (bash, dash, sh): words, variable names, comments and here-documents.

use std::borrow::Cow;

use crate::{chars, Refused};

/// `s` as one shell word that expands to exactly `s`: bare when every character is plain,
/// otherwise in single quotes (inside which no shell interprets anything), a `'` written as
/// `'\''`. Only a NUL byte cannot be carried: no shell word or argument can hold one.
///
/// Hand-written rather than shlex: shlex also quotes `=` and `,`, which would turn
/// `--nnodes=2` and `eth1,eth2` into noise. `=` is plain here, so a word must not be the first
/// of a command (where `a=b` is an assignment); fabrik's commands always start with a literal
/// program name.
pub fn word(s: &str) -> Result<Cow<'_, str>, Refused> {
    if s.contains('\0') {
        return Err(Refused::new(
            s,
            "cannot be written for a shell: it contains a NUL byte",
        ));
    }
    if s.is_empty() {
        return Ok(Cow::Borrowed("''"));
    }
    if s.chars().all(plain) {
        Ok(Cow::Borrowed(s))
    } else {
        Ok(Cow::Owned(format!("'{}'", s.replace('\'', "'\\''"))))
    }
}

/// Characters that mean nothing to a shell in any position after the command name.
fn plain(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c)
}

/// Words joined by spaces, each through [`word`].
pub fn words<'a>(ws: impl IntoIterator<Item = &'a str>) -> Result<String, Refused> {
    let mut out = String::new();
    for (i, w) in ws.into_iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(&word(w)?);
    }
    Ok(out)
}

/// `s` if it is a shell variable name (`[A-Za-z_][A-Za-z0-9_]*`, POSIX's "name"): the only
/// names `export NAME=...` and `-e NAME` can carry. A process environment can hold other
/// names (`env 'A;B=1' ...`); they can never be exported by a shell and are refused.
pub fn var_name(s: &str) -> Result<&str, Refused> {
    let mut cs = s.chars();
    let ok = cs
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && cs.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(s)
    } else {
        Err(Refused::new(
            s,
            "is not a shell variable name (letters, digits and '_', not starting with a digit)",
        ))
    }
}

/// `s` as the text of one comment line (what follows `# `): line breaks of every kind, other
/// control characters and invisible format characters are written as escapes (`\n`,
/// `\u{1b}`, `\u{202e}`), so the comment ends where the line does and shows what it holds.
pub fn comment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if chars::unsafe_in_text(c) {
            chars::escape(c, &mut out);
        } else {
            out.push(c);
        }
    }
    out
}

/// A here-document that writes `body` verbatim: `<<'TAG'`, the body, then `TAG` on a line of
/// its own. The tag is quoted, so nothing in the body is expanded; a body line equal to the tag
/// would end the document early, so the tag is lengthened until no line equals it. The body
/// must end with a newline (a last line without one would swallow the tag) and hold no NUL.
/// Returns the text from `<<` on, to follow a command (`cat > hostfile `).
pub fn heredoc(tag: &str, body: &str) -> Result<String, Refused> {
    if body.contains('\0') {
        return Err(Refused::new(
            body,
            "cannot be written in a here-document: it contains a NUL byte",
        ));
    }
    if !body.is_empty() && !body.ends_with('\n') {
        return Err(Refused::new(
            body,
            "cannot be written in a here-document: it does not end with a newline",
        ));
    }
    let mut tag: String = tag
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    if tag.is_empty() {
        tag.push_str("EOF");
    }
    while body.lines().any(|l| l == tag) {
        tag.push('_');
    }
    Ok(format!("<<'{tag}'\n{body}{tag}\n"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn words_are_bare_only_when_plain() {
        assert_eq!(word("--nnodes=2").unwrap(), "--nnodes=2");
        assert_eq!(word("eth1,eth2").unwrap(), "eth1,eth2");
        assert_eq!(word("").unwrap(), "''");
        assert_eq!(word("a b").unwrap(), "'a b'");
        assert_eq!(word("it's").unwrap(), "'it'\\''s'");
        assert_eq!(word("$(id)").unwrap(), "'$(id)'");
        assert_eq!(word("~root").unwrap(), "'~root'");
        assert_eq!(word("x\ny").unwrap(), "'x\ny'");
        assert!(word("x\0y").is_err());
        assert_eq!(words(["a", "b c"]).unwrap(), "a 'b c'");
    }

    #[test]
    fn variable_names_follow_posix() {
        for ok in ["NCCL_IB_HCA", "_x", "A1"] {
            assert_eq!(var_name(ok), Ok(ok));
        }
        for bad in ["", "1A", "A-B", "A;B", "A B", "A\nB", "Ä"] {
            assert_eq!(var_name(bad).unwrap_err().value, bad);
        }
    }

    #[test]
    fn comments_stay_on_one_line() {
        assert_eq!(comment("a\nb\rc"), "a\\nb\\rc");
        assert_eq!(comment("x\u{2028}y\u{85}z"), "x\\u{2028}y\\u{85}z");
        assert_eq!(comment("\u{1b}]0;t\u{7}"), "\\u{1b}]0;t\\u{7}");
        assert_eq!(comment("≥ 90 % of eth0"), "≥ 90 % of eth0");
        assert_eq!(comment("\u{202e}txt"), "\\u{202e}txt");
    }

    #[test]
    fn heredoc_tags_never_end_the_body_early() {
        assert_eq!(
            heredoc("HOSTFILE", "a slots=8\n").unwrap(),
            "<<'HOSTFILE'\na slots=8\nHOSTFILE\n"
        );
        let doc = heredoc("EOF", "EOF\nEOF_\nx\n").unwrap();
        assert!(doc.starts_with("<<'EOF__'\n"), "{doc}");
        assert!(doc.ends_with("\nEOF__\n"), "{doc}");
        assert!(heredoc("EOF", "no newline").is_err());
        assert!(heredoc("EOF", "nul\0\n").is_err());
        assert_eq!(heredoc("EOF", "").unwrap(), "<<'EOF'\nEOF\n");
    }

    proptest::proptest! {
        #[test]
        fn quoted_words_never_hold_an_unquoted_special(s in "\\PC{0,16}|[ -~\\n]{0,16}") {
            let q = word(&s).unwrap();
            if !q.starts_with('\'') {
                proptest::prop_assert!(q.chars().all(plain) || q == "''");
            }
        }

        #[test]
        fn comments_are_one_line(s in "\\PC{0,16}|[\\x00-\\x7f\\u{85}\\u{2028}\\u{2029}]{0,16}") {
            let c = comment(&s);
            proptest::prop_assert!(!c.chars().any(crate::chars::unsafe_in_text), "{c:?}");
        }
    }
}
