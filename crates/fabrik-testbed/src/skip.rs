//! Skipping a test honestly. A test that cannot run here (not root, no namespaces, a tool or
//! library missing) says so and returns, unless every testbed must be present: with
//! `FABRIK_REQUIRE_TESTBEDS=1`, which `.ci/run` sets, the missing testbed fails the test, so CI
//! cannot go green with a test that never ran.
//!
//! One kind of skip is never a failure: a test that checks behaviour *without* some hardware (a
//! mock libcuda, a node with no RDMA device) does not apply on a machine that has it
//! ([`not_applicable`]). Nothing is missing there, and CI machines have neither.

/// The variable that makes a missing testbed a failure.
pub const REQUIRE_VAR: &str = "FABRIK_REQUIRE_TESTBEDS";

/// Whether every testbed must be present (`FABRIK_REQUIRE_TESTBEDS=1`).
pub fn required() -> bool {
    std::env::var(REQUIRE_VAR).is_ok_and(|v| v == "1")
}

/// Skips `test` because `why` (what is missing, and how to get it): prints `skipped: TEST: WHY`
/// on stderr; the caller returns.
///
/// # Panics
/// Where testbeds are required ([`required`]): the test fails, naming what is missing.
pub fn skip(test: &str, why: &str) {
    assert!(
        !required(),
        "{test} cannot run here ({why}), and {REQUIRE_VAR}=1 says every testbed must be present"
    );
    eprintln!("skipped: {test}: {why}");
}

/// Skips `test` because this machine has what the test must not find (`why`: a real GPU driver
/// where the test loads a mock, RDMA devices where it checks a node without them). Never a
/// failure: nothing is missing.
pub fn not_applicable(test: &str, why: &str) {
    eprintln!("not applicable: {test}: {why}");
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    #[ignore = "run by skip_fails_only_where_testbeds_are_required, in a child process"]
    fn child_skips() {
        skip("the child", "nothing here");
    }

    /// The test binary runs `child_skips` again with the variable set as a shell would.
    fn child(value: Option<&str>) -> (bool, String) {
        let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
        cmd.args([
            "--exact",
            "skip::tests::child_skips",
            "--ignored",
            "--nocapture",
        ])
        .env_remove(REQUIRE_VAR);
        if let Some(v) = value {
            cmd.env(REQUIRE_VAR, v);
        }
        let out = cmd.output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    #[test]
    fn skip_fails_only_where_testbeds_are_required() {
        for value in [None, Some("0"), Some("")] {
            let (ok, err) = child(value);
            assert!(ok, "{value:?}: {err}");
            assert!(err.contains("skipped: the child: nothing here"), "{err}");
        }
        let (ok, err) = child(Some("1"));
        assert!(!ok);
        assert!(
            err.contains("the child cannot run here (nothing here), and FABRIK_REQUIRE_TESTBEDS=1"),
            "{err}"
        );
    }
}
