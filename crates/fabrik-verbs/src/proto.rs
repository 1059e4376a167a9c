//! What the two ends of an RDMA test tell each other over the control channel: the test
//! parameters and each end's queue-pair coordinates (QPN, PSN, LID, GID, rkey, address). Plain
//! serde structs, so they travel over any byte stream (fabrik-wire's authenticated channel here).

use fabrik_model::P2pTest;
use serde::{Deserialize, Serialize};

/// The control protocol's version; both ends must speak the same.
pub const PROTOCOL_VERSION: u32 = 1;

/// Upper bounds a server accepts, so that a client cannot make it allocate without limit.
pub const MAX_MESSAGE_BYTES: u64 = 1 << 30;
/// Most iterations per size a server accepts.
pub const MAX_ITERATIONS: u64 = 100_000_000;
/// Most queue pairs a server accepts.
pub const MAX_QPS: u32 = 256;
/// Deepest send queue a server accepts.
pub const MAX_TX_DEPTH: u32 = 8192;

/// The RDMA operation a test times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// RDMA write.
    Write,
    /// RDMA read.
    Read,
    /// Send/receive.
    Send,
}

impl Op {
    /// The name used in options and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Write => "write",
            Op::Read => "read",
            Op::Send => "send",
        }
    }
}

/// perftest's defaults for what the user leaves out (ib_write_bw, ib_send_lat and their
/// siblings): a latency test sends small messages one at a time, inline, and waits for each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PerftestDefaults {
    /// Message size in bytes (`-s`).
    pub size: u64,
    /// Iterations per size (`-n`).
    pub iterations: u64,
    /// Work requests in flight per QP (`-t`).
    pub tx_depth: u32,
    /// Largest message sent inline (`-I`).
    pub inline_size: u32,
}

impl PerftestDefaults {
    /// The defaults of a bandwidth or a latency test.
    pub fn of(test: P2pTest) -> Self {
        match test {
            P2pTest::Bw => PerftestDefaults {
                size: 65536,
                iterations: 5000,
                tx_depth: 128,
                inline_size: 0,
            },
            P2pTest::Lat => PerftestDefaults {
                size: 2,
                iterations: 1000,
                tx_depth: 1,
                inline_size: 236,
            },
        }
    }
}

/// The test both ends run; the client chooses, the server follows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestParams {
    /// The operation.
    pub op: Op,
    /// Bandwidth or latency.
    pub test: P2pTest,
    /// Message sizes in bytes, run in order.
    pub sizes: Vec<u64>,
    /// Timed iterations per size.
    pub iterations: u64,
    /// Work requests outstanding per QP.
    pub tx_depth: u32,
    /// Signal one send completion every `cq_mod` work requests (perftest's `--cq-mod`).
    pub cq_mod: u32,
    /// Queue pairs, each with its share of the traffic.
    pub qps: u32,
    /// Largest message sent inline (copied into the WQE by the CPU).
    pub inline_size: u32,
    /// Check the received data against the pattern after each size.
    pub verify: bool,
}

impl TestParams {
    /// Refuses what a server should not run; the message says which bound was passed.
    pub fn validate(&self) -> Result<(), String> {
        if self.sizes.is_empty() {
            return Err("no message size".into());
        }
        if let Some(s) = self
            .sizes
            .iter()
            .find(|s| **s == 0 || **s > MAX_MESSAGE_BYTES)
        {
            return Err(format!("message size {s} outside 1..={MAX_MESSAGE_BYTES}"));
        }
        if self.iterations == 0 || self.iterations > MAX_ITERATIONS {
            return Err(format!(
                "iterations {} outside 1..={MAX_ITERATIONS}",
                self.iterations
            ));
        }
        if self.qps == 0 || self.qps > MAX_QPS {
            return Err(format!("qps {} outside 1..={MAX_QPS}", self.qps));
        }
        if self.tx_depth == 0 || self.tx_depth > MAX_TX_DEPTH {
            return Err(format!(
                "tx depth {} outside 1..={MAX_TX_DEPTH}",
                self.tx_depth
            ));
        }
        if self.cq_mod == 0 || self.cq_mod > self.tx_depth {
            return Err(format!(
                "cq-mod {} must be between 1 and the tx depth {}",
                self.cq_mod, self.tx_depth
            ));
        }
        if self.test == P2pTest::Lat && self.qps != 1 {
            return Err("latency tests use one QP".into());
        }
        Ok(())
    }

    /// The largest message size (1 when there is none).
    pub fn max_size(&self) -> u64 {
        self.sizes.iter().copied().max().unwrap_or(1)
    }
}

