//! Runs an outside program (`ethtool -S`, `ibv_devinfo`, `lspci` ...) with a deadline, for
//! every crate that reads a tool's output.
//!
//! Its stdout and stderr are read while it runs: a program that prints more than a pipe holds
//! (64 KiB on Linux; `ethtool -S` on a large NIC prints more) would otherwise block on its
//! full pipe until the deadline and its output would be lost. Each stream is kept up to a cap
//! and drained past it, so a runaway program costs bounded memory and still exits. The program
//! runs in its own process group, which is killed at the deadline and also once the program
//! exits: a background process it left (shell scripts such as `ofed_info` start some) cannot
//! hold the pipes open and stall the caller.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What a program left, and how it ended.
#[derive(Debug)]
pub struct Output {
    /// How it exited; `None` when it was killed at the deadline.
    pub status: Option<ExitStatus>,
    /// Its standard output, at most the cap.
    pub stdout: Vec<u8>,
    /// Its standard error, at most the cap.
    pub stderr: Vec<u8>,
    /// Whether either stream printed more than the cap (the rest was read and dropped).
    pub truncated: bool,
}

impl Output {
    /// Whether the program was killed at the deadline.
    pub fn timed_out(&self) -> bool {
        self.status.is_none()
    }
}

/// Runs `cmd` (its program, arguments and environment as the caller set them; stdin is
/// `/dev/null`) and waits for it at most `timeout`. Each of stdout and stderr is kept up to
/// `cap` bytes. An error means the program could not be started.
pub fn run(cmd: &mut Command, timeout: Duration, cap: u64) -> std::io::Result<Output> {
    use std::os::unix::process::CommandExt;
    use wait_timeout::ChildExt;
    let deadline = Instant::now() + timeout;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()?;
    let group = i32::try_from(child.id())
        .ok()
        .map(nix::unistd::Pid::from_raw);
    let kill_group = || {
        if let Some(g) = group {
            // ESRCH (nothing left in the group) is the usual, harmless answer.
            let _ = nix::sys::signal::killpg(g, nix::sys::signal::Signal::SIGKILL);
        }
    };
    let stdout = drain(child.stdout.take(), cap);
    let stderr = drain(child.stderr.take(), cap);
    let status = match child.wait_timeout(timeout) {
        Ok(Some(status)) => Some(status),
        Ok(None) => None,
        Err(e) => {
            kill_group();
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
    };
    kill_group();
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    // A process that left the group (setsid) may still hold a pipe: what its stream gave by
    // the deadline is taken, and the reading thread ends when that process does.
    let (stdout, out_cut) = stdout.take_by(deadline);
    let (stderr, err_cut) = stderr.take_by(deadline);
    Ok(Output {
        status,
        stdout,
        stderr,
        truncated: out_cut || err_cut,
    })
}

/// A stream being read on its own thread.
struct Drained(Option<mpsc::Receiver<(Vec<u8>, bool)>>);

impl Drained {
    /// The bytes kept and whether more were dropped, waiting no later than `deadline` (and
    /// briefly past it, for a stream that is just closing).
    fn take_by(self, deadline: Instant) -> (Vec<u8>, bool) {
        let Some(rx) = self.0 else {
            return (Vec::new(), false);
        };
        let wait = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(100));
        rx.recv_timeout(wait).unwrap_or_default()
    }
}

/// Reads `stream` to its end on a thread, keeping `cap` bytes and dropping the rest, so the
/// writer never blocks on a full pipe.
fn drain<R: Read + Send + 'static>(stream: Option<R>, cap: u64) -> Drained {
    let Some(mut stream) = stream else {
        return Drained(None);
    };
    let (tx, rx) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("run-drain".into())
        .spawn(move || {
            let mut kept = Vec::new();
            let _ = (&mut stream).take(cap).read_to_end(&mut kept);
            let dropped = std::io::copy(&mut stream, &mut std::io::sink()).unwrap_or(0);
            let _ = tx.send((kept, dropped > 0));
        });
    match spawned {
        Ok(_) => Drained(Some(rx)),
        Err(_) => Drained(None),
    }
}

/// Where the program `name` is: the directories of `PATH`, then the usual system directories
/// (administration tools such as `ethtool` and `lspci` live in `sbin`, which a user's `PATH`
/// often lacks).
pub fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    for extra in [
        "/usr/sbin",
        "/sbin",
        "/usr/bin",
        "/bin",
        "/usr/local/bin",
        "/usr/local/sbin",
    ] {
        dirs.push(PathBuf::from(extra));
    }
    dirs.into_iter().map(|d| d.join(name)).find(|p| p.is_file())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("/bin/sh");
        c.arg("-c").arg(script);
        c
    }

    #[test]
    fn output_larger_than_a_pipe_is_read_while_the_program_runs() {
        // 3 MiB, some fifty times what a pipe holds: a runner that waits for the exit before
        // reading would sit until the deadline and lose it all.
        let start = Instant::now();
        let out = run(
            &mut sh("head -c 3145728 /dev/zero; echo done >&2"),
            Duration::from_secs(20),
            16 << 20,
        )
        .unwrap();
        let took = start.elapsed();
        assert!(took < Duration::from_secs(5), "took {took:?}");
        assert_eq!(out.status.map(|s| s.code()), Some(Some(0)));
        assert_eq!(out.stdout.len(), 3 << 20);
        assert_eq!(out.stderr, b"done\n");
        assert!(!out.truncated);
    }

    #[test]
    fn past_the_cap_is_read_and_dropped() {
        let start = Instant::now();
        let out = run(
            &mut sh("head -c 3145728 /dev/zero"),
            Duration::from_secs(20),
            1 << 20,
        )
        .unwrap();
        assert!(start.elapsed() < Duration::from_secs(5));
        assert_eq!(out.status.map(|s| s.success()), Some(true));
        assert_eq!(out.stdout.len(), 1 << 20);
        assert!(out.truncated);
    }

    #[test]
    fn the_deadline_kills_the_program_and_what_it_left_behind() {
        let start = Instant::now();
        // A background child keeps the pipe open: the output is still taken when sh exits.
        let out = run(&mut sh("sleep 30 & echo hi"), Duration::from_secs(20), 1024).unwrap();
        assert_eq!(out.stdout, b"hi\n");
        assert_eq!(out.status.map(|s| s.success()), Some(true));
        let out = run(
            &mut sh("echo partial; sleep 30"),
            Duration::from_millis(300),
            1024,
        )
        .unwrap();
        assert!(out.timed_out());
        assert_eq!(out.stdout, b"partial\n");
        assert!(start.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn a_missing_program_is_an_error() {
        let e = run(
            &mut Command::new("/nonexistent/fabrik-no-such-program"),
            Duration::from_secs(1),
            1024,
        )
        .unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
        assert!(find_program("fabrik-no-such-program").is_none());
        assert!(find_program("sh").is_some());
    }
}
