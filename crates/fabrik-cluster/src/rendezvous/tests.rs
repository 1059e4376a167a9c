#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use std::thread;

pub(crate) fn cfg(rank: u32, n: u32, port: u16, token: &str, secs: u64) -> JoinConfig {
    JoinConfig {
        rank,
        world_size: n,
        master: format!("127.0.0.1:{port}"),
        token: Token::new(token).unwrap(),
        timeout: Duration::from_secs(secs),
        host: format!("host{rank}"),
        data_ips: vec![],
    }
}

#[test]
fn four_ranks_join_gather_and_broadcast() {
    let port = fabrik_testbed::free_port().unwrap();
    let handles: Vec<_> = (0..4)
        .map(|r| {
            thread::spawn(move || {
                let mut g = join(&cfg(r, 4, port, "tok", 10)).unwrap();
                assert_eq!(g.size(), 4);
                assert_eq!(g.peers()[2].host, "host2");
                let all = g.gather(r * 10).unwrap();
                let v = g.broadcast(all.map(|a| a.iter().sum::<u32>())).unwrap();
                g.barrier().unwrap();
                v
            })
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), 60);
    }
}

#[test]
fn a_rank_that_never_arrives_is_named() {
    let port = fabrik_testbed::free_port().unwrap();
    let r1 = thread::spawn(move || join(&cfg(1, 3, port, "tok", 2)));
    let err = join(&cfg(0, 3, port, "tok", 1)).unwrap_err();
    assert!(err.to_string().contains("rank 2 never joined"), "{err}");
    let err1 = r1.join().unwrap().unwrap_err();
    assert!(err1.to_string().contains("rank 2"), "{err1}");
}

#[test]
fn a_wrong_token_is_rejected_and_reported() {
    let port = fabrik_testbed::free_port().unwrap();
    let bad = thread::spawn(move || join(&cfg(1, 2, port, "wrong", 3)));
    let err = join(&cfg(0, 2, port, "right", 1)).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("rank 1 never joined"), "{text}");
    assert!(text.contains("wrong token"), "{text}");
    let bad_err = bad.join().unwrap().unwrap_err();
    assert!(bad_err.to_string().contains("token differs"), "{bad_err}");
}

/// Starts ranks 1..n (all but those in `skip`) joining `port`; each returns whether it
/// joined.
fn members(n: u32, port: u16, secs: u64, skip: &[u32]) -> Vec<thread::JoinHandle<bool>> {
    (1..n)
        .filter(|r| !skip.contains(r))
        .map(|r| thread::spawn(move || join(&cfg(r, n, port, "tok", secs)).is_ok()))
        .collect()
}

/// Connects to the rendezvous port once it listens (rank 0 may not have bound it yet).
fn connect_when_up(port: u16) -> std::net::TcpStream {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        match std::net::TcpStream::connect(("127.0.0.1", port)) {
            Ok(s) => return s,
            Err(e) if Instant::now() > until => panic!("rendezvous never listened: {e}"),
            Err(_) => thread::sleep(Duration::from_millis(5)),
        }
    }
}

/// A well-formed greeting's first `k` bytes (length prefix, then the protocol magic).
fn greeting_prefix(k: usize) -> Vec<u8> {
    let mut g = 45u32.to_be_bytes().to_vec();
    g.extend_from_slice(b"FABRIK-WIRE/1");
    g.resize(49, 0);
    g.truncate(k);
    g
}

#[test]
fn a_slow_loris_neither_holds_rank_0_nor_hides_from_the_error() {
    use std::io::Write;
    let port = fabrik_testbed::free_port().unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    // One byte every 200 ms: a per-read timer would never fire.
    let loris = thread::spawn(move || {
        let mut s = connect_when_up(port);
        let mut sent = 0;
        for b in greeting_prefix(49) {
            if stop2.load(std::sync::atomic::Ordering::Relaxed) || s.write_all(&[b]).is_err() {
                break;
            }
            sent += 1;
            thread::sleep(Duration::from_millis(200));
        }
        sent
    });
    let root = thread::spawn(move || join(&cfg(0, 3, port, "tok", 10)));
    // The slow connection is well into its greeting before the real ranks come.
    thread::sleep(Duration::from_millis(700));
    // Everyone came: the rendezvous ends at once and names the slow connection.
    let t0 = Instant::now();
    let ms = members(3, port, 10, &[]);
    assert!(ms.into_iter().all(|h| h.join().unwrap()));
    let g = root.join().unwrap().unwrap();
    let took = t0.elapsed();
    eprintln!("slow loris: the real ranks joined in {took:?}");
    assert!(took < Duration::from_secs(2), "{took:?}");
    let notes = g.notes().join("; ");
    assert!(notes.contains("1 connection stalled"), "{notes}");
    assert!(notes.contains("bytes received"), "{notes}");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(loris.join().unwrap() < 49);

    // A rank is missing: the job's deadline holds whatever the slow connection does, and the
    // error names the missing rank apart from the stalled connection.
    let port = fabrik_testbed::free_port().unwrap();
    let loris = thread::spawn(move || {
        let mut s = connect_when_up(port);
        let from = s.local_addr().unwrap();
        for b in greeting_prefix(49) {
            if s.write_all(&[b]).is_err() {
                break;
            }
            thread::sleep(Duration::from_millis(200));
        }
        from
    });
    let ms = members(3, port, 4, &[2]);
    let t0 = Instant::now();
    let err = join(&cfg(0, 3, port, "tok", 2)).unwrap_err().to_string();
    let took = t0.elapsed();
    eprintln!("slow loris, rank 2 missing: rejected after {took:?} against a 2 s deadline");
    assert!(took < Duration::from_millis(2500), "{took:?}");
    assert!(err.contains("rank 2 never joined within 2 s"), "{err}");
    let from = loris.join().unwrap();
    assert!(
        err.contains(&format!(
            "stalled in the handshake and was closed: {from} ("
        )),
        "{err}"
    );
    assert!(ms.into_iter().all(|h| !h.join().unwrap()));
}

