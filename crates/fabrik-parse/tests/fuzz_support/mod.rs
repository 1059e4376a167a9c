//! The mutation campaign's engine, shared by the fuzz tests of fabrik-parse (the text parsers)
//! and fabrik-probe (the capture parsers and the probe on hostile trees), which include this
//! file by path.
//!
//! Deterministic: the inputs depend only on the seed (`FABRIK_FUZZ_SEED`, default below); the
//! time budget (`FABRIK_FUZZ_SECS` per target, default 3 s for CI, 60 or more for a release
//! check) only decides how far along that sequence a run gets. Each input runs on a worker
//! thread; one that does not finish within `FABRIK_FUZZ_HANG_SECS` (default 10 s) is a hang,
//! and every panic is caught and counted: either fails the test, naming the seed and the
//! input's number and saving the input under the temporary directory.
#![allow(dead_code)]

use std::panic::AssertUnwindSafe;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

pub const DEFAULT_SEED: u64 = 0x5eed_fab1_2026_0017;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

pub fn seed() -> u64 {
    env_u64("FABRIK_FUZZ_SEED", DEFAULT_SEED)
}

pub fn budget() -> Duration {
    Duration::from_secs_f64(
        std::env::var("FABRIK_FUZZ_SECS")
            .ok()
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s > 0.0)
            .unwrap_or(3.0),
    )
}

pub fn hang_limit() -> Duration {
    Duration::from_secs(env_u64("FABRIK_FUZZ_HANG_SECS", 10))
}

/// xorshift64*: small, fast, and the same on every machine.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
    pub fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

/// Values that break number parsing and text handling.
const TOKENS: &[&[u8]] = &[
    b"18446744073709551615",
    b"18446744073709551616",
    b"99999999999999999999999999999999999999",
    b"-1",
    b"-9223372036854775808",
    b"1e308",
    b"1e309",
    b"-0",
    b"NaN",
    b"nan",
    b"inf",
    b"-inf",
    b"0x",
    b"\xff\xfe",
    b"\x80",
    b"\xc0\xaf",
    b"\xed\xa0\x80",
    b"\r\n",
    b"\r",
    b"\0",
    b"\x1b[2J",
    b"\t\t\t",
    b"%s%n",
    b"[",
    b"]",
    b":",
    b"/",
    b"|",
    b"#",
];

