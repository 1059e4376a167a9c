//! The data path: one blocking socket per stream, one thread per direction, large writes.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, Socket, Type};

use crate::paths::StreamPath;
use crate::pattern;
use crate::proto::{Mismatch, RoundSpec, StreamRecv};

/// Bytes handed to one `write` call: small messages are batched into one write (TCP is a byte
/// stream, so the receiver sees the same bytes) to keep the syscall count from capping the
/// message rate; large ones go whole.
const WRITE_BATCH: usize = 256 * 1024;
/// Receive buffer per stream.
const READ_BUF: usize = 1 << 20;

/// Socket settings shared by both ends.
#[derive(Debug, Clone, Copy)]
pub struct SockOpts {
    /// SO_SNDBUF/SO_RCVBUF. `None` leaves Linux's autotuning on, which grows the buffers to
    /// `tcp_wmem`/`tcp_rmem` max; setting them explicitly turns autotuning off and is capped by
    /// `net.core.{w,r}mem_max`, so it only helps where those limits were raised.
    pub buf: Option<usize>,
    pub nodelay: bool,
    /// Read and write timeout on every data socket: a silent peer becomes an error.
    pub timeout: Duration,
}

pub fn tune(sock: &TcpStream, opts: &SockOpts) -> io::Result<()> {
    let s = socket2::SockRef::from(sock);
    if let Some(b) = opts.buf {
        s.set_send_buffer_size(b)?;
        s.set_recv_buffer_size(b)?;
    }
    s.set_tcp_nodelay(opts.nodelay)?;
    let t = opts.timeout.max(Duration::from_millis(1));
    sock.set_read_timeout(Some(t))?;
    sock.set_write_timeout(Some(t))
}

/// Opens a data connection along `path`.
pub fn connect(path: &StreamPath, port: u16, opts: &SockOpts) -> io::Result<TcpStream> {
    let remote = SocketAddr::new(path.remote, port);
    let sock = Socket::new(
        Domain::for_address(remote),
        Type::STREAM,
        Some(Protocol::TCP),
    )?;
    if let Some(dev) = &path.bind_device {
        sock.bind_device(Some(dev.as_bytes()))?;
    }
    if let Some(local) = path.local {
        sock.bind(&SocketAddr::new(local, 0).into())?;
    }
    if let Some(b) = opts.buf {
        // Before connect, so the window scale is negotiated for the size asked.
        sock.set_send_buffer_size(b)?;
        sock.set_recv_buffer_size(b)?;
    }
    sock.connect_timeout(&remote.into(), opts.timeout)?;
    let stream: TcpStream = sock.into();
    tune(&stream, opts)?;
    Ok(stream)
}

/// Test-only fault injection: flips one byte of one message before it is sent, so tests can
/// prove that `--verify` finds it. Never set by the command line.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault {
    pub stream: u32,
    pub message: u64,
    pub offset: usize,
}

/// How much one sender sends.
#[derive(Debug, Clone)]
pub struct SendPlan {
    pub stream: u32,
    pub size: usize,
    pub iters: Option<u64>,
    pub deadline: Option<Instant>,
    pub verify: bool,
    pub fault: Option<Fault>,
}

impl SendPlan {
    /// What `stream` sends in the round `spec`, until `deadline` in duration mode.
    pub fn for_round(stream: u32, spec: &RoundSpec, deadline: Option<Instant>) -> Self {
        SendPlan {
            stream,
            size: spec.size as usize,
            iters: spec.iters,
            deadline,
            verify: spec.verify,
            fault: None,
        }
    }
}

