//! Splitting an NCCL debug line into its prefix (`host:pid:tid [dev]`, optional source location)
//! and its message. Every NCCL 2.x version prints `%s:%d:%d [%d] NCCL INFO ` (WARN lines add the
//! source location `file.cc:123` before `NCCL WARN`); launchers and log collectors add their own
//! prefixes in front (`[1,7]<stdout>:`, `[trainer3]:`, `[0] `, timestamps), which are skipped.

use memchr::memmem;

/// The level an NCCL line was printed at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// `NCCL INFO`.
    Info,
    /// `NCCL WARN`.
    Warn,
}

/// One NCCL line, borrowed from the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NcclLine<'a> {
    /// `INFO` or `WARN`.
    pub level: Level,
    /// `host` of `host:pid:tid`, when printed.
    pub host: Option<&'a [u8]>,
    /// `pid` of `host:pid:tid`, when printed.
    pub pid: Option<u64>,
    /// `host:pid` bytes, the per-process key (no allocation needed to look it up).
    pub key: Option<&'a [u8]>,
    /// The CUDA device of `[dev]`, when printed.
    pub cuda_dev: Option<u32>,
    /// `file.cc:123` or `function():123` printed before `NCCL WARN`.
    pub source: Option<&'a [u8]>,
    /// The message after `NCCL INFO ` or `NCCL WARN `.
    pub message: &'a [u8],
}

/// Finds the markers of NCCL lines; built once per parse.
pub struct Splitter {
    marker: memmem::FinderRev<'static>,
    marker_fwd: memmem::Finder<'static>,
    old_info: memmem::Finder<'static>,
    old_warn: memmem::Finder<'static>,
    /// Ray's de-duplication note; prebuilt because every NCCL line is searched for it.
    repeated: memmem::Finder<'static>,
}

impl Default for Splitter {
    fn default() -> Self {
        Splitter {
            marker: memmem::FinderRev::new(b"NCCL "),
            marker_fwd: memmem::Finder::new(b"NCCL "),
            old_info: memmem::Finder::new(b"] INFO "),
            old_warn: memmem::Finder::new(b" WARN "),
            repeated: memmem::Finder::new(b" [repeated "),
        }
    }
}

/// Cuts what collectors append to a message: ANSI colour codes and Ray's
/// `[repeated 6x across cluster]` de-duplication note.
fn cut_decorations<'a>(repeated: &memmem::Finder<'_>, message: &'a [u8]) -> &'a [u8] {
    let mut m = message;
    if let Some(p) = memchr::memchr(0x1b, m) {
        m = &m[..p];
    }
    if let Some(p) = repeated.find(m) {
        m = &m[..p];
    }
    // A paste's closing Markdown backticks.
    let m = trim(m);
    let end = m.len() - m.iter().rev().take_while(|b| **b == b'`').count();
    trim(&m[..end])
}

