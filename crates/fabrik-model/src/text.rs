//! Text from outside (a snapshot's `fw_ver`, a host name, a log line) shown to a person.
//!
//! A snapshot is someone else's file: an escape sequence in it would move the cursor, rewrite
//! the screen, set the window title or hide a line when printed raw. [`visible`] is the one
//! place that turns such characters into something a person can see; renderers for humans
//! (tables, findings text, Markdown) call it on every value that came from outside. JSON keeps
//! the exact text (serde escapes control characters there).

use std::borrow::Cow;

/// Whether a character must not reach a terminal raw: the C0 controls (tab and newline
/// included, since a value that breaks its line can forge the next one), DEL, the C1 controls
/// (U+0080..U+009F: a terminal may take U+009B as CSI), and the bidirectional overrides and
/// isolates that make text display in another order than it reads (U+202A..U+202E,
/// U+2066..U+2069, U+200E, U+200F, U+061C).
fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}'
        )
}

/// `text` with every character that a terminal would act on rather than show written as an
/// escape: `\x1b`, `\n`, `\t`, `\x7f`, `\u{9b}`, `\u{202e}`. Borrowed when nothing changes.
pub fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x80 && hidden(c) => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if hidden(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// [`visible`] for text that is meant to span lines (a message of several lines): newlines
/// and tabs stay, every other control character is escaped.
pub fn visible_lines(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| c != '\n' && c != '\t' && hidden(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for line in text.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        for part in body.split_inclusive('\t') {
            match part.strip_suffix('\t') {
                Some(p) => {
                    out.push_str(&visible(p));
                    out.push('\t');
                }
                None => out.push_str(&visible(part)),
            }
        }
        out.push_str(nl);
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_controls_are_shown_not_sent() {
        // An OSC window-title change, a CSI screen clear, a C1 CSI and a right-to-left override,
        // as they would sit in a hostile fw_ver or host name.
        assert_eq!(
            visible("16.35.2000\x1b]0;pwned\x07\x1b[2J"),
            "16.35.2000\\x1b]0;pwned\\x07\\x1b[2J"
        );
        assert_eq!(visible("node\u{9b}31m"), "node\\u{9b}31m");
        assert_eq!(visible("gpu\u{202e}1-edon"), "gpu\\u{202e}1-edon");
        assert_eq!(
            visible("a\nERROR forged\r\tx\x7f"),
            "a\\nERROR forged\\r\\tx\\x7f"
        );
        assert_eq!(visible("\0"), "\\x00");
    }

    #[test]
    fn ordinary_text_is_untouched_and_borrowed() {
        for s in [
            "mlx5_0",
            "400 Gb/sec (4X NDR)",
            "gpu-node-01.example",
            "ÄÖ 東京 ✓",
            "",
        ] {
            assert!(matches!(visible(s), Cow::Borrowed(t) if t == s));
        }
    }

    #[test]
    fn multi_line_text_keeps_its_lines() {
        assert_eq!(
            visible_lines("line one\x1b[1m\n\tline two\n"),
            "line one\\x1b[1m\n\tline two\n"
        );
        assert!(matches!(visible_lines("a\nb\tc"), Cow::Borrowed(_)));
    }
}
