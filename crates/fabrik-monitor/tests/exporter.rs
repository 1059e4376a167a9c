//! The exporter end to end on a fixture root: real HTTP on loopback.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use fabrik_model::{Finding, Severity};
use fabrik_monitor::server::{Exporter, ExporterConfig, Limits, Sampling, ServerError};

/// Samples every 50 ms, rates over 100 ms: the tests see a change within a fraction of a second.
fn fast() -> Sampling {
    Sampling {
        every: Duration::from_millis(50),
        window: Duration::from_millis(100),
    }
}

/// Asks `path` until `ok` holds for the body (the exporter serves its latest sample).
fn get_until(addr: &str, accept: Option<&str>, ok: impl Fn(&str) -> bool) -> (String, String) {
    let t0 = Instant::now();
    loop {
        let (head, body) = get(addr, "/metrics", accept);
        if ok(&body) || t0.elapsed() > Duration::from_secs(10) {
            return (head, body);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn get(addr: &str, path: &str, accept: Option<&str>) -> (String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let accept = accept.map_or(String::new(), |a| format!("Accept: {a}\r\n"));
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\n{accept}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    (head.to_string(), body.to_string())
}

#[test]
fn serves_metrics_healthz_and_plugged_findings() {
    let dir = tempfile::tempdir().unwrap();
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/counters/mlx5-roce/after");
    // Copy the fixture so the test can break a counter between scrapes.
    let status = std::process::Command::new("cp")
        .arg("-r")
        .arg(&fixture)
        .arg(dir.path().join("root"))
        .status()
        .unwrap();
    assert!(status.success());
    let root = dir.path().join("root");
    let config = ExporterConfig {
        findings: Some(Box::new(|_root: &Path| {
            vec![Finding {
                rule: "FAB-TEST-001".into(),
                severity: Severity::Error,
                subject: "node".into(),
                message: "m".into(),
                evidence: vec![],
                fix: "f".into(),
            }]
        })),
        ..ExporterConfig::for_root(root.clone())
    };
    let exp = Exporter::bind("127.0.0.1:0", config)
        .unwrap()
        .with_sampling(fast());
    let addr = exp.local_addr();
    let handle = exp.handle();
    let t = std::thread::spawn(move || exp.run());

    let (head, body) = get(&addr, "/healthz", None);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(body, "ok\n");

    let (head, body) = get(&addr, "/metrics", None);
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    assert!(body
        .contains("fabrik_port_transmit_bytes_total{device=\"mlx5_2\",port=\"1\"} 20500000000\n"));
    assert!(body.contains(
        "fabrik_netdev_pause_frames_total{interface=\"ens1f0\",direction=\"rx\",priority=\"3\"} 200100\n"
    ));
    assert!(body
        .contains("fabrik_findings{severity=\"error\",rule=\"FAB-TEST-001\",subject=\"node\"} 1"));
    // port_xmit_wait holds "N/A (no PMA)".
    assert!(body.contains("fabrik_unreadable_counters{subject=\"mlx5_2:1\"} 1"));
    assert!(!body.contains("# EOF"));

    // Break a counter and make one grow: the exporter keeps serving and the counter rule fires.
    let hw = root.join("sys/class/infiniband/mlx5_2/ports/1/hw_counters");
    std::fs::write(hw.join("np_cnp_sent"), "garbage\n").unwrap();
    std::fs::write(hw.join("out_of_sequence"), "100000\n").unwrap();
    // The next sample shows both, and the rule's finding names the port.
    let cnt110 = "fabrik_findings{severity=\"warning\",rule=\"FAB-CNT-110\",subject=\"mlx5_2:1\",device=\"mlx5_2\",port=\"1\"} 1";
    let (head, body) = get_until(
        &addr,
        Some("application/openmetrics-text;version=1.0.0"),
        |b| b.contains(cnt110),
    );
    assert!(head.contains("application/openmetrics-text"), "{head}");
    assert!(body.ends_with("# EOF\n"));
    assert!(body.contains("fabrik_unreadable_counters{subject=\"mlx5_2:1\"} 2"));
    assert!(body.contains(cnt110), "{body}");

    // The device disappears: still 200, the port is simply gone.
    std::fs::remove_dir_all(root.join("sys/class/infiniband/mlx5_2")).unwrap();
    let gone = "fabrik_findings{severity=\"warning\",rule=\"FAB-CNT-122\",subject=\"mlx5_2:1\"} 1";
    let (head, body) = get_until(&addr, None, |b| b.contains(gone));
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(!body.contains("fabrik_port_transmit_bytes_total{device=\"mlx5_2\""));
    assert!(body.contains(gone), "{body}");

    let (head, _) = get(&addr, "/nope", None);
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
    handle.unblock();
    t.join().unwrap().unwrap();
}

#[test]
fn bind_failure_is_an_error() {
    let config = ExporterConfig::for_root("/nonexistent".into());
    match Exporter::bind("256.0.0.1:1", config) {
        Err(ServerError::Bind { addr, .. }) => assert_eq!(addr, "256.0.0.1:1"),
        other => panic!("{:?}", other.map(|e| e.local_addr())),
    }
}

/// Many distinct findings make `/metrics` megabytes long (about 55 bytes each).
fn big_answer_config(root: &Path, findings: usize) -> ExporterConfig {
    ExporterConfig {
        findings: Some(Box::new(move |_root: &Path| {
            (0..findings)
                .map(|i| Finding {
                    rule: format!("FAB-TEST-{i:06}"),
                    severity: Severity::Warning,
                    subject: "node".into(),
                    message: "m".into(),
                    evidence: vec![],
                    fix: "f".into(),
                })
                .collect()
        })),
        ..ExporterConfig::for_root(root.to_path_buf())
    }
}

fn fixture_root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/counters/mlx5-roce/after")
}

/// Reads until the server closes the connection or `limit` passes; returns the bytes read and
/// whether it closed.
fn read_until_closed(s: &mut TcpStream, limit: Duration) -> (usize, bool) {
    let until = Instant::now() + limit;
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0;
    while Instant::now() < until {
        s.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        match s.read(&mut buf) {
            Ok(0) => return (total, true),
            Ok(n) => total += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => return (total, true),
        }
    }
    (total, false)
}

/// Whether the server's end (local `server`, remote `client` port) of a loopback connection
/// is still ESTABLISHED (state 01 in /proc/net/tcp).
fn server_end_established(server: u16, client: u16) -> bool {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let (local, remote) = (format!(":{server:04X}"), format!(":{client:04X}"));
    table.lines().skip(1).any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.len() > 3 && f[1].ends_with(&local) && f[2].ends_with(&remote) && f[3] == "01"
    })
}