/// Sends the messages, then half-closes so the receiver sees the end. Returns messages sent.
pub fn send(sock: &mut TcpStream, plan: &SendPlan) -> io::Result<u64> {
    let size = plan.size.max(1);
    let per_batch = (WRITE_BATCH / size).max(1);
    let mut buf = vec![0u8; per_batch * size];
    if !plan.verify {
        for (i, msg) in buf.chunks_exact_mut(size).enumerate() {
            pattern::fill(msg, plan.stream, i as u64);
        }
    }
    let mut seq = 0u64;
    loop {
        let mut n = per_batch as u64;
        if let Some(limit) = plan.iters {
            n = n.min(limit - seq);
        }
        if n == 0 || plan.deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        let len = n as usize * size;
        if plan.verify {
            for (i, msg) in buf[..len].chunks_exact_mut(size).enumerate() {
                pattern::fill(msg, plan.stream, seq + i as u64);
            }
        }
        if let Some(f) = plan.fault.filter(|f| f.stream == plan.stream) {
            if (seq..seq + n).contains(&f.message) && f.offset < size {
                buf[(f.message - seq) as usize * size + f.offset] ^= 0xff;
            }
        }
        sock.write_all(&buf[..len])?;
        seq += n;
    }
    sock.shutdown(Shutdown::Write)?;
    Ok(seq)
}

/// How one receiver reads.
#[derive(Debug)]
pub struct RecvPlan<'a> {
    pub stream: u32,
    pub size: usize,
    /// Bytes the sender promised (count mode); `None` in duration mode.
    pub expect_bytes: Option<u64>,
    pub verify: bool,
    pub start: Instant,
    /// Shared by the streams of a round, for the interval samples.
    pub total: &'a AtomicU64,
}

impl<'a> RecvPlan<'a> {
    /// What `stream` expects in the round `spec` that started at `start`, counting into `total`.
    pub fn for_round(stream: u32, spec: &RoundSpec, start: Instant, total: &'a AtomicU64) -> Self {
        RecvPlan {
            stream,
            size: spec.size as usize,
            expect_bytes: spec.iters.map(|i| i * spec.size),
            verify: spec.verify,
            start,
            total,
        }
    }
}

/// Reads until the sender half-closes.
pub fn recv(sock: &mut TcpStream, plan: &RecvPlan<'_>) -> io::Result<StreamRecv> {
    let size = plan.size.max(1);
    let mut buf = vec![0u8; READ_BUF];
    let mut expect = if plan.verify {
        vec![0u8; size]
    } else {
        Vec::new()
    };
    let mut expect_seq = u64::MAX;
    let mut out = StreamRecv {
        stream: plan.stream,
        ..StreamRecv::default()
    };
    loop {
        let n = match sock.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let now = plan.start.elapsed().as_nanos() as u64;
        if out.bytes == 0 {
            out.first_ns = now;
        }
        out.last_ns = now;
        plan.total.fetch_add(n as u64, Ordering::Relaxed);
        if plan.verify && out.corrupt.is_none() {
            out.corrupt = check_chunk(
                &buf[..n],
                out.bytes,
                size,
                plan.stream,
                &mut expect,
                &mut expect_seq,
            );
        }
        out.bytes += n as u64;
    }
    out.messages = out.bytes / size as u64;
    if let Some(want) = plan.expect_bytes {
        if out.bytes != want {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("the stream ended after {} of {} bytes", out.bytes, want),
            ));
        }
    }
    Ok(out)
}

/// Checks bytes that start at `pos` in the stream against the pattern, message by message.
fn check_chunk(
    data: &[u8],
    mut pos: u64,
    size: usize,
    stream: u32,
    expect: &mut [u8],
    expect_seq: &mut u64,
) -> Option<Mismatch> {
    let mut rest = data;
    while !rest.is_empty() {
        let seq = pos / size as u64;
        let off = (pos % size as u64) as usize;
        if seq != *expect_seq {
            pattern::fill(expect, stream, seq);
            *expect_seq = seq;
        }
        let take = rest.len().min(size - off);
        if rest[..take] != expect[off..off + take] {
            let j = rest[..take]
                .iter()
                .zip(&expect[off..off + take])
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            return Some(Mismatch {
                message: seq,
                offset: (off + j) as u64,
                global_offset: pos + j as u64,
            });
        }
        rest = &rest[take..];
        pos += take as u64;
    }
    None
}

