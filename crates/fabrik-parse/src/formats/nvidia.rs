//! `/proc/driver/nvidia/`: the kernel module's `version` and each GPU's `information`.

use super::Format;

/// What `/proc/driver/nvidia/version` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvidiaVersionFacts {
    /// The version number after `Kernel Module` (`535.129.03`).
    pub version: Option<String>,
    /// Whether the module is the open one (`Open Kernel Module`); `None` when the line names
    /// no kernel module.
    pub open_module: Option<bool>,
}

/// `/proc/driver/nvidia/version`. The proprietary module writes `NVRM version: NVIDIA UNIX
/// x86_64 Kernel Module  535.129.03  <date>`, the open one `NVRM version: NVIDIA UNIX Open Kernel
/// Module for x86_64  550.54.15  Release Build ...`.
pub struct NvidiaVersion;

impl Format for NvidiaVersion {
    type Facts = NvidiaVersionFacts;
    const EXPECTED: &'static str = "an `NVRM version:` line";

    fn parse(text: &str) -> Option<NvidiaVersionFacts> {
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with("NVRM version:"))?;
        let version = line
            .split_whitespace()
            .find(|w| {
                let parts: Vec<&str> = w.split('.').collect();
                parts.len() >= 2
                    && parts
                        .iter()
                        .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
            })
            .map(str::to_string);
        let open_module = if line.contains("Open Kernel Module") {
            Some(true)
        } else if line.contains("Kernel Module") {
            Some(false)
        } else {
            None
        };
        Some(NvidiaVersionFacts {
            version,
            open_module,
        })
    }
}

/// `/proc/driver/nvidia/gpus/ADDR/information`: model, UUID and device minor.
pub struct NvidiaGpuInformation;

impl Format for NvidiaGpuInformation {
    type Facts = (Option<String>, Option<String>, Option<u32>);
    const EXPECTED: &'static str = "`Model:`, `GPU UUID:`, `Device Minor:` lines";

    fn parse(text: &str) -> Option<Self::Facts> {
        let (mut model, mut uuid, mut minor) = (None, None, None);
        for line in text.lines() {
            let Some((k, v)) = line.split_once(':') else {
                continue;
            };
            let v = v.trim();
            match k.trim() {
                "Model" if !v.is_empty() => model = Some(v.to_string()),
                "GPU UUID" if !v.is_empty() => uuid = Some(v.to_string()),
                "Device Minor" => minor = v.parse().ok(),
                _ => {}
            }
        }
        Some((model, uuid, minor))
    }
}
