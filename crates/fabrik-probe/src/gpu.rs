//! NVIDIA GPUs: PCI functions with vendor 0x10de and a display class (0x03xxxx), with what the
//! driver tells in `/proc/driver/nvidia`.

use fabrik_model::Gpu;

use crate::fs::{join, RootFs};
use crate::pci::{pci_dir_of, read_function};
use fabrik_parse::formats::{Format, NvidiaGpuInformation};

/// Where PCI functions are listed (the PCI reader's, named here too for the GPU scan).
pub use crate::pci::PCI_DEVICES;
const NVIDIA: &str = "0x10de";

/// NVIDIA display-class PCI functions (vendor `0x10de`, class `0x03...`) with the driver's model, UUID and minor where readable.
pub fn read_gpus(fs: &mut RootFs) -> Vec<Gpu> {
    let mut out = Vec::new();
    for addr in fs.list_opt(PCI_DEVICES) {
        let base = join(PCI_DEVICES, &addr);
        let vendor = fs.attr_opt(&join(&base, "vendor"));
        if vendor.as_deref().map(str::to_ascii_lowercase).as_deref() != Some(NVIDIA) {
            continue;
        }
        let class = fs.attr_opt(&join(&base, "class")).unwrap_or_default();
        if !class.to_ascii_lowercase().starts_with("0x03") {
            continue;
        }
        let Some(dir) = fs.resolve(&base).ok().and_then(|r| pci_dir_of(&r)) else {
            fs.warn(&base, "GPU link does not lead to a PCI device");
            continue;
        };
        let pci = read_function(fs, &dir);
        let info_path = format!("/proc/driver/nvidia/gpus/{}/information", pci.address);
        let (model, uuid, minor) = match fs.text_opt(&info_path) {
            Some(t) => NvidiaGpuInformation::parse(&t).unwrap_or_default(),
            None => (None, None, None),
        };
        out.push(Gpu {
            model,
            uuid,
            minor,
            ..Gpu::new(pci)
        });
    }
    out
}
