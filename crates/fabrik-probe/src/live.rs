//! Facts only the live kernel or a tool gives, gathered when the root is this machine's own:
//! DCB settings over rtnetlink, and the helper tools' outputs (`ibv_devinfo -v` for the IB MTU,
//! `ofed_info -s`, `nvidia-smi topo -m`) run in parallel under one deadline. What they give is
//! recorded as files of the root (`fabrik/dcb/IF.txt`, `fabrik/cmd/NAME.txt`), so a snapshot
//! carries exactly what `check` and `doctor` judged on the machine, and reads back the same.
//!
//! Decoding is pure (`parse::dcb`); this module holds only the socket and the processes.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use fabrik_parse::formats::dcb::{ieee_get_request, parse_ieee_reply, DcbError, IeeeDcb};

/// Where a root keeps the DCB settings read over netlink.
pub const DCB_DIR: &str = "/fabrik/dcb";

/// Why a netdev's DCB settings were not read.
#[derive(Debug, thiserror::Error)]
pub enum DcbReadError {
    /// The netlink socket failed (created, sent, received, or past its deadline).
    #[error("netlink: {0}")]
    Io(#[from] std::io::Error),
    /// The kernel's answer.
    #[error(transparent)]
    Reply(#[from] DcbError),
}

/// Reads `ifname`'s IEEE DCB settings (`RTM_GETDCB`, `DCB_CMD_IEEE_GET`) from this process's
/// network namespace, waiting at most `timeout`. Reading needs no privilege (the kernel checks
/// `CAP_NET_ADMIN` only on `RTM_SETDCB`).
pub fn read_dcb(ifname: &str, timeout: Duration) -> Result<IeeeDcb, DcbReadError> {
    use rustix::net::{
        netlink, recv, sendto, socket, sockopt, AddressFamily, RecvFlags, SendFlags, SocketType,
    };
    // NETLINK_ROUTE is protocol 0, which rustix spells `None`.
    let fd = socket(AddressFamily::NETLINK, SocketType::RAW, None).map_err(std::io::Error::from)?;
    let timeout = timeout.max(Duration::from_millis(1));
    sockopt::set_socket_timeout(&fd, sockopt::Timeout::Recv, Some(timeout))
        .map_err(std::io::Error::from)?;
    let request = ieee_get_request(ifname, 1);
    sendto(
        &fd,
        &request,
        SendFlags::empty(),
        &netlink::SocketAddrNetlink::new(0, 0),
    )
    .map_err(std::io::Error::from)?;
    // One message answers the request; a reply larger than this buffer is not a DCB reply
    // (an IEEE one with a full APP table is about 2 KiB).
    let mut buf = vec![0u8; 32 * 1024];
    let deadline = Instant::now() + timeout;
    loop {
        let (n, _) = recv(&fd, &mut buf[..], RecvFlags::empty()).map_err(std::io::Error::from)?;
        let reply = &buf[..n.min(buf.len())];
        // Skip anything that is not the answer to our sequence number (none is expected on a
        // fresh socket, but a kernel may send more than asked for).
        let seq = reply
            .get(8..12)
            .map(|s| u32::from_ne_bytes([s[0], s[1], s[2], s[3]]));
        if seq == Some(1) {
            return Ok(parse_ieee_reply(reply)?);
        }
        if Instant::now() >= deadline {
            return Err(std::io::Error::from(std::io::ErrorKind::TimedOut).into());
        }
    }
}

/// One helper tool to run: its capture name (`ibv_devinfo-v`), program and arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tool {
    /// The capture name: the output is kept as `fabrik/cmd/NAME.txt`.
    pub name: String,
    /// The program, looked up in `PATH` and the system directories.
    pub program: &'static str,
    /// Its arguments.
    pub args: Vec<String>,
}

/// How one tool ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolOutcome {
    /// It printed this (its exit status kept: some tools print what matters and exit non-zero).
    Output {
        /// Standard output.
        text: String,
        /// Exit code, when it exited.
        status: Option<i32>,
    },
    /// Not installed.
    Missing,
    /// Killed at the deadline.
    TimedOut(Duration),
    /// Exited with nothing on standard output.
    Empty(Option<i32>),
    /// Could not be started.
    Failed(String),
}