/// One mutation of `data`, of a kind the campaign names: bit flips, truncation, huge numbers,
/// NaN, invalid UTF-8, CRLF, NUL, very long lines, and splices of the input with itself.
pub fn mutate(rng: &mut Rng, data: &mut Vec<u8>) {
    let len = data.len();
    match rng.below(12) {
        0 => {
            for _ in 0..=rng.below(8) {
                if !data.is_empty() {
                    let i = rng.below(data.len());
                    data[i] ^= 1 << rng.below(8);
                }
            }
        }
        1 => data.truncate(rng.below(len + 1)),
        2 => {
            // A number replaced by a token (a huge number, NaN...).
            let digits: Vec<usize> = (0..len).filter(|&i| data[i].is_ascii_digit()).collect();
            if let Some(&start) = digits.get(rng.below(digits.len())) {
                let mut end = start;
                while end < len && (data[end].is_ascii_digit() || data[end] == b'.') {
                    end += 1;
                }
                let tok = *rng.pick(TOKENS);
                data.splice(start..end, tok.iter().copied());
            }
        }
        3 => {
            let i = rng.below(len + 1);
            let tok = *rng.pick(TOKENS);
            data.splice(i..i, tok.iter().copied());
        }
        4 => {
            // CRLF line ends throughout.
            let mut out = Vec::with_capacity(len + len / 20);
            for &b in data.iter() {
                if b == b'\n' {
                    out.push(b'\r');
                }
                out.push(b);
            }
            *data = out;
        }
        5 => {
            // A very long line (up to 1 MiB without a newline).
            let i = rng.below(len + 1);
            let n = 1 << (10 + rng.below(11));
            let fill = *rng.pick(&[b'A', b'9', b' ', b'\0', 0xff]);
            data.splice(i..i, std::iter::repeat_n(fill, n));
        }
        6 => {
            // A line repeated many times.
            let lines: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
            let l = lines[rng.below(lines.len())].to_vec();
            let i = rng.below(len + 1);
            // At most 1 MiB of repeats (the line may itself be a very long one).
            let times = 1 + rng.below(2000).min((1 << 20) / (l.len() + 1));
            let mut block = Vec::with_capacity((l.len() + 1) * times);
            for _ in 0..times {
                block.extend_from_slice(&l);
                block.push(b'\n');
            }
            data.splice(i..i, block);
        }
        7 => {
            // A line deleted.
            if let Some(start) = (len > 0).then(|| rng.below(len)) {
                let s = data[..start]
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map_or(0, |p| p + 1);
                let e = data[start..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(len, |p| start + p + 1);
                data.drain(s..e);
            }
        }
        8 => {
            // A slice of the input copied elsewhere (lines out of order, a header twice).
            if len > 0 {
                let a = rng.below(len);
                let b = (a + 1 + rng.below(4096)).min(len);
                let piece = data[a..b].to_vec();
                let at = rng.below(len + 1);
                data.splice(at..at, piece);
            }
        }
        9 => {
            for _ in 0..=rng.below(4) {
                if !data.is_empty() {
                    let i = rng.below(data.len());
                    data[i] = (rng.next() & 0xff) as u8;
                }
            }
        }
        10 => {
            // NUL bytes.
            for _ in 0..=rng.below(4) {
                let i = rng.below(data.len() + 1);
                data.insert(i, 0);
            }
        }
        _ => {
            // A chunk of invalid UTF-8.
            let i = rng.below(len + 1);
            let n = 1 + rng.below(64);
            let junk: Vec<u8> = (0..n).map(|_| 0x80 | (rng.next() as u8 & 0x7f)).collect();
            data.splice(i..i, junk);
        }
    }
}

/// Inputs stay under this size: the campaign looks for crashes and hangs, not for the cost of
/// building gigabyte inputs (the parsers' memory on huge inputs is measured in
/// docs/benchmarks/logs.md).
pub const MAX_INPUT: usize = 8 << 20;

/// One to four stacked mutations of a corpus entry.
pub fn mutated(rng: &mut Rng, corpus: &[Vec<u8>]) -> Vec<u8> {
    let mut data = rng.pick(corpus).clone();
    for _ in 0..=rng.below(4) {
        mutate(rng, &mut data);
        data.truncate(MAX_INPUT);
    }
    data
}

/// What one target's campaign did.
#[derive(Debug)]
pub struct Outcome {
    pub target: String,
    pub executions: u64,
    pub panics: Vec<(u64, String)>,
    pub elapsed: Duration,
    pub slowest: Duration,
    pub peak_rss_kib: u64,
}

impl Outcome {
    pub fn line(&self) -> String {
        format!(
            "fuzz {}: {} executions in {:.1} s, {} panics, 0 hangs, slowest input {:.0} ms, peak RSS {} MiB (seed {:#x})",
            self.target,
            self.executions,
            self.elapsed.as_secs_f64(),
            self.panics.len(),
            self.slowest.as_secs_f64() * 1e3,
            self.peak_rss_kib / 1024,
            seed()
        )
    }
}

pub fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Runs `make_input` then `run` on a worker thread until the budget is spent, watching each
/// input against the hang limit. Panics in `run` are caught and counted; a hang fails at once.
pub fn campaign<I, M, R>(target: &str, mut make_input: M, run: R) -> Outcome
where
    I: Send + 'static,
    M: FnMut(&mut Rng) -> (I, Vec<u8>) + Send + 'static,
    R: Fn(&I) + Send + Sync + 'static,
{
    let seed = seed();
    let budget = budget();
    let hang = hang_limit();
    let current: Arc<Mutex<(u64, Vec<u8>)>> = Arc::new(Mutex::new((0, Vec::new())));
    let (tx, rx) = mpsc::channel::<Option<(u64, Option<String>, Duration)>>();
    let cur = current.clone();
    let name = target.to_string();
    std::thread::Builder::new()
        .name(format!("fuzz-{name}"))
        .spawn(move || {
            // Seeds differ per target so that two targets never walk the same sequence.
            let mut rng = Rng::new(
                seed ^ name
                    .bytes()
                    .fold(0u64, |h, b| h.rotate_left(5) ^ u64::from(b)),
            );
            let start = Instant::now();
            let mut n = 0u64;
            while start.elapsed() < budget {
                if let Ok(mut c) = cur.lock() {
                    *c = (n, b"(still being generated)".to_vec());
                }
                let (input, shown) = make_input(&mut rng);
                if let Ok(mut c) = cur.lock() {
                    *c = (n, shown);
                }
                let t = Instant::now();
                let r = std::panic::catch_unwind(AssertUnwindSafe(|| run(&input)));
                let took = t.elapsed();
                let panic = r.err().map(|e| {
                    e.downcast_ref::<String>()
                        .cloned()
                        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_else(|| "panic".into())
                });
                if tx.send(Some((n, panic, took))).is_err() {
                    return;
                }
                n += 1;
            }
            let _ = tx.send(None);
        })
        .expect("spawning the fuzz worker");
    let start = Instant::now();
    let mut out = Outcome {
        target: target.to_string(),
        executions: 0,
        panics: Vec::new(),
        elapsed: Duration::ZERO,
        slowest: Duration::ZERO,
        peak_rss_kib: 0,
    };
    loop {
        match rx.recv_timeout(hang) {
            Ok(Some((n, panic, took))) => {
                out.executions += 1;
                out.slowest = out.slowest.max(took);
                if let Some(p) = panic {
                    let saved = save(target, n, &current);
                    out.panics
                        .push((n, format!("{p} (input saved to {saved})")));
                }
            }
            Ok(None) => break,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                // Only a panic outside `run` (in making an input) ends the worker this way.
                let n = current.lock().map(|c| c.0).unwrap_or(0);
                panic!("fuzz {target}: the worker died making input #{n} (seed {seed:#x})");
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let n = current.lock().map(|c| c.0).unwrap_or(0);
                let saved = save(target, n, &current);
                panic!(
                    "fuzz {target}: input #{n} (seed {seed:#x}) ran over {hang:?}: a hang; input saved to {saved}"
                );
            }
        }
    }
    out.elapsed = start.elapsed();
    out.peak_rss_kib = peak_rss_kib();
    out
}

fn save(target: &str, n: u64, current: &Arc<Mutex<(u64, Vec<u8>)>>) -> String {
    let path = std::env::temp_dir().join(format!("fabrik-fuzz-{target}-{:x}-{n}.bin", seed()));
    let bytes = current.lock().map(|c| c.1.clone()).unwrap_or_default();
    match std::fs::write(&path, bytes) {
        Ok(()) => path.display().to_string(),
        Err(e) => format!("(not saved: {e})"),
    }
}

/// Fails with every panic found, after printing the summary line (kept for the docs).
pub fn check(o: &Outcome) {
    eprintln!("{}", o.line());
    assert!(o.executions > 0, "fuzz {}: nothing ran", o.target);
    assert!(
        o.panics.is_empty(),
        "fuzz {}: {} panics (seed {:#x}), first: {:?}",
        o.target,
        o.panics.len(),
        seed(),
        &o.panics[..o.panics.len().min(5)]
    );
}
