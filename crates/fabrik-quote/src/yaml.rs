//! YAML scalars, comments and documents that YAML 1.1 and YAML 1.2 readers read back as
//! written.
//!
//! serde_yaml_ng writes YAML 1.2: it leaves `on`, `yes`, `n`, `1_000`, `1:20` or `2024-01-02`
//! unquoted because YAML 1.2's core schema reads them as strings. kubectl (go-yaml v2, through
//! sigs.k8s.io/yaml) and PyYAML read YAML 1.1, where they are booleans, integers (octal,
//! sexagesimal, with underscores) and timestamps: `value: on` in a container's env becomes
//! `true` and the API server rejects the object. YAML 1.1 also breaks lines at NEL, LINE
//! SEPARATOR and PARAGRAPH SEPARATOR, and refuses C1 control characters anywhere unescaped.
//! [`to_string`] emits the same block layout as serde_yaml_ng but writes every string through
//! [`scalar`], which quotes whatever either version would read as something else.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::OnceLock;

use regex::Regex;
use serde::Serialize;
use serde_yaml_ng::Value;

/// PyYAML's implicit resolvers (resolver.py, YAML 1.1) for everything that is not a string,
/// and go-yaml v2's extra booleans (`y`, `n`, resolve.go).
fn yaml11_patterns() -> &'static [Regex] {
    static P: OnceLock<Vec<Regex>> = OnceLock::new();
    P.get_or_init(|| {
        [
            // bool (PyYAML) and go-yaml v2's y/Y/n/N
            r"^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF|y|Y|n|N)$",
            // float
            r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
            // int: binary, octal, decimal, hex, sexagesimal
            r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$",
            // merge, value
            r"^(?:<<|=)$",
            // null
            r"^(?:~|null|Null|NULL|)$",
            // timestamp
            r"^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$",
        ]
        .iter()
        .filter_map(|p| Regex::new(p).ok())
        .collect()
    })
}

/// go-yaml v2 tries Go's number parsers on anything that starts like a number (`0o17`,
/// `1e3`, `0x1p-2`); a string that parses as a number in any base is quoted.
fn looks_numeric(s: &str) -> bool {
    let t = s.strip_prefix(['-', '+']).unwrap_or(s);
    if !t.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return false;
    }
    let plain = t.replace('_', "");
    let radix = |p: &str, r: u32| {
        plain
            .strip_prefix(p)
            .is_some_and(|d| u64::from_str_radix(d, r).is_ok())
    };
    plain.parse::<f64>().is_ok()
        || radix("0x", 16)
        || radix("0X", 16)
        || radix("0o", 8)
        || radix("0O", 8)
        || radix("0b", 2)
        || radix("0B", 2)
        || ((plain.starts_with("0x") || plain.starts_with("0X")) && plain.contains(['p', 'P']))
}

/// Whether `s` must be quoted for every YAML reader to read it back as this string.
pub fn needs_quotes(s: &str) -> bool {
    if s.is_empty()
        || s.trim() != s
        || s.chars().any(|c| !single_quotable(c))
        || yaml11_patterns().iter().any(|r| r.is_match(s))
        || looks_numeric(s)
    {
        return true;
    }
    // YAML 1.2 and YAML's syntax (indicators, `: `, ` #`, anchors, flow): let serde_yaml_ng's
    // own reader say whether the bare text reads back as this very string.
    !matches!(serde_yaml_ng::from_str::<Value>(s), Ok(Value::String(ref r)) if r == s)
}

/// Characters a plain or single-quoted scalar carries as themselves: YAML 1.1's printable set
/// (`[#x9 #x20-#x7E #x85 #xA0-#xD7FF #xE000-#xFFFD #x10000-#x10FFFF]`, PyYAML's reader refuses
/// the rest) less the line breaks (NEL, U+2028, U+2029 fold or end a line in YAML 1.1) and the
/// invisible format characters, which are written as escapes so a reviewer sees them.
fn single_quotable(c: char) -> bool {
    (c == '\t' || (' '..='~').contains(&c) || c >= '\u{a0}')
        && !crate::chars::breaks_line(c)
        && !crate::chars::invisible(c)
}

