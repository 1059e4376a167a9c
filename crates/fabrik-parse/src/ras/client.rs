//! A session with a job's RAS port over TCP: the handshake, the settings, one report or the
//! monitor event stream, in the order [`protocol`](super::protocol) describes (as `ncclras`
//! does it). The bytes come back to the caller, which parses and renders them.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use super::protocol::{
    self, decode_reply, parse_target, EventGroups, Reply, ReportFormat, Request, TargetError,
};

/// Why a session with a RAS port failed. Each message says what to check.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The address is not HOST[:PORT].
    #[error(transparent)]
    Target(#[from] TargetError),
    /// The host name did not resolve.
    #[error("resolving {host}")]
    Resolve {
        /// The host as given.
        host: String,
        /// The resolver's error.
        #[source]
        source: std::io::Error,
    },
    /// No address of the host accepted the connection.
    #[error("cannot reach NCCL RAS at {host}:{port} ({last}): is the job running there with RAS enabled (NCCL_RAS_ENABLE, NCCL_RAS_ADDR)?")]
    Unreachable {
        /// The host as given.
        host: String,
        /// The port tried.
        port: u16,
        /// The last address and its error.
        last: String,
    },
    /// The port answered the hello with something else than `SERVER PROTOCOL N`.
    #[error("{addr} is not an NCCL RAS port (answered {answer:?})")]
    NotRas {
        /// The address that answered.
        addr: std::net::SocketAddr,
        /// What it answered.
        answer: Reply,
    },
    /// A socket operation failed; `what` says which.
    #[error("{what}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The socket's error.
        #[source]
        source: std::io::Error,
    },
    /// A handshake line longer than the protocol allows.
    #[error(
        "the RAS port sent a line longer than {} bytes: not NCCL RAS",
        protocol::MAX_REPLY_LINE
    )]
    LineTooLong,
    /// The job closed the connection before answering.
    #[error("the RAS port closed the connection during the handshake")]
    ClosedInHandshake,
    /// The job answered `ERROR: ...` to a command.
    #[error("the job refused {what}: {message}")]
    Refused {
        /// The command.
        what: String,
        /// The job's message.
        message: String,
    },
    /// The job answered something the protocol does not allow here.
    #[error("unexpected answer to {what}: {answer:?}")]
    Unexpected {
        /// The command.
        what: String,
        /// The answer.
        answer: Reply,
    },
    /// The report did not end in time.
    #[error("the RAS report did not end within {0} s")]
    ReportTimeout(u64),
    /// The report is larger than [`protocol::MAX_REPORT`].
    #[error("the RAS report is larger than {} bytes", protocol::MAX_REPORT)]
    ReportTooLarge,
    /// The job answered the request with `BUSY: ...` or `ERROR: ...`.
    #[error("the job answered: {0}")]
    Answered(String),
    /// The job's NCCL predates the monitor mode (NCCL 2.29).
    #[error(
        "the job's NCCL has no RAS monitor mode (it came with NCCL 2.29): {message}; \
         `fabrik ras {target}` asks for its status instead"
    )]
    NoMonitor {
        /// The job's message.
        message: String,
        /// The address as given.
        target: String,
    },
}

fn io(what: &'static str) -> impl FnOnce(std::io::Error) -> ClientError {
    move |source| ClientError::Io { what, source }
}

/// What to ask the job for a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ask {
    /// `STATUS`, or `VERBOSE STATUS` when true.
    Status {
        /// The verbose report.
        verbose: bool,
    },
    /// `DIAGNOSTICS` (NCCL 2.31+).
    Diagnostics,
}

/// An open session, past the hello.
pub struct Session {
    sock: TcpStream,
    pending: Vec<u8>,
    target: String,
    server_protocol: u32,
}