impl Splitter {
    /// Returns the NCCL line in `line`, if it is one. The last `NCCL INFO`/`NCCL WARN` marker wins:
    /// log collectors that print a line twice (`ts | prefix msg | prefix msg`) keep the cleaner copy.
    pub fn split<'a>(&self, line: &'a [u8]) -> Option<NcclLine<'a>> {
        let mut end = line.len();
        loop {
            let Some(pos) = self.marker.rfind(&line[..end]) else {
                return split_ofi_test(line)
                    .or_else(|| split_net_logger(line))
                    .or_else(|| self.split_old(line));
            };
            if let Some(nl) = self.at_marker(line, pos) {
                return Some(nl);
            }
            if pos == 0 {
                return self.split_old(line);
            }
            end = pos;
        }
    }

    /// The NCCL line whose `NCCL INFO`/`NCCL WARN` marker starts at `pos`, if one does. When
    /// [`Splitter::first_marker`] found `pos` and [`Splitter::record_after`] found no second
    /// record, this is what [`Splitter::split`] returns, without searching the line again.
    pub fn at_marker<'a>(&self, line: &'a [u8], pos: usize) -> Option<NcclLine<'a>> {
        let after = line.get(pos + 5..)?;
        let level = if after.starts_with(b"INFO") {
            Level::Info
        } else if after.starts_with(b"WARN") {
            Level::Warn
        } else {
            return None;
        };
        if pos != 0 && !line[pos - 1].is_ascii_whitespace() {
            return None;
        }
        let message = cut_decorations(&self.repeated, &after[4..]);
        Some(parse_head(&line[..pos], level, message))
    }

    /// Position of the first `NCCL INFO`/`NCCL WARN` marker of `line`.
    pub fn first_marker(&self, line: &[u8]) -> Option<usize> {
        self.next_marker(line, 0)
    }

    /// Position of the first `NCCL INFO`/`NCCL WARN` marker at or after `from`.
    fn next_marker(&self, line: &[u8], from: usize) -> Option<usize> {
        let mut at = from;
        while let Some(p) = self.marker_fwd.find(line.get(at..)?) {
            let pos = at + p;
            let after = &line[pos + 5..];
            let boundary_ok = pos == 0 || line[pos - 1].is_ascii_whitespace();
            if boundary_ok && (after.starts_with(b"INFO") || after.starts_with(b"WARN")) {
                return Some(pos);
            }
            at = pos + 5;
        }
        None
    }

    /// Where the NCCL record after the one starting at `from` begins, when `line` holds several:
    /// a paste whose newlines were lost runs `host:pid:tid [d] NCCL INFO ...` records together.
    /// The record's head (`host:pid:tid [d]` and a WARN's source location) belongs to it.
    pub fn next_record(&self, line: &[u8], from: usize) -> Option<usize> {
        self.record_after(line, self.next_marker(line, from)?)
    }

    /// [`Splitter::next_record`] for a record whose marker is known to start at `first`.
    pub fn record_after(&self, line: &[u8], first: usize) -> Option<usize> {
        let second = self.next_marker(line, first + 9)?;
        let window_start = first + 9;
        let window = &line[window_start..second];
        let Some((open, close)) = find_dev_token(window) else {
            return Some(second);
        };
        // Between `[d]` and the marker at most a WARN's source (`file.cc:12 (func)`).
        if window[close + 1..]
            .split(u8::is_ascii_whitespace)
            .filter(|t| !t.is_empty())
            .count()
            > 2
        {
            return Some(second);
        }
        let before = window[..open].trim_ascii_end();
        let tok_start = before
            .iter()
            .rposition(u8::is_ascii_whitespace)
            .map_or(0, |p| p + 1);
        let start = if memchr::memchr(b':', &before[tok_start..]).is_some() {
            tok_start
        } else {
            open
        };
        Some(window_start + start)
    }

    /// NCCL 2.2 and older print no `NCCL` word: `host:pid:tid [0] INFO NET : Using interface
    /// ...` and `host:pid:tid [0] include/socket.h:360 WARN Call to connect failed`. Accepted only
    /// with a `host:pid:tid [dev]` head, so program output that says INFO or WARN is not taken.
    fn split_old<'a>(&self, line: &'a [u8]) -> Option<NcclLine<'a>> {
        let (head, level, message) = if let Some(p) = self.old_info.find(line) {
            (&line[..p + 1], Level::Info, &line[p + 7..])
        } else {
            let p = self.old_warn.find(line)?;
            (&line[..p], Level::Warn, &line[p + 6..])
        };
        let out = parse_head(head, level, cut_decorations(&self.repeated, message));
        // A clock (`10:00:00 [0] INFO`) also reads as host:pid:tid; a host name has a letter.
        let real_host = out
            .host
            .is_some_and(|h| h.iter().any(u8::is_ascii_alphabetic));
        (real_host && out.pid.is_some() && out.cuda_dev.is_some()).then_some(out)
    }
}

/// aws-ofi-nccl's functional tests (`nccl_message_transfer`, `ring`, ...) log through their own
/// printer, `WARN: Function: %s Line: %d: ` and `INFO: Function: ...` (tests/test-common.h of
/// v0.9, tests/functional/functional_test.cpp today), with the plugin's message after it.
fn split_ofi_test(line: &[u8]) -> Option<NcclLine<'_>> {
    let t = line.trim_ascii_start();
    let (level, rest) = if let Some(r) = t.strip_prefix(b"WARN: Function: ") {
        (Level::Warn, r)
    } else {
        (Level::Info, t.strip_prefix(b"INFO: Function: ")?)
    };
    let at = memmem::find(rest, b" Line: ")?;
    let after = &rest[at + 7..];
    let colon = memchr::memchr(b':', after)?;
    parse_u64(&after[..colon])?;
    Some(NcclLine {
        level,
        host: None,
        pid: None,
        key: None,
        cuda_dev: None,
        source: Some(&rest[..at]),
        message: trim(&after[colon + 1..]),
    })
}

