//! The RAS client protocol, as bytes: what `ncclras` sends to a job's RAS port and what the job
//! answers (NCCL's src/ras/client.cc and the command loop of src/ras/client_support.cc, v2.24 to
//! v2.32). Pure functions; the socket lives in [`client`](super::client).
//!
//! A session is newline-terminated text. The client opens with `CLIENT PROTOCOL 2`; the job
//! answers `SERVER PROTOCOL N` (ncclras warns on another N and goes on). `TIMEOUT N` (seconds the
//! job's RAS waits for its peers) and `SET FORMAT text|json` (2.28+) each get `OK` or `ERROR:
//! ...`. Then one request: `STATUS` / `VERBOSE STATUS` (the report, streamed until the job
//! closes the connection), `DIAGNOSTICS` (2.31+: the `NCCL DIAG` report, or `BUSY: ...` while
//! another one runs) or `MONITOR [lifecycle,trace|all]` (2.28+: `OK`, then events until either
//! side closes). An unknown command gets `ERROR: Unknown command ...`.

/// The port a job's RAS listens on unless NCCL_RAS_ADDR says otherwise (NCCL_RAS_CLIENT_PORT).
pub const DEFAULT_PORT: u16 = 28028;
/// The protocol version ncclras speaks (NCCL_RAS_CLIENT_PROTOCOL, 2 since NCCL 2.24).
pub const PROTOCOL_VERSION: u32 = 2;
/// Longest reply line of the handshake (ncclras reads into a 4096-byte buffer).
pub const MAX_REPLY_LINE: usize = 4096;
/// Largest report kept (a verbose status of a very large job is a few MiB).
pub const MAX_REPORT: usize = 64 << 20;
/// What RAS itself waits for its peers by default (RAS_COLLECTIVE_LEG_TIMEOUT_SEC).
pub const DEFAULT_RAS_TIMEOUT_S: u32 = 5;

/// The output format asked of the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFormat {
    /// The text report.
    Text,
    /// The JSON document (NCCL 2.28.7+).
    Json,
}

/// Which monitor event groups to stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventGroups {
    /// PEER_NEW and PEER_DEAD (the job's default).
    Lifecycle,
    /// Connection-level events as well.
    All,
}

/// One request line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// `CLIENT PROTOCOL 2`.
    Hello,
    /// `TIMEOUT N`: how long the job's RAS waits for its peers, in seconds (0: no limit).
    Timeout(u32),
    /// `SET FORMAT text|json`.
    Format(ReportFormat),
    /// `STATUS` or `VERBOSE STATUS`.
    Status {
        /// The verbose report.
        verbose: bool,
    },
    /// `DIAGNOSTICS` (NCCL 2.31+).
    Diagnostics,
    /// `MONITOR` with its groups.
    Monitor(EventGroups),
}

impl Request {
    /// The bytes to send.
    pub fn encode(&self) -> String {
        match self {
            Request::Hello => format!("CLIENT PROTOCOL {PROTOCOL_VERSION}\n"),
            Request::Timeout(s) => format!("TIMEOUT {s}\n"),
            Request::Format(ReportFormat::Text) => "SET FORMAT text\n".into(),
            Request::Format(ReportFormat::Json) => "SET FORMAT json\n".into(),
            Request::Status { verbose: false } => "STATUS\n".into(),
            Request::Status { verbose: true } => "VERBOSE STATUS\n".into(),
            Request::Diagnostics => "DIAGNOSTICS\n".into(),
            Request::Monitor(EventGroups::Lifecycle) => "MONITOR lifecycle\n".into(),
            Request::Monitor(EventGroups::All) => "MONITOR all\n".into(),
        }
    }

    /// Whether the job answers with one line (the handshake and settings) rather than a
    /// stream that ends when it closes the connection.
    pub fn one_line_reply(&self) -> bool {
        matches!(
            self,
            Request::Hello | Request::Timeout(_) | Request::Format(_) | Request::Monitor(_)
        )
    }
}

/// A one-line reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `SERVER PROTOCOL N`.
    ServerProtocol(u32),
    /// `OK`.
    Ok,
    /// `ERROR: ...`.
    Error(String),
    /// `BUSY: ...` (a diagnostics request already running).
    Busy(String),
    /// Anything else: not a RAS port, or a protocol this client does not know.
    Unexpected(String),
}

