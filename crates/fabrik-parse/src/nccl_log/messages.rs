//! Reading facts out of NCCL INFO/WARN messages, one message at a time.

use std::sync::LazyLock;

use memchr::memmem;

use super::prefix::parse_u64;
use super::report::*;
use super::{Hints, ProcState, MAX_KEYS};

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn after<'a>(hay: &'a [u8], needle: &str) -> Option<&'a [u8]> {
    memmem::find(hay, needle.as_bytes()).map(|p| &hay[p + needle.len()..])
}

fn has(hay: &[u8], needle: &str) -> bool {
    memmem::find(hay, needle.as_bytes()).is_some()
}

/// `2.18.5+cuda12.2` → (`2.18.5`, `12.2`).
pub fn split_version(v: &str) -> (String, Option<String>) {
    match v.split_once('+') {
        Some((ver, rest)) => (
            ver.to_string(),
            rest.strip_prefix("cuda").map(str::to_string),
        ),
        None => (v.to_string(), None),
    }
}

/// Facts from an INFO message.
pub(super) fn info(st: &mut ProcState, msg: &[u8], cuda_dev: Option<u32>) {
    let r = &mut st.report;
    match msg.first() {
        Some(b'C') if msg.starts_with(b"Channel ") || msg.starts_with(b"CollNet ") => {
            channel(st, msg, cuda_dev);
            return;
        }
        Some(b'R') if msg.starts_with(b"Ring ") => {
            channel(st, msg, cuda_dev);
            return;
        }
        Some(b'T') if msg.starts_with(b"Trees ") => {
            trees_line(r, msg, cuda_dev);
            return;
        }
        _ => {}
    }
    if let Some(rest) = msg
        .strip_prefix(b"NCCL version ")
        .or_else(|| msg.strip_prefix(b"RCCL version "))
    {
        // RCCL: `RCCL version : 2.26.6-HEAD:f224e2c` (and `2.18.3+hip6.0` in older releases).
        let rest = rest.trim_ascii_start();
        let rest = rest.strip_prefix(b":").unwrap_or(rest).trim_ascii_start();
        let tok = rest.split(u8::is_ascii_whitespace).next().unwrap_or(b"");
        let tok = match tok.iter().position(|b| *b == b'-') {
            Some(p) if !tok[..p].contains(&b'+') => &tok[..p],
            _ => tok,
        };
        let (v, cuda) = split_version(&String::from_utf8_lossy(tok));
        r.nccl_version = Some(v);
        r.cuda_runtime = cuda;
    } else if let Some(rest) = msg.strip_prefix(b"cudaDriverVersion ") {
        if let Some(v) = parse_u64(rest.trim_ascii()) {
            r.cuda_driver = Some(format!("{}.{}", v / 1000, (v % 1000) / 10));
        }
    } else if msg.starts_with(b"Bootstrap") {
        if let Some(rest) = after(msg, "Using") {
            r.bootstrap = endpoint(rest);
        }
    } else if msg.starts_with(b"NET/Plugin") {
        plugin_line(r, msg);
    } else if let Some(rest) = msg.strip_prefix(b"Successfully loaded external network plugin ") {
        r.plugin.status = PluginStatus::Loaded;
        r.plugin.path = Some(lossy(rest.trim_ascii()));
    } else if let Some(rest) = msg.strip_prefix(b"Initialized NET plugin ") {
        // NCCL >= 2.27 names its internal IB and Socket transports plugins too.
        let name = rest.trim_ascii();
        if !is_internal_net(name) {
            r.plugin.status = PluginStatus::Loaded;
            r.plugin.name = Some(lossy(name));
            // plugin/net.cc prints this only after the plugin reported at least one device.
            st.hints.plugin_devices = true;
        }
    } else if let Some(rest) = msg
        .strip_prefix(b"Failed to initialize NET plugin ")
        .or_else(|| msg.strip_prefix(b"External network plugin "))
    {
        let name = rest.split(u8::is_ascii_whitespace).next().unwrap_or(b"");
        // NCCL >= 2.27 prints `Failed to initialize NET plugin IB` whenever its IB transport
        // found no device (plugin/net.cc: `devices() ... ndev <= 0` goes to `fail`): the normal
        // path on a host without RDMA, so it is no evidence that IB was there.
        if !is_internal_net(name) && st.report.plugin.status != PluginStatus::Loaded {
            st.report.plugin.status = PluginStatus::Unusable;
            st.report.plugin.name.get_or_insert_with(|| lossy(name));
        }
    } else if let Some(rest) = msg.strip_prefix(b"Plugin Path : ") {
        r.plugin.status = PluginStatus::Loaded;
        r.plugin.path = Some(lossy(rest.trim_ascii()));
    } else if let Some(rest) = msg.strip_prefix(b"P2P plugin ") {
        // `P2P plugin IBext` and, from the v8 plugin on, `P2P plugin v8 IBext_v8`.
        let rest = rest.trim_ascii();
        let name = match rest.split_first() {
            Some((b'v', tail)) if tail.first().is_some_and(u8::is_ascii_digit) => {
                match memchr::memchr(b' ', rest) {
                    Some(sp) => rest[sp + 1..].trim_ascii(),
                    None => rest,
                }
            }
            _ => rest,
        };
        r.plugin.status = PluginStatus::Loaded;
        r.plugin.name = Some(lossy(name));
    } else if let Some(rest) = msg.strip_prefix(b"Using network ") {
        r.network = Some(lossy(rest.trim_ascii()));
    } else if let Some(rest) = msg.strip_prefix(b"Assigned NET plugin ") {
        // NCCL >= 2.27 (plugin/net.cc): the network given to the communicator, printed just
        // before `Using network` (which an excerpt may have lost).
        if let Some(name) = rest.strip_suffix(b" to comm") {
            r.network.get_or_insert_with(|| lossy(name.trim_ascii()));
        }
    } else if let Some(rest) = msg.strip_prefix(b"Using internal Network ") {
        // NCCL 2.2: `Using internal Network Socket` / `Using internal Network IB`.
        r.network = Some(lossy(rest.trim_ascii()));
    } else if let Some(rest) = msg.strip_prefix(b"NET/IB: [") {
        // NCCL 2.3: one line per NIC, `NET/IB: [9] mlx5_28:1/IB`.
        let tok: Vec<u8> = [&b"["[..], rest.trim_ascii()]
            .concat()
            .into_iter()
            .filter(|b| !b.is_ascii_whitespace())
            .collect();
        if let Some(nic) = ib_nic(&tok) {
            if !r.ib_nics.iter().any(|n| n.index == nic.index) && r.ib_nics.len() < MAX_KEYS {
                r.ib_nics.push(nic);
            }
        }
    } else if let Some(rest) = msg.strip_prefix(b"Initializing network ") {
        let name = rest.split(|&b| b == b',').next().unwrap_or(rest);
        r.network = Some(lossy(name.trim_ascii()));
    } else if msg.starts_with(b"Failed to open libibverbs") {
        st.hints.no_verbs = true;
    } else if msg.starts_with(b"NET/IB") && has(msg, " : Using ") {
        ib_using(r, msg);
    } else if msg.starts_with(b"NET/IB")
        && (has(msg, " IbDev ") || has(msg, " Dev "))
        && has(msg, " qpn ")
    {
        // net_ib.cc `NET/IB: %s %d IbDev %d Port %d qpn %d mtu %d ...` (2.4-2.5: `NET/IB: Dev %d
        // Port %d qpn %d mtu %d LID %d`): a queue pair to a peer was set up, so IB carried this
        // connection.
        st.hints.ib_attempt = true;
    } else if msg.starts_with(b"NET/Socket: Using ") && has(msg, " sockets per thread") {
        // net_socket.cc (2.5+) prints it when it connects or accepts a socket-net connection.
        st.hints.socket_net = true;
    } else if msg.starts_with(b"NET/IB") && has(msg, "No device found") {
        r.ib_no_device = true;
    } else if msg.starts_with(b"NET/Socket : Using ") {
        socket_using(r, &msg[b"NET/Socket : Using ".len()..]);
    } else if msg.starts_with(b"NET/OFI") {
        st.hints.ofi = true;
        // aws-ofi-nccl: `Could not disable CUDA API usage for HMEM, disabling GDR`, `Need to
        // force simple protocol: GDR not supported`.
        if has(msg, "disabling GDR") || has(msg, "GDR not supported") {
            st.hints.gdr_off = true;
        }
        // Only the aws-ofi-nccl plugin prints `NET/OFI` lines: it was loaded.
        if st.report.plugin.status != PluginStatus::Unusable {
            st.report.plugin.status = PluginStatus::Loaded;
        }
        // `NET/OFI Initializing aws-ofi-nccl 1.13.2-aws`
        if let Some(rest) = after(msg, "Initializing aws-ofi-nccl") {
            let v = lossy(rest.trim_ascii());
            st.report.plugin.name.get_or_insert_with(|| {
                if v.is_empty() {
                    "aws-ofi-nccl".to_string()
                } else {
                    format!("aws-ofi-nccl {v}")
                }
            });
        }
        // `Selected Provider is efa (found 4 nics)`; newer: `Selected provider is efa, fabric is
        // efa-direct (found 32 nics)`.
        if let Some(rest) =
            after(msg, "Selected Provider is ").or_else(|| after(msg, "Selected provider is "))
        {
            let p = rest
                .split(|b: &u8| b.is_ascii_whitespace() || *b == b',')
                .next()
                .unwrap_or(b"");
            st.report.ofi_provider = Some(lossy(p));
        }
    } else if msg.starts_with(b"NET/GPUDirectTCPX") {
        st.hints.tcpx = true;
    } else if msg.starts_with(b"NET/FasTrak") {
        st.hints.fastrak = true;
    } else if (msg.starts_with(b"NET/") || msg.starts_with(b"GPU Direct"))
        && has(msg, "GPU Direct RDMA")
    {
        if let Some(name) = msg
            .strip_prefix(b"NET/")
            .and_then(|m| memmem::find(m, b" : GPU Direct RDMA").map(|p| &m[..p]))
        {
            let t = transport_of(&String::from_utf8_lossy(name));
            if t != Transport::Unknown {
                st.hints.gdr_net.get_or_insert(t);
            }
        }
        gdr_line(&mut st.report, msg);
    } else if msg.starts_with(b"NVLS ") || msg.starts_with(b"Connected NVLS") {
        if msg.starts_with(b"NVLS comm")
            || msg.starts_with(b"NVLS Created Multicast")
            || msg.starts_with(b"Connected NVLS")
        {
            r.nvls = Some(true);
        }
    } else if msg.first().is_some_and(u8::is_ascii_digit) && has(msg, " coll channels, ") {
        channel_counts(r, msg);
    } else if msg.starts_with(b"SHARP rank") {
        r.sharp = Some(true);
    } else if (msg.starts_with(b"comm 0x")
        || msg.starts_with(b"nccl")
        || msg.starts_with(b"[Rank "))
        && (has(msg, " nranks ") || has(msg, " nRanks "))
    {
        comm_line(r, msg);
    } else if starts_with_env_name(msg) {
        if let Some(p) = memmem::find(msg, b" set by environment to ") {
            env_line(r, &msg[..p], &msg[p + b" set by environment to ".len()..]);
        } else if let Some(p) = memmem::find(msg, b" set to ") {
            env_line(r, &msg[..p], &msg[p + b" set to ".len()..]);
        }
    }
}

