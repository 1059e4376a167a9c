//! One step between two links, whatever carries them: `out` goes to the next rank while the
//! previous rank's message fills a sink. Two sockets are driven from this thread with `poll(2)`
//! (`tcp_link`); any other pair sends from a second thread unless the link buffers the message.

use std::thread;

use crate::link::{Link, RecvSink, StepError};
use crate::tcp_link::tcp_step;
use crate::ClusterError;

/// One step between two links: `out` goes through `next` while `prev` fills `sink`.
pub(crate) fn step(
    next: &dyn Link,
    out: &[u8],
    prev: &dyn Link,
    sink: &mut dyn RecvSink,
) -> Result<(), StepError> {
    if let (Some(n), Some(p)) = (next.polled(), prev.polled()) {
        return tcp_step(n, out, p, sink);
    }
    let recv = |sink: &mut dyn RecvSink| -> Result<(), StepError> {
        loop {
            let piece = sink.piece();
            if piece.is_empty() {
                return Ok(());
            }
            prev.recv_exact(piece).map_err(StepError::Recv)?;
            sink.filled();
        }
    };
    let send = || {
        if out.is_empty() {
            Ok(())
        } else {
            next.send_all(out).map_err(StepError::Send)
        }
    };
    // A message the link buffers is written first: a second thread's start-up would dominate
    // the latency of small messages.
    if out.len() <= next.send_buffer_bytes() {
        send()?;
        return recv(sink);
    }
    thread::scope(|s| {
        let h = s.spawn(send);
        let got = recv(sink);
        let sent = h
            .join()
            .unwrap_or(Err(StepError::Send(ClusterError::ThreadPanicked("a send"))));
        got.and(sent)
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::io::ErrorKind;
    use std::net::{TcpListener, TcpStream};
    use std::time::Duration;

    use super::*;
    use crate::link::Direct;
    use crate::tcp_link::TcpLink;

    /// Both ends of a loopback connection, as links with `timeout`.
    fn pair(timeout: Duration) -> (TcpLink, TcpLink) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        for s in [&a, &b] {
            s.set_read_timeout(Some(timeout)).unwrap();
        }
        (TcpLink::new(a).unwrap(), TcpLink::new(b).unwrap())
    }

    fn pattern(seed: u8, len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(seed).wrapping_add(seed))
            .collect()
    }

    #[test]
    fn two_ranks_swap_messages_far_larger_than_socket_buffers_from_one_thread_each() {
        // Rank 0 and rank 1 each send on one connection and receive on the other, at once:
        // with blocking writes and no second thread this would deadlock.
        let (a01, b01) = pair(Duration::from_secs(20));
        let (a10, b10) = pair(Duration::from_secs(20));
        let len = 24 << 20;
        let h = thread::spawn(move || {
            let out = pattern(3, len);
            let mut inb = vec![0u8; len];
            step(&b10, &out[..], &b01, &mut Direct { buf: &mut inb }).unwrap();
            inb
        });
        let out = pattern(7, len);
        let mut inb = vec![0u8; len];
        step(&a01, &out[..], &a10, &mut Direct { buf: &mut inb }).unwrap();
        assert!(inb == pattern(3, len));
        assert!(h.join().unwrap() == pattern(7, len));
    }

    #[test]
    fn a_silent_peer_times_out_on_the_receive_side_and_a_closed_one_is_eof() {
        let (a, b) = pair(Duration::from_millis(100));
        let mut inb = [0u8; 16];
        match step(&a, &[], &a, &mut Direct { buf: &mut inb }) {
            Err(StepError::Recv(ClusterError::Io { err: source, .. })) => {
                assert_eq!(source.kind(), ErrorKind::TimedOut)
            }
            other => panic!("{other:?}"),
        }
        b.send_all(&[1, 2, 3]).unwrap();
        drop(b);
        match a.recv_exact(&mut inb) {
            Err(ClusterError::Io { err: source, .. }) => {
                assert_eq!(source.kind(), ErrorKind::UnexpectedEof)
            }
            other => panic!("{other:?}"),
        }
    }
}