/// `s` as a YAML scalar that YAML 1.1 and 1.2 readers both read back as this string: plain
/// when nothing in it means anything to either, single-quoted when only its look does,
/// double-quoted with escapes when it holds a character a single-quoted scalar cannot carry
/// (a control character, a line break of any kind, an invisible format character).
pub fn scalar(s: &str) -> Cow<'_, str> {
    if !needs_quotes(s) {
        Cow::Borrowed(s)
    } else if s.chars().all(single_quotable) {
        Cow::Owned(format!("'{}'", s.replace('\'', "''")))
    } else {
        Cow::Owned(double_quoted(s))
    }
}

/// A double-quoted scalar: `"` and `\\` escaped, and every character outside the printable
/// ASCII and the single-quotable set as `\xXX`, `\uXXXX` or `\UXXXXXXXX` (escapes both
/// YAML versions define).
fn double_quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if single_quotable(c) => out.push(c),
            c => {
                let n = u32::from(c);
                let _ = if n <= 0xff {
                    write!(out, "\\x{n:02X}")
                } else if n <= 0xffff {
                    write!(out, "\\u{n:04X}")
                } else {
                    write!(out, "\\U{n:08X}")
                };
            }
        }
    }
    out.push('"');
    out
}

/// `s` as the text of one YAML comment line (what follows `# `): every line break YAML 1.1
/// or 1.2 knows, other control characters and invisible format characters are written as
/// escapes (`\n`, `\u{2028}`), so the comment cannot end early and start YAML of its own.
pub fn comment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if crate::chars::unsafe_in_text(c) || !single_quotable(c) {
            crate::chars::escape(c, &mut out);
        } else {
            out.push(c);
        }
    }
    out
}

fn value_scalar(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => scalar(s).into_owned(),
        Value::Sequence(_) => "[]".into(),
        Value::Mapping(_) => "{}".into(),
        Value::Tagged(t) => format!("{} {}", t.tag, value_scalar(&t.value)),
    }
}

/// A multi-line string as a literal block (`|`, `|-`, `|+`), as serde_yaml_ng writes one, when
/// the text allows it (no other control characters, no line starting with a space on the
/// first line, which would need an indentation indicator); content sits at `indent + 2`.
fn literal_block(s: &str, indent: usize) -> Option<String> {
    if !s.contains('\n')
        || s.chars()
            .any(|c| c != '\n' && (c == '\t' || !single_quotable(c)))
        || s.starts_with(' ')
        || s.starts_with('\n')
    {
        return None;
    }
    let body = s.trim_end_matches('\n');
    let chomp = match s.len() - body.len() {
        0 => "-",
        1 => "",
        _ => "+",
    };
    let mut out = format!("|{chomp}\n");
    for line in body.split('\n') {
        if !line.is_empty() {
            pad(&mut out, indent + 2);
            out.push_str(line);
        }
        out.push('\n');
    }
    for _ in 1..(s.len() - body.len()) {
        out.push('\n');
    }
    Some(out)
}

/// A scalar and its line end (a literal block ends its own lines).
fn scalar_line(v: &Value, indent: usize) -> String {
    if let Value::String(s) = v {
        if let Some(block) = literal_block(s, indent) {
            return block;
        }
    }
    let mut line = value_scalar(v);
    line.push('\n');
    line
}

fn pad(out: &mut String, indent: usize) {
    out.extend(std::iter::repeat_n(' ', indent));
}

/// The value after `key:` (`in_map`) or `- `.
fn after(v: &Value, indent: usize, out: &mut String) {
    match v {
        Value::Mapping(m) if !m.is_empty() => {
            out.push('\n');
            mapping(m, indent + 2, out, false);
        }
        // serde_yaml_ng (libyaml) writes a sequence under a key at the key's indentation.
        Value::Sequence(s) if !s.is_empty() => {
            out.push('\n');
            sequence(s, indent, out, false);
        }
        _ => {
            out.push(' ');
            out.push_str(&scalar_line(v, indent));
        }
    }
}

