//! The network lines of an INFO log: the net plugin, the IB and socket NICs NCCL uses, its
//! bootstrap and out-of-band endpoints, and GPUDirect RDMA per HCA.

use super::{after, has, lossy};
use crate::nccl_log::prefix::parse_u64;
use crate::nccl_log::report::*;
use crate::nccl_log::MAX_KEYS;

pub(super) fn plugin_line(r: &mut ProcessReport, msg: &[u8]) {
    let loaded = r.plugin.status == PluginStatus::Loaded;
    if let Some(rest) = after(msg, "Loaded net plugin ") {
        r.plugin.status = PluginStatus::Loaded;
        r.plugin.name = Some(lossy(strip_version_suffix(rest.trim_ascii())));
    } else if let Some(rest) =
        after(msg, "Loaded collnet plugin ").or_else(|| after(msg, "Loaded coll plugin "))
    {
        let name = lossy(strip_version_suffix(rest.trim_ascii()));
        if name.contains("SHARP") {
            r.sharp = Some(true);
        }
        r.plugin.collnet = Some(name);
    } else if has(msg, "Failed to find ncclNetPlugin symbol") && has(msg, "not supported") {
        if !loaded {
            r.plugin.status = PluginStatus::Unusable;
        }
    } else if (has(msg, "No plugin found")
        || has(msg, "returned 2")
        // `Plugin load returned 17 : libnccl-net.so: cannot open shared object file: ...`
        || has(msg, "cannot open shared object file")
        || has(msg, "Could not find")
        || has(msg, "Using internal"))
        && !loaded
        && r.plugin.status != PluginStatus::Unusable
    {
        r.plugin.status = PluginStatus::NotFound;
    }
}

/// `NCCL RDMA Plugin v8 (v8)` → `NCCL RDMA Plugin v8`.
fn strip_version_suffix(s: &[u8]) -> &[u8] {
    match memchr::memrchr(b'(', s) {
        Some(p) if s.ends_with(b")") => s[..p].trim_ascii(),
        _ => s,
    }
}

/// `eth0:10.0.0.1<0>`, `[0]br0:10.1.1.1<0>`, `[1]virbr0:fe80::1%virbr0<0>`.
pub(super) fn endpoint(text: &[u8]) -> Option<Endpoint> {
    let t = text.trim_ascii();
    let t = match t.first() {
        Some(b'[') => match memchr::memchr(b']', t) {
            Some(c) => &t[c + 1..],
            None => t,
        },
        _ => t,
    };
    let t = t.split(u8::is_ascii_whitespace).next().unwrap_or(b"");
    if t.is_empty() {
        return None;
    }
    let (iface, addr) = match memchr::memchr(b':', t) {
        Some(c) => (&t[..c], Some(&t[c + 1..])),
        None => (t, None),
    };
    let addr = addr.map(|a| match memchr::memchr(b'<', a) {
        Some(lt) => &a[..lt],
        None => a,
    });
    Some(Endpoint {
        interface: lossy(iface),
        address: addr.filter(|a| !a.is_empty()).map(lossy),
    })
}

