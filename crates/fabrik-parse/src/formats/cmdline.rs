//! `/proc/cmdline`: the kernel command line.

use super::Format;

/// The IOMMU switches of `/proc/cmdline` (`intel_iommu=on`, `iommu=pt`...), as written.
pub struct IommuCmdline;

impl Format for IommuCmdline {
    type Facts = Vec<String>;
    const EXPECTED: &'static str = "a kernel command line";

    fn parse(text: &str) -> Option<Vec<String>> {
        Some(
            text.split_whitespace()
                .take_while(|w| *w != "--")
                .filter(|w| {
                    let key = w.split('=').next().unwrap_or(w);
                    matches!(
                        key,
                        "intel_iommu"
                            | "amd_iommu"
                            | "iommu"
                            | "iommu.passthrough"
                            | "iommu.strict"
                    )
                })
                .map(str::to_string)
                .collect(),
        )
    }
}
