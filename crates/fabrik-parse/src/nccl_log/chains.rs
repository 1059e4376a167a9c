//! NCCL's error chains: a WARN's `file.cc:N -> code` lines joined into one issue with its
//! result code, the site it started at and the device it names.

use super::*;

pub(super) struct Location<'a> {
    pub(super) input: &'a str,
    pub(super) line: u64,
}

impl std::fmt::Display for Location<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.input, self.line)
    }
}

/// `Some(())` for a blank line or a bare `host:pid:tid` head: either ends a wrapped message.
pub(super) fn bare_or_blank(line: &[u8]) -> Option<()> {
    (line.trim_ascii().is_empty() || prefix::bare_head(line).is_some()).then_some(())
}

pub(super) fn strip_launcher_prefix(line: &[u8]) -> &[u8] {
    crate::text::strip_launcher_prefix(line).trim_ascii()
}

/// Top-level callers: a trace that reaches one of them was returned to the program (a trace
/// inside net.cc alone is NCCL trying a plugin and moving on, as fixture 13 shows).
pub(super) fn is_top_site(site: &[u8], message: &[u8]) -> bool {
    let mut parts = site.rsplit(|b| *b == b'/');
    let file = parts.next().unwrap_or(site);
    // NCCL >= 2.29 has src/transport/net_ib/init.cc (the IB plugin's init, whose failure on a
    // host without RDMA is NCCL probing a network) and src/ras/collectives.cc: only src/'s own
    // files are the callers.
    if parts
        .next()
        .is_some_and(|dir| matches!(dir, b"net_ib" | b"ras" | b"transport" | b"plugin"))
    {
        return false;
    }
    [
        // `.cc` since 2.3, `.cu` before.
        &b"init.c"[..],
        b"group.c",
        b"enqueue.c",
        b"proxy.c",
        b"collectives.c",
        b"bootstrap.c",
    ]
    .iter()
    .any(|p| file.starts_with(p))
        || memchr::memmem::find(message, b" [").is_some_and(|p| message.ends_with(b"]") && p > 0)
}

/// A `file.cc:N -> code` line: the result code goes to the WARN it follows, or, when no WARN
/// explains it, the first site becomes an issue of its own once the error reached a caller.
pub(super) fn chain_line(
    st: &mut ProcState,
    site: &[u8],
    code: u32,
    message: &[u8],
    location: &dyn std::fmt::Display,
    seq: u64,
) {
    let file = site.rsplit(|b| *b == b'/').next().unwrap_or(site);
    if file.starts_with(b"net_ib.cc")
        || file.starts_with(b"ib_plugin.c")
        || file.starts_with(b"ucx_plugin.c")
        || file.starts_with(b"ucx_rma_plugin.c")
        || file.starts_with(b"ibvwrap")
    {
        st.hints.ib_attempt = true;
    } else if file.starts_with(b"net_socket.c") {
        st.hints.socket_net = true;
    }
    if !st.in_chain {
        st.in_chain = true;
        // A WARN that named an error explains the chain; one that only warned (a message
        // nothing classified) does not, so the chain still makes the failure an error.
        let mut warned: Option<String> = None;
        let explained = match st.warn_issue.and_then(|i| st.issues.get_mut(i)) {
            Some(issue) => {
                if issue.result.is_none() {
                    issue.result = result_label(code);
                }
                warned = Some(issue.message.clone());
                issue.severity == Severity::Error
            }
            None => false,
        };
        if !explained && !matches!(code, 0 | 7) {
            let site = String::from_utf8_lossy(message);
            let text: String = match warned {
                Some(w) => format!("{w} (then {site})"),
                None => site.into_owned(),
            }
            .chars()
            .take(300)
            .collect();
            st.pending_chain = Some((text, code, location.to_string(), seq));
        }
    }
    if is_top_site(site, message) {
        if let Some((text, code, loc, at)) = st.pending_chain.take() {
            // Another thread of this process already reported the same failure with its WARN.
            let label = result_label(code);
            if let Some(known) = st
                .issues
                .iter_mut()
                .find(|i| i.severity == Severity::Error && i.result == label)
            {
                known.count += 1;
                return;
            }
            let i = add_issue(
                &mut st.issues,
                diagnose::result_chain(code),
                text.as_bytes(),
                &loc,
                at,
            );
            if let Some(issue) = i.and_then(|i| st.issues.get_mut(i)) {
                if issue.result.is_none() {
                    issue.result = result_label(code);
                }
            }
        }
    }
}

pub(super) fn result_label(code: u32) -> Option<String> {
    Some(match diagnose::result_name(code) {
        Some(n) => format!("{n} ({code})"),
        None => format!("result {code}"),
    })
}

/// The GPU of the line an issue was first seen on (`[3]` of the prefix): it tells which rank
/// of a multi-GPU process failed.
pub(super) fn set_dev(issues: &mut [LogIssue], i: Option<usize>, dev: Option<u32>) {
    if let Some(issue) = i.and_then(|i| issues.get_mut(i)) {
        if issue.count == 1 {
            issue.cuda_dev = dev;
        }
    }
}

pub(super) fn add_issue(
    issues: &mut Vec<LogIssue>,
    d: Diagnosis,
    message: &[u8],
    location: &dyn std::fmt::Display,
    seq: u64,
) -> Option<usize> {
    if let Some(i) = issues.iter().position(|i| i.rule == d.rule) {
        issues[i].count += 1;
        return Some(i);
    }
    if issues.len() >= MAX_ISSUES {
        if let Some(last) = issues.last_mut() {
            last.count += 1;
        }
        return None;
    }
    let result = diagnose::result_code(message)
        .filter(|_| d.rule != "FAB-NCCL-RESULT")
        .and_then(result_label)
        .or_else(|| named_result(message));
    let text = String::from_utf8_lossy(message);
    let message: String = text.chars().take(300).collect();
    issues.push(LogIssue {
        rule: d.rule.to_string(),
        severity: d.severity,
        message,
        cause: d.cause.to_string(),
        fix: d.fix.to_string(),
        count: 1,
        first_seen: location.to_string(),
        result,
        order: seq,
        cuda_dev: None,
    });
    Some(issues.len() - 1)
}

/// `ncclSystemError`, `unhandled system error (run with NCCL_DEBUG=INFO for details)`: the
/// result a program printed by name or by ncclGetErrorString's text.
pub(super) fn named_result(message: &[u8]) -> Option<String> {
    const TEXTS: [(&str, u32); 7] = [
        ("unhandled cuda error", 1),
        ("unhandled system error", 2),
        ("internal error", 3),
        ("invalid argument", 4),
        ("invalid usage", 5),
        ("remote process exited or there was a network error", 6),
        ("NCCL operation in progress", 7),
    ];
    for code in 1..=7 {
        let name = diagnose::result_name(code)?;
        if memchr::memmem::find(message, name.as_bytes()).is_some() {
            return result_label(code);
        }
    }
    let is_nccl_error = memchr::memmem::find(message, b"NCCL").is_some()
        || memchr::memmem::find(message, b"nccl").is_some();
    if !is_nccl_error {
        return None;
    }
    TEXTS
        .iter()
        .find(|(t, _)| memchr::memmem::find(message, t.as_bytes()).is_some())
        .and_then(|(_, c)| result_label(*c))
}
