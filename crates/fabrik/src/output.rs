//! Writing results: JSON and text to stdout.

use std::io::Write;

use anyhow::Context;
use serde::Serialize;

/// Pretty JSON on stdout, newline-terminated. A reader that went away (`| head -1`) ends the
/// output quietly: the command has done its work, and the shell's pipeline is the one that stopped.
pub fn print_json<T: Serialize>(value: &T) -> anyhow::Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value).context("encoding JSON")?;
    bytes.push(b'\n');
    write_stdout(&bytes)
}

/// `value` as JSON, or as the text `text` makes of it, on stdout: what a command with a text
/// form and a JSON form prints.
pub fn print<T: Serialize>(
    format: fabrik_render::Format,
    value: &T,
    text: impl FnOnce(&T) -> String,
) -> anyhow::Result<()> {
    match format {
        fabrik_render::Format::Json => print_json(value),
        fabrik_render::Format::Text | fabrik_render::Format::Markdown => print_text(&text(value)),
    }
}

/// Text on stdout (tables, pages); a closed pipe is a normal end, as for [`print_json`].
pub fn print_text(text: &str) -> anyhow::Result<()> {
    write_stdout(text.as_bytes())
}

fn write_stdout(bytes: &[u8]) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    ignore_broken_pipe(out.write_all(bytes).and_then(|()| out.flush()))
}

/// Rust ignores SIGPIPE, so a closed reader shows up as `EPIPE` on write; that is the reader's
/// choice, not a failure of ours.
fn ignore_broken_pipe(result: std::io::Result<()>) -> anyhow::Result<()> {
    match result {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("writing to stdout"),
    }
}

/// Whether to colour what goes to `stream`: only a terminal gets escape codes (a pipe or file
/// would keep them as junk), and never when NO_COLOR is set to anything but empty
/// (https://no-color.org).
pub fn colour(stream: &impl std::io::IsTerminal) -> bool {
    stream.is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Files a command writes: atomically and world-readable ([`fabrik_probe::output`]).
pub use fabrik_probe::output::write_atomically;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn broken_pipe_is_a_normal_end_and_other_errors_are_not() {
        let pipe = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        ignore_broken_pipe(Err(pipe)).unwrap();
        ignore_broken_pipe(Ok(())).unwrap();
        let full = std::io::Error::from(std::io::ErrorKind::WriteZero);
        let e = ignore_broken_pipe(Err(full)).unwrap_err();
        assert_eq!(e.to_string(), "writing to stdout");
        assert_eq!(
            e.downcast_ref::<std::io::Error>().map(std::io::Error::kind),
            Some(std::io::ErrorKind::WriteZero)
        );
    }
}