/// Facts from a WARN message (its diagnosis is made elsewhere).
pub(super) fn warn_facts(st: &mut ProcState, msg: &[u8], source: Option<&[u8]>) {
    // The file name only: build paths carry any word (`.../all_os_profiles/src/...` has "ofi").
    let src = source.unwrap_or(b"");
    let src = src.rsplit(|b| *b == b'/').next().unwrap_or(src);
    // The plugins name themselves: `NET/%s failed to connect socket` with %s = GPUDirectTCPX.
    if has(src, "tcpx") || msg.starts_with(b"NET/GPUDirectTCPX") {
        st.hints.tcpx = true;
    }
    if msg.starts_with(b"NET/FasTrak") {
        st.hints.fastrak = true;
    }
    if msg.starts_with(b"NET/OFI") || has(src, "ofi") {
        st.hints.ofi = true;
    }
    // NCCL < 2.6 printed it as a WARN (misc/ibvwrap.cc), later releases as INFO.
    if msg.starts_with(b"Failed to open libibverbs") {
        st.hints.no_verbs = true;
    }
    // An IB warning means NCCL (or the IBext plugin) had an RDMA device to talk to, except the
    // two that net_ib.cc prints before it looks at any device.
    let before_devices = has(msg, "No IP interface found") || has(msg, "No device found");
    if (msg.starts_with(b"NET/IB")
        || has(msg, "ibv_")
        || has(src, "net_ib")
        || has(src, "ib_plugin"))
        && !before_devices
    {
        st.hints.ib_attempt = true;
    }
    if msg.starts_with(b"NET/Socket") || has(src, "net_socket") {
        st.hints.socket_net = true;
    }
    if has(msg, "CollNet is not supported") && st.report.collnet.is_none() {
        st.report.collnet = Some(false);
    }
}

