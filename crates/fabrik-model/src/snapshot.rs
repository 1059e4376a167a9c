//! What `fabrik snapshot` wrote: the summary it prints and reports as JSON.

use serde::Serialize;

/// One helper command a snapshot ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommandRun {
    /// Capture name: the file is `fabrik/cmd/NAME.txt`.
    pub name: String,
    /// The command line.
    pub command: String,
    /// `saved`, `timed out`, `exit N (nothing saved)`, `failed to start: ...`.
    pub outcome: String,
}

/// What a snapshot wrote.
#[derive(Debug, Clone, Serialize)]
pub struct SnapshotSummary {
    /// [`crate::SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// The directory or tarball written.
    pub output: String,
    /// Regular files copied.
    pub files: usize,
    /// Directories created.
    pub directories: usize,
    /// Symbolic links copied as links.
    pub symlinks: usize,
    /// Every helper command run, and how it ended.
    pub commands: Vec<CommandRun>,
}
