//! `lspci -vvv` (pciutils `lspci.c`, `ls-caps.c`, `ls-ecaps.c`): per function, its class and
//! name, driver and NUMA node, the PCIe link (`LnkCap`/`LnkSta`), Device Control (`DevCtl`:
//! `RlxdOrd`, `MaxReadReq`), ACS control (`ACSCtl`) and Advanced Error Reporting (`UESta`,
//! `UESvrt`, `CESta`).
//!
//! A device header is any line whose first word is a PCI address (`17:00.0` or `0000:17:00.0`,
//! indented or not, as pastes and `-D` print them). pciutils wraps long flag lists onto lines
//! of their own (`DevCtl:` is followed by `RlxdOrd+ ExtTag+ ...` and `MaxPayload 256 bytes,
//! MaxReadReq 4096 bytes`; `UESta:` takes three lines since 3.9); a line without a `Key:` of
//! its own continues the one before.

use std::collections::{BTreeMap, BTreeSet};

use fabrik_model::facts::cell;
use fabrik_model::{
    Fact, FactTable, Gpu, Node, PciAer, PciBridge, PciFunction, PciLink, RdmaDevice,
};
use serde::{Deserialize, Serialize};

use super::{lines, normalize_bdf, Format, Paste};

/// A PCIe link as `LnkCap` or `LnkSta` prints it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Lnk {
    /// GT/s (`16GT/s`); `None` for `unknown`.
    pub speed_gts: Option<f64>,
    /// Lanes (`x16`).
    pub width: Option<u32>,
}

/// One PCI function of `lspci -vvv`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LspciFunction {
    /// `0000:17:00.0`.
    pub address: String,
    /// `Infiniband controller`, `3D controller`, `PCI bridge`...
    pub class: Option<String>,
    /// The rest of the header: vendor and device names (`Mellanox Technologies MT28908 Family
    /// [ConnectX-6]`).
    pub name: Option<String>,
    /// `[15b3:101b]` of `lspci -nn`, as `15b3`.
    pub vendor_id: Option<String>,
    /// `101b`.
    pub device_id: Option<String>,
    /// `Kernel driver in use:`.
    pub driver: Option<String>,
    /// `NUMA node:`.
    pub numa_node: Option<i32>,
    /// `LnkCap:`.
    pub link_cap: Option<Lnk>,
    /// `LnkSta:`.
    pub link_status: Option<Lnk>,
    /// `RlxdOrd` of `DevCtl`.
    pub relaxed_ordering: Option<bool>,
    /// `MaxReadReq` of `DevCtl`, bytes.
    pub max_read_request: Option<u32>,
    /// ACS control bits set (`ACSCtl`).
    pub acs_ctl: Option<Vec<String>>,
    /// Uncorrectable error status bits set (`UESta`).
    pub uncorrectable: Option<Vec<String>>,
    /// Uncorrectable errors the severity register makes fatal (`UESvrt`).
    pub fatal_severity: Option<Vec<String>>,
    /// Correctable error status bits set (`CESta`).
    pub correctable: Option<Vec<String>>,
    /// `Capabilities: <access denied>`: lspci ran without root, so no capability was read.
    pub access_denied: bool,
}

impl LspciFunction {
    fn is_bridge(&self) -> bool {
        self.class.as_deref().is_some_and(|c| c.contains("bridge"))
    }

    fn vendor_is(&self, id: &str, names: &[&str]) -> bool {
        self.vendor_id.as_deref() == Some(id)
            || self
                .name
                .as_deref()
                .is_some_and(|n| names.iter().any(|v| n.contains(v)))
    }

    /// An NVIDIA GPU (vendor 10de, a 3D, VGA or display controller).
    pub fn is_nvidia_gpu(&self) -> bool {
        let gpu_class = self.class.as_deref().is_some_and(|c| {
            c.contains("3D controller") || c.contains("VGA") || c.contains("Display controller")
        });
        gpu_class && self.vendor_is("10de", &["NVIDIA"])
    }