/// Reads a reply line (with or without its newline; compared without case, as ncclras does).
pub fn decode_reply(line: &[u8]) -> Reply {
    let text = String::from_utf8_lossy(line);
    let t = text.trim_end_matches(['\n', '\r']);
    let upper = t.to_ascii_uppercase();
    if let Some(v) = upper.strip_prefix("SERVER PROTOCOL ") {
        return match v.trim().parse() {
            Ok(n) => Reply::ServerProtocol(n),
            Err(_) => Reply::Unexpected(t.to_string()),
        };
    }
    if upper == "OK" {
        return Reply::Ok;
    }
    if upper.starts_with("ERROR") {
        return Reply::Error(t[5..].trim_start_matches(':').trim().to_string());
    }
    if upper.starts_with("BUSY") {
        return Reply::Busy(t[4..].trim_start_matches(':').trim().to_string());
    }
    Reply::Unexpected(t.chars().take(200).collect())
}

/// Why a target is not `HOST[:PORT]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// Nothing given.
    #[error("no host given (HOST[:PORT], e.g. node-1:28028)")]
    Empty,
    /// The port is not a number in 1..=65535.
    #[error("{0:?} is not a TCP port (1-65535)")]
    Port(String),
}

/// `host`, `host:port`, `[v6]:port` or a bare IPv6 address, with the port defaulting to 28028.
pub fn parse_target(s: &str) -> Result<(String, u16), TargetError> {
    let s = s.trim();
    if s.is_empty() {
        return Err(TargetError::Empty);
    }
    let port = |p: &str| match p.parse::<u16>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(TargetError::Port(p.to_string())),
    };
    if let Some(rest) = s.strip_prefix('[') {
        let Some((host, tail)) = rest.split_once(']') else {
            return Err(TargetError::Empty);
        };
        return match tail.strip_prefix(':') {
            Some(p) => Ok((host.to_string(), port(p)?)),
            None => Ok((host.to_string(), DEFAULT_PORT)),
        };
    }
    match s.rsplit_once(':') {
        // More than one colon and no brackets: an IPv6 address alone.
        Some((h, _)) if h.contains(':') => Ok((s.to_string(), DEFAULT_PORT)),
        Some((h, p)) if !h.is_empty() => Ok((h.to_string(), port(p)?)),
        Some(_) => Err(TargetError::Empty),
        None => Ok((s.to_string(), DEFAULT_PORT)),
    }
}

/// How long to wait for the report: RAS's own wait for its peers plus the margin ncclras adds
/// (RAS_COLLECTIVE_EXTRA_TIMEOUT_SEC and its 1 s increment).
pub fn report_wait_s(ras_timeout_s: Option<u32>) -> u64 {
    u64::from(ras_timeout_s.unwrap_or(DEFAULT_RAS_TIMEOUT_S).max(1)) * 2 + 6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_the_lines_ncclras_sends() {
        assert_eq!(Request::Hello.encode(), "CLIENT PROTOCOL 2\n");
        assert_eq!(Request::Timeout(10).encode(), "TIMEOUT 10\n");
        assert_eq!(
            Request::Format(ReportFormat::Json).encode(),
            "SET FORMAT json\n"
        );
        assert_eq!(
            Request::Status { verbose: true }.encode(),
            "VERBOSE STATUS\n"
        );
        assert_eq!(Request::Diagnostics.encode(), "DIAGNOSTICS\n");
        assert!(!Request::Status { verbose: false }.one_line_reply());
    }

    #[test]
    fn replies() {
        assert_eq!(
            decode_reply(b"SERVER PROTOCOL 2\n"),
            Reply::ServerProtocol(2)
        );
        assert_eq!(decode_reply(b"ok\r\n"), Reply::Ok);
        assert_eq!(
            decode_reply(b"ERROR: Invalid timeout value x\n"),
            Reply::Error("Invalid timeout value x".into())
        );
        assert_eq!(
            decode_reply(b"BUSY: diagnostics already in progress\n"),
            Reply::Busy("diagnostics already in progress".into())
        );
        assert!(matches!(
            decode_reply(b"SSH-2.0-OpenSSH\n"),
            Reply::Unexpected(_)
        ));
    }

    #[test]
    fn targets() {
        assert_eq!(parse_target("node1"), Ok(("node1".into(), 28028)));
        assert_eq!(parse_target("10.0.0.1:2000"), Ok(("10.0.0.1".into(), 2000)));
        assert_eq!(parse_target("[::1]:5"), Ok(("::1".into(), 5)));
        assert_eq!(parse_target("fe80::1"), Ok(("fe80::1".into(), 28028)));
        assert_eq!(parse_target("h:0"), Err(TargetError::Port("0".into())));
        assert_eq!(parse_target(" "), Err(TargetError::Empty));
    }
}
