//! Network interfaces: `/sys/class/net/*`, addresses from `/proc/net` (or a captured
//! `ip -o addr`), the default route from `/proc/net/route`.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use fabrik_model::{NetInterface, NetKind, RoceEcn};

use crate::captures::Captures;
use crate::fs::{join, RootFs};
use crate::pci::function_behind;
use fabrik_parse::formats::{
    AddressesFile, Decimal, FibTrieLocal, Format, IfInet6, IpOAddr, MlnxQos, ProcRoute, RouteEntry,
};

/// Where network interfaces are listed.
pub const CLASS_DIR: &str = "/sys/class/net";
/// `RTF_GATEWAY` in `/proc/net/route` flags.
const RTF_GATEWAY: u32 = 0x2;
/// `RTF_UP`.
const RTF_UP: u32 = 0x1;

/// Addresses by interface name.
#[derive(Default)]
struct Addresses {
    v4: BTreeMap<String, Vec<String>>,
    v6: BTreeMap<String, Vec<String>>,
}

/// Every interface under [`CLASS_DIR`], with addresses, default route, ECN and PFC.
pub fn read_interfaces(fs: &mut RootFs, caps: &Captures) -> Vec<NetInterface> {
    let routes = fs
        .text_opt("/proc/net/route")
        .and_then(|t| ProcRoute::parse(&t))
        .unwrap_or_default();
    let addrs = read_addresses(fs, caps, &routes);
    let default_ifaces: Vec<&str> = routes
        .iter()
        .filter(|r| r.mask == Ipv4Addr::UNSPECIFIED && r.destination == Ipv4Addr::UNSPECIFIED)
        .filter(|r| r.flags & RTF_UP != 0)
        .map(|r| r.iface.as_str())
        .collect();
    let mut out = Vec::new();
    for name in fs.list_opt(CLASS_DIR) {
        // The bonding driver puts a plain file, `bonding_masters`, among the interfaces.
        if !fs.is_dir(&join(CLASS_DIR, &name)) {
            continue;
        }
        let mut nif = read_interface(fs, caps, &name);
        nif.ipv4 = addrs.v4.get(&name).cloned().unwrap_or_default();
        nif.ipv6 = addrs.v6.get(&name).cloned().unwrap_or_default();
        nif.default_route = default_ifaces.contains(&name.as_str());
        out.push(nif);
    }
    out
}

fn read_interface(fs: &mut RootFs, caps: &Captures, name: &str) -> NetInterface {
    let base = join(CLASS_DIR, name);
    let ty_path = join(&base, "type");
    let ty = match fs.attr(&ty_path) {
        Some(raw) => {
            let v = Decimal::parse(&raw);
            if v.is_none() {
                fs.warn(&ty_path, format!("not an ARPHRD number: {raw:?}"));
            }
            v
        }
        None => None,
    };
    let device_link = join(&base, "device");
    let has_device = fs.resolve(&device_link).is_ok();
    // A netdev whose own directory sits below a PCI function is hardware even where its
    // `device` link was not kept (node_exporter's archived eth0); software links live under
    // /sys/devices/virtual/net.
    let under_pci = fs
        .resolve(&base)
        .is_ok_and(|r| r.starts_with("/sys/devices/pci"));
    let is_bridge = fs.exists(&join(&base, "bridge"));
    let kind = match ty {
        Some(772) => NetKind::Loopback,
        _ if is_bridge => NetKind::Bridge,
        Some(32) => NetKind::Ipoib,
        _ if !has_device && !under_pci => NetKind::Virtual,
        Some(1) => NetKind::Ethernet,
        _ => NetKind::Unknown,
    };
    let mtu_path = join(&base, "mtu");
    let mtu = fs.attr(&mtu_path).and_then(|raw| {
        let v = Decimal::parse(&raw).and_then(|v| u32::try_from(v).ok());
        if v.is_none() {
            fs.warn(&mtu_path, format!("not an MTU: {raw:?}"));
        }
        v
    });
    // `speed` answers EINVAL or -1 when the link is down or the driver has no speed.
    let speed_mbps = fs
        .attr_quiet(&join(&base, "speed"))
        .and_then(|s| s.parse::<i64>().ok())
        .filter(|v| *v > 0)
        .map(|v| v as u64);
    let pci = if has_device {
        function_behind(fs, &device_link)
    } else {
        None
    };
    let driver = if has_device {
        fs.link_name(&join(&device_link, "driver"))
    } else {
        None
    };
    let pfc_name = format!("mlnx_qos-{name}");
    let pfc = caps
        .get(&pfc_name)
        .and_then(MlnxQos::parse)
        .and_then(|q| q.pfc(&Captures::path_of(&pfc_name)));
    NetInterface {
        name: name.to_string(),
        kind,
        mtu,
        operstate: fs.attr_opt(&join(&base, "operstate")),
        speed_mbps,
        mac: fs
            .attr_opt(&join(&base, "address"))
            .filter(|s| !s.is_empty()),
        ipv4: Vec::new(),
        ipv6: Vec::new(),
        driver,
        pci,
        rdma_device: None,
        default_route: false,
        ecn: read_ecn(fs, &base),
        pfc,
        statistics: fs.numeric_dir(&join(&base, "statistics")),
        ..NetInterface::new(name, kind)
    }
}

