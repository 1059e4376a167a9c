//! `/proc/cmdline`: the kernel command line.

/// IOMMU switches on the kernel command line.
pub fn iommu_cmdline_flags(cmdline: &str) -> Vec<String> {
    cmdline
        .split_whitespace()
        .take_while(|w| *w != "--")
        .filter(|w| {
            let key = w.split('=').next().unwrap_or(w);
            matches!(
                key,
                "intel_iommu" | "amd_iommu" | "iommu" | "iommu.passthrough" | "iommu.strict"
            )
        })
        .map(str::to_string)
        .collect()
}
