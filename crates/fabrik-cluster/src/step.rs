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
