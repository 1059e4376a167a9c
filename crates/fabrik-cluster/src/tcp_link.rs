//! [`Link`] over TCP, and the ring step that drives two non-blocking sockets from one thread.
//!
//! The sockets are non-blocking: one thread writes to the next rank and reads from the previous
//! one, whichever is ready, and sleeps in `poll(2)` only when neither can move (as gloo's pairs
//! do). A step therefore needs no second thread, and a full send buffer never stops the receive
//! side (nor the other way round), which matters most when ranks outnumber cores.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use crate::link::{Link, Polled, RecvSink, StepError};
use crate::ClusterError;

/// What a TCP connection holds without a reader on Linux's smallest default buffers (16 KiB
/// to send, 128 KiB to receive), with room to spare.
const TCP_INLINE_BYTES: usize = 32 << 10;

/// A [`Link`] over one TCP connection (used in both directions for the alltoall mesh). The
/// socket is switched to non-blocking mode; a wait that makes no progress for the stream's
/// read timeout (as set when it was opened) fails as timed out.
#[derive(Debug)]
pub struct TcpLink {
    stream: TcpStream,
    timeout: Option<Duration>,
}

impl TcpLink {
    /// A link over `stream`, made non-blocking; its read timeout becomes every wait's limit.
    pub fn new(stream: TcpStream) -> Result<TcpLink, ClusterError> {
        let timeout = stream.read_timeout().ok().flatten();
        stream
            .set_nonblocking(true)
            .map_err(|err| ClusterError::Io {
                what: "making a data connection non-blocking".into(),
                err,
            })?;
        Ok(TcpLink { stream, timeout })
    }

    /// The connection.
    pub fn stream(&self) -> &TcpStream {
        &self.stream
    }

    /// The limit on every wait, when the stream had one.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }
}

fn io(what: &str, err: std::io::Error) -> ClusterError {
    ClusterError::Io {
        what: what.into(),
        err,
    }
}

impl Link for TcpLink {
    fn send_all(&self, buf: &[u8]) -> Result<(), ClusterError> {
        let mut sent = 0;
        while sent < buf.len() {
            match (&self.stream).write(&buf[sent..]) {
                Ok(0) => return Err(io("sending", ErrorKind::WriteZero.into())),
                Ok(k) => sent += k,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    wait(Some(&self.stream), None, self.timeout).map_err(|e| io("sending", e))?;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(io("sending", e)),
            }
        }
        Ok(())
    }

    fn recv_exact(&self, buf: &mut [u8]) -> Result<(), ClusterError> {
        let mut got = 0;
        while got < buf.len() {
            match (&self.stream).read(&mut buf[got..]) {
                Ok(0) => return Err(io("receiving", ErrorKind::UnexpectedEof.into())),
                Ok(k) => got += k,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    wait(None, Some(&self.stream), self.timeout).map_err(|e| io("receiving", e))?;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(io("receiving", e)),
            }
        }
        Ok(())
    }

    fn send_buffer_bytes(&self) -> usize {
        TCP_INLINE_BYTES
    }

    fn polled(&self) -> Option<Polled<'_>> {
        Some(Polled {
            stream: &self.stream,
            timeout: self.timeout,
        })
    }
}

/// How long a wait polls without sleeping before it blocks in `poll(2)`. A small collective's
/// reply usually comes within a few microseconds over loopback or a LAN; going to sleep costs
/// a scheduler wake-up (tens of microseconds on a busy host) on top.
const SPIN: Duration = Duration::from_micros(20);
/// The spin's standing on this thread ([`Spin`]): a spin that catches its event earns one
/// point, one that gives up loses [`SPIN_MISS`]; the thread spins while it has points.
const SPIN_POINTS_MAX: u32 = 16;
const SPIN_MISS: u32 = 4;
/// A thread out of points still spins on one wait in this many, to notice when spinning would
/// pay again (a rank whose peers got their cores back).
const SPIN_PROBE_EVERY: u32 = 64;

/// Whether waits on this thread spin. Spinning only pays when the peer runs at the same time
/// on another core: with more ranks than cores (or a message the socket takes longer than the
/// spin to drain), the spinning rank holds the core its peer needs and every step waits a
/// scheduler slice instead. Measured with `bench collective all_reduce` over loopback on 2
/// cores: always spinning made 2 ranks 0.65× the time of never spinning at 8 B, but 4 and 8 ranks
/// 1.3–1.56× and 1.05–1.2× up to 16 MiB. So the spin earns its keep: a thread whose spins keep
/// missing stops spinning, as Open MPI yields when oversubscribed, without being told the
/// core count.
struct Spin {
    points: std::cell::Cell<u32>,
    waits: std::cell::Cell<u32>,
}

