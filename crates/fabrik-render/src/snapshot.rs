//! `fabrik snapshot`'s summary as text: what was written, each helper command and how it
//! ended, and the command that reads the snapshot back.

use std::fmt::Write as _;

use fabrik_model::snapshot::SnapshotSummary;

use crate::plural;

/// The counts of what was copied, one line per helper command, then how to read it back.
pub fn summary(s: &SnapshotSummary) -> String {
    let n = |k: usize, one: &str, many: &str| plural(k as u64, one, many);
    let mut text = format!(
        "snapshot {}: {}, {}, {}\n",
        s.output,
        n(s.files, "file", "files"),
        n(s.directories, "directory", "directories"),
        n(s.symlinks, "symlink", "symlinks")
    );
    for c in &s.commands {
        let _ = writeln!(text, "  {:<40} {}", c.command, c.outcome);
    }
    let _ = writeln!(
        text,
        "read it back with: fabrik inventory --root {}",
        s.output
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabrik_model::snapshot::CommandRun;

    #[test]
    fn counts_each_command_and_how_to_read_it_back() {
        let s = SnapshotSummary {
            schema_version: 1,
            output: "snap.tar.gz".into(),
            files: 1,
            directories: 3,
            symlinks: 0,
            commands: vec![CommandRun {
                name: "mlnx_qos".into(),
                command: "mlnx_qos -i eth0".into(),
                outcome: "timed out".into(),
            }],
        };
        let t = summary(&s);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[0],
            "snapshot snap.tar.gz: 1 file, 3 directories, 0 symlinks"
        );
        assert_eq!(
            lines[1].split_whitespace().collect::<Vec<_>>(),
            ["mlnx_qos", "-i", "eth0", "timed", "out"]
        );
        assert_eq!(
            lines[2],
            "read it back with: fabrik inventory --root snap.tar.gz"
        );
    }
}
