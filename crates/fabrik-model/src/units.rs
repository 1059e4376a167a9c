//! Unit conversions that several readers of the same value need.

/// mW as dBm, the unit optics are usually judged in; `None` for no power (0 mW or less).
pub fn dbm(mw: f64) -> Option<f64> {
    (mw > 0.0).then(|| 10.0 * mw.log10())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milliwatts_as_dbm() {
        assert_eq!(dbm(1.0), Some(0.0));
        assert_eq!(dbm(10.0), Some(10.0));
        assert_eq!(dbm(0.0), None);
        assert_eq!(dbm(-1.0), None);
    }
}