/// Programs that load a network plugin without NCCL hand it their own logger; UCCL's GPUDirect-TCPX
/// harness prints `[ncclNet:%d] %s:%d ` (the ncclDebugLogLevel, the plugin's function or file and
/// line) before the message. Level 2 is NCCL_LOG_WARN, 3 NCCL_LOG_INFO and 5 NCCL_LOG_TRACE.
fn split_net_logger(line: &[u8]) -> Option<NcclLine<'_>> {
    let t = line.trim_ascii_start();
    let rest = t.strip_prefix(b"[ncclNet:")?;
    let close = memchr::memchr(b']', rest)?;
    let level = match parse_u64(&rest[..close])? {
        2 => Level::Warn,
        3 | 5 => Level::Info,
        _ => return None,
    };
    let rest = rest[close + 1..].trim_ascii_start();
    // The site may hold spaces (`tcpxResult_t tcpxCommProgress(tcpxComm*):1029`): it ends at the
    // first `:<digits>` followed by a space or the end of the line.
    let mut at = 0;
    while let Some(p) = memchr::memchr(b':', &rest[at..]) {
        let colon = at + p;
        let digits = rest[colon + 1..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        let end = colon + 1 + digits;
        if digits > 0 && rest.get(end).is_none_or(u8::is_ascii_whitespace) {
            return Some(NcclLine {
                level,
                host: None,
                pid: None,
                key: None,
                cuda_dev: None,
                source: Some(&rest[..end]),
                message: trim(&rest[end..]),
            });
        }
        at = colon + 1;
    }
    None
}

/// A line that is only `host:pid:tid`: an excerpt cut right after an NCCL line's head. It still
/// names its process. The host must open with a letter (a clock `10:00:00` is no host).
pub fn bare_head(line: &[u8]) -> Option<NcclLine<'_>> {
    let t = trim(line);
    if t.is_empty() || t.len() > 256 || t.iter().any(u8::is_ascii_whitespace) {
        return None;
    }
    let mut out = NcclLine {
        level: Level::Info,
        host: None,
        pid: None,
        key: None,
        cuda_dev: None,
        source: None,
        message: b"",
    };
    parse_host_pid_tid(t, &mut out);
    // The whole token is the head: no launcher prefix, no other text glued to it.
    let whole = out.key.is_some_and(|k| t.starts_with(k));
    let host_ok = out
        .host
        .is_some_and(|h| h.first().is_some_and(u8::is_ascii_alphabetic));
    (out.pid.is_some() && whole && host_ok).then_some(out)
}

fn parse_head<'a>(head: &'a [u8], level: Level, message: &'a [u8]) -> NcclLine<'a> {
    let mut out = NcclLine {
        level,
        host: None,
        pid: None,
        key: None,
        cuda_dev: None,
        source: None,
        message,
    };
    let head = trim(head);
    // Find the `[dev]` token; what precedes it is `host:pid:tid`, what follows is the source.
    let Some(dev_end) = find_dev_token(head) else {
        if !head.is_empty() {
            out.source = last_token(head);
        }
        return out;
    };
    let (dev_start, dev_close) = dev_end;
    out.cuda_dev = parse_u64(&head[dev_start + 1..dev_close]).and_then(|v| u32::try_from(v).ok());
    let rest = trim(&head[dev_close + 1..]);
    if !rest.is_empty() {
        out.source = Some(rest);
    }
    let before = trim(&head[..dev_start]);
    if let Some(tok) = last_token(before) {
        parse_host_pid_tid(tok, &mut out);
    }
    out
}

/// Position of the last `[digits]` token in `head`: (index of `[`, index of `]`).
fn find_dev_token(head: &[u8]) -> Option<(usize, usize)> {
    let mut search_end = head.len();
    while let Some(close) = memchr::memrchr(b']', &head[..search_end]) {
        let open = memchr::memrchr(b'[', &head[..close])?;
        let inner = &head[open + 1..close];
        let standalone = open == 0 || head[open - 1].is_ascii_whitespace();
        if !inner.is_empty() && inner.iter().all(u8::is_ascii_digit) && standalone {
            return Some((open, close));
        }
        search_end = open;
    }
    None
}