    /// An RDMA NIC: an InfiniBand controller, or a Mellanox (NVIDIA networking) Ethernet
    /// function.
    pub fn is_rdma_nic(&self) -> bool {
        let class = self.class.as_deref().unwrap_or("");
        class.contains("Infiniband")
            || ((class.contains("Ethernet") || class.contains("Network"))
                && self.vendor_is("15b3", &["Mellanox", "ConnectX", "BlueField"]))
    }

    fn pci_function(&self) -> PciFunction {
        let link = PciLink {
            current_speed_gts: self.link_status.and_then(|l| l.speed_gts),
            current_speed: self
                .link_status
                .and_then(|l| l.speed_gts)
                .map(|g| format!("{g} GT/s")),
            current_width: self.link_status.and_then(|l| l.width),
            max_speed_gts: self.link_cap.and_then(|l| l.speed_gts),
            max_speed: self
                .link_cap
                .and_then(|l| l.speed_gts)
                .map(|g| format!("{g} GT/s")),
            max_width: self.link_cap.and_then(|l| l.width),
        };
        let aer = (self.uncorrectable.is_some() || self.correctable.is_some()).then(|| {
            let fatal_sev = self.fatal_severity.clone().unwrap_or_default();
            let un = self.uncorrectable.clone().unwrap_or_default();
            PciAer {
                correctable: self.correctable.clone().unwrap_or_default(),
                nonfatal: un
                    .iter()
                    .filter(|b| !fatal_sev.contains(b))
                    .cloned()
                    .collect(),
                fatal: un
                    .iter()
                    .filter(|b| fatal_sev.contains(b))
                    .cloned()
                    .collect(),
                counts: BTreeMap::new(),
            }
        });
        PciFunction {
            address: self.address.clone(),
            vendor: self.vendor_id.as_ref().map(|v| format!("0x{v}")),
            device: self.device_id.as_ref().map(|v| format!("0x{v}")),
            numa_node: self.numa_node,
            driver: self.driver.clone(),
            link,
            relaxed_ordering: self.relaxed_ordering,
            max_read_request: self.max_read_request,
            aer,
            ..PciFunction::default()
        }
    }
}

/// Every function `lspci -vvv` printed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LspciFacts {
    /// The functions, in the order printed.
    pub functions: Vec<LspciFunction>,
}

impl LspciFacts {
    /// ACS control bits set, by address, for the functions that print `ACSCtl`.
    pub fn acs(&self) -> BTreeMap<String, Vec<String>> {
        self.functions
            .iter()
            .filter_map(|f| Some((f.address.clone(), f.acs_ctl.clone()?)))
            .collect()
    }
}

/// `lspci -vvv`.
pub struct Lspci;

impl Format for Lspci {
    type Facts = LspciFacts;
    const EXPECTED: &'static str =
        "device headers (`17:00.0 Infiniband controller: ...`) with `LnkSta:`, `DevCtl:` or `ACSCtl:` lines";

    fn parse(text: &str) -> Option<LspciFacts> {
        let functions = parse(text);
        (!functions.is_empty()).then_some(LspciFacts { functions })
    }
}

/// The device an `lspci` command line selects with `-s BDF` (or `-vvs BDF`, `-s BDF`), when
/// the line pipes its output through `grep` (so the device header will be missing).
fn selected_device(line: &str) -> Option<String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words
        .iter()
        .position(|w| *w == "lspci" || w.ends_with("/lspci"))?;
    if !words[at..].iter().any(|w| w.contains("grep")) {
        return None;
    }
    let mut it = words[at + 1..].iter().take_while(|w| !w.starts_with('|'));
    while let Some(w) = it.next() {
        // `-s BDF`, `-vvs BDF`, `-s03:00.0`; not `--long` options.
        let Some(opts) = w.strip_prefix('-').filter(|o| !o.starts_with('-')) else {
            continue;
        };
        let Some((flags, rest)) = opts.split_once('s') else {
            continue;
        };
        if !flags.chars().all(|c| c.is_ascii_alphabetic()) {
            continue;
        }
        let bdf = if rest.is_empty() { *it.next()? } else { rest };
        if let Some(address) = normalize_bdf(bdf) {
            return Some(address);
        }
    }
    None
}

