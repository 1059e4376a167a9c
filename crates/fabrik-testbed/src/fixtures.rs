//! The repository's fixtures as tests reach them: where the repository is, and writable copies
//! of fixture trees for a test to change.

use std::path::{Path, PathBuf};

/// The repository's root (this crate sits two levels below it, as every crate does).
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A path under `fixtures/`: `fixture("nodes/h100-8x-ib")`.
pub fn fixture(path: &str) -> PathBuf {
    repo().join("fixtures").join(path)
}

/// Copies the tree `from` over `to`, creating what is missing; a link is copied as a link, so a
/// sysfs tree keeps its shape (and a link out of the root stays one, for the confinement tests).
pub fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src)?, &dst)?;
        } else if kind.is_dir() {
            copy_tree(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst)?;
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_keeps_files_directories_and_links() {
        let dir = tempfile::tempdir().unwrap();
        let (from, to) = (dir.path().join("from"), dir.path().join("to"));
        std::fs::create_dir_all(from.join("a/b")).unwrap();
        std::fs::write(from.join("a/b/rate"), "400 Gb/sec (4X NDR)\n").unwrap();
        std::os::unix::fs::symlink("a/b", from.join("link")).unwrap();
        copy_tree(&from, &to).unwrap();
        let rate = std::fs::read_to_string(to.join("a/b/rate")).unwrap();
        assert_eq!(rate, "400 Gb/sec (4X NDR)\n");
        assert_eq!(
            std::fs::read_link(to.join("link")).unwrap(),
            Path::new("a/b")
        );
        assert!(fixture("nodes").is_dir(), "{}", fixture("nodes").display());
    }
}
