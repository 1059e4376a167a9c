//! PCI configuration space as sysfs' `config` file gives it: the capability lists walked as the
//! kernel walks them (`drivers/pci/pci.c`: `__pci_find_next_cap_ttl`, `pci_find_next_ext_capability`)
//! and the registers fabrik judges decoded with the bit layout of `include/uapi/linux/pci_regs.h`
//! (the same names pciutils' `lspci -vvv` prints: `ACSCtl: SrcValid+ ReqRedir+ ...`,
//! `DevCtl: ... RlxdOrd+`, `LnkSta: Speed 16GT/s, Width x16`).
//!
//! How much of the file a reader gets says what can be known: root reads the whole space
//! (`cfg_size`: 256 bytes, or 4096 for PCIe with extended space); anyone else gets the first 64
//! bytes (`pci_read_config` in `drivers/pci/pci-sysfs.c`), the header alone, with no capability.

/// `PCI_STATUS` (16 bits) and its `PCI_STATUS_CAP_LIST` bit.
const STATUS: usize = 0x06;
const STATUS_CAP_LIST: u16 = 0x10;
/// `PCI_HEADER_TYPE`; type 2 (CardBus) keeps its capability pointer elsewhere.
const HEADER_TYPE: usize = 0x0e;
const CAPABILITY_LIST: usize = 0x34;
const CB_CAPABILITY_LIST: usize = 0x14;
/// The kernel's `PCI_FIND_CAP_TTL`: at most 48 standard capabilities are followed.
const CAP_TTL: usize = 48;
/// `PCI_CAP_ID_EXP`, the PCI Express capability.
const CAP_ID_EXP: u8 = 0x10;
/// Extended capabilities start here; the kernel follows at most (4096 - 256) / 8 of them.
const EXT_START: usize = 0x100;
const EXT_TTL: usize = (4096 - 256) / 8;
/// `PCI_EXT_CAP_ID_ACS`.
const EXT_CAP_ID_ACS: u16 = 0x000d;

/// `PCI_EXP_DEVCTL` and `PCI_EXP_DEVCTL_RELAX_EN`.
const EXP_DEVCTL: usize = 0x08;
const DEVCTL_RELAX_EN: u16 = 0x0010;
/// `PCI_EXP_LNKCAP` (32 bits), `PCI_EXP_LNKSTA` (16 bits): speed in bits 3:0, width in 9:4.
const EXP_LNKCAP: usize = 0x0c;
const EXP_LNKSTA: usize = 0x12;

/// `PCI_ACS_*` control bits in the order and with the names `lspci -vvv` prints them.
pub const ACS_BITS: [(u16, &str); 7] = [
    (0x0001, "SrcValid"),
    (0x0002, "TransBlk"),
    (0x0004, "ReqRedir"),
    (0x0008, "CmpltRedir"),
    (0x0010, "UpstreamFwd"),
    (0x0020, "EgressCtrl"),
    (0x0040, "DirectTrans"),
];

/// What can be read of one function's configuration space.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PciConfig {
    /// How many bytes the file gave.
    pub len: usize,
    /// The PCI Express capability, when the function has one within what was read.
    pub express: Option<Express>,
    /// ACS (`ACSCap`, `ACSCtl`) when the function has that extended capability.
    pub acs: Option<Acs>,
}

/// Registers of the PCI Express capability.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Express {
    /// `DevCtl`.
    pub devctl: u16,
    /// `LnkCap`.
    pub lnkcap: u32,
    /// `LnkSta`.
    pub lnksta: u16,
}

/// The ACS extended capability.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Acs {
    /// `ACSCap`: what the port can do.
    pub cap: u16,
    /// `ACSCtl`: what is enabled.
    pub ctl: u16,
}

impl Acs {
    /// The enabled control bits by their `lspci` names (`ReqRedir`, `CmpltRedir`...).
    pub fn enabled(&self) -> Vec<String> {
        ACS_BITS
            .iter()
            .filter(|(bit, _)| self.ctl & bit != 0)
            .map(|(_, name)| name.to_string())
            .collect()
    }
}

/// What the size of a read says about the extended capabilities (ACS lives there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtendedSpace {
    /// 4096 bytes were read: the list was walked.
    Read,
    /// 256 bytes, the whole space of a function without extended space: it has no ACS.
    Absent,
    /// Fewer than 256 bytes: the reader lacked the privilege (the kernel gives others 64).
    NotReadable,
}

