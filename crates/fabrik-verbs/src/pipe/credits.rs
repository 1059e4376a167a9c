//! Credit accounting (pure): how many chunks each direction may have in flight.

/// The sender's view: it may have at most `window` chunks sent and not yet consumed by the peer,
/// whose running count of consumed chunks arrives in the credit word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxCredits {
    /// Chunks that may be outstanding.
    pub window: u64,
    /// Chunks sent so far.
    pub sent: u64,
}

impl TxCredits {
    /// Chunks that may be sent now, given the peer's consumed count; an error when the peer
    /// claims to have consumed more than was sent (memory corruption or a confused peer).
    pub fn available(&self, consumed: u64) -> Result<u64, String> {
        if consumed > self.sent {
            return Err(format!(
                "the peer says it consumed {consumed} chunks, only {} were sent",
                self.sent
            ));
        }
        Ok(self.window.saturating_sub(self.sent - consumed))
    }
}

/// The receiver's view: consumed slots are reported back in batches of `batch`; a batch never
/// exceeds the window, so a sender waiting for credits always gets them once the receiver has
/// read everything it was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RxCredits {
    /// Slots consumed so far.
    pub consumed: u64,
    /// The consumed count last reported to the sender.
    pub reported: u64,
    /// Slots consumed between reports.
    pub batch: u64,
}

impl RxCredits {
    /// Nothing consumed yet; reports every quarter of `window` (at least every slot).
    pub fn new(window: u64) -> Self {
        RxCredits {
            consumed: 0,
            reported: 0,
            batch: (window / 4).clamp(1, window.max(1)),
        }
    }
    /// Counts one consumed slot; true when a credit update should go out now.
    pub fn consume(&mut self) -> bool {
        self.consumed += 1;
        self.consumed - self.reported >= self.batch
    }
    /// Notes that the current consumed count went out.
    pub fn mark_reported(&mut self) {
        self.reported = self.consumed;
    }
}

/// How `len` bytes split into chunks of at most `chunk` (the last one shorter).
pub fn chunk_lengths(len: usize, chunk: usize) -> impl Iterator<Item = usize> {
    let chunk = chunk.max(1);
    (0..len.div_ceil(chunk)).map(move |i| (len - i * chunk).min(chunk))
}
