//! Reading facts out of NCCL INFO/WARN messages, one message at a time: [`info`] and
//! [`warn_facts`] tell the messages apart; the network lines (plugins, IB and socket NICs,
//! GPUDirect RDMA) are read in `net`, the communicator, tree and channel lines in `channels`.

use memchr::memmem;

use super::prefix::parse_u64;
use super::report::*;
use super::{ProcState, MAX_KEYS};

mod channels;
mod net;

use channels::{channel, channel_counts, comm_line, trees_line};
use net::{endpoint, gdr_line, ib_nic, ib_using, plugin_line, socket_using};

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

pub(super) fn is_internal_net(name: &[u8]) -> bool {
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

/// Maps NCCL's network names (and plugins') to the transport kinds of the summary.
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
