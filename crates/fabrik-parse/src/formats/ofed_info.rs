//! `ofed_info -s`: the MLNX_OFED version.

use super::Format;

/// `ofed_info -s`: `MLNX_OFED_LINUX-5.8-3.0.7.0:` → without the colon.
pub struct OfedInfo;

impl Format for OfedInfo {
    type Facts = String;
    const EXPECTED: &'static str = "`ofed_info -s` (`MLNX_OFED_LINUX-5.8-3.0.7.0:`)";

    fn parse(text: &str) -> Option<String> {
        let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
        let v = line.trim_end_matches(':').trim();
        (!v.is_empty() && !v.contains(' ')).then(|| v.to_string())
    }
}
