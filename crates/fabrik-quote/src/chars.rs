//! Character classes shared by the languages: what ends a line somewhere, what a reader
//! refuses, what a person cannot see.

/// Characters some reader takes as a line break: LF, CR, VT and FF (POSIX `isspace` line
/// ends), NEL, LINE SEPARATOR and PARAGRAPH SEPARATOR (YAML 1.1 line breaks, and line ends for
/// many editors and terminals).
pub(crate) fn breaks_line(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{0b}' | '\u{0c}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// Characters that change how text around them is shown without being visible themselves:
/// Unicode's format controls (bidirectional overrides and isolates, zero-width characters, the
/// byte-order mark, interlinear annotation) and the noncharacters U+FFFE/U+FFFF.
pub(crate) fn invisible(c: char) -> bool {
    matches!(
        c,
        '\u{ad}'
            | '\u{600}'..='\u{605}'
            | '\u{61c}'
            | '\u{6dd}'
            | '\u{70f}'
            | '\u{180e}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206f}'
            | '\u{feff}'
            | '\u{fff9}'..='\u{fffb}'
            | '\u{fffe}'
            | '\u{ffff}'
    )
}

/// Control characters (C0, DEL, C1), line breaks of any kind, and invisible format characters:
/// none belongs in a name or a comment.
pub(crate) fn unsafe_in_text(c: char) -> bool {
    c.is_control() || breaks_line(c) || invisible(c)
}

/// `c` as an escape a reader of the generated file recognises as "this character was here":
/// `\n`, `\t`, `\u{1b}`.
pub(crate) fn escape(c: char, out: &mut String) {
    out.extend(c.escape_default());
}

/// How a message names a character: `a newline`, `a space`, `'$'`, `U+202E`.
pub(crate) fn describe(c: char) -> String {
    match c {
        '\n' => "a newline".into(),
        '\r' => "a carriage return".into(),
        '\t' => "a tab".into(),
        ' ' => "a space".into(),
        '\0' => "a NUL byte".into(),
        c if unsafe_in_text(c) => format!("the control character U+{:04X}", u32::from(c)),
        c if c.is_whitespace() => format!("the space character U+{:04X}", u32::from(c)),
        c => format!("{c:?}"),
    }
}