#[test]
fn a_client_that_never_reads_blocks_nobody_and_is_cut_off() {
    let root = fixture_root();
    let limits = Limits {
        max_connections: 8,
        idle: Duration::from_secs(1),
        lifetime: Duration::from_secs(60),
        ..Limits::default()
    };
    let exp = Exporter::bind("127.0.0.1:0", big_answer_config(&root, 40_000))
        .unwrap()
        .with_limits(limits);
    let addr = exp.local_addr();
    let handle = exp.handle();
    let t = std::thread::spawn(move || exp.run());

    // A asks for 30 answers of about 2 MB each, pipelined, and reads none of them.
    let (_, body) = get(&addr, "/metrics", None);
    let one = body.len();
    assert!(one > 1_500_000, "{one}");
    let mut a = TcpStream::connect(&addr).unwrap();
    for _ in 0..30 {
        write!(a, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    }
    std::thread::sleep(Duration::from_millis(500));

    // B is answered at once all the same, /healthz and /metrics alike.
    let t0 = Instant::now();
    let (head, body) = get(&addr, "/healthz", None);
    let healthz = t0.elapsed();
    assert!(head.starts_with("HTTP/1.1 200") && body == "ok\n", "{head}");
    let t0 = Instant::now();
    let (head, body) = get(&addr, "/metrics", None);
    let metrics = t0.elapsed();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(body.contains("rule=\"FAB-TEST-039999\""));
    eprintln!("beside a client that never reads: /healthz in {healthz:?}, /metrics ({one} B) in {metrics:?}");
    assert!(healthz < Duration::from_millis(500), "{healthz:?}");
    // The answer is the latest sample's, encoded once: B copies it like A did.
    assert!(metrics < Duration::from_secs(20), "{metrics:?}");

    // Once the kernel's buffers are full nothing moves on A's connection, and the idle limit
    // closes it (its server end leaves ESTABLISHED) although A never read a byte.
    let a_port = a.local_addr().unwrap().port();
    let server_port = a.peer_addr().unwrap().port();
    let t0 = Instant::now();
    while server_end_established(server_port, a_port) {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the server kept the stalled connection open"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!(
        "the client that never read was cut off {:?} after its requests",
        t0.elapsed() + Duration::from_millis(500) + healthz + metrics
    );
    let (got, closed) = read_until_closed(&mut a, Duration::from_secs(20));
    assert!(
        closed,
        "the stalled connection is still open after {got} bytes"
    );
    assert!(got < 30 * one, "{got}");

    // An idle connection (nothing sent) is closed after the idle limit.
    let mut idle = TcpStream::connect(&addr).unwrap();
    let t0 = Instant::now();
    let (_, closed) = read_until_closed(&mut idle, Duration::from_secs(5));
    let took = t0.elapsed();
    assert!(closed);
    eprintln!("an idle connection was closed after {took:?} (idle limit 1 s)");
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(3),
        "{took:?}"
    );
    handle.unblock();
    t.join().unwrap().unwrap();
}

