//! `/proc/driver/nvidia/`: the kernel module's `version` and each GPU's `information`.

/// `/proc/driver/nvidia/version`: the version number after `Kernel Module`.
pub fn parse_nvidia_version(raw: &str) -> Option<String> {
    let line = raw.lines().find(|l| l.starts_with("NVRM version:"))?;
    line.split_whitespace()
        .find(|w| {
            let parts: Vec<&str> = w.split('.').collect();
            parts.len() >= 2
                && parts
                    .iter()
                    .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
        })
        .map(str::to_string)
}

/// `/proc/driver/nvidia/version`: whether the module is the open one. The proprietary module
/// writes `NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.129.03  <date>`, the open one
/// `NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build ...`;
/// `None` without an `NVRM version:` line naming a kernel module.
pub fn parse_nvidia_open_module(raw: &str) -> Option<bool> {
    let line = raw
        .lines()
        .find(|l| l.trim_start().starts_with("NVRM version:"))?;
    if line.contains("Open Kernel Module") {
        Some(true)
    } else if line.contains("Kernel Module") {
        Some(false)
    } else {
        None
    }
}

/// `/proc/driver/nvidia/gpus/ADDR/information`: model, UUID and device minor.
pub fn parse_nvidia_gpu_information(raw: &str) -> (Option<String>, Option<String>, Option<u32>) {
    let (mut model, mut uuid, mut minor) = (None, None, None);
    for line in raw.lines() {
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
    (model, uuid, minor)
}