pub(super) fn ib_using(r: &mut ProcessReport, msg: &[u8]) {
    let Some(rest) = after(msg, " : Using ") else {
        return;
    };
    let (devs, oob) = match memchr::memchr(b';', rest) {
        Some(p) => (&rest[..p], Some(&rest[p + 1..])),
        None => (rest, None),
    };
    let mut nics = Vec::new();
    // NCCL >= 2.21 merges ports into virtual NICs (NCCL_IB_MERGE_NICS):
    // `[0]={[0] mlx5_2:1/RoCE, [1] mlx5_3:1/RoCE} [1]={[2] mlx5_0:1/RoCE, ...}`. The physical
    // NICs are listed inside the braces as `[i] dev:port/link`; a bare `[i]` followed by another
    // bracket is the virtual NIC's own index.
    let toks: Vec<&[u8]> = devs
        .split(|b: &u8| b.is_ascii_whitespace() || matches!(b, b'{' | b'}' | b',' | b'='))
        .filter(|t| !t.is_empty())
        .collect();
    let mut i = 0;
    while i < toks.len() {
        let tok = toks[i];
        i += 1;
        if tok == b"[RO]" {
            r.relaxed_ordering = true;
            continue;
        }
        let nic = if tok.starts_with(b"[") && tok.ends_with(b"]") {
            match toks.get(i) {
                Some(next) if !next.starts_with(b"[") => {
                    i += 1;
                    ib_nic(&[tok, *next].concat())
                }
                _ => None,
            }
        } else {
            ib_nic(tok)
        };
        if let Some(nic) = nic {
            if nics.len() < MAX_KEYS {
                nics.push(nic);
            }
        }
    }
    if nics.iter().any(|n| n.sharp) {
        r.sharp = Some(true);
    }
    if !nics.is_empty() {
        r.ib_nics = nics;
    }
    if let Some(oob) = oob.and_then(|o| after(o, "OOB ")) {
        r.ib_oob = endpoint(oob);
    }
}

/// `[0]mlx5_0:1/IB`, `[3]mlx5_3:1/IB/SHARP`, `[1]mlx5_1:1/RoCE`.
pub(super) fn ib_nic(tok: &[u8]) -> Option<IbNic> {
    let rest = tok.strip_prefix(b"[")?;
    let close = memchr::memchr(b']', rest)?;
    let index = u32::try_from(parse_u64(&rest[..close])?).ok()?;
    let body = &rest[close + 1..];
    let mut parts = body.split(|&b| b == b'/');
    let devport = parts.next()?;
    let (device, port) = match memchr::memrchr(b':', devport) {
        Some(c) => (
            &devport[..c],
            parse_u64(&devport[c + 1..]).and_then(|p| u32::try_from(p).ok()),
        ),
        None => (devport, None),
    };
    if device.is_empty() {
        return None;
    }
    let link = parts.next().map(lossy);
    let sharp = parts.any(|p| p == b"SHARP");
    Some(IbNic {
        index,
        device: lossy(device),
        port,
        link,
        sharp,
    })
}

pub(super) fn socket_using(r: &mut ProcessReport, rest: &[u8]) {
    let mut out = Vec::new();
    for tok in rest
        .split(u8::is_ascii_whitespace)
        .filter(|t| !t.is_empty())
    {
        if let Some(ep) = endpoint(tok) {
            if out.len() < MAX_KEYS {
                out.push(ep);
            }
        }
    }
    if !out.is_empty() {
        r.socket_interfaces = out;
    }
}

pub(super) fn gdr_line(r: &mut ProcessReport, msg: &[u8]) {
    let lower_has = |n: &[u8]| msg.windows(n.len()).any(|w| w.eq_ignore_ascii_case(n));
    let enabled = if lower_has(b"disabled") {
        false
    } else if lower_has(b"enable") {
        true
    } else {
        return;
    };
    let hca = if let Some(q) = memchr::memchr(b'\'', msg) {
        let rest = &msg[q + 1..];
        let end = memchr::memchr(b'\'', rest).unwrap_or(rest.len());
        lossy(&rest[..end])
    } else if let Some(rest) = after(msg, "for ") {
        // 2.4-2.6: `for GPU 1[1] / HCA 0 (distance 4 <= 4), read 0`
        let end = memchr::memchr(b'(', rest).unwrap_or(rest.len());
        lossy(rest[..end].trim_ascii())
    } else {
        return;
    };
    if let Some(e) = r.gdr_hcas.iter_mut().find(|e| e.hca == hca) {
        e.enabled = enabled;
    } else if r.gdr_hcas.len() < MAX_KEYS {
        r.gdr_hcas.push(GdrHca { hca, enabled });
    }
}