/// Samples the shared byte counter every `every` until `stop`, for the peak rate.
pub fn sample(
    total: &AtomicU64,
    start: Instant,
    every: Duration,
    stop: &AtomicBool,
) -> Vec<(f64, u64)> {
    let mut out = vec![(0.0, 0)];
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(every);
        out.push((start.elapsed().as_secs_f64(), total.load(Ordering::Relaxed)));
    }
    out
}

/// Reads exactly `buf.len()` bytes; `Ok(false)` on a clean end before the first byte.
fn read_full(sock: &mut TcpStream, buf: &mut [u8]) -> io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        match sock.read(&mut buf[got..]) {
            Ok(0) if got == 0 => return Ok(false),
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "the stream ended inside a message ({got} of {} bytes)",
                        buf.len()
                    ),
                ))
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// The client's half of a latency test: `warmup + iters` round trips of `size` bytes.
/// Returns one-way latencies (half of each round trip) of the measured iterations, in ns.
pub fn ping(
    sock: &mut TcpStream,
    size: usize,
    warmup: u64,
    iters: u64,
    verify: bool,
    fault: Option<Fault>,
) -> io::Result<Result<Vec<u64>, Mismatch>> {
    let size = size.max(1);
    let mut out = vec![0u8; size];
    let mut back = vec![0u8; size];
    pattern::fill(&mut out, 0, 0);
    let mut lat = Vec::with_capacity(iters as usize);
    for i in 0..warmup + iters {
        if verify {
            pattern::fill(&mut out, 0, i);
        }
        if let Some(f) = fault.filter(|f| f.stream == 0 && f.message == i && f.offset < size) {
            out[f.offset] ^= 0xff;
        }
        let t0 = Instant::now();
        sock.write_all(&out)?;
        if !read_full(sock, &mut back)? {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the peer closed the stream",
            ));
        }
        let dt = t0.elapsed().as_nanos() as u64;
        if verify {
            if let Some(off) = pattern::check(&back, 0, i) {
                return Ok(Err(Mismatch {
                    message: i,
                    offset: off as u64,
                    global_offset: i * size as u64 + off as u64,
                }));
            }
        }
        if i >= warmup {
            lat.push(dt / 2);
        }
    }
    sock.shutdown(Shutdown::Write)?;
    Ok(Ok(lat))
}

/// The server's half of a latency test: echoes each message until the client half-closes.
pub fn echo(sock: &mut TcpStream, size: usize, verify: bool) -> io::Result<StreamRecv> {
    let size = size.max(1);
    let mut buf = vec![0u8; size];
    let mut out = StreamRecv::default();
    let mut seq = 0u64;
    while read_full(sock, &mut buf)? {
        if verify && out.corrupt.is_none() {
            if let Some(off) = pattern::check(&buf, 0, seq) {
                out.corrupt = Some(Mismatch {
                    message: seq,
                    offset: off as u64,
                    global_offset: seq * size as u64 + off as u64,
                });
            }
        }
        sock.write_all(&buf)?;
        seq += 1;
        out.bytes += size as u64;
    }
    out.messages = seq;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunked_checks_find_a_flip_across_message_boundaries() {
        let size = 100;
        let mut stream_bytes = vec![0u8; size * 5];
        for (i, m) in stream_bytes.chunks_exact_mut(size).enumerate() {
            pattern::fill(m, 4, i as u64);
        }
        stream_bytes[3 * size + 41] ^= 1;
        let mut expect = vec![0u8; size];
        let mut seq = u64::MAX;
        let mut found = None;
        let mut pos = 0u64;
        for chunk in stream_bytes.chunks(37) {
            if found.is_none() {
                found = check_chunk(chunk, pos, size, 4, &mut expect, &mut seq);
            }
            pos += chunk.len() as u64;
        }
        assert_eq!(
            found,
            Some(Mismatch {
                message: 3,
                offset: 41,
                global_offset: 341
            })
        );
    }
}
