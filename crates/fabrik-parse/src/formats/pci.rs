//! PCI addresses (`DDDD:BB:DD.F`) and a device's `current_link_speed`.

use super::Format;

/// `current_link_speed`/`max_link_speed`: `16.0 GT/s PCIe`, `8 GT/s`, `2.5 GT/s`, `Unknown`.
pub struct PciSpeed;

impl Format for PciSpeed {
    type Facts = f64;
    const EXPECTED: &'static str = "a PCIe speed (`16.0 GT/s PCIe`)";

    fn parse(text: &str) -> Option<f64> {
        let text = text.trim();
        if !text.contains("GT/s") {
            return None;
        }
        text.split_whitespace()
            .next()
            .and_then(|n| n.parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v > 0.0)
    }
}

/// One of a PCI function's AER statistics files (`aer_dev_correctable`, `aer_dev_nonfatal`,
/// `aer_dev_fatal`): drivers/pci/pcie/aer.c writes one `NAME COUNT` line per error the kernel
/// names (`RxErr 0`), `<array>_bit[N] COUNT` for an unnamed bit that counted, and a last
/// `TOTAL_ERR_COR`/`TOTAL_ERR_NONFATAL`/`TOTAL_ERR_FATAL` line. Which file a text came from is
/// the caller's to know: the names of the fatal and non-fatal files are the same.
pub struct AerCounts;

/// The counts of one AER statistics file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AerFile {
    /// Each error's count by the kernel's name (`RxErr`, `DLP`, `dev_cor_errs_bit[14]`).
    pub errors: std::collections::BTreeMap<String, u64>,
    /// The `TOTAL_ERR_*` line's count.
    pub total: Option<u64>,
}

impl Format for AerCounts {
    type Facts = AerFile;
    const EXPECTED: &'static str = "AER counts (`RxErr 0` lines and a `TOTAL_ERR_COR 0` line)";

    fn parse(text: &str) -> Option<AerFile> {
        let mut out = AerFile::default();
        for line in text.lines() {
            let mut words = line.split_whitespace();
            let (Some(name), Some(count), None) = (words.next(), words.next(), words.next()) else {
                continue;
            };
            let Ok(count) = count.parse::<u64>() else {
                continue;
            };
            if name.starts_with("TOTAL_ERR_") {
                out.total = Some(count);
            } else {
                out.errors.insert(name.to_string(), count);
            }
        }
        (out.total.is_some() || !out.errors.is_empty()).then_some(out)
    }
}

/// Normalises an lspci address: `17:00.0` → `0000:17:00.0`.
pub fn normalize_bdf(raw: &str) -> Option<String> {
    let t = raw.trim();
    let full = if t.matches(':').count() == 1 {
        format!("0000:{t}")
    } else {
        t.to_string()
    };
    is_bdf(&full).then(|| full.to_ascii_lowercase())
}

/// `DDDD:BB:DD.F` (a longer domain, as VMD uses, is accepted).
pub fn is_bdf(s: &str) -> bool {
    let Some((rest, func)) = s.rsplit_once('.') else {
        return false;
    };
    let parts: Vec<&str> = rest.split(':').collect();
    if parts.len() != 3 || func.len() != 1 {
        return false;
    }
    let hex = |p: &str, n: usize| p.len() == n && p.chars().all(|c| c.is_ascii_hexdigit());
    parts[0].len() >= 4
        && parts[0].chars().all(|c| c.is_ascii_hexdigit())
        && hex(parts[1], 2)
        && hex(parts[2], 2)
        && func.chars().all(|c| c.is_digit(8))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn aer_files_read_as_the_kernel_writes_them() {
        // The layout of aer_dev_correctable on a 6.x kernel, with an unnamed bit that counted.
        let f = AerCounts::parse(
            "RxErr 3\nBadTLP 0\nBadDLLP 1\ndev_cor_errs_bit[14] 2\nTOTAL_ERR_COR 6\n",
        )
        .unwrap_or_default();
        assert_eq!(f.total, Some(6));
        assert_eq!(f.errors.get("RxErr"), Some(&3));
        assert_eq!(f.errors.get("dev_cor_errs_bit[14]"), Some(&2));
        assert_eq!(f.errors.len(), 4);
        assert_eq!(AerCounts::parse("not a count\n"), None);
        assert_eq!(AerCounts::parse(""), None);
        // A count past u64 is not guessed.
        assert_eq!(AerCounts::parse("RxErr 18446744073709551616\n"), None);
    }

    proptest! {
        #[test]
        fn aer_counts_never_panic(text in "\\PC{0,300}") {
            let _ = AerCounts::parse(&text);
        }

        #[test]
        fn aer_counts_read_back(counts in proptest::collection::btree_map("[A-Za-z][A-Za-z_]{0,12}", any::<u64>(), 0..20), total in any::<u64>()) {
            let mut text = String::new();
            for (k, v) in &counts {
                if k.starts_with("TOTAL_ERR_") { continue; }
                text.push_str(&format!("{k} {v}\n"));
            }
            text.push_str(&format!("TOTAL_ERR_FATAL {total}\n"));
            let f = AerCounts::parse(&text);
            prop_assert_eq!(f.as_ref().and_then(|f| f.total), Some(total));
            let want: std::collections::BTreeMap<String, u64> = counts.into_iter().filter(|(k, _)| !k.starts_with("TOTAL_ERR_")).collect();
            prop_assert_eq!(f.map(|f| f.errors), Some(want));
        }
    }
}
