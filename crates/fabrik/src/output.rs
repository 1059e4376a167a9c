//! Writing results: JSON to stdout, files written atomically.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use anyhow::Context;
use serde::Serialize;

/// Pretty JSON on stdout, newline-terminated. A reader that went away (`| head -1`) ends the
/// output quietly: the command has done its work, and the shell's pipeline is the one that stopped.
pub fn print_json<T: Serialize>(value: &T) -> anyhow::Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value).context("encoding JSON")?;
    bytes.push(b'\n');
    write_stdout(&bytes)
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

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename, so a
/// reader never sees half a file. The result is world-readable (0644) like any file a command
/// writes; the temporary file's private 0600 must not leak into reports and launch files.
///
/// A path that exists and is not a regular file (`/dev/null`, `/dev/stdout`, a FIFO) is written
/// in place: renaming over it would replace the device node with a plain file.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .with_context(|| format!("opening {}", path.display()))?;
        return f
            .write_all(bytes)
            .with_context(|| format!("writing {}", path.display()));
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
    tmp.write_all(bytes)
        .with_context(|| format!("writing {}", path.display()))?;
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o644))
        .with_context(|| format!("setting the permissions of {}", path.display()))?;
    tmp.persist(path)
        .with_context(|| format!("renaming into {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_device_or_fifo_is_written_in_place_not_replaced() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        write_atomically(&fifo, b"through the pipe").unwrap();
        assert_eq!(reader.join().unwrap(), b"through the pipe");
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    }

    #[test]
    fn atomic_writes_replace_the_file_and_are_world_readable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.json");
        write_atomically(&path, b"first").unwrap();
        write_atomically(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary left"
        );
    }

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