fn read_ecn(fs: &mut RootFs, base: &str) -> Option<RoceEcn> {
    let mut read = |which: &str| -> BTreeMap<u8, bool> {
        let dir = join(base, &format!("ecn/{which}/enable"));
        let mut m = BTreeMap::new();
        for n in fs.list_opt(&dir) {
            let Ok(prio) = n.parse::<u8>() else { continue };
            let p = join(&dir, &n);
            match fs.attr(&p).as_deref() {
                Some("1") => {
                    m.insert(prio, true);
                }
                Some("0") => {
                    m.insert(prio, false);
                }
                Some(other) => fs.warn(&p, format!("not 0 or 1: {other:?}")),
                None => {}
            }
        }
        m
    };
    let np_enabled = read("roce_np");
    let rp_enabled = read("roce_rp");
    if np_enabled.is_empty() && rp_enabled.is_empty() {
        None
    } else {
        Some(RoceEcn {
            np_enabled,
            rp_enabled,
        })
    }
}

/// Where a snapshot keeps the addresses the live kernel listed.
pub const ADDRESSES_FILE: &str = "/fabrik/addresses.txt";

/// Addresses, from the best source the root has: the live kernel (`getifaddrs`, which also names
/// the interface of a `/32`), a snapshot's record of it, a captured `ip -o addr`, or `/proc/net`.
fn read_addresses(fs: &mut RootFs, caps: &Captures, routes: &[RouteEntry]) -> Addresses {
    let mut a = Addresses::default();
    let listed = if fs.is_live() {
        live_addresses().inspect(|list| {
            let text: String = list
                .iter()
                .map(|(n, f, c)| format!("{n} {f} {c}\n"))
                .collect();
            fs.record_derived(ADDRESSES_FILE, text.into_bytes());
        })
    } else {
        fs.text_opt(ADDRESSES_FILE)
            .and_then(|t| AddressesFile::parse(&t))
            .or_else(|| caps.get("ip-o-addr").and_then(IpOAddr::parse))
    };
    if let Some(list) = listed {
        for (ifname, family, cidr) in list {
            let map = if family == "inet" {
                &mut a.v4
            } else {
                &mut a.v6
            };
            map.entry(ifname).or_default().push(cidr);
        }
        return a;
    }
    if let Some(trie) = fs.text_opt("/proc/net/fib_trie") {
        for addr in FibTrieLocal::parse(&trie).unwrap_or_default() {
            if let Some((ifname, plen)) = owner_of(addr, routes) {
                a.v4.entry(ifname)
                    .or_default()
                    .push(format!("{addr}/{plen}"));
            }
        }
    }
    if let Some(text) = fs.text_opt("/proc/net/if_inet6") {
        for (ifname, cidr) in IfInet6::parse(&text).unwrap_or_default() {
            a.v6.entry(ifname).or_default().push(cidr);
        }
    }
    a
}

/// The interface of a local address: the most specific connected (non-gateway) route holding it.
/// Loopback addresses have no such route and belong to `lo`.
fn owner_of(addr: Ipv4Addr, routes: &[RouteEntry]) -> Option<(String, u32)> {
    let best = routes
        .iter()
        .filter(|r| r.flags & RTF_GATEWAY == 0 && r.mask != Ipv4Addr::UNSPECIFIED)
        .filter(|r| r.contains(addr))
        .max_by_key(|r| (r.prefix_len(), r.iface.clone()));
    match best {
        Some(r) => Some((r.iface.clone(), r.prefix_len())),
        None if addr.is_loopback() => Some(("lo".to_string(), 8)),
        None => None,
    }
}

/// This machine's addresses from `getifaddrs(3)`, sorted: (interface, `inet`/`inet6`, CIDR).
/// An IPv4 label (`eth0:1`) is reported under its interface. `None` when the call fails.
fn live_addresses() -> Option<Vec<(String, String, String)>> {
    let addrs = nix::ifaddrs::getifaddrs().ok()?;
    let mut out = Vec::new();
    for ifa in addrs {
        let name = ifa
            .interface_name
            .split(':')
            .next()
            .unwrap_or(&ifa.interface_name)
            .to_string();
        let (Some(addr), Some(mask)) = (ifa.address, ifa.netmask) else {
            continue;
        };
        if let (Some(a), Some(m)) = (addr.as_sockaddr_in(), mask.as_sockaddr_in()) {
            let plen = u32::from(m.ip()).count_ones();
            out.push((name, "inet".to_string(), format!("{}/{plen}", a.ip())));
        } else if let (Some(a), Some(m)) = (addr.as_sockaddr_in6(), mask.as_sockaddr_in6()) {
            let plen = u128::from(m.ip()).count_ones();
            out.push((name, "inet6".to_string(), format!("{}/{plen}", a.ip())));
        }
    }
    out.sort();
    out.dedup();
    Some(out)
}
