//! Finding the outside programs a test runs for real (promtool, prometheus, kubernetes-validate,
//! Slurm's daemons), in one place: the Python test tools of `scripts/setup.sh --tests` live in a
//! virtual environment that is not on PATH, and system daemons live in sbin directories that a
//! user's PATH may lack.

use std::path::PathBuf;

/// Where `scripts/setup.sh --tests` installs scripts/pip/*.txt: `$FABRIK_TEST_VENV`, by default
/// /opt/fabrik-test/venv.
pub fn test_venv() -> PathBuf {
    std::env::var_os("FABRIK_TEST_VENV")
        .map_or_else(|| PathBuf::from("/opt/fabrik-test/venv"), PathBuf::from)
}

/// The program `name`: in the test venv's bin, on PATH, or in /usr/sbin, /usr/bin or /sbin.
pub fn find(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::iter::once(test_venv().join("bin"))
        .chain(std::env::split_paths(&path))
        .chain(["/usr/sbin", "/usr/bin", "/sbin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// The program `name` for a test that needs it, or `None` after printing that the test skips.
/// Under CI (`CI` set, or `FABRIK_REQUIRE_TESTBEDS=1`) a missing program is a failure instead:
/// CI installs every test tool, so a skip there would hide a broken set-up. `install` says how
/// to get it.
///
/// # Panics
/// When CI is set and the program is missing.
pub fn require(name: &str, install: &str) -> Option<PathBuf> {
    let found = find(name);
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have {name} ({install})"
        );
        crate::skip(
            &format!("a test that runs {name}"),
            &format!("{name} is not installed ({install})"),
        );
    }
    found
}
