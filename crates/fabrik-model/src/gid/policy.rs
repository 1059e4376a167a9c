//! The one RoCE GID policy: which GID index NCCL's IB transport uses on a port.
//!
//! This follows `ncclIbGetGidIndex` as NCCL writes it (src/transport/net_ib.cc from v2.21.5-1 to
//! v2.28, src/transport/net_ib/connect.cc from v2.29; the rules are the same in every release
//! since 2.21, only logging and a container read fix changed):
//!
//! - InfiniBand (2.22+): the GID at `NCCL_IB_ROUTABLE_FLID_GID_INDEX` (default 1) when its FLID
//!   (bytes 4..6) is non-zero, else 0.
//! - RoCE: `NCCL_IB_GID_INDEX` when it is ≥ 0 (the default is -1 since 2.21; before 2.21 the
//!   default was 0 and no selection happened, which is why `fabrik env` writes the index out).
//!   Otherwise NCCL starts at index 0 and walks 1..table length, replacing the current index with
//!   a candidate when
//!   1. the candidate's address family (IPv4-mapped or not) differs from the current one, equals
//!      `NCCL_IB_ADDR_FAMILY` (AF_INET unless set to AF_INET6) and lies in `NCCL_IB_ADDR_RANGE`;
//!   2. or, same family as asked, a valid GID (configured, not `fe80::/64`) in the range, whose
//!      RoCE version (`gid_attrs/types/N`) differs from the current one's (or the current one is
//!      not valid) and equals `NCCL_IB_ROCE_VERSION_NUM` (default 2).
//!
//!   With the defaults that is the first RoCE v2 IPv4-mapped GID, whichever netdev or address it
//!   carries; the netdev's own addresses play no part, so neither do they here.
//!
//! Empty slots read as the zero GID in sysfs and are left out of [`Port::gids`]; the walk below
//! puts them back as zero GIDs (IPv6 family, not valid), as NCCL sees them. An unreadable
//! `gid_attrs/types/N` (EINVAL inside a container, 2.24+) is an unknown version, which equals
//! nothing NCCL asks for.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::{Gid, GidType, LinkLayer, Port};

/// `NCCL_IB_ADDR_FAMILY`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AddrFamily {
    /// IPv4 GIDs (NCCL's default).
    #[default]
    Inet,
    /// IPv6 GIDs.
    Inet6,
}

/// The NCCL variables that steer the GID choice, with NCCL's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GidSettings {
    /// `NCCL_IB_GID_INDEX` when set to a value ≥ 0.
    pub gid_index: Option<u32>,
    /// `NCCL_IB_ADDR_FAMILY`.
    pub addr_family: AddrFamily,
    /// `NCCL_IB_ADDR_RANGE` as NCCL accepts it: an address of `addr_family` and a prefix length.
    pub addr_range: Option<(IpAddr, u32)>,
    /// `NCCL_IB_ROCE_VERSION_NUM`.
    pub roce_version: i64,
    /// `NCCL_IB_ROUTABLE_FLID_GID_INDEX` (InfiniBand only).
    pub routable_flid_index: i64,
}

impl Default for GidSettings {
    fn default() -> Self {
        GidSettings {
            gid_index: None,
            addr_family: AddrFamily::Inet,
            addr_range: None,
            roce_version: 2,
            routable_flid_index: 1,
        }
    }
}

