#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn frame() -> SetupFrame {
    SetupFrame {
        qpn: 0x11,
        psn: 0xabcdef,
        lid: 0,
        ethernet: true,
        mtu: 1024,
        gid: crate::gid::parse_gid("0000:0000:0000:0000:0000:ffff:c000:0201").unwrap(),
        recv_chunk: 256 << 10,
        recv_slots: 8,
        credit_addr: 0x7f00_0000_1040,
        credit_rkey: 0x1234,
    }
}

#[test]
fn setup_frame_round_trips() {
    let f = frame();
    let b = f.encode();
    assert_eq!(&b[..4], b"FBKP");
    assert_eq!(SetupFrame::decode(&b).unwrap(), f);
    let ib = SetupFrame {
        ethernet: false,
        lid: 7,
        ..f
    };
    assert_eq!(SetupFrame::decode(&ib.encode()).unwrap(), ib);
}

#[test]
fn setup_frame_rejects_what_it_should() {
    let b = frame().encode();
    assert!(SetupFrame::decode(&b[..63]).unwrap_err().contains("64"));
    let mut bad = b;
    bad[0] = b'X';
    assert!(SetupFrame::decode(&bad).unwrap_err().contains("magic"));
    let mut bad = b;
    bad[4] = 9;
    assert!(SetupFrame::decode(&bad).unwrap_err().contains("version 9"));
    for (f, word) in [
        (
            SetupFrame {
                mtu: 1500,
                ..frame()
            },
            "MTU",
        ),
        (
            SetupFrame {
                recv_chunk: 100,
                ..frame()
            },
            "chunk",
        ),
        (
            SetupFrame {
                recv_slots: 0,
                ..frame()
            },
            "slots",
        ),
        (
            SetupFrame {
                recv_slots: 100_000,
                ..frame()
            },
            "slots",
        ),
        (SetupFrame { qpn: 0, ..frame() }, "QP"),
        (
            SetupFrame {
                qpn: 1 << 24,
                ..frame()
            },
            "QP",
        ),
        (
            SetupFrame {
                credit_addr: 0,
                ..frame()
            },
            "credit",
        ),
    ] {
        let e = SetupFrame::decode(&f.encode()).unwrap_err();
        assert!(e.contains(word), "{e}");
    }
}

#[test]
fn tx_credits_follow_the_window() {
    let mut c = TxCredits { window: 4, sent: 0 };
    assert_eq!(c.available(0).unwrap(), 4);
    c.sent = 4;
    assert_eq!(c.available(0).unwrap(), 0);
    assert_eq!(c.available(3).unwrap(), 3);
    assert_eq!(c.available(4).unwrap(), 4);
    assert!(c.available(5).unwrap_err().contains("consumed 5"));
}

#[test]
fn rx_credits_batch_within_the_window() {
    let mut r = RxCredits::new(8);
    assert_eq!(r.batch, 2);
    assert!(!r.consume());
    assert!(r.consume());
    r.mark_reported();
    assert_eq!(r.reported, 2);
    assert!(!r.consume());
    let mut one = RxCredits::new(1);
    assert_eq!(one.batch, 1);
    assert!(one.consume());
}

/// The credit protocol as the two ends run it, on counters: a sender that only sends with
/// credits and a receiver that reports in batches never overrun the slots and never stall
/// once the receiver has read everything sent.
#[test]
fn credit_protocol_neither_overruns_nor_stalls() {
    for window in [1u64, 2, 3, 8, 13] {
        let mut tx = TxCredits { window, sent: 0 };
        let mut rx = RxCredits::new(window);
        let mut credit_word = 0u64;
        let mut in_slots = 0u64;
        let total = 200u64;
        let mut steps = 0;
        while rx.consumed < total {
            steps += 1;
            assert!(steps < 10_000, "stalled at window {window}");
            // The sender sends as much as credits allow.
            while tx.sent < total && tx.available(credit_word).unwrap() > 0 {
                tx.sent += 1;
                in_slots += 1;
                assert!(in_slots <= window, "overran {window} slots");
            }
            // The receiver reads one chunk when there is one.
            if in_slots > 0 {
                in_slots -= 1;
                if rx.consume() {
                    rx.mark_reported();
                    credit_word = rx.reported;
                }
            } else {
                // Nothing to read: the sender must not be waiting for credits.
                assert!(tx.sent == total || tx.available(credit_word).unwrap() > 0);
            }
        }
    }
}

#[test]
fn waiter_reads_no_clock_before_its_first_check_and_still_times_out() {
    // A zero timeout cannot fire before the first check (the 256th empty poll), nor at it:
    // the clock starts there. Progress restarts it.
    let mut w = Waiter::new(Duration::ZERO);
    for _ in 0..256 {
        w.idle(|| "x".into()).unwrap();
    }
    assert!(w.last.is_some());
    std::thread::sleep(Duration::from_millis(2));
    let e = (0..256)
        .find_map(|_| w.idle(|| "credits from rank 1".into()).err())
        .unwrap()
        .to_string();
    assert!(e.contains("credits from rank 1"), "{e}");
    w.progress();
    assert!(w.last.is_none());
    w.idle(|| "x".into()).unwrap();
}

#[test]
fn chunks_cover_the_buffer() {
    assert_eq!(chunk_lengths(0, 4).count(), 0);
    assert_eq!(chunk_lengths(10, 4).collect::<Vec<_>>(), vec![4, 4, 2]);
    assert_eq!(chunk_lengths(8, 4).collect::<Vec<_>>(), vec![4, 4]);
    assert_eq!(chunk_lengths(3, 4).collect::<Vec<_>>(), vec![3]);
}

#[test]
fn layout_regions_do_not_overlap() {
    let l = Layout::new(4096, 3);
    assert_eq!(l.tx_slot(4), 4096);
    assert_eq!(l.rx_slot(0), 3 * 4096);
    assert!(l.rx_slot(2) + 4096 <= l.credit_off);
    assert_eq!(l.credit_off % 64, 0);
    assert!(l.credit_off + 8 <= l.credit_src_off);
    assert_eq!(l.len, l.credit_src_off + 8 * CREDIT_RING as usize);
}

#[test]
fn config_bounds() {
    PipeConfig::default().validate().unwrap();
    let c = PipeConfig {
        chunk_bytes: 10,
        ..PipeConfig::default()
    };
    assert_eq!(
        c.validate().unwrap_err().to_string(),
        format!("pipe chunk of 10 bytes outside {MIN_CHUNK}..={MAX_CHUNK}")
    );
    let c = PipeConfig {
        slots: 0,
        ..PipeConfig::default()
    };
    assert_eq!(
        c.validate().unwrap_err().to_string(),
        format!("pipe slots 0 outside 1..={MAX_SLOTS}")
    );
}

#[test]
fn no_libibverbs_is_a_clear_error() {
    let e = Verbs::load_from("libibverbs-not-here.so.1").unwrap_err();
    assert!(e.to_string().contains("libibverbs-not-here.so.1"), "{e}");
}

proptest::proptest! {
    #[test]
    fn setup_decoder_never_panics(b in proptest::collection::vec(proptest::num::u8::ANY, 0..80)) {
        let _ = SetupFrame::decode(&b);
    }

    #[test]
    fn chunking_sums_to_len(len in 0usize..100_000, chunk in 1usize..5000) {
        let v: Vec<usize> = chunk_lengths(len, chunk).collect();
        proptest::prop_assert_eq!(v.iter().sum::<usize>(), len);
        proptest::prop_assert!(v.iter().all(|c| *c >= 1 && *c <= chunk));
    }
}
