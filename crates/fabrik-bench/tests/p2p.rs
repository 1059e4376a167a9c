//! The client and server against each other over loopback: striping, verification, token
//! rejection, malformed control messages and strangers on the data port.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use fabrik_bench::proto::{unhex16, ClientMsg, DataHeader, RoundSpec, ServerMsg};
use fabrik_bench::{
    client, Amount, BenchError, ClientConfig, Fault, PathSpec, Server, ServerConfig,
};
use fabrik_model::{P2pRows, P2pTest};
use fabrik_wire::{Channel, Token, WireError};

struct Running {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn server(token: &str) -> Running {
    let s = Server::bind(ServerConfig {
        bind: "127.0.0.1:0".parse().unwrap(),
        token: Token::new(token).unwrap(),
        timeout: Duration::from_secs(5),
        once: false,
        sock_buf: None,
    })
    .unwrap();
    let addr = s.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = Arc::clone(&stop);
    let handle = std::thread::spawn(move || {
        s.serve(&stop2).unwrap();
    });
    Running {
        addr,
        stop,
        handle: Some(handle),
    }
}

fn cfg(srv: &Running, token: &str, test: P2pTest) -> ClientConfig {
    let mut c = ClientConfig::new(srv.addr.to_string(), Token::new(token).unwrap(), test);
    c.timeout = Duration::from_secs(5);
    c
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

#[test]
fn streams_stripe_round_robin_over_loopback_addresses() {
    let srv = server("tok");
    let mut c = cfg(&srv, "tok", P2pTest::Bw);
    c.streams = 4;
    c.paths = PathSpec::LocalAddrs(vec![ip("127.0.0.2"), ip("127.0.0.3")]);
    c.sizes = vec![65536];
    c.amount = Amount::Iters(200);
    c.verify = true;
    let r = client::run(&c).unwrap();
    let P2pRows::Bw(rows) = &r.results else {
        panic!("not bandwidth rows")
    };
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].iterations, 4 * 200);
    assert!(rows[0].bw_avg_gbps > 0.0 && rows[0].bw_peak_gbps >= rows[0].bw_avg_gbps);
    // The server saw each stream arrive from the address it was bound to.
    let seen: Vec<_> = r.per_stream.iter().map(|s| s.local_addr.clone()).collect();
    let want = ["127.0.0.2", "127.0.0.3", "127.0.0.2", "127.0.0.3"];
    assert_eq!(seen, want.map(|s| Some(s.to_string())).to_vec());
    assert!(r.per_stream.iter().all(|s| s.bytes == 200 * 65536));
    assert_eq!(r.interfaces, ["127.0.0.2", "127.0.0.3"]);
    assert_eq!(r.streams, 4);
}

#[test]
fn a_sweep_gives_one_row_per_size_in_both_directions() {
    let srv = server("tok");
    let mut c = cfg(&srv, "tok", P2pTest::Bw);
    c.sizes = vec![3, 4096, 1 << 20];
    c.amount = Amount::Iters(20);
    c.streams = 2;
    c.bidir = true;
    c.verify = true;
    let r = client::run(&c).unwrap();
    let P2pRows::Bw(rows) = &r.results else {
        panic!("not bandwidth rows")
    };
    let sizes: Vec<u64> = rows.iter().map(|r| r.bytes).collect();
    assert_eq!(sizes, [3, 4096, 1 << 20]);
    // Two streams, both directions, 20 messages each.
    assert!(rows.iter().all(|r| r.iterations == 2 * 2 * 20), "{rows:?}");
    assert!(r.per_stream.iter().all(|s| s.bytes == 2 * 20 * (1 << 20)));
}

#[test]
fn a_duration_bounds_the_round() {
    let srv = server("tok");
    let mut c = cfg(&srv, "tok", P2pTest::Bw);
    c.amount = Amount::Duration(Duration::from_millis(300));
    let t = std::time::Instant::now();
    let r = client::run(&c).unwrap();
    assert!(t.elapsed() < Duration::from_secs(3));
    let P2pRows::Bw(rows) = &r.results else {
        panic!("not bandwidth rows")
    };
    assert!(rows[0].iterations > 0);
}

#[test]
fn verify_reports_the_first_corrupted_byte_of_a_bandwidth_stream() {
    let srv = server("tok");
    let mut c = cfg(&srv, "tok", P2pTest::Bw);
    c.streams = 3;
    c.sizes = vec![4096];
    c.amount = Amount::Iters(100);
    c.verify = true;
    c.fault = Some(Fault {
        stream: 1,
        message: 37,
        offset: 1000,
    });
    match client::run(&c) {
        Err(BenchError::Corrupt {
            stream,
            message,
            offset,
            global_offset,
        }) => {
            assert_eq!((stream, message, offset), (1, 37, 1000));
            assert_eq!(global_offset, 37 * 4096 + 1000);
        }
        other => panic!("expected a corruption error, got {other:?}"),
    }
    // Without --verify the same fault goes unnoticed: the check is what finds it.
    c.verify = false;
    assert!(client::run(&c).is_ok());
}

