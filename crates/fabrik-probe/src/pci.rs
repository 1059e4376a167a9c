//! PCI functions as sysfs shows them under `/sys/devices/pci…`.

use fabrik_model::{PciAer, PciFunction, PciLink};

use crate::fs::{base_name, join, RootFs};
use fabrik_parse::formats::pci_config::parse_pci_config;
use fabrik_parse::formats::{is_bdf, AerCounts, Decimal, Format, NumaNode, PciSpeed};

/// Where PCI functions are listed.
pub const PCI_DEVICES: &str = "/sys/bus/pci/devices";

/// The PCI addresses along a resolved `/sys/devices/pci0000:00/0000:00:01.0/...` path, root port
/// first. Non-PCI components (`virtio2`, `net`, `pci0000:00`) are skipped.
pub fn bdf_chain(resolved: &str) -> Vec<String> {
    resolved
        .split('/')
        .filter(|c| is_bdf(c))
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// The nearest PCI function at or above a resolved device path (a virtio netdev's `device`
/// points at `.../0000:00:03.0/virtio2`, whose PCI function is the parent).
pub fn pci_dir_of(resolved: &str) -> Option<String> {
    let mut cur = resolved.trim_end_matches('/').to_string();
    loop {
        if is_bdf(base_name(&cur)) {
            return Some(cur);
        }
        let (head, _) = cur.rsplit_once('/')?;
        if head.is_empty() {
            return None;
        }
        cur = head.to_string();
    }
}

/// Reads the PCI function whose sysfs directory is `dir` (a resolved path).
pub fn read_function(fs: &mut RootFs, dir: &str) -> PciFunction {
    let address = base_name(dir).to_ascii_lowercase();
    let vendor = fs.attr(&join(dir, "vendor"));
    let device = fs.attr(&join(dir, "device"));
    let class = fs.attr(&join(dir, "class"));
    let numa_path = join(dir, "numa_node");
    let numa_node = match fs.attr_opt(&numa_path) {
        Some(raw) => match NumaNode::parse(&raw) {
            Some(v) => v,
            None => {
                fs.warn(&numa_path, format!("not a NUMA node number: {raw:?}"));
                None
            }
        },
        None => None,
    };
    let driver = fs.link_name(&join(dir, "driver"));
    let physfn = if fs.exists(&join(dir, "physfn")) {
        fs.link_name(&join(dir, "physfn"))
    } else {
        None
    };
    let link = read_link(fs, dir);
    let mut f = PciFunction {
        address,
        vendor,
        device,
        class,
        numa_node,
        driver,
        link,
        physfn,
        path: bdf_chain(dir),
        ..PciFunction::default()
    };
    function_config(fs, dir, &mut f);
    f.aer = read_aer(fs, dir);
    f
}

/// Relaxed ordering and the link registers of one function, from its config space.
fn function_config(fs: &mut RootFs, dir: &str, f: &mut fabrik_model::PciFunction) {
    let Ok(bytes) = fs.read_bytes(&join(dir, "config")) else {
        return;
    };
    let c = parse_pci_config(&bytes);
    f.relaxed_ordering = c.relaxed_ordering();
    if let Some(e) = c.express {
        let link = &mut f.link;
        if link.current_speed_gts.is_none() {
            link.current_speed_gts = e.speed_gts();
        }
        if link.current_width.is_none() {
            link.current_width = e.width();
        }
        if link.max_speed_gts.is_none() {
            link.max_speed_gts = e.max_speed_gts();
        }
        if link.max_width.is_none() {
            link.max_width = e.max_width();
        }
    }
}

/// The AER statistics files and the [`PciAer::counts`] keys their totals take. The total is
/// keyed by the file it came from, not by its line's text: which file says fatal is the kernel's
/// contract, and the per-error names of the fatal and non-fatal files are the same.
const AER_FILES: [(&str, &str, &str); 3] = [
    ("aer_dev_correctable", "correctable", "TOTAL_ERR_COR"),
    ("aer_dev_nonfatal", "nonfatal", "TOTAL_ERR_NONFATAL"),
    ("aer_dev_fatal", "fatal", "TOTAL_ERR_FATAL"),
];

/// The kernel's AER counts of the function (kernels from 4.19 with AER enabled write them; a
/// function without the AER capability has none, which is not a fault). Each error's count is
/// kept as `KIND:NAME` (`nonfatal:DLP`).
fn read_aer(fs: &mut RootFs, dir: &str) -> Option<PciAer> {
    let mut aer: Option<PciAer> = None;
    for (file, kind, total_key) in AER_FILES {
        let path = join(dir, file);
        let Some(text) = fs.text_opt(&path) else {
            continue;
        };
        let Some(parsed) = AerCounts::parse(&text) else {
            fs.warn(&path, format!("not AER counts: {:?}", text.trim()));
            continue;
        };
        let counts = &mut aer.get_or_insert_with(PciAer::default).counts;
        if let Some(total) = parsed.total {
            counts.insert(total_key.to_string(), total);
        }
        for (name, n) in parsed.errors {
            counts.insert(format!("{kind}:{name}"), n);
        }
    }
    aer
}

fn read_link(fs: &mut RootFs, dir: &str) -> PciLink {
    let mut link = PciLink::default();
    let speed = |fs: &mut RootFs, name: &str| -> (Option<String>, Option<f64>) {
        // Conventional PCI and some virtual functions have no link files: not a fault.
        let raw = fs.attr_opt(&join(dir, name));
        let gts = raw.as_deref().and_then(PciSpeed::parse);
        (raw, gts)
    };
    (link.current_speed, link.current_speed_gts) = speed(fs, "current_link_speed");
    (link.max_speed, link.max_speed_gts) = speed(fs, "max_link_speed");
    let width = |fs: &mut RootFs, name: &str| -> Option<u32> {
        let p = join(dir, name);
        let raw = fs.attr_opt(&p)?;
        match Decimal::parse(&raw).and_then(|v| u32::try_from(v).ok()) {
            Some(v) => Some(v),
            None => {
                fs.warn(&p, format!("not a link width: {raw:?}"));
                None
            }
        }
    };
    link.current_width = width(fs, "current_link_width");
    link.max_width = width(fs, "max_link_width");
    link
}

/// Every network-class PCI function (class `0x02....`: Ethernet `0x0200`, InfiniBand `0x0207`)
/// listed under `/sys/bus/pci/devices`, whether or not a driver bound it: a NIC whose driver
/// did not load has no netdev and no RDMA device, and is seen only here.
pub fn read_network_functions(fs: &mut RootFs) -> Vec<PciFunction> {
    let mut out = Vec::new();
    for addr in fs.list_opt(PCI_DEVICES) {
        let base = join(PCI_DEVICES, &addr);
        let class = fs.attr_opt(&join(&base, "class")).unwrap_or_default();
        if !class.to_ascii_lowercase().starts_with("0x02") {
            continue;
        }
        match fs.resolve(&base).ok().and_then(|r| pci_dir_of(&r)) {
            Some(dir) => out.push(read_function(fs, &dir)),
            None => fs.warn(&base, "PCI device link does not lead to a PCI device"),
        }
    }
    out
}

/// The PCI function behind a class device's `device` link (`/sys/class/net/eth0/device`), or
/// `None` when it has none (virtual and software devices) or it is not on PCI.
pub fn function_behind(fs: &mut RootFs, device_link: &str) -> Option<PciFunction> {
    let resolved = fs.resolve(device_link).ok()?;
    let dir = pci_dir_of(&resolved)?;
    Some(read_function(fs, &dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_and_function_dirs() {
        let p = "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:08.0/0000:03:00.0";
        assert_eq!(
            bdf_chain(p),
            vec![
                "0000:00:01.0",
                "0000:01:00.0",
                "0000:02:08.0",
                "0000:03:00.0"
            ]
        );
        assert_eq!(
            pci_dir_of("/sys/devices/pci0000:00/0000:00:03.0/virtio2").as_deref(),
            Some("/sys/devices/pci0000:00/0000:00:03.0")
        );
        assert_eq!(pci_dir_of("/sys/devices/virtual/net/lo"), None);
    }
}
