//! Files a command writes (reports, launch files, undo records), written atomically.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Why a file was not written; each names the file or directory and the step that failed.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// A device or FIFO written in place could not be opened.
    #[error("opening {}", .0.display())]
    Open(PathBuf, #[source] std::io::Error),
    /// The bytes could not be written.
    #[error("writing {}", .0.display())]
    Write(PathBuf, #[source] std::io::Error),
    /// No temporary file could be made beside the target.
    #[error("creating a temporary file in {}", .0.display())]
    Temporary(PathBuf, #[source] std::io::Error),
    /// The file could not be made world-readable.
    #[error("setting the permissions of {}", .0.display())]
    Permissions(PathBuf, #[source] std::io::Error),
    /// The temporary file could not be renamed over the target.
    #[error("renaming into {}", .0.display())]
    Rename(PathBuf, #[source] std::io::Error),
    /// The value could not be encoded as JSON.
    #[error("encoding {} as JSON", .0.display())]
    Encode(PathBuf, #[source] serde_json::Error),
}

/// Writes `value` as pretty JSON to `path`, atomically ([`write_atomically`]): the one way a
/// result file (`--output`, saved inventories, matrices) is written.
pub fn write_json<T: serde::Serialize + ?Sized>(path: &Path, value: &T) -> Result<(), WriteError> {
    let json =
        serde_json::to_vec_pretty(value).map_err(|e| WriteError::Encode(path.to_path_buf(), e))?;
    write_atomically(path, &json)
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename, so a
/// reader never sees half a file. The result is world-readable (0644) like any file a command
/// writes; the temporary file's private 0600 must not leak into reports and launch files.
///
/// A path that exists and is not a regular file (`/dev/null`, `/dev/stdout`, a FIFO) is written
/// in place: renaming over it would replace the device node with a plain file.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let at = |step: fn(PathBuf, std::io::Error) -> WriteError| {
        move |e: std::io::Error| step(path.to_path_buf(), e)
    };
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(at(WriteError::Open))?;
        return f.write_all(bytes).map_err(at(WriteError::Write));
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .map_err(|e| WriteError::Temporary(dir.to_path_buf(), e))?;
    tmp.write_all(bytes).map_err(at(WriteError::Write))?;
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o644))
        .map_err(at(WriteError::Permissions))?;
    tmp.persist(path)
        .map_err(|e| WriteError::Rename(path.to_path_buf(), e.error))?;
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
    fn json_is_written_pretty_and_a_value_json_cannot_hold_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.json");
        write_json(&path, &serde_json::json!({"rail": 2})).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\n  \"rail\": 2\n}"
        );
        // JSON object keys are strings: a map keyed by pairs cannot be encoded.
        let pairs = std::collections::BTreeMap::from([((0u8, 1u8), 1.5f64)]);
        let bad = dir.path().join("pairs.json");
        let e = write_json(&bad, &pairs).unwrap_err();
        assert!(matches!(&e, WriteError::Encode(p, _) if *p == bad), "{e:?}");
        assert!(!bad.exists());
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
    fn a_missing_directory_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("absent").join("out.json");
        let e = write_atomically(&path, b"x").unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "creating a temporary file in {}",
                dir.path().join("absent").display()
            )
        );
    }
}