/// NCCL's integer parameters (src/misc/param.cc): `strtoll(s, NULL, 0)` on a non-empty value,
/// the default only when it overflows. Like strtoll, leading digits count and the rest is
/// ignored; no digits at all is 0 (`NCCL_IB_GID_INDEX=auto` is index 0, not selection).
fn nccl_int(raw: Option<String>, default: i64) -> i64 {
    let Some(s) = raw.filter(|s| !s.is_empty()) else {
        return default;
    };
    let t = s.trim_start();
    let (neg, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let hex_digits = body
        .strip_prefix("0x")
        .or_else(|| body.strip_prefix("0X"))
        .filter(|r| r.starts_with(|c: char| c.is_ascii_hexdigit()));
    let (radix, digits) = match hex_digits {
        Some(r) => (16, r),
        None if body.starts_with('0') => (8, body),
        None => (10, body),
    };
    let mut value: i64 = 0;
    for c in digits.chars() {
        let Some(d) = c.to_digit(radix) else { break };
        value = match value
            .checked_mul(i64::from(radix))
            .and_then(|v| v.checked_add(i64::from(d)))
        {
            Some(v) => v,
            None => return default,
        };
    }
    if neg {
        -value
    } else {
        value
    }
}

impl GidSettings {
    /// Reads the settings from an environment (`lookup("NCCL_IB_GID_INDEX")`...), as NCCL does:
    /// unknown families fall back to AF_INET, a range without `/`, with an address of the other
    /// family or with too long a prefix is ignored.
    pub fn from_env(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let gid_index = nccl_int(lookup("NCCL_IB_GID_INDEX"), -1);
        let addr_family = match lookup("NCCL_IB_ADDR_FAMILY").as_deref() {
            Some("AF_INET6") => AddrFamily::Inet6,
            _ => AddrFamily::Inet,
        };
        let addr_range =
            lookup("NCCL_IB_ADDR_RANGE").and_then(|r| parse_addr_range(&r, addr_family));
        GidSettings {
            gid_index: u32::try_from(gid_index).ok(),
            addr_family,
            addr_range,
            roce_version: nccl_int(lookup("NCCL_IB_ROCE_VERSION_NUM"), 2),
            routable_flid_index: nccl_int(lookup("NCCL_IB_ROUTABLE_FLID_GID_INDEX"), 1),
        }
    }
}

fn parse_addr_range(raw: &str, af: AddrFamily) -> Option<(IpAddr, u32)> {
    let (addr, mask) = raw.split_once('/')?;
    let ip = match af {
        AddrFamily::Inet => IpAddr::V4(addr.parse::<Ipv4Addr>().ok()?),
        AddrFamily::Inet6 => IpAddr::V6(addr.parse::<Ipv6Addr>().ok()?),
    };
    // strtol: leading digits, anything else stops it (no digits: 0, which matches every GID).
    let digits: String = mask
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let bits: u32 = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    let max = if ip.is_ipv4() { 32 } else { 128 };
    (bits <= max).then_some((ip, bits))
}

pub use super::parse as parse_gid;

fn word(raw: &[u8; 16], i: usize) -> u32 {
    u32::from_be_bytes([raw[4 * i], raw[4 * i + 1], raw[4 * i + 2], raw[4 * i + 3]])
}

/// getGidAddrFamily: IPv4-mapped (`::ffff:a.b.c.d`) or its multicast form is AF_INET.
fn family(raw: &[u8; 16]) -> AddrFamily {
    let mapped = word(raw, 0) == 0 && word(raw, 1) == 0 && word(raw, 2) == 0x0000_ffff;
    let mapped_mc = word(raw, 0) == 0xff0e_0000 && word(raw, 1) == 0 && word(raw, 2) == 0x0000_ffff;
    if mapped || mapped_mc {
        AddrFamily::Inet
    } else {
        AddrFamily::Inet6
    }
}

/// validGid: configured (not zero, not the bare `fe80::`) and not link-local.
fn valid(raw: &[u8; 16]) -> bool {
    let trailer = word(raw, 1) | word(raw, 2) | word(raw, 3);
    let configured =
        !((word(raw, 0) | trailer) == 0 || (word(raw, 0) == 0xfe80_0000 && trailer == 0));
    let link_local = word(raw, 0) == 0xfe80_0000 && word(raw, 1) == 0;
    configured && !link_local
}

/// matchGidAddrPrefix. For AF_INET NCCL compares the last 32 bits of the GID with the range.
fn in_range(raw: &[u8; 16], range: Option<(IpAddr, u32)>) -> bool {
    let Some((base, bits)) = range else {
        return true;
    };
    let base: [u8; 16] = match base {
        IpAddr::V4(a) => {
            let mut b = [0u8; 16];
            b[12..].copy_from_slice(&a.octets());
            let mask = mask32(bits);
            return word(&b, 3) & mask == word(raw, 3) & mask;
        }
        IpAddr::V6(a) => a.octets(),
    };
    let mut left = bits;
    for i in 0..4 {
        if left == 0 {
            break;
        }
        let m = if left >= 32 { u32::MAX } else { mask32(left) };
        if word(&base, i) & m != word(raw, i) & m {
            return false;
        }
        left = left.saturating_sub(32);
    }
    true
}

fn mask32(bits: u32) -> u32 {
    match bits {
        0 => 0,
        b if b >= 32 => u32::MAX,
        b => u32::MAX << (32 - b),
    }
}

/// The RoCE version NCCL reads from `gid_attrs/types/N` (prefix match, as `strncmp` does).
pub fn roce_version(t: Option<&GidType>) -> Option<i64> {
    match t? {
        GidType::IbRoceV1 => Some(1),
        GidType::RoceV2 => Some(2),
        GidType::Other(s) if s.starts_with("IB/RoCE v1") || s.starts_with("RoCE v1") => Some(1),
        GidType::Other(s) if s.starts_with("RoCE v2") => Some(2),
        GidType::Other(_) => None,
    }
}

struct Slot {
    raw: [u8; 16],
    version: Option<i64>,
}

fn slot(port: &Port, index: u32) -> Slot {
    match port.gids.iter().find(|g| g.index == index) {
        Some(g) => Slot {
            raw: parse_gid(&g.gid).unwrap_or([0; 16]),
            version: roce_version(g.gid_type.as_ref()),
        },
        None => Slot {
            raw: [0; 16],
            version: None,
        },
    }
}

/// The GID index NCCL uses on `port` under `settings`.
pub fn nccl_gid_index(port: &Port, settings: &GidSettings) -> u32 {
    if port.link_layer == Some(LinkLayer::Infiniband) {
        let flid = u32::try_from(settings.routable_flid_index)
            .ok()
            .filter(|i| {
                let raw = slot(port, *i).raw;
                u16::from_be_bytes([raw[4], raw[5]]) != 0
            });
        return flid.unwrap_or(0);
    }
    if let Some(i) = settings.gid_index {
        return i;
    }
    let usr = settings.addr_family;
    // The table's length is not in the model; every slot past the last listed one is empty, and
    // an empty slot only wins rule 1 when AF_INET6 is asked and the current GID is IPv4, which
    // index 0 (the port's own link-local GID) never is.
    let last = port.gids.iter().map(|g| g.index).max().unwrap_or(0);
    let mut current = 0u32;
    for cand in 1..=last {
        let cur = slot(port, current);
        let c = slot(port, cand);
        let cur_fam = family(&cur.raw);
        let c_fam = family(&c.raw);
        let c_in_range = in_range(&c.raw, settings.addr_range);
        if c_fam != cur_fam && c_fam == usr && c_in_range {
            current = cand;
            continue;
        }
        if c_fam != usr || !valid(&c.raw) || !c_in_range {
            continue;
        }
        let versions_differ = match (cur.version, c.version) {
            (Some(a), Some(b)) => a != b,
            _ => true,
        };
        if (versions_differ || !valid(&cur.raw)) && c.version == Some(settings.roce_version) {
            current = cand;
        }
    }
    current
}

/// The entry at `index` when it is a RoCE v2 GID NCCL can route: valid and, with the default
/// AF_INET family, IPv4-mapped.
pub fn routable_v2<'a>(port: &'a Port, index: u32, settings: &GidSettings) -> Option<&'a Gid> {
    let g = port.gids.iter().find(|g| g.index == index)?;
    let raw = parse_gid(&g.gid)?;
    (roce_version(g.gid_type.as_ref()) == Some(2)
        && valid(&raw)
        && family(&raw) == settings.addr_family)
        .then_some(g)
}

/// The index fabrik recommends for `NCCL_IB_GID_INDEX` on a RoCE port: the one NCCL ≥ 2.21
/// picks with its defaults, when that is a routable RoCE v2 GID (else there is nothing to
/// recommend: the port needs an address first).
pub fn recommended_gid_index(port: &Port) -> Option<u32> {
    let s = GidSettings::default();
    let i = nccl_gid_index(port, &s);
    routable_v2(port, i, &s).map(|g| g.index)
}