fn mapping(m: &serde_yaml_ng::Mapping, indent: usize, out: &mut String, first_inline: bool) {
    for (i, (k, v)) in m.iter().enumerate() {
        if i > 0 || !first_inline {
            pad(out, indent);
        }
        out.push_str(&value_scalar(k));
        out.push(':');
        after(v, indent, out);
    }
}

fn sequence(s: &[Value], indent: usize, out: &mut String, first_inline: bool) {
    for (i, item) in s.iter().enumerate() {
        if i > 0 || !first_inline {
            pad(out, indent);
        }
        out.push_str("- ");
        match item {
            Value::Mapping(m) if !m.is_empty() => mapping(m, indent + 2, out, true),
            Value::Sequence(s) if !s.is_empty() => sequence(s, indent + 2, out, true),
            _ => out.push_str(&scalar_line(item, indent)),
        }
    }
}

/// `v` as one block-style YAML document that YAML 1.1 and 1.2 readers read alike.
pub fn to_string<T: Serialize>(v: &T) -> Result<String, serde_yaml_ng::Error> {
    let value = serde_yaml_ng::to_value(v)?;
    let mut out = String::new();
    match &value {
        Value::Mapping(m) if !m.is_empty() => mapping(m, 0, &mut out, false),
        Value::Sequence(s) if !s.is_empty() => sequence(s, 0, &mut out, false),
        other => {
            out.push_str(&value_scalar(other));
            out.push('\n');
        }
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn yaml11_specials_are_quoted_and_plain_words_are_not() {
        for s in [
            "on",
            "On",
            "OFF",
            "yes",
            "No",
            "y",
            "N",
            "true",
            "null",
            "~",
            "",
            "1",
            "0777",
            "1_000",
            "1:20",
            "190:20:30",
            "0x1F",
            "0o17",
            "0b101",
            "1e3",
            ".inf",
            "-.5",
            "2001-12-14",
            "2001-12-14t21:59:43.10-05:00",
            "=",
            "<<",
            "- x",
            "a: b",
            "#c",
            "*ref",
            "&a",
            "!tag",
            " lead",
            "trail ",
            "two\nlines",
            "@x",
            "`x",
            "%x",
            "[a]",
            "{a}",
            "|",
            ">",
        ] {
            assert!(needs_quotes(s), "{s:?} must be quoted");
        }
        for s in [
            "eth0",
            "PCI_BUS_ID",
            "=mlx5_0:1,mlx5_1:1",
            "^docker,lo",
            "--nnodes=2",
            "$(NODE_RANK)",
            "metadata.annotations['batch.kubernetes.io/job-completion-index']",
            "nvcr.io/nvidia/pytorch:24.04-py3",
            "/opt/microsoft/ndv5-topo.xml",
            "onward",
            "no-op",
        ] {
            assert!(!needs_quotes(s), "{s:?} can stay plain");
        }
    }

    #[test]
    fn block_layout_matches_serde_yaml_ng_and_reads_back() {
        let mut env = BTreeMap::new();
        env.insert("value", "on");
        env.insert("name", "UCX_IB_PCI_RELAXED_ORDERING");
        let doc = serde_json::json!({
            "apiVersion": "v1",
            "spec": {
                "containers": [
                    {"command": ["torchrun", "--nnodes=2"], "env": [env], "ports": []},
                    {"args": [["a", "b"], "c"], "limits": {"nvidia.com/gpu": "8"}}
                ],
                "replicas": 2,
                "privileged": true,
                "empty": {},
                "multi": "line one\nline 'two'",
                "block": "set -ex\n\n  indented\nlast\n",
                "kept": "a\n\n",
                "tab": "a\tb\nc"
            }
        });
        let text = to_string(&doc).unwrap();
        assert!(
            text.contains("    - name: UCX_IB_PCI_RELAXED_ORDERING\n      value: 'on'\n"),
            "{text}"
        );
        assert!(
            text.contains("  containers:\n  - command:\n    - torchrun\n    - --nnodes=2\n"),
            "{text}"
        );
        assert!(
            text.contains("  - args:\n    - - a\n      - b\n    - c\n"),
            "{text}"
        );
        assert!(text.contains("      nvidia.com/gpu: '8'\n"), "{text}");
        assert!(text.contains("  replicas: 2\n"), "{text}");
        assert!(text.contains("  empty: {}\n"), "{text}");
        assert!(text.contains("ports: []\n"), "{text}");
        assert!(
            text.contains("  block: |\n    set -ex\n\n      indented\n    last\n"),
            "{text}"
        );
        assert!(
            text.contains("  multi: |-\n    line one\n    line 'two'\n"),
            "{text}"
        );
        assert!(text.contains("  kept: |+\n    a\n\n  multi"), "{text}");
        // Read back by a YAML 1.2 reader, it is the same document.
        let back: serde_json::Value = serde_yaml_ng::from_str(&text).unwrap();
        assert_eq!(back, doc);
    }

    #[test]
    fn line_breaks_and_invisible_characters_are_escaped() {
        assert_eq!(scalar("a\u{2028}b"), "\"a\\u2028b\"");
        assert_eq!(scalar("a\u{85}b"), "\"a\\x85b\"");
        assert_eq!(scalar("a\u{9b}b"), "\"a\\x9Bb\"");
        assert_eq!(scalar("x\ny: 1"), "\"x\\ny: 1\"");
        assert_eq!(scalar("\u{feff}x"), "\"\\uFEFFx\"");
        assert_eq!(scalar("'on"), "'''on'");
        assert_eq!(scalar("on"), "'on'");
        assert_eq!(scalar("eth0"), "eth0");
        assert_eq!(comment("x\n---\nkind: Pod"), "x\\n---\\nkind: Pod");
        assert_eq!(comment("a\u{2029}b\u{85}c\td"), "a\\u{2029}b\\u{85}c\\td");
        assert_eq!(comment("≥ 90 %"), "≥ 90 %");
        // A literal block cannot carry a YAML 1.1 line break as content.
        let text = to_string(&BTreeMap::from([("k", "a\u{2028}b\nc")])).unwrap();
        assert_eq!(text, "k: \"a\\u2028b\\nc\"\n");
    }

    proptest::proptest! {
        #[test]
        fn comments_hold_no_line_break(s in "\\PC{0,12}|[\\x00-\\x7f\\u{80}-\\u{a0}\\u{2028}\\u{2029}\\u{feff}]{0,12}") {
            let c = comment(&s);
            proptest::prop_assert!(!c.chars().any(|c| crate::chars::breaks_line(c) || c.is_control()), "{c:?}");
        }

        #[test]
        fn hostile_strings_read_back_as_themselves(s in "[\\x00-\\x7f\\u{80}-\\u{a0}\\u{2028}\\u{2029}\\u{feff}\\u{fffe}\\u{10000}]{0,12}") {
            let text = to_string(&BTreeMap::from([("k", s.clone())])).unwrap();
            let back: BTreeMap<String, String> = serde_yaml_ng::from_str(&text).unwrap();
            proptest::prop_assert_eq!(&back["k"], &s);
        }

        #[test]
        fn any_string_reads_back_as_itself(s in "\\PC{0,12}|[ -~\\n\\t]{0,12}|( ?[a-z:#-]{0,3}\\n){1,4}") {
            let text = to_string(&BTreeMap::from([("k", s.clone())])).unwrap();
            let back: BTreeMap<String, String> = serde_yaml_ng::from_str(&text).unwrap();
            proptest::prop_assert_eq!(&back["k"], &s);
        }
    }
}
