//! A RAS stream read as it comes (`ncclras -m | fabrik parse ras -`, or a job's RAS port):
//! every line goes to the log analyzer for the final report, and each monitor event is handed
//! on at once with the running count of troubled peers, for a live view.

use std::io::BufRead;
use std::path::{Path, PathBuf};

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