/// The words of a flag list that end in `+` (`SrcValid+ TransBlk-` → `SrcValid`).
fn plus(words: &str) -> Vec<String> {
    words
        .split_whitespace()
        .filter_map(|w| w.trim_end_matches(',').strip_suffix('+'))
        .filter(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .map(str::to_string)
        .collect()
}

/// `Speed 16GT/s (downgraded), Width x8 (downgraded)` or `Port #0, Speed 8GT/s, Width x16`.
fn lnk(text: &str) -> Lnk {
    let w: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|s| !s.is_empty())
        .collect();
    let after = |key: &str| w.iter().position(|x| *x == key).and_then(|i| w.get(i + 1));
    Lnk {
        speed_gts: after("Speed")
            .and_then(|s| s.strip_suffix("GT/s"))
            .and_then(|s| s.parse().ok())
            .filter(|v: &f64| v.is_finite() && *v > 0.0),
        width: after("Width")
            .and_then(|s| s.strip_prefix('x'))
            .and_then(|s| s.parse().ok()),
    }
}

/// `[15b3:101b]` at the end of an `lspci -nn` header (before a `(rev xx)`).
fn ids(header: &str) -> Option<(String, String)> {
    header
        .split('[')
        .filter_map(|p| p.split(']').next())
        .filter_map(|p| p.split_once(':'))
        .filter(|(v, d)| {
            v.len() == 4
                && d.len() == 4
                && v.chars().chain(d.chars()).all(|c| c.is_ascii_hexdigit())
        })
        .map(|(v, d)| (v.to_ascii_lowercase(), d.to_ascii_lowercase()))
        .next_back()
}

fn parse(text: &str) -> Vec<LspciFunction> {
    let mut out: Vec<LspciFunction> = Vec::new();
    // The key of the last `Key:` line, which a wrapped line continues.
    let mut key = String::new();
    for line in lines(text) {
        let t = line.trim();
        // `$ sudo lspci -vvs 03:00.0 | grep LnkSta`: the device of the lines that follow, whose
        // header the `grep` dropped.
        if let Some(address) = selected_device(t) {
            out.push(LspciFunction {
                address,
                ..LspciFunction::default()
            });
            key.clear();
            continue;
        }
        let first = t.split_whitespace().next().unwrap_or("");
        if let Some(address) = normalize_bdf(first) {
            let rest = t[first.len()..].trim();
            let (class, name) = match rest.split_once(": ") {
                Some((c, n)) => (Some(c), Some(n)),
                None => (None, (!rest.is_empty()).then_some(rest)),
            };
            let (vendor_id, device_id) = ids(rest).unzip();
            out.push(LspciFunction {
                address,
                // `Infiniband controller [0207]`: the class code is not part of the name.
                class: class.map(|c| c.split(" [").next().unwrap_or(c).trim().to_string()),
                name: name.map(|n| n.trim().to_string()),
                vendor_id,
                device_id,
                ..LspciFunction::default()
            });
            key.clear();
            continue;
        }
        let Some(f) = out.last_mut() else { continue };
        // Whether this line starts with its key (a continuation line does not).
        let mut fresh = false;
        let value = match t.split_once(':') {
            Some((k, v)) if !k.contains('+') && !k.contains('-') || k.starts_with("Kernel") => {
                key = k.trim().to_string();
                fresh = true;
                v
            }
            _ => t,
        };
        match key.as_str() {
            "Capabilities" if value.contains("<access denied>") => f.access_denied = true,
            "Kernel driver in use" if fresh => {
                f.driver = value.split_whitespace().next().map(str::to_string)
            }
            "NUMA node" if fresh => f.numa_node = value.trim().parse().ok(),
            // Their continuation lines (`ClockPM- Surprise-`, `TrErr- Train-`) hold no link.
            "LnkCap" if fresh => f.link_cap = Some(lnk(value)),
            "LnkSta" if fresh && f.link_status.is_none() => f.link_status = Some(lnk(value)),
            "DevCtl" => {
                for w in value.split_whitespace() {
                    match w {
                        "RlxdOrd+" => f.relaxed_ordering = Some(true),
                        "RlxdOrd-" => f.relaxed_ordering = Some(false),
                        _ => {}
                    }
                }
                let words: Vec<&str> = value.split_whitespace().collect();
                if let Some(i) = words.iter().position(|w| *w == "MaxReadReq") {
                    f.max_read_request = words.get(i + 1).and_then(|n| n.parse().ok());
                }
            }
            "ACSCtl" => f.acs_ctl.get_or_insert_with(Vec::new).extend(plus(value)),
            "UESta" => f
                .uncorrectable
                .get_or_insert_with(Vec::new)
                .extend(plus(value)),
            "UESvrt" => f
                .fatal_severity
                .get_or_insert_with(Vec::new)
                .extend(plus(value)),
            "CESta" => f
                .correctable
                .get_or_insert_with(Vec::new)
                .extend(plus(value)),
            _ => {}
        }
    }
    out
}

