//! Load against an exporter: busy clients that ask for `/metrics` back to back, slow clients
//! that hold connections (headers a byte at a time, or answers read a KiB at a time), and one
//! well-behaved scraper that asks every interval as Prometheus does (one keep-alive
//! connection, a timeout per scrape, a fresh connection when the server closed the old one).
//! Shared by `tests/exporter_load.rs` and `examples/bench_load.rs`.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The load to put beside the scraper.
#[derive(Debug, Clone)]
pub struct Load {
    pub busy: usize,
    pub slow: usize,
    /// All busy clients from one address (one host hammering), or each from its own.
    pub busy_from_one_address: bool,
    pub duration: Duration,
    pub scrape_every: Duration,
    pub scrape_timeout: Duration,
}

/// What the scraper saw, and what the busy clients got.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub scrapes: usize,
    pub succeeded: usize,
    /// Each scrape's time, in seconds, successful or not (a failure counts as the timeout).
    pub latencies: Vec<f64>,
    pub busy_answers: u64,
    pub busy_refused: u64,
}

impl Outcome {
    pub fn percentile(&self, p: f64) -> f64 {
        let mut v = self.latencies.clone();
        v.sort_by(|a, b| a.total_cmp(b));
        if v.is_empty() {
            return 0.0;
        }
        let i = ((p / 100.0) * (v.len() - 1) as f64).round() as usize;
        v[i.min(v.len() - 1)]
    }
}

/// A connection from `from` (a loopback address: 127.0.0.0/8 is all the host's).
fn connect_from(from: IpAddr, to: SocketAddr, timeout: Duration) -> std::io::Result<TcpStream> {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    s.bind(&SocketAddr::new(from, 0).into())?;
    s.connect_timeout(&to.into(), timeout)?;
    let s: TcpStream = s.into();
    s.set_nodelay(true)?;
    Ok(s)
}

/// Reads one HTTP/1.1 answer (head, then Content-Length bytes); returns the status.
fn read_answer(s: &mut TcpStream, deadline: Instant) -> std::io::Result<(u16, bool)> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        s.set_read_timeout(Some(left(deadline)?))?;
        if s.read(&mut byte)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        head.push(byte[0]);
    }
    let text = String::from_utf8_lossy(&head).to_ascii_lowercase();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let len: usize = text
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let close = text.contains("connection: close");
    let mut body = vec![0u8; 64 * 1024];
    let mut got = 0;
    while got < len {
        s.set_read_timeout(Some(left(deadline)?))?;
        let n = s.read(&mut body[..(len - got).min(64 * 1024)])?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        got += n;
    }
    Ok((status, close))
}

fn left(deadline: Instant) -> std::io::Result<Duration> {
    let d = deadline.saturating_duration_since(Instant::now());
    if d.is_zero() {
        Err(std::io::ErrorKind::TimedOut.into())
    } else {
        Ok(d)
    }
}

const REQUEST: &[u8] = b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: application/openmetrics-text;version=1.0.0\r\n\r\n";

fn busy(
    to: SocketAddr,
    from: IpAddr,
    stop: Arc<AtomicBool>,
    answers: Arc<AtomicU64>,
    refused: Arc<AtomicU64>,
) {
    while !stop.load(Ordering::Relaxed) {
        let Ok(mut s) = connect_from(from, to, Duration::from_secs(5)) else {
            refused.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        loop {
            if stop.load(Ordering::Relaxed) || s.write_all(REQUEST).is_err() {
                break;
            }
            match read_answer(&mut s, Instant::now() + Duration::from_secs(30)) {
                Ok((200, close)) => {
                    answers.fetch_add(1, Ordering::Relaxed);
                    if close {
                        break;
                    }
                }
                _ => {
                    refused.fetch_add(1, Ordering::Relaxed);
                    break;
                }
            }
        }
    }
}

/// Half the slow clients send their headers a byte every 500 ms; the other half ask for an
/// answer and read it a KiB a second, asking again now and then.
fn slow(to: SocketAddr, from: IpAddr, kind: usize, stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::Relaxed) {
        let Ok(mut s) = connect_from(from, to, Duration::from_secs(5)) else {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        };
        let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
        if kind % 2 == 0 {
            let mut ok = s.write_all(b"GET /metrics HTTP/1.1\r\n").is_ok();
            while ok && !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(500));
                ok = s.write_all(b"X").is_ok();
            }
        } else {
            let mut buf = [0u8; 1024];
            let mut ok = s.write_all(REQUEST).is_ok();
            let mut n = 0;
            while ok && !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_secs(1));
                ok = !matches!(s.read(&mut buf), Ok(0));
                n += 1;
                if n % 5 == 0 {
                    ok = ok && s.write_all(REQUEST).is_ok();
                }
            }
        }
    }
}