fn is_internal_net(name: &[u8]) -> bool {
    name == b"IB" || name == b"Socket"
}

/// `NCCL_IB_HCA set by ...`: an upper-case name with an underscore opens the message.
fn starts_with_env_name(msg: &[u8]) -> bool {
    let end = msg.iter().position(|&b| b == b' ').unwrap_or(msg.len());
    let name = &msg[..end];
    name.len() > 2
        && name.contains(&b'_')
        && name
            .iter()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b'_')
}

fn plugin_line(r: &mut ProcessReport, msg: &[u8]) {
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
fn endpoint(text: &[u8]) -> Option<Endpoint> {
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

fn ib_using(r: &mut ProcessReport, msg: &[u8]) {
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
fn ib_nic(tok: &[u8]) -> Option<IbNic> {
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

fn socket_using(r: &mut ProcessReport, rest: &[u8]) {
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

fn gdr_line(r: &mut ProcessReport, msg: &[u8]) {
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

/// `16 coll channels, 16 collnet channels, 0 nvls channels, 16 p2p channels, ...`
/// `16 coll channels, 16 collnet channels, 16 nvls channels, ...`. NCCL 2.19 and later print
/// the coll channel count again in the collnet place (init.cc passes `nChannels` twice), so a
/// collnet count equal to the coll count proves nothing; only 0, or a different count printed
/// by older releases from `collNetChannels`, is evidence.
fn channel_counts(r: &mut ProcessReport, msg: &[u8]) {
    let mut coll: Option<u64> = None;
    let mut prev: Option<u64> = None;
    let mut words = msg
        .split(|&b| b.is_ascii_whitespace() || b == b',')
        .filter(|w| !w.is_empty());
    while let Some(w) = words.next() {
        if let Some(n) = parse_u64(w) {
            prev = Some(n);
            continue;
        }
        if let Some(n) = prev.take() {
            match w {
                b"nvls" | b"nvlcls" if r.nvls != Some(true) => r.nvls = Some(n > 0),
                b"coll" => coll = Some(n),
                b"collnet" if r.collnet != Some(true) => {
                    if n == 0 {
                        r.collnet = Some(false);
                    } else if coll != Some(n) {
                        r.collnet = Some(true);
                    }
                }
                _ => {}
            }
            let _ = words.next();
        }
    }
}

fn comm_line(r: &mut ProcessReport, msg: &[u8]) {
    let mut rank = None;
    let mut nranks = None;
    let mut cuda_dev = None;
    let mut bus_id = None;
    let mut words = msg.split(u8::is_ascii_whitespace).filter(|w| !w.is_empty());
    while let Some(w) = words.next() {
        match w {
            b"rank" => rank = words.next().and_then(parse_u64),
            b"nranks" | b"nRanks" => nranks = words.next().and_then(parse_u64),
            b"cudaDev" => cuda_dev = words.next().and_then(parse_u64),
            b"busId" => bus_id = words.next().map(lossy),
            _ => {}
        }
    }
    let Some(rank) = rank.and_then(|v| u32::try_from(v).ok()) else {
        return;
    };
    let nranks = nranks.and_then(|v| u32::try_from(v).ok());
    let cuda_dev = cuda_dev.and_then(|v| u32::try_from(v).ok());
    add_rank(r, rank, nranks, cuda_dev, bus_id);
}

/// Records a rank of this process. Ranks known only from channel or tree lines (no `nranks`)
/// merge into the communicator entry of the same rank.
fn add_rank(
    r: &mut ProcessReport,
    rank: u32,
    nranks: Option<u32>,
    cuda_dev: Option<u32>,
    bus_id: Option<String>,
) {
    if nranks.is_none() {
        if r.ranks.iter().any(|e| e.rank == rank) || r.ranks.len() >= MAX_KEYS {
            return;
        }
        r.ranks.push(RankInfo {
            rank,
            nranks,
            cuda_dev,
            bus_id,
        });
        return;
    }
    if let Some(e) = r
        .ranks
        .iter_mut()
        .find(|e| e.rank == rank && (e.nranks == nranks || e.nranks.is_none()))
    {
        e.nranks = nranks;
        if e.cuda_dev.is_none() {
            e.cuda_dev = cuda_dev;
        }
        if e.bus_id.is_none() {
            e.bus_id = bus_id;
        }
    } else if r.ranks.len() < MAX_KEYS {
        r.ranks.push(RankInfo {
            rank,
            nranks,
            cuda_dev,
            bus_id,
        });
    }
}

/// `Trees [0] 1/-1/-1->0->7 [1] ...`: the number between the arrows is this rank.
fn trees_line(r: &mut ProcessReport, msg: &[u8], cuda_dev: Option<u32>) {
    let Some(first) = memmem::find(msg, b"->") else {
        return;
    };
    let rest = &msg[first + 2..];
    let end = rest
        .iter()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(rest.len());
    if let Some(rank) = parse_u64(&rest[..end]).and_then(|v| u32::try_from(v).ok()) {
        add_rank(r, rank, None, cuda_dev, None);
    }
}

/// Searchers for what every channel line is asked (most lines of a log): built once, as
/// building one per call costs more than the search.
static ARROW: LazyLock<memmem::Finder<'static>> = LazyLock::new(|| memmem::Finder::new(b"->"));
static RECEIVE: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b"[receive]"));

/// The local rank of a channel line: the source of a send, the destination of a receive.
fn channel_rank(msg: &[u8]) -> Option<u32> {
    let colon = memchr::memchr(b':', msg)?;
    let body = &msg[colon + 1..];
    let arrow = ARROW.find(body)?;
    let num = |s: &[u8]| -> Option<u32> {
        let s = s.trim_ascii_start();
        let end = s
            .iter()
            .position(|b| !b.is_ascii_digit())
            .unwrap_or(s.len());
        parse_u64(&s[..end]).and_then(|v| u32::try_from(v).ok())
    };
    if RECEIVE.find(body).is_some() {
        num(&body[arrow + 2..])
    } else {
        num(&body[..arrow])
    }
}

fn env_line(r: &mut ProcessReport, name: &[u8], value: &[u8]) {
    let name = name.trim_ascii();
    let name = match memchr::memrchr(b' ', name) {
        Some(p) => &name[p + 1..],
        None => name,
    };
    if name.is_empty()
        || !name
            .iter()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b'_')
    {
        return;
    }
    let value = value.trim_ascii();
    let value = value.strip_suffix(b".").unwrap_or(value);
    let name = lossy(name);
    if r.env.len() < MAX_KEYS || r.env.contains_key(&name) {
        r.env.insert(name, lossy(value));
    }
}

/// The text after ` via `; a scan for `v` is cheaper than building a substring searcher for
/// every line, and channel lines are most of a log.
fn find_via(msg: &[u8]) -> Option<&[u8]> {
    memchr::memchr_iter(b'v', msg)
        .find(|&i| i > 0 && msg[i - 1] == b' ' && msg[i..].starts_with(b"via "))
        .map(|i| &msg[i + 4..])
}

/// `Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA` and every older shape.
fn channel(st: &mut ProcState, msg: &[u8], cuda_dev: Option<u32>) {
    let Some(via) = find_via(msg) else {
        return;
    };
    if !msg.starts_with(b"CollNet") {
        if let Some(rank) = channel_rank(msg) {
            add_rank(&mut st.report, rank, None, cuda_dev, None);
        }
    }
    let via = via.trim_ascii();
    let mut parts = via.split(|&b| b == b'/');
    let first = parts.next().unwrap_or(b"");
    let gdr = via.windows(7).any(|w| w == b"/GDRDMA");
    let (kind, name): (&str, &[u8]) = match first {
        b"NET" => ("NET/", parts.next().unwrap_or(b"")),
        b"COLLNET" => {
            st.report.collnet = Some(true);
            ("COLLNET/", parts.next().unwrap_or(b""))
        }
        b"P2P" => ("P2P/", parts.next().unwrap_or(b"")),
        b"SHM" => ("SHM", b""),
        _ if via.starts_with(b"direct shared memory") => ("SHM", b""),
        other => ("", &other[..other.len().min(32)]),
    };
    if kind == "COLLNET/" && name == b"SHARP" {
        st.report.sharp = Some(true);
    }
    let name = &name[..name.len().min(48)];
    let suffix = if gdr && (kind == "NET/" || kind == "COLLNET/") {
        "/GDRDMA"
    } else {
        ""
    };
    let matches = |k: &str| {
        k.len() == kind.len() + name.len() + suffix.len()
            && k.as_bytes().starts_with(kind.as_bytes())
            && &k.as_bytes()[kind.len()..kind.len() + name.len()] == name
            && k.ends_with(suffix)
    };
    if let Some(e) = st.channels.iter_mut().find(|(k, _)| matches(k)) {
        e.1 += 1;
        return;
    }
    if st.channels.len() < MAX_KEYS {
        st.channels.push((
            format!("{kind}{}{suffix}", String::from_utf8_lossy(name)),
            1,
        ));
    }
}

/// Derives what the raw facts imply, once all lines are read.
pub(super) fn settle(r: &mut ProcessReport, hints: Hints) {
    // `Using network IB|Socket` after a plugin failed: NCCL dropped the plugin and went on with
    // an internal network (plugin/net.cc tries the next one when a plugin's init fails).
    let on_internal_net = r
        .network
        .as_deref()
        .is_some_and(|n| is_internal_net(n.as_bytes()));
    // The busiest inter-node net of the channels names the network when NCCL did not.
    let mut best_net: Option<(&str, u64)> = None;
    let mut net_channels = 0u64;
    let mut gdr_channels = 0u64;
    for (k, n) in &r.channels {
        if let Some(rest) = k
            .strip_prefix("NET/")
            .or_else(|| k.strip_prefix("COLLNET/"))
        {
            net_channels += n;
            if rest.ends_with("/GDRDMA") {
                gdr_channels += n;
            }
            if k.starts_with("NET/") {
                let name = rest.trim_end_matches("/GDRDMA");
                let total: u64 = r
                    .channels
                    .iter()
                    .filter(|(k2, _)| {
                        k2.strip_prefix("NET/")
                            .map(|r2| r2.trim_end_matches("/GDRDMA") == name)
                            .unwrap_or(false)
                    })
                    .map(|(_, c)| c)
                    .sum();
                if best_net.is_none_or(|(_, c)| total > c) {
                    best_net = Some((name, total));
                }
            }
        }
    }
    let channel_net = best_net.map(|(n, _)| n.to_string());
    if r.network.is_none() {
        r.network = channel_net.clone();
    }
    let net = r.network.clone();
    // A loaded plugin replaces NCCL's internal networks; its name may say which it is
    // (`Loaded net plugin Libfabric (v10)`), while `NCCL RDMA Plugin` says nothing.
    let plugin_net = r
        .plugin
        .name
        .as_deref()
        .filter(|_| r.plugin.status == PluginStatus::Loaded)
        .map(transport_of)
        .filter(|t| *t != Transport::Unknown)
        // An IB plugin (IBext) that printed `NET/IB : No device found` has no network to offer:
        // its name is no evidence that IB carried anything.
        .filter(|t| !(*t == Transport::Ib && r.ib_no_device));
    // NCCL >= 2.6 initialises its socket network only when it is going to use it (earlier
    // releases printed `NET/Socket : Using` for the bootstrap in every process).
    let sockets_are_the_net = !r.socket_interfaces.is_empty()
        && (r.ib_no_device
            || r.env
                .get("NCCL_IB_DISABLE")
                .is_some_and(|v| v.trim() == "1")
            || r.ib_nics.is_empty() && version_at_least(r.nccl_version.as_deref(), 2, 6)
            // Without libibverbs IB cannot be the network, in any release.
            || r.ib_nics.is_empty() && hints.no_verbs
            // Any release: the network is set up (init.cc initNet) before the communicator
            // prints its rank and topology lines, and net_ib.cc prints `NET/IB : Using ...` or
            // `No device found` at the same INIT/NET level as the socket list. A process that
            // got past that point with a socket list, no IB line, no IB activity and no plugin
            // ran on sockets, whatever its (unknown) release.
            || r.ib_nics.is_empty()
                && !hints.ib_attempt
                && r.plugin.status != PluginStatus::Loaded
                && !r.ranks.is_empty());
    r.transport = Some(match net.as_deref() {
        Some(n) => transport_of(n),
        // `NET/Socket : GPU Direct RDMA Disabled for HCA 0 'eth0'`: the communicator's network.
        None if hints.gdr_net.is_some() => hints.gdr_net.unwrap_or(Transport::Unknown),
        None if !r.ib_nics.is_empty() => Transport::Ib,
        // The IBext plugin finding no device falls back to sockets like NCCL's own IB.
        None if sockets_are_the_net && r.ib_no_device => Transport::Socket,
        None if plugin_net.is_some() => plugin_net.unwrap_or(Transport::Unknown),
        None if hints.fastrak => Transport::FasTrak,
        None if hints.tcpx => Transport::GpuDirectTcpx,
        None if hints.ofi || r.ofi_provider.is_some() => Transport::Ofi,
        // An IB warning about a device, a completion or a queue pair, or a `-> N` trace
        // through net_ib.cc / the IBext plugin's ib_plugin.c: IB was the network.
        None if hints.ib_attempt
            && r.env.get("NCCL_IB_DISABLE").is_none_or(|v| v.trim() != "1") =>
        {
            Transport::Ib
        }
        // A trace through net_socket.cc or a `NET/Socket` warning: the socket network ran
        // (misc/socket.cc alone is also the bootstrap's, so it proves nothing).
        None if hints.socket_net => Transport::Socket,
        // NCCL < 2.6 prints `NET/Socket : Using` for its bootstrap in every process, so the
        // socket list alone proves nothing; after `NET/IB : No device found` it is the network.
        None if sockets_are_the_net => Transport::Socket,
        None => Transport::Unknown,
    });
    if r.transport == Some(Transport::Unknown) {
        r.transport = None;
    }
    // A network that is not one of NCCL's internal ones is a plugin's.
    if let Some(n) = net.as_deref() {
        if !matches!(n, "IB" | "Socket") {
            if r.plugin.name.is_none() {
                r.plugin.name = Some(n.to_string());
            }
            r.plugin.status = PluginStatus::Loaded;
        }
    } else if hints.tcpx {
        r.plugin
            .name
            .get_or_insert_with(|| "GPUDirectTCPX".to_string());
    }
    r.gdr = if gdr_channels > 0 {
        Some(true)
    } else if net_channels > 0 {
        Some(false)
    } else if r.gdr_hcas.iter().any(|h| h.enabled) {
        Some(true)
    } else if !r.gdr_hcas.is_empty() || hints.gdr_off {
        Some(false)
    } else {
        None
    };
    let uses_socket = r.transport == Some(Transport::Socket)
        || r.channels.keys().any(|k| k.starts_with("NET/Socket"));
    // Google's FastSocket plugin is a socket transport by design.
    let deliberate_socket_plugin = net
        .as_deref()
        .or(r
            .plugin
            .name
            .as_deref()
            .filter(|_| r.plugin.status == PluginStatus::Loaded))
        .is_some_and(|n| n.to_ascii_lowercase().starts_with("fastsocket"));
    let env_is = |k: &str, v: &str| {
        r.env
            .get(k)
            .is_some_and(|x| x.trim().eq_ignore_ascii_case(v))
    };
    let ib_disabled = env_is("NCCL_IB_DISABLE", "1");
    let net_socket_asked = env_is("NCCL_NET", "Socket");
    // RDMA was usable: NCCL listed RDMA NICs, an IB call or completion failed on a real device,
    // a plugin reported devices, the OFI plugin ran, or the host carries IPoIB interfaces
    // (`ib0`, `ibp12s0`, `ibs85f0`: named so by the ipoib driver and udev), which only exist
    // where an InfiniBand HCA is.
    let ipoib = r
        .bootstrap
        .iter()
        .chain(r.socket_interfaces.iter())
        .chain(r.ib_oob.iter())
        .any(|e| is_ipoib_name(&e.interface));
    let plugin_usable = r.plugin.status == PluginStatus::Loaded
        && !deliberate_socket_plugin
        && (hints.plugin_devices || !r.ib_no_device);
    let rdma_usable = !r.ib_nics.is_empty()
        || (hints.ib_attempt && !ib_disabled)
        || hints.ofi
        || plugin_usable
        || ipoib;
    // RDMA or a plugin was asked for: IB settings, a named net or plugin, or a plugin library
    // someone installed that this NCCL cannot use.
    let asked = r.env.iter().any(|(k, v)| {
        (k.starts_with("NCCL_IB_") && k != "NCCL_IB_DISABLE")
            || (k == "NCCL_NET" && !v.trim().eq_ignore_ascii_case("socket"))
            || (k == "NCCL_NET_PLUGIN" && !v.trim().eq_ignore_ascii_case("none"))
    }) || (r.plugin.status == PluginStatus::Unusable && !deliberate_socket_plugin);
    // A communicator of one rank sends nothing over the network.
    let one_rank = !r.ranks.is_empty() && r.ranks.iter().all(|x| x.nranks == Some(1));
    let ofi_over_tcp = r
        .ofi_provider
        .as_deref()
        .is_some_and(|p| p.starts_with("tcp") || p.starts_with("sockets"));
    r.socket_fallback = (uses_socket
        && !deliberate_socket_plugin
        && !ib_disabled
        && !net_socket_asked
        && !one_rank
        && (rdma_usable || asked))
        || ofi_over_tcp;
    if uses_socket && !deliberate_socket_plugin {
        r.socket_reason = Some(
            if ib_disabled {
                "NCCL_IB_DISABLE=1 turned InfiniBand/RoCE off"
            } else if net_socket_asked {
                "NCCL_NET=Socket asked for TCP sockets"
            } else if hints.no_verbs {
                "libibverbs could not be loaded, so NCCL could not look for RDMA devices"
            } else if r.ib_no_device {
                "NCCL found no RDMA device (`NET/IB : No device found`)"
            } else {
                "the log shows no RDMA NIC and no network plugin"
            }
            .to_string(),
        );
    }
    // A plugin failure that left the process on sockets although RDMA was usable caused that
    // fallback (an error); otherwise NCCL went on without the plugin and it is a warning.
    if on_internal_net && !r.socket_fallback {
        plugin_failures_are_warnings(r);
    }
}

/// IPoIB interface names: `ib0` (the ipoib driver's own `ib%d`) and udev's predictable
/// `ibp<bus>s<slot>` / `ibs<slot>` forms.
fn is_ipoib_name(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("ib") else {
        return false;
    };
    let rest = rest
        .strip_prefix('p')
        .or_else(|| rest.strip_prefix('s'))
        .unwrap_or(rest);
    rest.chars().next().is_some_and(|c| c.is_ascii_digit())
}

/// Maps NCCL's network names (and plugins') to the transport kinds of the summary.
/// `2.26.2` ≥ major.minor.
fn version_at_least(v: Option<&str>, major: u64, minor: u64) -> bool {
    let Some(v) = v else { return false };
    let mut it = v.split('.').map(|p| p.parse::<u64>().ok());
    match (it.next().flatten(), it.next().flatten()) {
        (Some(a), Some(b)) => (a, b) >= (major, minor),
        _ => false,
    }
}

pub fn transport_of(name: &str) -> Transport {
    let l = name.to_ascii_lowercase();
    // `IB`, `IBext_v8`, and the nccl-rdma-sharp-plugins' `NCCL RDMA Plugin`.
    if l.starts_with("ib") || l.contains("ibext") || l.contains("rdma plugin") {
        Transport::Ib
    } else if l == "socket" || l.starts_with("fastsocket") {
        Transport::Socket
    } else if l.contains("libfabric") || l.contains("ofi") {
        Transport::Ofi
    } else if l.starts_with("fastrak") || l.starts_with("tcpxo") {
        Transport::FasTrak
    } else if l.starts_with("gpudirecttcpx") || l.starts_with("tcpx") {
        Transport::GpuDirectTcpx
    } else {
        Transport::Unknown
    }
}

/// A plugin that failed to initialise, in a process that then chose an internal network, did not
/// stop the job: its errors say the plugin is unusable (a warning; the socket-fallback checks judge
/// whether sockets were right).
fn plugin_failures_are_warnings(r: &mut ProcessReport) {
    const PLUGIN_RULES: [&str; 3] = ["FAB-NCCL-OFI", "FAB-NCCL-TCPX", "FAB-NCCL-FASTRAK"];
    // The plugin found none of the hardware it drives (aws-ofi-nccl: no EFA provider; TCPX and
    // TCPXO: no data NIC or GPU): on a host without that hardware an installed plugin says so
    // and NCCL goes on without it, which is no problem of the job.
    const HARDWARE_ABSENT: [&str; 3] = [
        "FAB-NCCL-OFI-PROVIDER",
        "FAB-NCCL-TCPX-NIC",
        "FAB-NCCL-FASTRAK-NIC",
    ];
    let plugin_rule = |rule: &str| PLUGIN_RULES.iter().any(|p| rule.starts_with(p));
    for i in r.issues.iter_mut() {
        let absent = HARDWARE_ABSENT.contains(&i.rule.as_str());
        if plugin_rule(&i.rule) && (i.severity == fabrik_model::Severity::Error || absent) {
            i.severity = if absent {
                fabrik_model::Severity::Info
            } else {
                fabrik_model::Severity::Warning
            };
            i.cause = format!(
                "{} NCCL dropped the plugin and went on with its internal network ({}).",
                i.cause.trim_end(),
                r.network.as_deref().unwrap_or("")
            );
        }
    }
}