/// A connection from a loopback address of the test's choosing (127.0.0.0/8 is all local).
fn connect_from(last: u8, addr: &str) -> TcpStream {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    s.bind(&std::net::SocketAddr::from(([127, 0, 0, last], 0)).into())
        .unwrap();
    s.connect(&addr.parse::<std::net::SocketAddr>().unwrap().into())
        .unwrap();
    s.into()
}

fn healthz_on(mut s: TcpStream, limit: Duration) -> Option<String> {
    s.set_read_timeout(Some(limit)).unwrap();
    write!(
        s,
        "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

#[test]
fn a_full_server_makes_room_fairly_and_queues_the_rest_in_order() {
    let root = fixture_root();
    let limits = Limits {
        max_connections: 4,
        max_wait: Duration::from_secs(20),
        idle: Duration::from_secs(30),
        lifetime: Duration::from_secs(60),
        ..Limits::default()
    };
    let config = ExporterConfig::for_root(root.clone());
    let exp = Exporter::bind("127.0.0.1:0", config)
        .unwrap()
        .with_limits(limits);
    let addr = exp.local_addr();
    let handle = exp.handle();
    let t = std::thread::spawn(move || exp.run());

    // One address holds every place; another's client is answered at once, and the place is
    // the first address's idlest connection (its first).
    let mut held: Vec<TcpStream> = Vec::new();
    for _ in 0..4 {
        held.push(connect_from(2, &addr));
        std::thread::sleep(Duration::from_millis(50));
    }
    let t0 = Instant::now();
    let answer = healthz_on(connect_from(3, &addr), Duration::from_secs(5)).unwrap();
    let took = t0.elapsed();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(took < Duration::from_millis(500), "{took:?}");
    let (_, closed) = read_until_closed(&mut held[0], Duration::from_secs(2));
    assert!(
        closed,
        "the heavy address's idlest connection is still open"
    );
    let (_, closed) = read_until_closed(&mut held[3], Duration::from_millis(500));
    assert!(!closed, "a newer connection was closed instead");
    drop(held);
    std::thread::sleep(Duration::from_millis(300));

    // Four addresses hold one place each, none idle for a second yet: newcomers from two more
    // addresses wait instead of being closed, and are answered in the order they came once
    // the holders have been idle long enough to give way.
    let holders: Vec<TcpStream> = (10..14).map(|a| connect_from(a, &addr)).collect();
    let first = connect_from(20, &addr);
    std::thread::sleep(Duration::from_millis(100));
    let second = connect_from(21, &addr);
    let t0 = Instant::now();
    let a = std::thread::spawn(move || (healthz_on(first, Duration::from_secs(10)), t0.elapsed()));
    let b = std::thread::spawn(move || (healthz_on(second, Duration::from_secs(10)), t0.elapsed()));
    let (a, ta) = a.join().unwrap();
    let (b, tb) = b.join().unwrap();
    eprintln!("queued newcomers answered after {ta:?} and {tb:?}");
    assert!(a.unwrap().starts_with("HTTP/1.1 200"));
    assert!(b.unwrap().starts_with("HTTP/1.1 200"));
    assert!(
        ta >= Duration::from_millis(500),
        "{ta:?}: nobody was idle for a second yet"
    );
    assert!(
        ta <= tb,
        "{ta:?} {tb:?}: the first to come is the first served"
    );
    drop(holders);

    // A newcomer that waits longer than max_wait is closed unanswered.
    handle.unblock();
    t.join().unwrap().unwrap();
    let limits = Limits {
        max_connections: 2,
        max_wait: Duration::from_millis(300),
        ..Limits::default()
    };
    let config = ExporterConfig::for_root(root.clone());
    let exp = Exporter::bind("127.0.0.1:0", config)
        .unwrap()
        .with_limits(limits);
    let addr = exp.local_addr();
    let handle = exp.handle();
    let t = std::thread::spawn(move || exp.run());
    // Two holders that keep bytes moving (a header a byte at a time), so neither is idle.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let dribblers: Vec<_> = (30..32u8)
        .map(|a| {
            let mut s = connect_from(a, &addr);
            let stop = stop.clone();
            std::thread::spawn(move || {
                let _ = s.write_all(b"GET /healthz HTTP/1.1\r\n");
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    if s.write_all(b"X").is_err() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let mut late = connect_from(40, &addr);
    let _ = write!(late, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    let t0 = Instant::now();
    let (got, closed) = read_until_closed(&mut late, Duration::from_secs(5));
    assert!(closed && got == 0, "{got} bytes, closed: {closed}");
    assert!(
        t0.elapsed() >= Duration::from_millis(200),
        "{:?}",
        t0.elapsed()
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for d in dribblers {
        d.join().unwrap();
    }
    handle.unblock();
    t.join().unwrap().unwrap();
}
