//! What the two ends say on the control channel, and the header that opens every data
//! connection.

use std::io::Write;
use std::net::IpAddr;

use fabrik_model::P2pTest;
use serde::{Deserialize, Serialize};

/// Bumped when a message changes incompatibly.
pub const PROTOCOL_VERSION: u32 = 1;

/// A server address and its prefix length, so a client can pick, for each of its NICs, the
/// server address on the same subnet (multi-NIC hosts put each data NIC on its own subnet).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AddrInfo {
    /// The address.
    pub ip: IpAddr,
    /// Its prefix length.
    pub prefix_len: u8,
    /// The interface it belongs to.
    pub iface: String,
}

/// What the server says on the control channel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerMsg {
    /// Sent right after authentication: the session id every data connection must present,
    /// where to open them, and the server's addresses.
    Session {
        /// [`PROTOCOL_VERSION`] of the server.
        version: u32,
        /// The session id in hex, to present on every data connection.
        session: String,
        /// The port of the data listener.
        data_port: u16,
        /// The server's addresses, for the client to pick one per NIC.
        addrs: Vec<AddrInfo>,
    },
    /// The data listener is ready for the round's streams.
    Go,
    /// What the server measured as receiver (and sent, when bidirectional).
    RoundDone(RoundResult),
    /// The server cannot go on; the session ends.
    Error {
        /// What went wrong.
        message: String,
    },
}

/// What the client says on the control channel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClientMsg {
    /// Run one round (one message size).
    Round(RoundSpec),
    /// The run is over; the server may close the session.
    Finish,
}

/// One round: one test at one message size over a number of streams.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundSpec {
    /// The round's number in the run.
    pub round: u32,
    /// Bandwidth or latency.
    pub test: P2pTest,
    /// Message size in bytes.
    pub size: u64,
    /// Messages per stream; `None` when `duration_ms` bounds the round instead.
    pub iters: Option<u64>,
    /// How long the round runs when `iters` is `None`, in milliseconds.
    pub duration_ms: Option<u64>,
    /// Number of parallel TCP streams.
    pub streams: u32,
    /// Both ends send at once.
    pub bidir: bool,
    /// The receiver checks every payload against the pattern.
    pub verify: bool,
}

/// One stream's receiving side.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamRecv {
    /// The stream's number in the round.
    pub stream: u32,
    /// The address the stream arrived from, as the receiving server saw it.
    #[serde(default)]
    pub from: Option<String>,
    /// Bytes received.
    pub bytes: u64,
    /// Whole messages received.
    pub messages: u64,
    /// Nanoseconds from the round's start to the first and the last byte.
    pub first_ns: u64,
    /// Nanoseconds from the round's start to the last byte.
    pub last_ns: u64,
    /// The first payload that differs from the pattern, with `--verify`.
    pub corrupt: Option<Mismatch>,
}

/// Where a received payload first differs from the pattern.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mismatch {
    /// The message's sequence number in the stream.
    pub message: u64,
    /// The byte within the message.
    pub offset: u64,
    /// The same byte counted from the stream's start.
    pub global_offset: u64,
}

/// What the server measured in a round, as receiver.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RoundResult {
    /// Per stream, what arrived.
    pub streams: Vec<StreamRecv>,
    /// `(seconds since start, bytes so far)` samples of the whole round, for the peak.
    pub samples: Vec<(f64, u64)>,
    /// Why the round failed on the server, if it did.
    pub error: Option<String>,
}

/// Limits a server enforces on a round, so that an authenticated but careless (or hostile) client
/// cannot make it allocate more than a few GiB: each stream holds one message (two with
/// `--verify` or `--bidir`).
pub const MAX_STREAMS: u32 = 1024;
/// The largest message size a round may ask for (256 MiB).
pub const MAX_MESSAGE: u64 = 256 << 20;
/// The most message bytes a round may hold in flight (4 GiB).
pub const MAX_ROUND_BYTES: u64 = 4 << 30;

impl RoundSpec {
    /// Why the round is out of bounds, or `None`.
    pub fn out_of_bounds(&self) -> Option<String> {
        if self.streams == 0 || self.streams > MAX_STREAMS {
            return Some(format!("{} streams (1 to {MAX_STREAMS})", self.streams));
        }
        if self.test == P2pTest::Lat && (self.streams != 1 || self.bidir) {
            return Some("a latency round of more than one stream or both directions".into());
        }
        if self.size == 0 || self.size > MAX_MESSAGE {
            return Some(format!("{}-byte messages (1 B to 256 MiB)", self.size));
        }
        if self.size.saturating_mul(u64::from(self.streams)) > MAX_ROUND_BYTES {
            return Some(format!(
                "{} streams of {}-byte messages (at most 4 GiB of messages in flight)",
                self.streams, self.size
            ));
        }
        None
    }
}

