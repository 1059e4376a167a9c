//! A long run's progress as text, for rank 0's stderr (stdout carries the table or JSON): one
//! stable plain line per step where stderr is not a terminal (logs, CI, tests), and the layout
//! of the bar where it is.

/// `# progress: all_reduce 3/10 sizes done (4096 B)`, `# progress: matrix 2/7 rounds done`:
/// `done` steps of `total` finished, `detail` (may be empty) saying which was last.
pub fn line(what: &str, done: u64, total: u64, unit: &str, detail: &str) -> String {
    let tail = if detail.is_empty() {
        String::new()
    } else {
        format!(" ({detail})")
    };
    format!("# progress: {what} {done}/{total} {unit} done{tail}\n")
}

/// The terminal bar's template (indicatif's syntax): what runs, the bar, steps of the total,
/// the time taken and the last step's detail.
pub fn bar_template(what: &str, unit: &str) -> String {
    format!("{what} {{bar:30}} {{pos}}/{{len}} {unit} [{{elapsed}}] {{msg}}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_is_one_stable_line() {
        assert_eq!(
            line("all_reduce", 3, 10, "sizes", "4096 B"),
            "# progress: all_reduce 3/10 sizes done (4096 B)\n"
        );
        assert_eq!(
            line("matrix", 2, 7, "rounds", ""),
            "# progress: matrix 2/7 rounds done\n"
        );
    }
}
