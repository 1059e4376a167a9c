//! The exit status of every command, decided here and nowhere else: 0 when nothing wrong was
//! found, 1 when something was (an error finding, a result below its pass line, data that came
//! back wrong), 2 when the tool itself failed and so could not say either way. A scheduler's
//! health check drains a node on 1 and must not on 2.

use std::process::ExitCode;

/// The status of a command that ran to its end: 1 when it found something wrong, else 0.
pub fn status(found_problems: bool) -> ExitCode {
    if found_problems {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// The status of a command whose findings are its verdict: 1 on an error finding, else 0.
pub fn of_findings(findings: &[fabrik_model::Finding]) -> ExitCode {
    status(has_problems(findings, false))
}

/// The status of a command that could not do its job (2).
pub fn failure() -> ExitCode {
    ExitCode::from(TOOL_FAILURE)
}

/// The number behind [`failure`], for a rank that reports its status to rank 0 as a byte.
pub const TOOL_FAILURE: u8 = 2;

/// Whether findings make a command fail; the policy lives beside [`fabrik_model::Finding`].
pub use fabrik_model::has_problems;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn found_problems_exit_1_and_tool_failures_2() {
        assert_eq!(status(true), ExitCode::from(1));
        assert_eq!(status(false), ExitCode::SUCCESS);
        assert_eq!(failure(), ExitCode::from(2));
    }
}