/// Bytes of the header that opens each data connection: magic, session id, round, stream.
pub const DATA_HEADER_LEN: usize = 8 + 16 + 4 + 4;
const DATA_MAGIC: &[u8; 8] = b"FABDATA1";

/// The header that opens each data connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataHeader {
    /// The session id the server issued.
    pub session: [u8; 16],
    /// The round the stream belongs to.
    pub round: u32,
    /// The stream's number in the round.
    pub stream: u32,
}

impl DataHeader {
    /// The header's bytes: magic, session, round and stream big-endian.
    pub fn encode(&self) -> [u8; DATA_HEADER_LEN] {
        let mut b = [0u8; DATA_HEADER_LEN];
        b[..8].copy_from_slice(DATA_MAGIC);
        b[8..24].copy_from_slice(&self.session);
        b[24..28].copy_from_slice(&self.round.to_be_bytes());
        b[28..32].copy_from_slice(&self.stream.to_be_bytes());
        b
    }

    /// Reads a header; `None` when the magic is not fabrik's.
    pub fn decode(b: &[u8; DATA_HEADER_LEN]) -> Option<DataHeader> {
        if &b[..8] != DATA_MAGIC {
            return None;
        }
        let mut session = [0u8; 16];
        session.copy_from_slice(&b[8..24]);
        let round = u32::from_be_bytes([b[24], b[25], b[26], b[27]]);
        let stream = u32::from_be_bytes([b[28], b[29], b[30], b[31]]);
        Some(DataHeader {
            session,
            round,
            stream,
        })
    }

    /// Writes the header.
    pub fn write_to(&self, w: &mut impl Write) -> std::io::Result<()> {
        w.write_all(&self.encode())
    }
}

/// Compares session ids without an early exit, so timing does not leak how much of a guess
/// was right.
pub fn same_session(a: &[u8; 16], b: &[u8; 16]) -> bool {
    a.iter()
        .zip(b.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y))
        == 0
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A 16-byte session id from 32 hex digits.
pub fn unhex16(s: &str) -> Option<[u8; 16]> {
    let s = s.as_bytes();
    if s.len() != 32 {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, pair) in s.chunks_exact(2).enumerate() {
        let txt = std::str::from_utf8(pair).ok()?;
        out[i] = u8::from_str_radix(txt, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn data_header_round_trips_and_rejects_strangers() {
        let h = DataHeader {
            session: [7; 16],
            round: 3,
            stream: 9,
        };
        assert_eq!(DataHeader::decode(&h.encode()), Some(h));
        let mut junk = h.encode();
        junk[0] = b'G';
        assert_eq!(DataHeader::decode(&junk), None);
    }

    #[test]
    fn session_ids_hex_round_trip() {
        let id = [0xab; 16];
        assert_eq!(unhex16(&hex(&id)), Some(id));
        assert_eq!(unhex16("zz"), None);
        assert!(same_session(&id, &id));
        assert!(!same_session(&id, &[0xaa; 16]));
    }

    #[test]
    fn rounds_out_of_bounds_are_named() {
        let ok = RoundSpec {
            round: 0,
            test: P2pTest::Bw,
            size: 1 << 20,
            iters: Some(1),
            duration_ms: None,
            streams: 64,
            bidir: false,
            verify: true,
        };
        assert_eq!(ok.out_of_bounds(), None);
        let big = RoundSpec {
            size: 256 << 20,
            streams: 17,
            ..ok.clone()
        };
        assert!(big.out_of_bounds().is_some_and(|m| m.contains("4 GiB")));
        let zero = RoundSpec { streams: 0, ..ok };
        assert!(zero.out_of_bounds().is_some());
    }

    #[test]
    fn control_messages_have_stable_tags() {
        let text = serde_json::to_string(&ClientMsg::Finish).unwrap_or_default();
        assert_eq!(text, r#"{"type":"finish"}"#);
        let go = serde_json::to_string(&ServerMsg::Go).unwrap_or_default();
        assert_eq!(go, r#"{"type":"go"}"#);
    }

    proptest! {
        #[test]
        fn any_bytes_decode_without_panic(bytes in proptest::collection::vec(any::<u8>(), DATA_HEADER_LEN)) {
            let mut b = [0u8; DATA_HEADER_LEN];
            b.copy_from_slice(&bytes);
            let _ = DataHeader::decode(&b);
        }

        #[test]
        fn any_control_text_parses_or_errs(text in ".{0,200}") {
            let _ = serde_json::from_str::<ClientMsg>(&text);
            let _ = serde_json::from_str::<ServerMsg>(&text);
        }
    }
}
