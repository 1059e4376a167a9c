//! The communicator lines of an INFO log: ranks (`comm 0x... rank 0 nranks 8`), trees, channel
//! counts, and each channel's transport.

use std::sync::LazyLock;

use memchr::memmem;

use super::lossy;
use crate::nccl_log::prefix::parse_u64;
use crate::nccl_log::report::*;
use crate::nccl_log::{ProcState, MAX_KEYS};

/// `16 coll channels, 16 collnet channels, 0 nvls channels, 16 p2p channels, ...`
/// `16 coll channels, 16 collnet channels, 16 nvls channels, ...`. NCCL 2.19 and later print
/// the coll channel count again in the collnet place (init.cc passes `nChannels` twice), so a
/// collnet count equal to the coll count proves nothing; only 0, or a different count printed
/// by older releases from `collNetChannels`, is evidence.
pub(super) fn channel_counts(r: &mut ProcessReport, msg: &[u8]) {
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

pub(super) fn comm_line(r: &mut ProcessReport, msg: &[u8]) {
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
pub(super) fn trees_line(r: &mut ProcessReport, msg: &[u8], cuda_dev: Option<u32>) {
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

/// The text after ` via `; a scan for `v` is cheaper than building a substring searcher for
/// every line, and channel lines are most of a log.
fn find_via(msg: &[u8]) -> Option<&[u8]> {
    memchr::memchr_iter(b'v', msg)
        .find(|&i| i > 0 && msg[i - 1] == b' ' && msg[i..].starts_with(b"via "))
        .map(|i| &msg[i + 4..])
}

/// `Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA` and every older shape.
pub(super) fn channel(st: &mut ProcState, msg: &[u8], cuda_dev: Option<u32>) {
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