#[test]
fn verify_reports_corruption_in_a_latency_test() {
    let srv = server("tok");
    let mut c = cfg(&srv, "tok", P2pTest::Lat);
    c.sizes = vec![64];
    c.amount = Amount::Iters(50);
    c.warmup = 0;
    c.verify = true;
    c.fault = Some(Fault {
        stream: 0,
        message: 7,
        offset: 9,
    });
    let err = client::run(&c).unwrap_err();
    assert!(
        matches!(
            err,
            BenchError::Corrupt {
                stream: 0,
                message: 7,
                offset: 9,
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn latency_rows_are_ordered_statistics() {
    let srv = server("tok");
    let mut c = cfg(&srv, "tok", P2pTest::Lat);
    c.sizes = vec![2, 1024];
    c.amount = Amount::Iters(500);
    c.verify = true;
    let r = client::run(&c).unwrap();
    let P2pRows::Lat(rows) = &r.results else {
        panic!("not latency rows")
    };
    assert_eq!(rows.len(), 2);
    for row in rows {
        assert_eq!(row.iterations, 500);
        assert!(row.t_min_us > 0.0 && row.t_min_us <= row.t_typical_us);
        assert!(row.t_typical_us <= row.p99_us.unwrap() && row.p99_us <= row.p999_us);
        assert!(row.p999_us.unwrap() <= row.t_max_us);
    }
}

#[test]
fn a_wrong_token_is_refused_and_the_server_keeps_serving() {
    let srv = server("right");
    let err = client::run(&cfg(&srv, "wrong", P2pTest::Bw)).unwrap_err();
    assert!(
        matches!(err, BenchError::Wire(WireError::AuthFailed { .. })),
        "{err:?}"
    );
    assert!(err.to_string().contains("token differs"), "{err}");
    let mut ok = cfg(&srv, "right", P2pTest::Bw);
    ok.amount = Amount::Iters(10);
    assert!(client::run(&ok).is_ok());
}

#[test]
fn garbage_and_oversized_control_frames_are_rejected_and_the_server_keeps_serving() {
    let srv = server("tok");
    // Not fabrik at all.
    let mut raw = TcpStream::connect(srv.addr).unwrap();
    raw.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    // A frame header announcing 4 GiB.
    let mut huge = TcpStream::connect(srv.addr).unwrap();
    huge.write_all(&u32::MAX.to_be_bytes()).unwrap();
    // An authenticated peer that sends a malformed message is answered with an error.
    let mut ch = Channel::connect(
        srv.addr,
        &Token::new("tok").unwrap(),
        Duration::from_secs(5),
    )
    .unwrap();
    assert!(matches!(
        ch.recv::<ServerMsg>().unwrap(),
        ServerMsg::Session { .. }
    ));
    ch.send_bytes(b"{\"type\":\"round\",\"size\":").unwrap();
    match ch.recv::<ServerMsg>() {
        Ok(ServerMsg::Error { message }) => assert!(message.contains("malformed"), "{message}"),
        other => panic!("expected an error message, got {other:?}"),
    }
    // And an authenticated oversized message.
    let mut ch = Channel::connect(
        srv.addr,
        &Token::new("tok").unwrap(),
        Duration::from_secs(5),
    )
    .unwrap();
    let _ = ch.recv::<ServerMsg>().unwrap();
    ch.send_bytes(&vec![b' '; 200_000]).unwrap();
    match ch.recv::<ServerMsg>() {
        Ok(ServerMsg::Error { message }) => assert!(message.contains("limit"), "{message}"),
        other => panic!("expected an error message, got {other:?}"),
    }
    // And a well-formed round far out of bounds is refused before anything is allocated.
    let mut ch = Channel::connect(
        srv.addr,
        &Token::new("tok").unwrap(),
        Duration::from_secs(5),
    )
    .unwrap();
    let _ = ch.recv::<ServerMsg>().unwrap();
    ch.send(&ClientMsg::Round(RoundSpec {
        round: 0,
        test: P2pTest::Bw,
        size: 256 << 20,
        iters: Some(1),
        duration_ms: None,
        streams: 1000,
        bidir: true,
        verify: true,
    }))
    .unwrap();
    match ch.recv::<ServerMsg>() {
        Ok(ServerMsg::Error { message }) => assert!(message.contains("4 GiB"), "{message}"),
        other => panic!("expected an error message, got {other:?}"),
    }
    let mut ok = cfg(&srv, "tok", P2pTest::Bw);
    ok.amount = Amount::Iters(10);
    assert!(client::run(&ok).is_ok());
}

#[test]
fn a_stranger_on_the_data_port_cannot_join_the_round() {
    let srv = server("tok");
    let mut ch = Channel::connect(
        srv.addr,
        &Token::new("tok").unwrap(),
        Duration::from_secs(5),
    )
    .unwrap();
    let (session, port) = match ch.recv::<ServerMsg>().unwrap() {
        ServerMsg::Session {
            session, data_port, ..
        } => (unhex16(&session).unwrap(), data_port),
        other => panic!("{other:?}"),
    };
    let size = 1000u64;
    ch.send(&ClientMsg::Round(RoundSpec {
        round: 0,
        test: P2pTest::Bw,
        size,
        iters: Some(10),
        duration_ms: None,
        streams: 1,
        bidir: false,
        verify: false,
    }))
    .unwrap();
    assert_eq!(ch.recv::<ServerMsg>().unwrap(), ServerMsg::Go);
    // A stranger guesses the port but not the session, and pushes bytes.
    let mut stranger = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let fake = DataHeader {
        session: [0; 16],
        round: 0,
        stream: 0,
    };
    let _ = fake.write_to(&mut stranger);
    let _ = stranger.write_all(&[0xee; 4000]);
    let mut real = TcpStream::connect(("127.0.0.1", port)).unwrap();
    DataHeader {
        session,
        round: 0,
        stream: 0,
    }
    .write_to(&mut real)
    .unwrap();
    let mut msg = vec![0u8; size as usize];
    for seq in 0..10 {
        fabrik_bench::pattern::fill(&mut msg, 0, seq);
        real.write_all(&msg).unwrap();
    }
    real.shutdown(std::net::Shutdown::Write).unwrap();
    match ch.recv::<ServerMsg>().unwrap() {
        ServerMsg::RoundDone(r) => {
            assert_eq!(r.error, None);
            assert_eq!(r.streams.len(), 1);
            assert_eq!(r.streams[0].bytes, 10 * size);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn bad_settings_are_refused_before_connecting() {
    let srv = server("tok");
    let mut c = cfg(&srv, "tok", P2pTest::Lat);
    c.streams = 2;
    assert!(matches!(client::run(&c), Err(BenchError::Config(_))));
    let mut c = cfg(&srv, "tok", P2pTest::Bw);
    c.sizes = vec![0];
    assert!(matches!(client::run(&c), Err(BenchError::Config(_))));
    let mut c = cfg(&srv, "tok", P2pTest::Bw);
    c.paths = PathSpec::Ifaces(vec!["no-such-nic9".into()]);
    assert!(matches!(client::run(&c), Err(BenchError::Config(_))));
}

#[test]
fn run_local_needs_no_server() {
    let mut c = ClientConfig::new("", Token::new("unused").unwrap(), P2pTest::Bw);
    c.amount = Amount::Iters(50);
    c.streams = 2;
    let r = fabrik_bench::run_local(&c).unwrap();
    assert_eq!(r.per_stream.len(), 2);
}

#[test]
fn slow_and_idle_strangers_cannot_hold_the_server() {
    let srv = server("tok");
    // A slow loris: a real greeting's first bytes, one every 200 ms.
    let addr = srv.addr;
    let loris = std::thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        let mut greeting = 45u32.to_be_bytes().to_vec();
        greeting.extend_from_slice(b"FABRIK-WIRE/1");
        greeting.resize(49, 0);
        let t0 = std::time::Instant::now();
        for b in greeting {
            if s.write_all(&[b]).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        t0.elapsed()
    });
    // More idle connections than the server lets wait in a handshake.
    let idle: Vec<TcpStream> = (0..40)
        .map(|_| TcpStream::connect(srv.addr).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(100));
    // A real client still gets its session at once.
    let t0 = std::time::Instant::now();
    let mut ok = cfg(&srv, "tok", P2pTest::Lat);
    ok.amount = Amount::Iters(5);
    assert!(client::run(&ok).is_ok());
    let took = t0.elapsed();
    eprintln!("p2p server: a real client finished in {took:?} beside a slow loris and 40 idle connections");
    assert!(took < Duration::from_secs(2), "{took:?}");
    // The loris is cut off by the handshake's one deadline (the server's 5 s timeout), not
    // kept alive by its trickle (49 bytes at 200 ms would take 9.8 s), or sooner if closed to
    // make room.
    let held = loris.join().unwrap();
    eprintln!("p2p server: the slow loris was cut off after {held:?}");
    assert!(held < Duration::from_secs(7), "{held:?}");
    drop(idle);
}