impl Session {
    /// Connects to `target` (HOST[:PORT]) and says hello; the first address of the host that
    /// answers as a RAS port wins.
    pub fn connect(target: &str, connect_timeout: Duration) -> Result<Self, ClientError> {
        let (host, port) = parse_target(target)?;
        let addrs: Vec<_> = (host.as_str(), port)
            .to_socket_addrs()
            .map_err(|source| ClientError::Resolve {
                host: host.clone(),
                source,
            })?
            .collect();
        let mut last = None;
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, connect_timeout.max(Duration::from_secs(1))) {
                Ok(sock) => {
                    sock.set_write_timeout(Some(Duration::from_secs(5)))
                        .map_err(io("setting the socket's timeout"))?;
                    sock.set_read_timeout(Some(Duration::from_secs(5)))
                        .map_err(io("setting the socket's timeout"))?;
                    let mut s = Session {
                        sock,
                        pending: Vec::new(),
                        target: target.to_string(),
                        server_protocol: protocol::PROTOCOL_VERSION,
                    };
                    s.send(&Request::Hello)?;
                    match s.reply()? {
                        Reply::ServerProtocol(v) => s.server_protocol = v,
                        answer => return Err(ClientError::NotRas { addr, answer }),
                    }
                    return Ok(s);
                }
                Err(e) => last = Some(format!("{addr}: {e}")),
            }
        }
        Err(ClientError::Unreachable {
            host,
            port,
            last: last.unwrap_or_else(|| "no address".into()),
        })
    }

    /// The protocol version the job announced (ncclras warns on another than
    /// [`protocol::PROTOCOL_VERSION`] and goes on).
    pub fn server_protocol(&self) -> u32 {
        self.server_protocol
    }

    fn send(&mut self, r: &Request) -> Result<(), ClientError> {
        self.sock
            .write_all(r.encode().as_bytes())
            .map_err(io("sending to the RAS port"))
    }

    /// One reply line, bounded by the protocol's line size.
    fn reply(&mut self) -> Result<Reply, ClientError> {
        loop {
            if let Some(p) = self.pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=p).collect();
                return Ok(decode_reply(&line));
            }
            if self.pending.len() > protocol::MAX_REPLY_LINE {
                return Err(ClientError::LineTooLong);
            }
            let mut b = [0u8; 4096];
            let n = self
                .sock
                .read(&mut b)
                .map_err(io("waiting for the RAS port's answer"))?;
            if n == 0 {
                return Err(ClientError::ClosedInHandshake);
            }
            self.pending.extend_from_slice(&b[..n]);
        }
    }

    fn expect_ok(&mut self, what: &str) -> Result<(), ClientError> {
        match self.reply()? {
            Reply::Ok => Ok(()),
            Reply::Error(message) => Err(ClientError::Refused {
                what: what.into(),
                message,
            }),
            answer => Err(ClientError::Unexpected {
                what: what.into(),
                answer,
            }),
        }
    }

    /// `TIMEOUT N`: seconds the job's RAS waits for its peers.
    pub fn set_timeout(&mut self, seconds: u32) -> Result<(), ClientError> {
        self.send(&Request::Timeout(seconds))?;
        self.expect_ok("TIMEOUT")
    }

    /// `SET FORMAT json` (NCCL 2.28.7+).
    pub fn ask_json(&mut self) -> Result<(), ClientError> {
        self.send(&Request::Format(ReportFormat::Json))?;
        self.expect_ok("SET FORMAT json")
    }

    /// Asks for one report and reads it to the end (the job streams it, then closes); RAS may
    /// wait for its peers first, `ras_timeout` as given to [`Session::set_timeout`].
    pub fn report(mut self, ask: Ask, ras_timeout: Option<u32>) -> Result<Vec<u8>, ClientError> {
        let req = match ask {
            Ask::Status { verbose } => Request::Status { verbose },
            Ask::Diagnostics => Request::Diagnostics,
        };
        self.send(&req)?;
        let wait = protocol::report_wait_s(ras_timeout);
        let deadline = Instant::now() + Duration::from_secs(wait);
        let mut data = std::mem::take(&mut self.pending);
        let mut b = [0u8; 65536];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ClientError::ReportTimeout(wait));
            }
            self.sock
                .set_read_timeout(Some(left))
                .map_err(io("setting the socket's timeout"))?;
            let n = match self.sock.read(&mut b) {
                Ok(n) => n,
                Err(e) if timed_out(&e) => return Err(ClientError::ReportTimeout(wait)),
                Err(source) => {
                    return Err(ClientError::Io {
                        what: "reading the RAS report",
                        source,
                    })
                }
            };
            if n == 0 {
                break;
            }
            if data.len() + n > protocol::MAX_REPORT {
                return Err(ClientError::ReportTooLarge);
            }
            data.extend_from_slice(&b[..n]);
        }
        if let Reply::Busy(m) | Reply::Error(m) = decode_reply(&data) {
            return Err(ClientError::Answered(m));
        }
        Ok(data)
    }

    /// Asks for every monitor event and hands each line (without its newline) to `on_line`
    /// until the job closes or `duration` has passed.
    pub fn monitor(
        mut self,
        duration: Option<Duration>,
        mut on_line: impl FnMut(&[u8]),
    ) -> Result<(), ClientError> {
        self.send(&Request::Monitor(EventGroups::All))?;
        match self.reply()? {
            Reply::Ok => {}
            // NCCL added MONITOR to its RAS client protocol in 2.29 (src/ras/client_support.cc);
            // an older job answers it as an unknown command.
            Reply::Error(message) if message.to_ascii_lowercase().contains("unknown command") => {
                return Err(ClientError::NoMonitor {
                    message,
                    target: self.target,
                })
            }
            Reply::Error(message) => {
                return Err(ClientError::Refused {
                    what: "MONITOR".into(),
                    message,
                })
            }
            answer => {
                return Err(ClientError::Unexpected {
                    what: "MONITOR".into(),
                    answer,
                })
            }
        }
        let end = duration.map(|d| Instant::now() + d);
        let mut pending = std::mem::take(&mut self.pending);
        let mut b = [0u8; 8192];
        loop {
            while let Some(p) = pending.iter().position(|x| *x == b'\n') {
                let line: Vec<u8> = pending.drain(..=p).collect();
                on_line(&line[..line.len() - 1]);
            }
            if pending.len() > protocol::MAX_REPLY_LINE * 4 {
                pending.clear();
            }
            if end.is_some_and(|t| Instant::now() >= t) {
                return Ok(());
            }
            // Wake up once a second to honour the duration; a monitor stream may be silent for
            // hours.
            self.sock
                .set_read_timeout(Some(Duration::from_secs(1)))
                .map_err(io("setting the socket's timeout"))?;
            match self.sock.read(&mut b) {
                Ok(0) => return Ok(()),
                Ok(n) => pending.extend_from_slice(&b[..n]),
                Err(e) if timed_out(&e) => {}
                Err(source) => {
                    return Err(ClientError::Io {
                        what: "reading RAS monitor events",
                        source,
                    })
                }
            }
        }
    }
}

fn timed_out(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}
