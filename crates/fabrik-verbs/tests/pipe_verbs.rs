//! The RDMA pipe on real verbs, where an RDMA device with an ACTIVE port exists
//! (`FABRIK_TEST_RDMA_DEVICE` picks one). A plain `cargo test` lists these as ignored rather than
//! passing them on a machine without one; run them on RDMA hardware, or inside the Soft-RoCE VM
//! of testbed/softroce, with `cargo test -p fabrik-verbs --test pipe_verbs -- --ignored`, where a
//! missing device fails them. (CI's RDMA runs are the VM suite's, scripts/test.d/softroce.sh.)
//! Both ends live in this process, connected over loopback TCP for the set-up.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use fabrik_verbs::pipe::SETUP_LEN;
use fabrik_verbs::{LocalOptions, PipeConfig, PipeDevice, Verbs, VerbsError, VerbsPipe};

/// The device the tests run on; a test asked to run without one fails saying so.
fn device() -> Arc<PipeDevice> {
    let verbs =
        Arc::new(Verbs::load().unwrap_or_else(|e| panic!("pipe_verbs needs libibverbs: {e}")));
    let name = std::env::var("FABRIK_TEST_RDMA_DEVICE")
        .ok()
        .or_else(|| fabrik_verbs::usable_device(&verbs))
        .unwrap_or_else(|| panic!("pipe_verbs needs an RDMA device with an ACTIVE port here"));
    let opts = LocalOptions {
        device: Some(name),
        ..LocalOptions::default()
    };
    PipeDevice::open(&verbs, &opts).unwrap()
}

fn cfg(timeout: Duration) -> PipeConfig {
    PipeConfig {
        chunk_bytes: 64 << 10,
        slots: 4,
        timeout,
    }
}

/// Two connected ends: (a, b); each names the other in its errors.
fn pair(dev: &Arc<PipeDevice>, timeout: Duration) -> (VerbsPipe, VerbsPipe) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let d = dev.clone();
    let h = thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        VerbsPipe::connect(&d, &mut s, "end b", &cfg(timeout)).unwrap()
    });
    let (mut s, _) = l.accept().unwrap();
    let b = VerbsPipe::connect(dev, &mut s, "end a", &cfg(timeout)).unwrap();
    (h.join().unwrap(), b)
}

fn pattern(len: usize, salt: u32) -> Vec<u8> {
    (0..len as u32)
        .map(|i| (i.wrapping_mul(2654435761).wrapping_add(salt) >> 13) as u8)
        .collect()
}

#[test]
#[ignore = "needs an RDMA device: run with --ignored on RDMA hardware or in the Soft-RoCE VM"]
fn bytes_arrive_in_order_whatever_the_read_sizes() {
    let dev = device();
    let (a, b) = pair(&dev, Duration::from_secs(20));
    // Several send calls of sizes around the chunk, and reads that straddle chunks.
    let data = pattern(3 * (1 << 20) + 12345, 1);
    let d = data.clone();
    let h = thread::spawn(move || {
        for piece in [&d[..1][..], &d[1..70_000], &d[70_000..70_001], &d[70_001..]] {
            a.send_all(piece).unwrap();
        }
        a
    });
    let mut got = vec![0u8; data.len()];
    let mut off = 0;
    for (i, step) in [1usize, 999, 65536, 65537, 7, 300_000]
        .iter()
        .cycle()
        .enumerate()
    {
        if off == got.len() {
            break;
        }
        let n = (*step + i).min(got.len() - off);
        b.recv_exact(&mut got[off..off + n]).unwrap();
        off += n;
    }
    assert!(got == data, "payload differs");
    drop(h.join().unwrap());
}

#[test]
#[ignore = "needs an RDMA device: run with --ignored on RDMA hardware or in the Soft-RoCE VM"]
fn both_directions_at_once_from_two_threads_each() {
    let dev = device();
    let (a, b) = pair(&dev, Duration::from_secs(30));
    let (a, b) = (Arc::new(a), Arc::new(b));
    let len = 8 << 20;
    let to_b = pattern(len, 2);
    let to_a = pattern(len, 3);
    let start = Instant::now();
    thread::scope(|s| {
        s.spawn(|| a.send_all(&to_b).unwrap());
        s.spawn(|| b.send_all(&to_a).unwrap());
        let ga = s.spawn(|| {
            let mut g = vec![0u8; len];
            a.recv_exact(&mut g).unwrap();
            g
        });
        let mut gb = vec![0u8; len];
        b.recv_exact(&mut gb).unwrap();
        assert!(gb == to_b, "a -> b payload differs");
        assert!(ga.join().unwrap() == to_a, "b -> a payload differs");
    });
    let secs = start.elapsed().as_secs_f64();
    eprintln!(
        "pipe_verbs: 2 x {len} B both ways in {secs:.2} s ({:.2} Gb/s each way) on {}",
        len as f64 * 8.0 / secs / 1e9,
        dev.describe()
    );
}

#[test]
#[ignore = "needs an RDMA device: run with --ignored on RDMA hardware or in the Soft-RoCE VM"]
fn a_vanished_peer_is_an_error_naming_it_not_a_hang() {
    let dev = device();
    let (a, b) = pair(&dev, Duration::from_secs(3));
    drop(b);
    let start = Instant::now();
    let mut buf = [0u8; 16];
    let e = a.recv_exact(&mut buf).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("end b"), "{msg}");
    assert!(start.elapsed() < Duration::from_secs(10), "{msg}");
    // Sending into a destroyed QP: a retry-exceeded completion or the credit wait's timeout.
    let start = Instant::now();
    let e = a.send_all(&vec![7u8; 4 << 20]).unwrap_err();
    let msg = e.to_string();
    assert!(
        matches!(
            e,
            VerbsError::Completion { .. } | VerbsError::Timeout { .. }
        ),
        "{msg}"
    );
    assert!(msg.contains("end b"), "{msg}");
    assert!(start.elapsed() < Duration::from_secs(15), "{msg}");
    eprintln!("pipe_verbs: vanished peer: {msg}");
}

#[test]
#[ignore = "needs an RDMA device: run with --ignored on RDMA hardware or in the Soft-RoCE VM"]
fn a_bad_setup_frame_is_refused() {
    let dev = device();
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let h = thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(&[0x55u8; SETUP_LEN]).unwrap();
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut s, &mut sink);
    });
    let (mut s, _) = l.accept().unwrap();
    let e = VerbsPipe::connect(&dev, &mut s, "garbage peer", &cfg(Duration::from_secs(5)))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("garbage peer") && e.contains("bad set-up frame"),
        "{e}"
    );
    drop(s);
    h.join().unwrap();
}
