//! fabrik's output: the one `--format` every command accepts, the renderers of findings
//! (text, Markdown) that every command prints them with, one module per result's text, and
//! the HTML report with its plots. JSON is a result serialized as is. Only the command line
//! depends on this crate; it depends on the crates whose results it renders.
#![warn(missing_docs)]

pub mod cluster;
pub mod collective;
pub mod commands;
pub mod doctor;
pub mod findings;
pub mod inventory;
pub mod logs;
pub mod matrix;
pub mod monitor;
pub mod nccl_tests;
pub mod p2p;
pub mod passline;
pub mod progress;
pub mod ras;
pub mod report;
pub mod snapshot;
#[cfg(test)]
mod testkit;

/// `1 round`, `2 rounds`: a count with its noun.
pub fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A value that may be unknown, as a table cell: `-` when it is.
pub(crate) fn dash<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref()
        .map_or_else(|| "-".to_string(), ToString::to_string)
}

/// The form of a command's output, chosen with `--format`. A command with no Markdown form
/// parses it with [`Format::text_or_json`], so its code treats `Markdown` as `Text`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Format {
    /// Text for people (`table` is accepted as another name for it).
    #[cfg_attr(feature = "clap", value(name = "text", alias = "table"))]
    Text,
    /// The result as versioned JSON, for programs.
    Json,
    /// Markdown for a ticket or a pull request.
    Markdown,
}

#[cfg(feature = "clap")]
impl Format {
    /// The `--format` parser of a command with no Markdown form: `text` (or `table`) and `json`.
    /// Such a command refuses `markdown` when parsing its arguments, as it always has.
    pub fn text_or_json() -> impl clap::builder::TypedValueParser<Value = Format> {
        use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
        PossibleValuesParser::new([
            PossibleValue::new("text")
                .alias("table")
                .help("Text for people (`table` is accepted as another name for it)"),
            PossibleValue::new("json").help("The result as versioned JSON, for programs"),
        ])
        // The parser above has already refused anything but these two names.
        .map(|name| {
            if name.eq_ignore_ascii_case("json") {
                Format::Json
            } else {
                Format::Text
            }
        })
    }
}

#[cfg(all(test, feature = "clap"))]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Both {
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    }

    #[derive(Parser)]
    struct TwoForms {
        #[arg(long, default_value = "text", value_parser = Format::text_or_json())]
        format: Format,
    }

    #[test]
    fn every_command_accepts_text_table_and_json() {
        for (arg, want) in [
            ("text", Format::Text),
            ("table", Format::Text),
            ("json", Format::Json),
        ] {
            let a = Both::try_parse_from(["x", "--format", arg]).unwrap();
            assert_eq!(a.format, want);
            let b = TwoForms::try_parse_from(["x", "--format", arg]).unwrap();
            assert_eq!(b.format, want);
        }
        assert_eq!(Both::try_parse_from(["x"]).unwrap().format, Format::Text);
        assert_eq!(
            TwoForms::try_parse_from(["x"]).unwrap().format,
            Format::Text
        );
    }

    #[test]
    fn markdown_only_where_a_command_has_it() {
        let a = Both::try_parse_from(["x", "--format", "markdown"]).unwrap();
        assert_eq!(a.format, Format::Markdown);
        assert!(TwoForms::try_parse_from(["x", "--format", "markdown"]).is_err());
        assert!(TwoForms::try_parse_from(["x", "--format", "yaml"]).is_err());
    }
}