/// One queue pair's coordinates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct QpEndpoint {
    /// QP number.
    pub qpn: u32,
    /// Initial packet sequence number.
    pub psn: u32,
}

/// One end's coordinates: enough for the other end to move its QPs to RTR and to address this
/// end's buffer with RDMA write/read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Endpoint {
    /// LID (IB; 0 on RoCE).
    pub lid: u16,
    /// As sysfs writes it (`0000:...:ffff:c000:0201`).
    pub gid: String,
    /// The GID index the sender uses.
    pub gid_index: u32,
    /// Whether the link layer is Ethernet (RoCE).
    pub ethernet: bool,
    /// Active MTU in bytes; the two ends use the smaller.
    pub mtu: u32,
    /// Every QP of this end.
    pub qps: Vec<QpEndpoint>,
    /// Start of this end's registered buffer.
    pub addr: u64,
    /// Its remote key.
    pub rkey: u32,
    /// Its length in bytes.
    pub len: u64,
}

/// Messages of the control channel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "msg", rename_all = "snake_case")]
pub enum Ctrl {
    /// Client: the test to run and its coordinates.
    Hello {
        /// [`PROTOCOL_VERSION`] of the client.
        version: u32,
        /// The test.
        params: TestParams,
        /// The client's coordinates.
        endpoint: Endpoint,
    },
    /// Server: it accepts, with its own coordinates.
    Welcome {
        /// The server's coordinates.
        endpoint: Endpoint,
    },
    /// Client: about to run messages of `bytes`; the server prepares (posts receives, fills the
    /// source buffer) and answers `Ready`.
    Start {
        /// Message size in bytes.
        bytes: u64,
    },
    /// Server: ready for the size announced.
    Ready,
    /// Client: the timed part of `bytes` is over.
    Done {
        /// Message size in bytes.
        bytes: u64,
    },
    /// Server: what it checked (`checked` false when there was nothing for it to check).
    Verified {
        /// Message size in bytes.
        bytes: u64,
        /// Whether anything was checked.
        checked: bool,
        /// Bytes that differed from the pattern.
        mismatches: u64,
    },
    /// Client: the test is over.
    Bye,
    /// Either end: it failed, and why (shown by the other end).
    Error {
        /// The error, in words.
        message: String,
    },
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn params() -> TestParams {
        TestParams {
            op: Op::Write,
            test: P2pTest::Bw,
            sizes: vec![65536],
            iterations: 1000,
            tx_depth: 128,
            cq_mod: 100,
            qps: 1,
            inline_size: 0,
            verify: true,
        }
    }

    #[test]
    fn hello_round_trips_through_json() {
        let m = Ctrl::Hello {
            version: PROTOCOL_VERSION,
            params: params(),
            endpoint: Endpoint {
                lid: 0,
                gid: "0000:0000:0000:0000:0000:ffff:c000:0201".into(),
                gid_index: 1,
                ethernet: true,
                mtu: 1024,
                qps: vec![QpEndpoint {
                    qpn: 17,
                    psn: 0x123456,
                }],
                addr: 0x7f00_0000_1000,
                rkey: 0xabcd,
                len: 131072,
            },
        };
        let text = serde_json::to_string(&m).unwrap();
        assert!(text.contains("\"msg\":\"hello\""), "{text}");
        assert!(text.contains("\"op\":\"write\""), "{text}");
        assert!(text.contains("\"test\":\"bw\""), "{text}");
        let back: Ctrl = serde_json::from_str(&text).unwrap();
        assert_eq!(back, m);
        let v: Ctrl =
            serde_json::from_str(r#"{"msg":"verified","bytes":8,"checked":true,"mismatches":0}"#)
                .unwrap();
        assert_eq!(
            v,
            Ctrl::Verified {
                bytes: 8,
                checked: true,
                mismatches: 0
            }
        );
    }

    #[test]
    fn validation_bounds() {
        assert!(params().validate().is_ok());
        let mut p = params();
        p.sizes = vec![MAX_MESSAGE_BYTES + 1];
        assert!(p.validate().unwrap_err().contains("message size"));
        let mut p = params();
        p.cq_mod = 200;
        assert!(p.validate().unwrap_err().contains("cq-mod"));
        let mut p = params();
        p.test = P2pTest::Lat;
        p.qps = 2;
        assert!(p.validate().is_err());
        let mut p = params();
        p.sizes.clear();
        assert!(p.validate().is_err());
    }

    proptest::proptest! {
        #[test]
        fn ctrl_parser_never_panics(s in ".*") {
            let _ = serde_json::from_str::<Ctrl>(&s);
        }
    }
}
