//! `ofed_info -s`: the MLNX_OFED version.

/// `ofed_info -s`: `MLNX_OFED_LINUX-5.8-3.0.7.0:` → without the colon.
pub fn parse_ofed_info(raw: &str) -> Option<String> {
    let line = raw.lines().map(str::trim).find(|l| !l.is_empty())?;
    let v = line.trim_end_matches(':').trim();
    (!v.is_empty() && !v.contains(' ')).then(|| v.to_string())
}
