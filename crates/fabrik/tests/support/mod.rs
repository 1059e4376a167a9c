//! Helpers shared by the CLI's integration tests.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::path::Path;

/// Copies a fixture tree (files and directories) over `to`, creating what is missing: a test
/// node whose counters a test changes by copying the `after` side of a pair.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), &dest).unwrap();
        }
    }
}