thread_local! {
    static SPIN_STATE: Spin = const {
        Spin {
            points: std::cell::Cell::new(SPIN_POINTS_MAX),
            waits: std::cell::Cell::new(0),
        }
    };
}

/// Polls `fds` without sleeping for up to [`SPIN`] when this thread's spins have been paying
/// (or as the periodic probe); returns whether an event came.
fn spin(fds: &mut [PollFd<'_>]) -> std::io::Result<bool> {
    let try_it = SPIN_STATE.with(|s| {
        let w = s.waits.get().wrapping_add(1);
        s.waits.set(w);
        s.points.get() > 0 || w % SPIN_PROBE_EVERY == 0
    });
    if !try_it {
        return Ok(false);
    }
    let start = Instant::now();
    loop {
        match poll(fds, PollTimeout::ZERO) {
            Ok(0) => {}
            Ok(_) => {
                SPIN_STATE.with(|s| s.points.set((s.points.get() + 1).min(SPIN_POINTS_MAX)));
                return Ok(true);
            }
            Err(Errno::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
        if start.elapsed() >= SPIN {
            SPIN_STATE.with(|s| s.points.set(s.points.get().saturating_sub(SPIN_MISS)));
            return Ok(false);
        }
        std::hint::spin_loop();
    }
}

/// Waits until `out` can be written or `inp` read (either may be absent): polls without
/// sleeping for up to [`SPIN`] while spinning pays on this thread, then sleeps in `poll(2)`; a
/// timeout is an error of kind `TimedOut`.
pub(crate) fn wait(
    out: Option<&TcpStream>,
    inp: Option<&TcpStream>,
    timeout: Option<Duration>,
) -> std::io::Result<()> {
    let mut fds = Vec::with_capacity(2);
    if let Some(s) = out {
        fds.push(PollFd::new(s.as_fd(), PollFlags::POLLOUT));
    }
    if let Some(s) = inp {
        fds.push(PollFd::new(s.as_fd(), PollFlags::POLLIN));
    }
    if spin(&mut fds)? {
        return Ok(());
    }
    let t = match timeout {
        // Longer than poll can count (24 days) is as good as none.
        Some(d) => PollTimeout::try_from(d).unwrap_or(PollTimeout::MAX),
        None => PollTimeout::NONE,
    };
    loop {
        match poll(&mut fds, t) {
            Ok(0) => return Err(ErrorKind::TimedOut.into()),
            // Readiness includes errors and hang-ups; the next read or write reports them.
            Ok(_) => return Ok(()),
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// One ring step on TCP: writes `out` to `next` while filling `sink`'s pieces from `prev`, from
/// this thread alone.
pub(crate) fn tcp_step(
    next: Polled<'_>,
    out: &[u8],
    prev: Polled<'_>,
    sink: &mut dyn RecvSink,
) -> Result<(), StepError> {
    let (ns, ps) = (next.stream, prev.stream);
    let mut sent = 0;
    // Bytes already in the current piece.
    let mut got = 0;
    loop {
        let mut moved = false;
        if sent < out.len() {
            match (&*ns).write(&out[sent..]) {
                Ok(0) => return Err(StepError::Send(io("sending", ErrorKind::WriteZero.into()))),
                Ok(k) => {
                    sent += k;
                    moved = true;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => moved = true,
                Err(e) => return Err(StepError::Send(io("sending", e))),
            }
        }
        let piece = sink.piece();
        let want = piece.len();
        if want > 0 {
            match (&*ps).read(&mut piece[got..]) {
                Ok(0) => {
                    return Err(StepError::Recv(io(
                        "receiving",
                        ErrorKind::UnexpectedEof.into(),
                    )))
                }
                Ok(k) => {
                    got += k;
                    moved = true;
                    if got == want {
                        got = 0;
                        sink.filled();
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => moved = true,
                Err(e) => return Err(StepError::Recv(io("receiving", e))),
            }
        } else if sent == out.len() {
            return Ok(());
        }
        if !moved {
            let sending = sent < out.len();
            let o = sending.then_some(ns);
            let i = (want > 0).then_some(ps);
            // A stall is blamed on the side we wait to receive from when there is one: a
            // dead or stuck previous rank stops our receive first.
            let timeout = if want > 0 { prev.timeout } else { next.timeout };
            wait(o, i, timeout).map_err(|e| {
                if want > 0 {
                    StepError::Recv(io("receiving", e))
                } else {
                    StepError::Send(io("sending", e))
                }
            })?;
        }
    }
}
