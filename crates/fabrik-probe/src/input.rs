//! Files named by options (`report RESULT.json`, `--expect`, `--node`, `--env-file`, pasted
//! command outputs), read whole through one bounded reader: only regular files, never more
//! than a cap that fits the format, and never a wait.
//!
//! The file is opened with `O_NONBLOCK`, so a FIFO without a writer does not hold the open,
//! and its type is checked on the open descriptor before a byte is read: `/dev/zero`, a FIFO,
//! a socket or a directory is refused at once. Its size is checked before reading and the read
//! stops one byte past the cap, so neither a 2 GiB file nor one that grows while read can make
//! memory grow past the cap. Every refusal is an [`InputError`].

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The most each kind of file may hold: several times the largest real one.
pub mod cap {
    /// An expectations file (`--expect`, TOML): a real one is a few KiB.
    pub const EXPECT: u64 = 1 << 20;
    /// A node document (`--node`, `inventory --format json`): an 8-GPU, 8-HCA node's is a few
    /// hundred KiB.
    pub const NODE: u64 = 16 << 20;
    /// An environment file (`--env-file`): a few dozen variables.
    pub const ENV_FILE: u64 = 1 << 20;
    /// A result file for `fabrik report` (JSON): a 64-rank matrix or a long log's report
    /// stays in single MiB.
    pub const REPORT_INPUT: u64 = 64 << 20;
}

/// Why a named file was not read; `what` names the kind of file (`expectations`, `node file`).
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The file could not be opened.
    #[error("opening {what} {}", path.display())]
    Open {
        /// The kind of file.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The file could not be read.
    #[error("reading {what} {}", path.display())]
    Read {
        /// The kind of file.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Larger than such a file can be.
    #[error("{what} {}: {len} bytes, more than the {cap} such a file can hold", path.display())]
    TooLarge {
        /// The kind of file.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Its size.
        len: u64,
        /// The cap.
        cap: u64,
    },
    /// Grew past the cap while it was read.
    #[error("{what} {}: grew past the {cap} bytes such a file can hold while it was read", path.display())]
    Grew {
        /// The kind of file.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The cap.
        cap: u64,
    },
    /// Not UTF-8 where text was wanted.
    #[error("{what} {}: not UTF-8 text (invalid byte at offset {offset})", path.display())]
    NotUtf8 {
        /// The kind of file.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The first invalid byte.
        offset: usize,
    },
    /// A directory, FIFO, device or socket.
    #[error("{what} {}: {kind}, not a regular file; give the file itself", path.display())]
    NotRegular {
        /// The kind of file.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// What it is instead.
        kind: &'static str,
    },
}

/// `path`'s bytes, or an error naming `what` (`expectations`, `node file`) and the path: not a
/// regular file, larger than `cap` bytes, or unreadable.
pub fn read(path: &Path, what: &'static str, cap: u64) -> Result<Vec<u8>, InputError> {
    let file = open_regular(path, what)?;
    let read_err = |source| InputError::Read {
        what,
        path: path.to_path_buf(),
        source,
    };
    let len = file.metadata().map_err(read_err)?.len();
    if len > cap {
        return Err(InputError::TooLarge {
            what,
            path: path.to_path_buf(),
            len,
            cap,
        });
    }
    let mut buf = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(cap + 1).read_to_end(&mut buf).map_err(read_err)?;
    if buf.len() as u64 > cap {
        return Err(InputError::Grew {
            what,
            path: path.to_path_buf(),
            cap,
        });
    }
    Ok(buf)
}

/// [`read`] as UTF-8 text (JSON, TOML and env files are text).
pub fn read_text(path: &Path, what: &'static str, cap: u64) -> Result<String, InputError> {
    let bytes = read(path, what, cap)?;
    String::from_utf8(bytes).map_err(|e| InputError::NotUtf8 {
        what,
        path: path.to_path_buf(),
        offset: e.utf8_error().valid_up_to(),
    })
}

/// Refuses a named input that is not a regular file, without waiting on it, for readers that
/// open the path themselves (`-`, standard input, is left to them).
pub fn check_regular(path: &Path, what: &'static str) -> Result<(), InputError> {
    if path.as_os_str() == "-" {
        return Ok(());
    }
    open_regular(path, what).map(drop)
}

fn open_regular(path: &Path, what: &'static str) -> Result<File, InputError> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        // A FIFO opens at once instead of waiting for a writer; a terminal does not become the
        // controlling one. Regular files ignore both.
        .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY)
        .open(path)
        .map_err(|source| InputError::Open {
            what,
            path: path.to_path_buf(),
            source,
        })?;
    let ft = file
        .metadata()
        .map_err(|source| InputError::Read {
            what,
            path: path.to_path_buf(),
            source,
        })?
        .file_type();
    if !ft.is_file() {
        let kind = if ft.is_dir() {
            "a directory"
        } else if ft.is_fifo() {
            "a FIFO"
        } else if ft.is_char_device() {
            "a character device"
        } else if ft.is_block_device() {
            "a block device"
        } else if ft.is_socket() {
            "a socket"
        } else {
            "not a regular file"
        };
        return Err(InputError::NotRegular {
            what,
            path: path.to_path_buf(),
            kind,
        });
    }
    Ok(file)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_are_read_within_their_cap() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("e.toml");
        std::fs::write(&p, "a = 1\n").unwrap();
        assert_eq!(read_text(&p, "expectations", 6).unwrap(), "a = 1\n");
        let e = read_text(&p, "expectations", 5).unwrap_err().to_string();
        assert!(e.contains("6 bytes, more than the 5"), "{e}");
        std::fs::write(&p, b"\xff\xfe").unwrap();
        let e = read_text(&p, "expectations", 5).unwrap_err().to_string();
        assert!(e.contains("not UTF-8"), "{e}");
    }

    #[test]
    fn devices_fifos_and_directories_are_refused_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let e = read(Path::new("/dev/zero"), "node file", 10).unwrap_err();
        assert!(e.to_string().contains("a character device"), "{e}");
        let e = read(dir.path(), "node file", 10).unwrap_err();
        assert!(e.to_string().contains("a directory"), "{e}");
        let fifo = dir.path().join("fifo");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let t = std::time::Instant::now();
        let e = read(&fifo, "env file", 10).unwrap_err();
        assert!(e.to_string().contains("a FIFO"), "{e}");
        assert!(t.elapsed() < std::time::Duration::from_secs(2));
        assert!(check_regular(&fifo, "env file").is_err());
        assert!(check_regular(Path::new("-"), "input").is_ok());
    }
}

