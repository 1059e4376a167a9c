//! A RAS stream read as it comes (`ncclras -m | fabrik parse ras -`, or a job's RAS port):
//! every line goes to the log analyzer for the final report, and each monitor event is handed
//! on at once with the running count of troubled peers, for a live view.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{LogAnalyzer, LogReport};
use crate::ras::monitor::{MonitorEvent, MonitorParser};

/// The longest line kept; the rest of a longer one is dropped.
const MAX_LINE: usize = 1 << 16;

/// Why a RAS input gave no report.
#[derive(Debug, thiserror::Error)]
pub enum FollowError {
    /// The input could not be opened.
    #[error("opening {}", .0.display())]
    Open(PathBuf, #[source] std::io::Error),
    /// The input could not be read.
    #[error("reading {0}")]
    Read(String, #[source] std::io::Error),
    /// The input holds nothing of RAS.
    #[error("{0}: no NCCL RAS report, DIAG line or RAS monitor event found")]
    NothingFound(String),
}

/// A monitor event as it came, with the peers then dead and unreachable.
#[derive(Debug, Clone)]
pub struct LiveEvent {
    /// The event.
    pub event: MonitorEvent,
    /// Peers dead so far.
    pub dead: usize,
    /// Peers unreachable so far.
    pub unreachable: usize,
}

/// The log analyzer and the monitor-event parser over one stream.
pub struct Follower {
    analyzer: LogAnalyzer,
    live: MonitorParser,
}

impl Follower {
    /// A follower of the input named `name`.
    pub fn new(name: &str) -> Self {
        let mut analyzer = LogAnalyzer::new();
        analyzer.begin_input(name);
        Follower {
            analyzer,
            live: MonitorParser::new(),
        }
    }

    /// Takes one line (without its end); a monitor event in it is returned.
    pub fn line(&mut self, line: &[u8]) -> Option<LiveEvent> {
        self.analyzer.line(line);
        let event = self.live.line(&String::from_utf8_lossy(line))?;
        let (_, unreachable, dead) = self.live.table().counts();
        Some(LiveEvent {
            event,
            dead,
            unreachable,
        })
    }

    /// The report on everything taken.
    pub fn finish(self) -> LogReport {
        self.analyzer.finish()
    }
}

/// Reads the file at `path` (`-`: standard input; gzip detected) line by line as it comes,
/// handing each monitor event to `on_event`; the report, or an error when the input held no
/// RAS report, DIAG line or monitor event.
pub fn follow_path(
    path: &Path,
    on_event: &mut dyn FnMut(&LiveEvent),
) -> Result<LogReport, FollowError> {
    let mut reader =
        crate::input::open_input(path).map_err(|e| FollowError::Open(path.to_path_buf(), e))?;
    let name = path.display().to_string();
    let mut follower = Follower::new(&name);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        // Monitor events come one at a time from a pipe: read line by line, not in blocks.
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| FollowError::Read(name.clone(), e))?;
        if n == 0 {
            break;
        }
        buf.truncate(MAX_LINE);
        let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if let Some(e) = follower.line(line) {
            on_event(&e);
        }
    }
    let report = follower.finish();
    if report.ras.is_none() && report.diag.is_empty() && report.ras_monitor.is_none() {
        return Err(FollowError::NothingFound(name));
    }
    Ok(report)
}

/// What `fabrik ras` asks a running job's RAS port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Question {
    /// A report: the job's status, or its diagnostics.
    Report(crate::ras::client::Ask),
    /// Every monitor event, until the job closes or this long has passed.
    Monitor(Option<Duration>),
}

/// A question to a running job's RAS port, and how to put it.
#[derive(Debug, Clone)]
pub struct JobQuery {
    /// The job's RAS address, HOST[:PORT].
    pub target: String,
    /// What to ask.
    pub question: Question,
    /// Ask for the JSON report (NCCL 2.28.7+) instead of text.
    pub json_report: bool,
    /// Seconds the job's RAS waits for its peers (`ncclras -t`).
    pub ras_timeout: Option<u32>,
    /// How long to wait for the connection.
    pub connect_timeout: Duration,
    /// Hand back what the job sent as it is, without reading a report from it.
    pub raw: bool,
}