impl PciConfig {
    /// What the read says about the extended space.
    pub fn extended(&self) -> ExtendedSpace {
        if self.len > EXT_START {
            ExtendedSpace::Read
        } else if self.len == EXT_START {
            ExtendedSpace::Absent
        } else {
            ExtendedSpace::NotReadable
        }
    }

    /// Whether the standard capability list was within what was read (past the 64-byte header).
    pub fn capabilities_read(&self) -> bool {
        self.len >= EXT_START
    }

    /// `Some(true)` when relaxed ordering is enabled in `DevCtl`; `None` when the PCI Express
    /// capability was not read or the function has none.
    pub fn relaxed_ordering(&self) -> Option<bool> {
        self.express.map(|e| e.devctl & DEVCTL_RELAX_EN != 0)
    }
}

impl Express {
    /// The negotiated link speed in GT/s (`LnkSta` bits 3:0, the Supported Link Speeds codes
    /// 1 = 2.5 ... 6 = 64 GT/s); `None` for a code the spec does not define.
    pub fn speed_gts(&self) -> Option<f64> {
        speed(self.lnksta as u32 & 0xf)
    }

    /// The negotiated width (`LnkSta` bits 9:4); `None` when 0 (no link).
    pub fn width(&self) -> Option<u32> {
        Some((u32::from(self.lnksta) >> 4) & 0x3f).filter(|w| *w > 0)
    }

    /// The maximum link speed (`LnkCap` bits 3:0).
    pub fn max_speed_gts(&self) -> Option<f64> {
        speed(self.lnkcap & 0xf)
    }

    /// The maximum width (`LnkCap` bits 9:4).
    pub fn max_width(&self) -> Option<u32> {
        Some((self.lnkcap >> 4) & 0x3f).filter(|w| *w > 0)
    }
}

fn speed(code: u32) -> Option<f64> {
    Some(match code {
        1 => 2.5,
        2 => 5.0,
        3 => 8.0,
        4 => 16.0,
        5 => 32.0,
        6 => 64.0,
        _ => return None,
    })
}

fn u8_at(b: &[u8], at: usize) -> Option<u8> {
    b.get(at).copied()
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes([
        *b.get(at)?,
        *b.get(at + 1)?,
        *b.get(at + 2)?,
        *b.get(at + 3)?,
    ]))
}