/// One scrape on the scraper's connection, reconnecting once when the server had closed it.
fn scrape(conn: &mut Option<TcpStream>, to: SocketAddr, from: IpAddr, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    for _attempt in 0..2 {
        if conn.is_none() {
            match connect_from(from, to, timeout) {
                Ok(s) => *conn = Some(s),
                Err(_) => return false,
            }
        }
        let Some(s) = conn.as_mut() else {
            return false;
        };
        let reused_ok = s.write_all(REQUEST).is_ok();
        let answer = if reused_ok {
            read_answer(s, deadline)
        } else {
            Err(std::io::ErrorKind::BrokenPipe.into())
        };
        match answer {
            Ok((200, close)) => {
                if close {
                    *conn = None;
                }
                return true;
            }
            Ok(_) => {
                *conn = None;
                return false;
            }
            Err(e)
                if e.kind() == std::io::ErrorKind::TimedOut
                    || e.kind() == std::io::ErrorKind::WouldBlock =>
            {
                *conn = None;
                return false;
            }
            // Closed under us (an idle keep-alive the server let go): once more, afresh.
            Err(_) => *conn = None,
        }
    }
    false
}

/// Runs `load` against `to` and returns what the scraper saw.
pub fn run(to: SocketAddr, load: &Load) -> Outcome {
    let stop = Arc::new(AtomicBool::new(false));
    let answers = Arc::new(AtomicU64::new(0));
    let refused = Arc::new(AtomicU64::new(0));
    let mut threads = Vec::new();
    for i in 0..load.busy {
        let from = if load.busy_from_one_address {
            IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2))
        } else {
            IpAddr::V4(Ipv4Addr::new(
                127,
                0,
                1 + (i / 250) as u8,
                1 + (i % 250) as u8,
            ))
        };
        let (stop, answers, refused) = (stop.clone(), answers.clone(), refused.clone());
        threads.push(
            std::thread::Builder::new()
                .stack_size(64 * 1024)
                .spawn(move || busy(to, from, stop, answers, refused))
                .unwrap(),
        );
    }
    for i in 0..load.slow {
        let from = IpAddr::V4(Ipv4Addr::new(127, 0, 3, 1 + (i % 250) as u8));
        let stop = stop.clone();
        threads.push(
            std::thread::Builder::new()
                .stack_size(64 * 1024)
                .spawn(move || slow(to, from, i, stop))
                .unwrap(),
        );
    }
    // Let the load build up before the scraper starts.
    std::thread::sleep(Duration::from_secs(1));
    let from = IpAddr::V4(Ipv4Addr::new(127, 0, 4, 1));
    let mut conn = None;
    let mut out = Outcome {
        scrapes: 0,
        succeeded: 0,
        latencies: Vec::new(),
        busy_answers: 0,
        busy_refused: 0,
    };
    let end = Instant::now() + load.duration;
    let mut next = Instant::now();
    while Instant::now() < end {
        let t0 = Instant::now();
        let ok = scrape(&mut conn, to, from, load.scrape_timeout);
        out.scrapes += 1;
        out.succeeded += usize::from(ok);
        out.latencies.push(t0.elapsed().as_secs_f64());
        next += load.scrape_every;
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    out.busy_answers = answers.load(Ordering::Relaxed);
    out.busy_refused = refused.load(Ordering::Relaxed);
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        let _ = t.join();
    }
    out
}