impl Paste for Lspci {
    const NAME: &'static str = "lspci";
    const ABOUT: &'static str =
        "`lspci -vvv` output: PCIe links, relaxed ordering, ACS and AER of GPUs, NICs and bridges; `-` reads stdin";

    fn node(facts: &LspciFacts) -> Node {
        let mut node = Node::default();
        let mut known = BTreeSet::new();
        for f in &facts.functions {
            if f.link_status.is_some() {
                known.insert(Fact::PciLinks);
            }
            if f.relaxed_ordering.is_some() {
                known.insert(Fact::PciDevCtl);
            }
            if f.uncorrectable.is_some() || f.correctable.is_some() {
                known.insert(Fact::Aer);
            }
            if f.acs_ctl.is_some() {
                known.insert(Fact::Acs);
            }
            if f.is_bridge() {
                node.pci_bridges.push(PciBridge {
                    address: f.address.clone(),
                    acs_ctl_enabled: f.acs_ctl.clone(),
                    function: Some(f.pci_function()),
                });
            } else if f.is_nvidia_gpu() {
                node.gpus.push(Gpu {
                    model: f.name.clone(),
                    ..Gpu::new(f.pci_function())
                });
            } else if f.is_rdma_nic() {
                node.rdma_devices.push(RdmaDevice {
                    name: f.address.clone(),
                    pci: Some(f.pci_function()),
                    ..RdmaDevice::default()
                });
            }
        }
        node.known = Some(known);
        node
    }

    fn table(facts: &LspciFacts) -> FactTable {
        let mut t = FactTable::new([
            "function",
            "class",
            "link",
            "of",
            "RlxdOrd",
            "MaxReadReq",
            "ACS redirect",
            "AER",
        ]);
        let link = |l: &Option<Lnk>| {
            l.map(|l| format!("{}GT/s x{}", cell(&l.speed_gts), cell(&l.width)))
                .unwrap_or_default()
        };
        for f in &facts.functions {
            let aer: Vec<String> = f
                .uncorrectable
                .iter()
                .flatten()
                .chain(f.correctable.iter().flatten())
                .cloned()
                .collect();
            t.row([
                f.address.clone(),
                cell(&f.class),
                link(&f.link_status),
                link(&f.link_cap),
                f.relaxed_ordering
                    .map(|r| if r { "on" } else { "off" }.to_string())
                    .unwrap_or_default(),
                cell(&f.max_read_request),
                f.acs_ctl
                    .as_ref()
                    .map(|b| {
                        let r: Vec<&str> = b
                            .iter()
                            .map(String::as_str)
                            .filter(|b| matches!(*b, "ReqRedir" | "CmpltRedir" | "UpstreamFwd"))
                            .collect();
                        if r.is_empty() {
                            "no".to_string()
                        } else {
                            r.join(",")
                        }
                    })
                    .unwrap_or_default(),
                if f.uncorrectable.is_none() && f.correctable.is_none() {
                    String::new()
                } else if aer.is_empty() {
                    "clear".to_string()
                } else {
                    aer.join(",")
                },
            ]);
        }
        if facts.functions.iter().any(|f| f.access_denied) {
            t.note("`Capabilities: <access denied>`: lspci ran without root, so links, DevCtl, ACS and AER were not shown; run `sudo lspci -vvv`");
        }
        t
    }
}