/// Why a pasted command output was not read.
#[derive(Debug, thiserror::Error)]
pub enum PasteError {
    /// Not a regular file (and not `-`).
    #[error(transparent)]
    Input(#[from] InputError),
    /// The file could not be opened.
    #[error("opening {}", .0.display())]
    Open(PathBuf, #[source] std::io::Error),
    /// The file could not be read.
    #[error("reading {}", .0.display())]
    Read(PathBuf, #[source] std::io::Error),
    /// More than one node's output can hold.
    #[error("{}: larger than {max} bytes, not a command output", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The most it may hold.
        max: usize,
    },
}

/// A pasted command output read whole (`-`: standard input; gzip detected), up to what one
/// node's output can hold ([`fabrik_parse::formats::MAX_INPUT`]).
pub fn read_paste(path: &Path) -> Result<String, PasteError> {
    let max = fabrik_parse::formats::MAX_INPUT;
    check_regular(path, "command output")?;
    let r = fabrik_parse::input::open_input(path)
        .map_err(|e| PasteError::Open(path.to_path_buf(), e))?;
    let mut buf = Vec::new();
    r.take(max as u64 + 1)
        .read_to_end(&mut buf)
        .map_err(|e| PasteError::Read(path.to_path_buf(), e))?;
    if buf.len() > max {
        return Err(PasteError::TooLarge {
            path: path.to_path_buf(),
            max,
        });
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}
