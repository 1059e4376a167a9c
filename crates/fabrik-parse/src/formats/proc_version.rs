//! `/proc/version`: the kernel's banner, `Linux version RELEASE (BUILDER) (COMPILER) VERSION`.
//!
//! The kernel prints it from `linux_proc_banner` (init/version.c):
//! `"%s version %s (" LINUX_COMPILE_BY "@" LINUX_COMPILE_HOST ") (" LINUX_COMPILER ") %s\n"`
//! with the system name (`Linux`), the release (`uname -r`) and the version (`uname -v`, e.g.
//! `#1 SMP PREEMPT_DYNAMIC Debian 6.1.112-1 (2024-09-30)`).

use super::Format;

/// `/proc/version`: the kernel release (`6.1.0-26-amd64`) its banner names.
pub struct ProcVersion;

impl Format for ProcVersion {
    type Facts = String;
    const EXPECTED: &'static str = "the kernel banner (`Linux version RELEASE ...`)";

    fn parse(text: &str) -> Option<String> {
        parse_proc_version_release(text)
    }
}

/// The release from `/proc/version`; `None` when the text is not the banner.
fn parse_proc_version_release(raw: &str) -> Option<String> {
    let mut words = raw.split_whitespace();
    words.next()?;
    if words.next()? != "version" {
        return None;
    }
    let release = words.next()?;
    // A release starts with its major version number.
    release
        .starts_with(|c: char| c.is_ascii_digit())
        .then(|| release.to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_release_is_the_third_word_of_the_banner() {
        // This machine's banner and Debian 12's, as the kernel prints them.
        let debian = "Linux version 6.1.0-26-amd64 (debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14) 12.2.0, GNU ld (GNU Binutils for Debian) 2.40) #1 SMP PREEMPT_DYNAMIC Debian 6.1.112-1 (2024-09-30)\n";
        assert_eq!(
            parse_proc_version_release(debian).as_deref(),
            Some("6.1.0-26-amd64")
        );
        let ubuntu = "Linux version 5.15.0-91-generic (buildd@lcy02-amd64-045) (gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0, GNU ld (GNU Binutils for Ubuntu) 2.38) #101-Ubuntu SMP Tue Nov 14 13:30:08 UTC 2023\n";
        assert_eq!(
            parse_proc_version_release(ubuntu).as_deref(),
            Some("5.15.0-91-generic")
        );
        assert_eq!(parse_proc_version_release(""), None);
        assert_eq!(parse_proc_version_release("Linux"), None);
        assert_eq!(parse_proc_version_release("not a banner at all"), None);
        assert_eq!(parse_proc_version_release("Linux version (x)"), None);
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,200}") {
            let _ = parse_proc_version_release(&s);
        }
    }
}