/// `fabrik ras`'s flags: what to ask a running job's RAS port, and how ([`JobOptions::query`]).
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct JobOptions {
    /// The job's RAS address: HOST[:PORT] (port 28028 unless NCCL_RAS_ADDR set another).
    pub target: String,
    /// What to ask: the job's status, NCCL 2.31+'s RAS diagnostics, or monitor events.
    #[cfg_attr(feature = "clap", arg(long, value_enum, default_value = "status"))]
    pub ask: AskFor,
    /// Ask the job for its JSON report (NCCL 2.28.7+) instead of text.
    #[cfg_attr(feature = "clap", arg(long))]
    pub json_report: bool,
    /// The verbose status report.
    #[cfg_attr(feature = "clap", arg(long))]
    pub verbose_report: bool,
    /// Seconds the job's RAS waits for its peers (ncclras -t).
    #[cfg_attr(feature = "clap", arg(long))]
    pub ras_timeout: Option<u32>,
    /// Seconds to wait for the connection.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 5))]
    pub connect_timeout: u64,
    /// Monitor: stop after this many seconds (default: until the job closes).
    #[cfg_attr(feature = "clap", arg(long))]
    pub duration: Option<u64>,
    /// Print what the job sent, unparsed.
    #[cfg_attr(feature = "clap", arg(long))]
    pub raw: bool,
}

/// The kinds of question [`JobOptions`] names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum AskFor {
    /// The job's status report.
    Status,
    /// The RAS diagnostics (NCCL 2.31+).
    Diagnostics,
    /// Monitor events as they come.
    Monitor,
}

impl JobOptions {
    /// The question these options put.
    pub fn query(&self) -> JobQuery {
        let question = match self.ask {
            AskFor::Status => Question::Report(crate::ras::client::Ask::Status {
                verbose: self.verbose_report,
            }),
            AskFor::Diagnostics => Question::Report(crate::ras::client::Ask::Diagnostics),
            AskFor::Monitor => Question::Monitor(self.duration.map(Duration::from_secs)),
        };
        JobQuery {
            target: self.target.clone(),
            question,
            json_report: self.json_report,
            ras_timeout: self.ras_timeout,
            connect_timeout: Duration::from_secs(self.connect_timeout),
            raw: self.raw,
        }
    }
}

/// What a job's RAS port answered.
#[derive(Debug)]
pub enum Answer {
    /// The report as the job sent it (a raw report question).
    Raw(String),
    /// The report read from the answer, or from the monitor events.
    Report(Box<LogReport>),
}

/// What comes from a job while it is asked, as it comes.
#[derive(Debug)]
pub enum Heard<'a> {
    /// The job speaks another RAS protocol version than this client; the session goes on.
    Protocol {
        /// The job's version.
        job: u32,
        /// This client's version.
        ours: u32,
    },
    /// A monitor line as the job sent it (raw monitoring).
    Line(&'a [u8]),
    /// A monitor event (monitoring, not raw).
    Event(&'a LiveEvent),
}

/// Why a job's RAS port gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    /// The session failed.
    #[error(transparent)]
    Client(#[from] crate::ras::client::ClientError),
    /// The answer holds no report.
    #[error("the job's answer holds no RAS report ({bytes} bytes); rerun with --raw to see it")]
    NoReport {
        /// The answer's size.
        bytes: usize,
    },
}

/// Asks the job at `query.target` its question, handing what comes as it comes to `on_heard`.
pub fn ask_job(query: &JobQuery, on_heard: &mut dyn FnMut(Heard<'_>)) -> Result<Answer, AskError> {
    use crate::ras::{client::Session, protocol::PROTOCOL_VERSION};
    let mut s = Session::connect(&query.target, query.connect_timeout)?;
    if s.server_protocol() != PROTOCOL_VERSION {
        on_heard(Heard::Protocol {
            job: s.server_protocol(),
            ours: PROTOCOL_VERSION,
        });
    }
    if let Some(t) = query.ras_timeout {
        s.set_timeout(t)?;
    }
    if query.json_report {
        s.ask_json()?;
    }
    let ask = match query.question {
        Question::Report(ask) => ask,
        Question::Monitor(duration) => {
            let mut follower = Follower::new(&query.target);
            s.monitor(duration, |line| {
                let event = follower.line(line);
                if query.raw {
                    on_heard(Heard::Line(line));
                } else if let Some(e) = event {
                    on_heard(Heard::Event(&e));
                }
            })?;
            return Ok(Answer::Report(Box::new(follower.finish())));
        }
    };
    let data = s.report(ask, query.ras_timeout)?;
    let text = String::from_utf8_lossy(&data).into_owned();
    if query.raw {
        return Ok(Answer::Raw(text));
    }
    let report = super::analyze_str(&query.target, &text);
    if report.ras.is_none() && report.diag.is_empty() {
        return Err(AskError::NoReport { bytes: data.len() });
    }
    Ok(Answer::Report(Box::new(report)))
}