fn parse_host_pid_tid<'a>(tok: &'a [u8], out: &mut NcclLine<'a>) {
    // host:pid:tid — the host may carry a launcher prefix ending in ':' (`[1,7]<stdout>:ip-...`).
    let Some(c2) = memchr::memrchr(b':', tok) else {
        return;
    };
    // Pastes redact the ids (`host-01.example.com:XXXXXX`): the host still names the process.
    if is_redacted(&tok[c2 + 1..]) {
        let c1 = match memchr::memrchr(b':', &tok[..c2]) {
            Some(c1) if is_redacted(&tok[c1 + 1..c2]) || parse_u64(&tok[c1 + 1..c2]).is_some() => {
                c1
            }
            _ => c2,
        };
        set_host(tok, c1, c2, None, out);
        return;
    }
    let Some(c1) = memchr::memrchr(b':', &tok[..c2]) else {
        return;
    };
    let (Some(pid), Some(_tid)) = (parse_u64(&tok[c1 + 1..c2]), parse_u64(&tok[c2 + 1..])) else {
        return;
    };
    set_host(tok, c1, c2, Some(pid), out);
}

/// `XXXXXX`: an id a paste replaced by X's.
fn is_redacted(s: &[u8]) -> bool {
    s.len() >= 2 && s.iter().all(|b| matches!(b, b'X' | b'x'))
}

/// Records host and key of `tok`, whose host ends at `c1` and pid at `c2`.
fn set_host<'a>(tok: &'a [u8], c1: usize, c2: usize, pid: Option<u64>, out: &mut NcclLine<'a>) {
    let host_part = &tok[..c1];
    let host = match memchr::memrchr(b':', host_part) {
        Some(c0) => &host_part[c0 + 1..],
        None => host_part,
    };
    // Markdown and quoting left in pastes: `` `host ``, `"host`, `>host`, `|host`.
    let junk = |b: &u8| matches!(b, b'`' | b'"' | b'\'' | b'>' | b'|' | b'*' | b'(');
    let skip = host.iter().take_while(|b| junk(b)).count();
    let host = &host[skip..];
    if pid.is_none() && !host.iter().any(u8::is_ascii_alphabetic) {
        return;
    }
    let key_start = c1 - host.len();
    out.pid = pid;
    if !host.is_empty() {
        out.host = Some(host);
    }
    out.key = Some(&tok[key_start..c2]);
}

fn last_token(s: &[u8]) -> Option<&[u8]> {
    let s = trim(s);
    if s.is_empty() {
        return None;
    }
    let start = s
        .iter()
        .rposition(u8::is_ascii_whitespace)
        .map_or(0, |p| p + 1);
    Some(&s[start..])
}

pub fn trim(s: &[u8]) -> &[u8] {
    s.trim_ascii()
}

