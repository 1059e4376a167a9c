//! The kernel log: read bounded from `/dev/kmsg` on a live root (else `journalctl -k`), kept in
//! a snapshot as it was read, and parsed by the one kernel-log format
//! ([`fabrik_parse::formats::Dmesg`]) into [`KernelLog`].
//!
//! | live root ([`crate::ProbeOptions::read_kernel_log`]) | snapshot |
//! | --- | --- |
//! | `/dev/kmsg`, recorded as `fabrik/kmsg.txt` | that file |
//! | else `journalctl -k`, recorded as the capture `journalctl-k` | that capture, or a `dmesg` one |
//! | else a [`NotRead`], recorded as `fabrik/kmsg-not-read.txt` | a [`NotRead`] with that reason |

use std::collections::VecDeque;
use std::io::Read;
use std::time::Instant;

use fabrik_model::{KernelLog, NotRead};
use fabrik_parse::formats::dmesg::read_log;

use crate::captures::{Captures, CMD_DIR};
use crate::fs::{join, RootFs};
use crate::live::{self, Tool, ToolOutcome};

/// Where a snapshot keeps the records read from `/dev/kmsg`, as the kernel wrote them.
pub const KMSG_RECORD: &str = "/fabrik/kmsg.txt";
/// Where a snapshot keeps why the kernel log could not be read.
pub const NOT_READ_RECORD: &str = "/fabrik/kmsg-not-read.txt";
/// The most of the log kept: the newest records, which are the ones a check asks about. The
/// kernel's ring buffer is at most 32 MiB (CONFIG_LOG_BUF_SHIFT=25) without `log_buf_len=`.
pub const MAX_KMSG_BYTES: usize = 8 * 1024 * 1024;
/// The most records read: a log written faster than it is read must still end.
pub const MAX_KMSG_RECORDS: u64 = 1_000_000;
/// A read buffer larger than any record: the kernel answers EINVAL to a buffer too small for
/// the next record, whose text is at most 8 KiB (CONSOLE_EXT_LOG_MAX) with its dictionary.
const RECORD_BUFFER: usize = 16 * 1024;
/// The capture name of the `journalctl -k` fallback.
pub const JOURNAL_CAPTURE: &str = "journalctl-k";

/// What was read from `/dev/kmsg`.
#[derive(Debug, Default)]
pub struct Kmsg {
    /// The records kept (the newest, at most [`MAX_KMSG_BYTES`]), each ending in a newline.
    pub text: String,
    /// Records read.
    pub records: u64,
    /// Records left out: older ones past the byte cap, and ones the kernel overwrote while
    /// they were read (EPIPE).
    pub dropped: u64,
}

/// Reads every record `/dev/kmsg` holds now, without waiting for new ones: opened
/// non-blocking, one record per `read(2)`, ended at EAGAIN, the record cap or `deadline`.
pub fn read_kmsg(path: &str, deadline: Instant) -> std::io::Result<Kmsg> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let mut file = std::fs::File::from(fd);
    let mut buf = vec![0u8; RECORD_BUFFER];
    let mut kept: VecDeque<String> = VecDeque::new();
    let mut bytes = 0usize;
    let mut out = Kmsg::default();
    while out.records + out.dropped < MAX_KMSG_RECORDS && Instant::now() < deadline {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                out.records += 1;
                let mut rec = String::from_utf8_lossy(&buf[..n]).into_owned();
                if !rec.ends_with('\n') {
                    rec.push('\n');
                }
                bytes += rec.len();
                kept.push_back(rec);
                while bytes > MAX_KMSG_BYTES {
                    match kept.pop_front() {
                        Some(old) => {
                            bytes -= old.len();
                            out.dropped += 1;
                        }
                        None => break,
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            // The record was overwritten before it was read; the next read goes on with the
            // oldest one left.
            Err(e) if e.raw_os_error() == Some(rustix::io::Errno::PIPE.raw_os_error()) => {
                out.dropped += 1;
            }
            Err(e) => return Err(e),
        }
    }
    out.text = kept.into_iter().collect();
    Ok(out)
}