#[test]
fn two_hundred_idle_connections_do_not_keep_rank_0_waiting() {
    let port = fabrik_testbed::free_port().unwrap();
    let root = thread::spawn(move || {
        let t0 = Instant::now();
        let g = join(&cfg(0, 4, port, "tok", 20));
        (g.map(|g| g.notes().join("; ")), t0.elapsed())
    });
    let idle: Vec<_> = (0..200).map(|_| connect_when_up(port)).collect();
    let t0 = Instant::now();
    let ms = members(4, port, 20, &[]);
    assert!(ms.into_iter().all(|h| h.join().unwrap()));
    let members_took = t0.elapsed();
    let (notes, took) = root.join().unwrap();
    eprintln!("200 idle connections: members joined in {members_took:?}, rank 0 in {took:?}");
    let notes = notes.unwrap();
    // Far inside the 20 s deadline: the idle ones neither block nor outlast the job.
    assert!(members_took < Duration::from_secs(3), "{members_took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert!(notes.contains("200 connections stalled"), "{notes}");
    assert!(notes.contains("and 192 more"), "{notes}");
    drop(idle);
}

#[test]
fn a_partial_frame_does_not_delay_the_job() {
    use std::io::Write;
    let port = fabrik_testbed::free_port().unwrap();
    let part = thread::spawn(move || {
        let mut s = connect_when_up(port);
        s.write_all(&greeting_prefix(6)).unwrap();
        // Hold the connection open past the rendezvous.
        thread::sleep(Duration::from_secs(3));
    });
    let root = thread::spawn(move || join(&cfg(0, 2, port, "tok", 10)));
    // The partial frame is in before the real rank comes.
    thread::sleep(Duration::from_millis(500));
    let t0 = Instant::now();
    let ms = members(2, port, 10, &[]);
    let g = root.join().unwrap().unwrap();
    let took = t0.elapsed();
    eprintln!("partial frame: the rendezvous ended {took:?} after the real rank started");
    assert!(ms.into_iter().all(|h| h.join().unwrap()));
    assert!(took < Duration::from_secs(1), "{took:?}");
    assert!(
        g.notes().join("").contains("(6 bytes received"),
        "{:?}",
        g.notes()
    );
    part.join().unwrap();
}

#[test]
fn after_one_failure_the_quiet_ranks_share_one_short_window() {
    let (port, n) = (fabrik_testbed::free_port().unwrap(), 6);
    let hs: Vec<_> = (1..n)
        .map(|r| {
            thread::spawn(move || {
                let mut g = join(&cfg(r, n, port, "tok", 10)).unwrap();
                if r == 1 {
                    let _ = g.fail(&ClusterError::Invalid("broken".into()));
                } else {
                    // Quiet for longer than the window, then gone.
                    thread::sleep(Duration::from_secs(4));
                }
            })
        })
        .collect();
    let mut g = join(&cfg(0, n, port, "tok", 10)).unwrap();
    let t0 = Instant::now();
    let err = g.gather(0u32).unwrap_err().to_string();
    let took = t0.elapsed();
    // One 2 s window for ranks 2-5 together, not 2 s (or the full 10 s) each.
    assert!(took < Duration::from_millis(3500), "{took:?}");
    assert!(err.contains("rank 1 (host1"), "{err}");
    assert!(err.contains("broken"), "{err}");
    assert!(err.contains("rank 5 (host5"), "{err}");
    assert!(err.contains("sent no report within 2 s"), "{err}");
    for h in hs {
        h.join().unwrap();
    }
}

#[test]
fn duplicate_ranks_are_refused() {
    let port = fabrik_testbed::free_port().unwrap();
    let a = thread::spawn(move || join(&cfg(1, 2, port, "tok", 3)));
    let b = thread::spawn(move || join(&cfg(1, 2, port, "tok", 3)));
    let root = join(&cfg(0, 2, port, "tok", 2));
    let results = [a.join().unwrap().is_ok(), b.join().unwrap().is_ok()];
    // Exactly one of the two claimants gets in; the other is told why.
    assert!(root.is_ok());
    assert_eq!(results.iter().filter(|ok| **ok).count(), 1);
}

#[test]
fn a_member_that_dies_is_named_at_rank_0() {
    let port = fabrik_testbed::free_port().unwrap();
    let m = thread::spawn(move || {
        let g = join(&cfg(1, 2, port, "tok", 5)).unwrap();
        drop(g);
    });
    let mut g = join(&cfg(0, 2, port, "tok", 5)).unwrap();
    m.join().unwrap();
    let err = g.gather(1u32).unwrap_err();
    assert!(err.to_string().contains("rank 1 (host1"), "{err}");
    assert!(err.to_string().contains("died"), "{err}");
}

#[test]
fn data_connections_find_their_peer_and_tag() {
    let port = fabrik_testbed::free_port().unwrap();
    let m = thread::spawn(move || {
        let g = join(&cfg(1, 2, port, "tok", 5)).unwrap();
        use std::io::Write;
        let mut b = g.connect_data(0, 7, 0).unwrap();
        let mut a = g.connect_data(0, 3, 0).unwrap();
        a.write_all(b"three").unwrap();
        b.write_all(b"seven").unwrap();
    });
    let mut g = join(&cfg(0, 2, port, "tok", 5)).unwrap();
    use std::io::Read;
    let mut buf = [0u8; 5];
    g.accept_data(1, 3).unwrap().read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"three");
    g.accept_data(1, 7).unwrap().read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"seven");
    m.join().unwrap();
}