pub fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 19 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in s {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v * 10 + u64::from(b - b'0');
    }
    Some(v)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn split(s: &str) -> Option<NcclLine<'_>> {
        Splitter::default().split(s.as_bytes())
    }

    #[test]
    fn plain_prefix() {
        let l = split("node1:1234:5678 [3] NCCL INFO Using network IB").unwrap();
        assert_eq!(l.host, Some(&b"node1"[..]));
        assert_eq!(l.pid, Some(1234));
        assert_eq!(l.cuda_dev, Some(3));
        assert_eq!(l.key, Some(&b"node1:1234"[..]));
        assert_eq!(l.message, b"Using network IB");
        assert_eq!(l.level, Level::Info);
    }

    #[test]
    fn launcher_prefixes_are_skipped() {
        let l = split("[1,7]<stdout>:ip-172-32-38-1:21471:22316 [7] NCCL INFO x").unwrap();
        assert_eq!(l.host, Some(&b"ip-172-32-38-1"[..]));
        assert_eq!(l.key, Some(&b"ip-172-32-38-1:21471"[..]));
        let l = split("[trainer3]:twshared1016:1958:1958 [3] NCCL INFO y").unwrap();
        assert_eq!(l.host, Some(&b"twshared1016"[..]));
        let l = split("[0] node0:13571:13571 [0] NCCL INFO z").unwrap();
        assert_eq!(l.host, Some(&b"node0"[..]));
        assert_eq!(l.cuda_dev, Some(0));
    }

    #[test]
    fn warn_with_source_location() {
        let l = split("h:1:2 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion").unwrap();
        assert_eq!(l.level, Level::Warn);
        assert_eq!(l.source, Some(&b"ib_plugin.c:1615"[..]));
        assert_eq!(l.cuda_dev, Some(4));
        assert_eq!(l.message, b"NET/IB : Got completion");
    }

    #[test]
    fn newest_warn_with_function_and_timestamp_prefix() {
        // debug.cc of NCCL 2.2x: `[%d] %s:%d (%s) NCCL WARN`, optional NCCL_DEBUG_TIMESTAMP_FORMAT.
        let l = split("[2025-06-01 10:00:00] gpu7:4242:4300 [5] transport/net_ib.cc:2126 (ncclIbTest) NCCL WARN NET/IB : Got completion").unwrap();
        assert_eq!(l.host, Some(&b"gpu7"[..]));
        assert_eq!(l.pid, Some(4242));
        assert_eq!(l.cuda_dev, Some(5));
        assert_eq!(
            l.source,
            Some(&b"transport/net_ib.cc:2126 (ncclIbTest)"[..])
        );
        assert_eq!(l.message, b"NET/IB : Got completion");
    }

    #[test]
    fn no_host_and_no_prefix() {
        let l = split(" [0] NCCL INFO Ring 00 : 0 -> 1").unwrap();
        assert_eq!(l.host, None);
        assert_eq!(l.cuda_dev, Some(0));
        let l = split("NCCL INFO Using network FasTrak").unwrap();
        assert_eq!(l.host, None);
        assert_eq!(l.message, b"Using network FasTrak");
        let l = split("misc/ibvwrap.cc:182 NCCL WARN Call to ibv_reg_mr failed").unwrap();
        assert_eq!(l.source, Some(&b"misc/ibvwrap.cc:182"[..]));
        assert!(split("NCCL version 2.4.7+cuda9.2").is_none());
        assert!(split("plain program output").is_none());
        assert!(split("2024-01-01 10:00:00 [0] INFO starting epoch").is_none());
        assert!(split("[W socket.cpp:601] [c10d] WARN something").is_none());
    }

    #[test]
    fn plugin_harness_logger_lines() {
        let l = split("[ncclNet:2] tcpxResult_t tcpxCommProgress(tcpxComm*):1029 0xa:0xb, nic 0, eth4, x rx rx ctrl timeout cnt 1, nanos 2").unwrap();
        assert_eq!(l.level, Level::Warn);
        assert_eq!(
            l.source,
            Some(&b"tcpxResult_t tcpxCommProgress(tcpxComm*):1029"[..])
        );
        assert!(l.message.starts_with(b"0xa:0xb, nic 0"));
        // The site alone: the message was wrapped onto the next lines.
        let l = split("[ncclNet:2] tcpxResult_t tcpxCommProgress(tcpxComm*):1029 ").unwrap();
        assert!(l.message.is_empty());
        assert_eq!(
            split("[ncclNet:3] net_tcpx.cc:120 NET/GPUDirectTCPX ok")
                .unwrap()
                .level,
            Level::Info
        );
        assert!(split("[ncclNet:2] no site here").is_none());
        assert!(split("[ncclNet:9] f.cc:1 x").is_none());
    }

    #[test]
    fn aws_ofi_nccl_functional_test_lines() {
        // aws/aws-ofi-nccl#22: nccl_message_transfer on two EFA hosts.
        let l = split("WARN: Function: create_nccl_ofi_component Line: 459: NET/OFI Couldn't open AV. RC: -22, ERROR: Invalid argument").unwrap();
        assert_eq!(l.level, Level::Warn);
        assert_eq!(l.source, Some(&b"create_nccl_ofi_component"[..]));
        assert_eq!(
            l.message,
            b"NET/OFI Couldn't open AV. RC: -22, ERROR: Invalid argument"
        );
        let l =
            split("INFO: Function: ofi_init Line: 686: NET/OFI Selected Provider is efa").unwrap();
        assert_eq!(l.level, Level::Info);
        assert!(split("INFO: Function: main started").is_none());
    }

    #[test]
    fn a_head_cut_from_its_message_names_its_process() {
        // NVIDIA/nccl#529: the excerpt ends right after the third process's head.
        let l = bare_head(b"NvYt-ae683c69ce53-1bdf2bc9-79ce82ee-3fe03e8-c2959af0:84:206").unwrap();
        assert_eq!(
            l.host,
            Some(&b"NvYt-ae683c69ce53-1bdf2bc9-79ce82ee-3fe03e8-c2959af0"[..])
        );
        assert_eq!(l.pid, Some(84));
        assert!(bare_head(b"10:00:00").is_none());
        assert!(bare_head(b"2025-06-01T10:00:00").is_none());
        assert!(bare_head(b"Epoch 3: 10:00:00").is_none());
        assert!(bare_head(b"fe80::1:2").is_none());
    }

    #[test]
    fn flattened_records_are_found() {
        let s = Splitter::default();
        let line = b"text ``` h1:1:1 [0] NCCL INFO NCCL version 2.27.3 h1:2:2 [1] NCCL INFO cudaDriverVersion 12010 h1:2:2 [1] misc/socket.cc:10 NCCL WARN x";
        let a = s.next_record(line, 0).unwrap();
        assert!(line[a..].starts_with(b"h1:2:2 [1] NCCL INFO cudaDriver"));
        let b = s.next_record(line, a).unwrap();
        assert!(line[b..].starts_with(b"h1:2:2 [1] misc/socket.cc:10 NCCL WARN"));
        assert_eq!(s.next_record(line, b), None);
        assert_eq!(
            s.next_record(b"h:1:1 [0] NCCL INFO Using network IB", 0),
            None
        );
    }

    #[test]
    fn redacted_ids_keep_the_host() {
        // NVIDIA/nccl#2013: a user replaced pid and tid by X's before posting.
        let l = split("[2026-03-13 22:26:02] host-01.example.com:XXXXXX [5] ibvwrap.c:262 NCCL WARN Call to ibv_modify_qp failed with 110 Connection timed out").unwrap();
        assert_eq!(l.host, Some(&b"host-01.example.com"[..]));
        assert_eq!(l.key, Some(&b"host-01.example.com"[..]));
        assert_eq!(l.pid, None);
        assert_eq!(l.cuda_dev, Some(5));
        let l = split("gpu7:XXXX:XXXX [0] NCCL INFO Using network IB").unwrap();
        assert_eq!(l.host, Some(&b"gpu7"[..]));
        assert_eq!(l.key, Some(&b"gpu7:XXXX"[..]));
        // A clock is no host.
        let l = split("10:XX [0] NCCL INFO Using network IB").unwrap();
        assert_eq!(l.host, None);
    }

    #[test]
    fn nccl_2_2_lines_without_the_nccl_word() {
        let l = split(
            "gpu-bql-144-103:18553:18553 [0] INFO NET : Using interface enp3s0:192.168.144.103<0>",
        )
        .unwrap();
        assert_eq!(l.host, Some(&b"gpu-bql-144-103"[..]));
        assert_eq!(l.level, Level::Info);
        assert_eq!(
            l.message,
            b"NET : Using interface enp3s0:192.168.144.103<0>"
        );
        let l = split("gpu-bql-144-103:18553:18611 [0] include/socket.h:360 WARN Call to connect failed : Connection timed out").unwrap();
        assert_eq!(l.level, Level::Warn);
        assert_eq!(l.source, Some(&b"include/socket.h:360"[..]));
        assert_eq!(l.message, b"Call to connect failed : Connection timed out");
    }

    #[test]
    fn ansi_colours_and_ray_repeat_notes_are_cut() {
        let l = split("\x1b[36m(RayWorkerVllm pid=5310)\x1b[0m pod:5310:5433 [7] NCCL INFO P2P plugin IBext \x1b[32m [repeated 6x across cluster]\x1b[0m").unwrap();
        assert_eq!(l.host, Some(&b"pod"[..]));
        assert_eq!(l.message, b"P2P plugin IBext");
    }

    #[test]
    fn duplicated_collector_lines_use_the_last_copy() {
        let s = "  | 2025-05-16T16:39:51.208-07:00ip-10-36-29-253:79:79 [0] NCCL INFO Bootstrap : Using eth0:10.36.29.253<0> | ip-10-36-29-253:79:79 [0] NCCL INFO Bootstrap : Using eth0:10.36.29.253<0>";
        let l = split(s).unwrap();
        assert_eq!(l.host, Some(&b"ip-10-36-29-253"[..]));
        assert_eq!(l.message, b"Bootstrap : Using eth0:10.36.29.253<0>");
    }
}