/// Why `/dev/kmsg` could not be opened, in words that say what to do.
fn describe_kmsg_error(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::PermissionDenied => "/dev/kmsg: permission denied (reading the kernel log needs CAP_SYSLOG, or kernel.dmesg_restrict=0)".to_string(),
        std::io::ErrorKind::NotFound => "/dev/kmsg does not exist here (a container without it)".to_string(),
        _ => format!("/dev/kmsg: {e}"),
    }
}

/// The node's kernel log, from the best source the root has (see the module's table). `live`
/// is whether the live machine may be asked.
pub(crate) fn kernel_log(
    fs: &mut RootFs,
    caps: &mut Captures,
    live: bool,
    deadline: Instant,
    not_read: &mut Vec<NotRead>,
) -> Option<KernelLog> {
    if live {
        let why = match read_kmsg("/dev/kmsg", deadline) {
            Ok(k) => {
                let log = read_log(&k.text);
                fs.record_derived(KMSG_RECORD, k.text.into_bytes());
                return Some(log);
            }
            Err(e) => describe_kmsg_error(&e),
        };
        let tool = Tool {
            name: JOURNAL_CAPTURE.into(),
            program: "journalctl",
            // This boot's kernel messages, newest last, with dmesg's monotonic stamps.
            args: [
                "-k",
                "-b",
                "-q",
                "--no-pager",
                "-o",
                "short-monotonic",
                "-n",
                "200000",
            ]
            .into_iter()
            .map(String::from)
            .collect(),
        };
        let outcome = live::run_tools(std::slice::from_ref(&tool), deadline)
            .pop()
            .map(|(_, o)| o)
            .unwrap_or(ToolOutcome::Missing);
        let why = match outcome {
            ToolOutcome::Output { text, .. } => {
                fs.record_derived(
                    &join(CMD_DIR, &format!("{JOURNAL_CAPTURE}.txt")),
                    text.clone().into_bytes(),
                );
                let log = read_log(&text);
                caps.insert(JOURNAL_CAPTURE, text);
                return Some(log);
            }
            other => format!("{why}; `journalctl -k`: {}", other.describe()),
        };
        fs.record_derived(NOT_READ_RECORD, format!("{why}\n").into_bytes());
        not_read.push(unread(why));
        return None;
    }
    if let Some(text) = fs.text_opt(KMSG_RECORD) {
        return Some(read_log(&text));
    }
    for name in [JOURNAL_CAPTURE, "dmesg"] {
        if let Some(text) = caps.get(name) {
            return Some(read_log(text));
        }
    }
    // The reason as the live probe gave it, so that the snapshot reads back the same node.
    if let Some(why) = fs.text_opt(NOT_READ_RECORD) {
        not_read.push(unread(why.trim().to_string()));
    }
    None
}

fn unread(reason: String) -> NotRead {
    NotRead {
        fact: "kernel_log".into(),
        subject: "kernel".into(),
        reason,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn kmsg_reads_what_the_kernel_holds_and_stops_at_eagain() {
        let deadline = Instant::now() + Duration::from_secs(10);
        match read_kmsg("/dev/kmsg", deadline) {
            Ok(k) => {
                // Returning at all proves the read did not block; every record kept is one the
                // kmsg format reads.
                assert!(Instant::now() < deadline);
                for line in k.text.lines().filter(|l| !l.starts_with(' ')) {
                    assert!(
                        fabrik_parse::formats::dmesg::kmsg_record(line).is_some(),
                        "{line:?}"
                    );
                }
                assert!(k.text.len() <= MAX_KMSG_BYTES);
            }
            // Without CAP_SYSLOG under dmesg_restrict, or in a container without the device.
            Err(e) => assert!(
                matches!(
                    e.kind(),
                    std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::NotFound
                ),
                "{e}"
            ),
        }
    }

    #[test]
    fn a_regular_file_is_read_to_its_end() {
        // Not a record device: read() returns the whole file, then 0.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("kmsg");
        std::fs::write(&p, "6,1,5,-;a\n").unwrap();
        let k = read_kmsg(p.to_str().unwrap(), Instant::now() + Duration::from_secs(5)).unwrap();
        assert_eq!(k.text, "6,1,5,-;a\n");
        assert_eq!(k.records, 1);
        let e = read_kmsg("/nonexistent/kmsg", Instant::now()).unwrap_err();
        assert!(describe_kmsg_error(&e).contains("does not exist"));
    }
}