/// Decodes a `config` file's bytes (little-endian, as the kernel returns them). Never panics:
/// a list that points outside what was read, or loops, ends the walk as the kernel's TTL does.
pub fn parse_pci_config(bytes: &[u8]) -> PciConfig {
    let mut out = PciConfig {
        len: bytes.len(),
        ..PciConfig::default()
    };
    let status = u16_at(bytes, STATUS).unwrap_or(0);
    if status & STATUS_CAP_LIST != 0 {
        let pointer = match u8_at(bytes, HEADER_TYPE).map(|h| h & 0x7f) {
            Some(2) => CB_CAPABILITY_LIST,
            _ => CAPABILITY_LIST,
        };
        let mut pos = usize::from(u8_at(bytes, pointer).unwrap_or(0));
        for _ in 0..CAP_TTL {
            if pos < 0x40 {
                break;
            }
            pos &= !3;
            let Some(id) = u8_at(bytes, pos) else { break };
            if id == 0xff {
                break;
            }
            if id == CAP_ID_EXP && out.express.is_none() {
                if let (Some(devctl), Some(lnkcap), Some(lnksta)) = (
                    u16_at(bytes, pos + EXP_DEVCTL),
                    u32_at(bytes, pos + EXP_LNKCAP),
                    u16_at(bytes, pos + EXP_LNKSTA),
                ) {
                    out.express = Some(Express {
                        devctl,
                        lnkcap,
                        lnksta,
                    });
                }
            }
            pos = usize::from(u8_at(bytes, pos + 1).unwrap_or(0));
        }
    }
    let mut pos = EXT_START;
    for _ in 0..EXT_TTL {
        let Some(header) = u32_at(bytes, pos) else {
            break;
        };
        if header == 0 || header == 0xffff_ffff {
            break;
        }
        if header & 0xffff == u32::from(EXT_CAP_ID_ACS) && out.acs.is_none() {
            if let (Some(cap), Some(ctl)) = (u16_at(bytes, pos + 4), u16_at(bytes, pos + 6)) {
                out.acs = Some(Acs { cap, ctl });
            }
        }
        let next = ((header >> 20) & 0xffc) as usize;
        if next < EXT_START {
            break;
        }
        pos = next;
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every function of this machine, decoded and compared with what `lspci -vvv` (pciutils,
    /// which reads the same file) prints for it: the capability walk and the register bits
    /// against the tool users trust. Needs root (the whole config space) and lspci.
    #[test]
    fn this_machine_decodes_as_lspci_prints_it() {
        let lspci = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .chain([
                std::path::PathBuf::from("/usr/bin"),
                std::path::PathBuf::from("/usr/sbin"),
            ])
            .map(|d| d.join("lspci"))
            .find(|p| p.is_file());
        let Some(lspci) = lspci else {
            eprintln!("skipped: lspci is not installed");
            return;
        };
        let mut seen = 0;
        for e in std::fs::read_dir("/sys/bus/pci/devices").unwrap() {
            let dir = e.unwrap().path();
            let addr = dir.file_name().unwrap().to_string_lossy().into_owned();
            let Ok(bytes) = std::fs::read(dir.join("config")) else {
                continue;
            };
            let c = parse_pci_config(&bytes);
            let out = std::process::Command::new(&lspci)
                .args(["-vvv", "-s", &addr])
                .env("LC_ALL", "C")
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            if c.capabilities_read() {
                let has_exp = text.contains("Capabilities: [") && text.contains("Express");
                assert_eq!(c.express.is_some(), has_exp, "{addr}: {text}");
                if let Some(ro) = c.relaxed_ordering() {
                    let want = if ro { "RlxdOrd+" } else { "RlxdOrd-" };
                    assert!(text.contains(want), "{addr}: {want} in {text}");
                }
            }
            if c.extended() == ExtendedSpace::Read {
                assert_eq!(c.acs.is_some(), text.contains("ACSCtl:"), "{addr}");
                if let Some(acs) = c.acs {
                    let line = text.lines().find(|l| l.contains("ACSCtl:")).unwrap();
                    for (_, name) in ACS_BITS {
                        let on = acs.enabled().iter().any(|n| n == name);
                        assert!(
                            line.contains(&format!("{name}{}", if on { '+' } else { '-' })),
                            "{addr}: {line}"
                        );
                    }
                }
            }
            seen += 1;
        }
        eprintln!("compared {seen} functions with lspci");
    }

    #[test]
    fn what_the_size_of_a_read_tells() {
        // A function read without privilege: the 64-byte header alone, no capability.
        let mut header = vec![0u8; 64];
        header[STATUS] = 0x10;
        header[CAPABILITY_LIST] = 0x40;
        let c = parse_pci_config(&header);
        assert_eq!(c.extended(), ExtendedSpace::NotReadable);
        assert!(!c.capabilities_read());
        assert_eq!(c.relaxed_ordering(), None);
        assert_eq!(
            parse_pci_config(&[0u8; 256]).extended(),
            ExtendedSpace::Absent
        );
        assert_eq!(
            parse_pci_config(&[0u8; 4096]).extended(),
            ExtendedSpace::Read
        );
        // A list that loops on itself ends.
        let mut looped = vec![0u8; 4096];
        looped[STATUS] = 0x10;
        looped[CAPABILITY_LIST] = 0x40;
        looped[0x40] = 0x01;
        looped[0x41] = 0x40;
        looped[0x100..0x104].copy_from_slice(&(0x1000_0001u32).to_le_bytes());
        let c = parse_pci_config(&looped);
        assert_eq!(c.express, None);
        assert_eq!(c.acs, None);
    }

    proptest! {
        #[test]
        fn any_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..4200)) {
            let c = parse_pci_config(&b);
            let _ = (c.relaxed_ordering(), c.extended(), c.acs.map(|a| a.enabled()));
            if let Some(e) = c.express {
                let _ = (e.speed_gts(), e.width(), e.max_speed_gts(), e.max_width());
            }
        }
    }
}