impl ToolOutcome {
    /// How `fabrik snapshot` reports it.
    pub fn describe(&self) -> String {
        match self {
            ToolOutcome::Output {
                status: Some(0), ..
            } => "saved".into(),
            ToolOutcome::Output { status, .. } => {
                format!("saved (exit {})", status.unwrap_or(-1))
            }
            ToolOutcome::Missing => "not installed".into(),
            ToolOutcome::TimedOut(d) => {
                format!("timed out after {}", humantime::format_duration(*d))
            }
            ToolOutcome::Empty(s) => format!("exit {} (nothing saved)", s.unwrap_or(-1)),
            ToolOutcome::Failed(e) => format!("failed to start: {e}"),
        }
    }
}

/// The most of a tool's output kept.
pub const MAX_TOOL_BYTES: u64 = 16 * 1024 * 1024;

/// Runs every tool at once, each killed at `deadline` (a check's budget holds however many
/// there are), with a clean environment in the C locale. Results in the order given.
pub fn run_tools(tools: &[Tool], deadline: Instant) -> Vec<(Tool, ToolOutcome)> {
    let handles: Vec<_> = tools
        .iter()
        .cloned()
        .map(|t| {
            let exe = crate::run::find_program(t.program);
            std::thread::spawn(move || {
                let outcome = match exe {
                    None => ToolOutcome::Missing,
                    Some(exe) => run_one(&exe, &t.args, deadline),
                };
                (t, outcome)
            })
        })
        .collect();
    handles
        .into_iter()
        .zip(tools)
        .map(|(h, t)| {
            h.join()
                .unwrap_or_else(|_| (t.clone(), ToolOutcome::Failed("its thread panicked".into())))
        })
        .collect()
}

fn run_one(exe: &PathBuf, args: &[String], deadline: Instant) -> ToolOutcome {
    let timeout = deadline.saturating_duration_since(Instant::now());
    if timeout.is_zero() {
        return ToolOutcome::TimedOut(Duration::ZERO);
    }
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .env_clear()
        .env(
            "PATH",
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        )
        .env("LC_ALL", "C");
    match crate::run::run(&mut cmd, timeout, MAX_TOOL_BYTES) {
        Ok(out) if out.timed_out() => ToolOutcome::TimedOut(timeout),
        Ok(out) => {
            let status = out.status.and_then(|s| s.code());
            if out.stdout.is_empty() {
                ToolOutcome::Empty(status)
            } else {
                ToolOutcome::Output {
                    text: String::from_utf8_lossy(&out.stdout).into_owned(),
                    status,
                }
            }
        }
        Err(e) => ToolOutcome::Failed(e.to_string()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_takes_the_request_and_answers_a_netdev_without_dcb() {
        // The kernel parses the request before it looks at the driver: a malformed one would
        // be EINVAL. `lo` has no dcbnl_ops (EOPNOTSUPP); a name that is no netdev is ENODEV.
        match read_dcb("lo", Duration::from_secs(2)) {
            Err(DcbReadError::Reply(DcbError::Errno(e))) => {
                assert_eq!(e, fabrik_parse::formats::dcb::EOPNOTSUPP)
            }
            other => panic!("lo: {other:?}"),
        }
        match read_dcb("fabrik-none0", Duration::from_secs(2)) {
            Err(DcbReadError::Reply(DcbError::Errno(e))) => assert_eq!(e, 19, "ENODEV"),
            other => panic!("missing netdev: {other:?}"),
        }
    }

    #[test]
    fn tools_run_in_parallel_under_one_deadline() {
        let sleep = |n: &str| Tool {
            name: n.into(),
            program: "sh",
            args: vec!["-c".into(), "echo start; sleep 5".into()],
        };
        let start = Instant::now();
        let tools = [
            sleep("a"),
            sleep("b"),
            sleep("c"),
            Tool {
                name: "echo".into(),
                program: "sh",
                args: vec!["-c".into(), "echo hi".into()],
            },
            Tool {
                name: "none".into(),
                program: "fabrik-no-such-tool",
                args: vec![],
            },
        ];
        let out = run_tools(&tools, Instant::now() + Duration::from_millis(500));
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "{:?}",
            start.elapsed()
        );
        assert!(matches!(out[0].1, ToolOutcome::TimedOut(_)), "{:?}", out[0]);
        assert_eq!(
            out[3].1,
            ToolOutcome::Output {
                text: "hi\n".into(),
                status: Some(0)
            }
        );
        assert_eq!(out[4].1, ToolOutcome::Missing);
        assert_eq!(out[4].1.describe(), "not installed");
    }
}
