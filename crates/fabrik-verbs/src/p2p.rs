//! `bench p2p --transport rdma` as library calls: the test's parameters with perftest's
//! defaults ([`test_params`]), a server that serves one client after another ([`Server`]), a
//! client run against it ([`run_remote`]), both ends in one process ([`run_local`]), and what
//! `--transport auto` finds ([`rdma_choice`]). The caller parses its flags and prints.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use fabrik_model::{P2pReport, P2pTest};
use fabrik_wire::{Channel, Token, WireError};

use crate::bench::{run_client, serve, usable_device, LocalOptions};
use crate::error::VerbsError;
use crate::loader::Verbs;
use crate::proto::{Op, PerftestDefaults, TestParams};

/// Why a point-to-point RDMA run could not be done; the text says which step, the source why.
#[derive(Debug, thiserror::Error)]
pub enum P2pError {
    /// A socket of the control connection (listening, accepting, binding).
    #[error("{what}")]
    Io {
        /// The step, in words.
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The control channel: connecting, the token, a message.
    #[error("{what}")]
    Wire {
        /// The step, in words.
        what: String,
        /// What the channel said.
        #[source]
        source: WireError,
    },
    /// The RDMA test itself.
    #[error("{what}")]
    Verbs {
        /// The step, in words.
        what: String,
        /// What verbs said.
        #[source]
        source: VerbsError,
    },
    /// The thread serving the other end of a local run panicked.
    #[error("the local RDMA server thread panicked")]
    ServerPanicked,
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> P2pError {
    let what = what.into();
    move |source| P2pError::Io { what, source }
}

fn wire(what: impl Into<String>) -> impl FnOnce(WireError) -> P2pError {
    let what = what.into();
    move |source| P2pError::Wire { what, source }
}

fn verbs_err(what: impl Into<String>) -> impl FnOnce(VerbsError) -> P2pError {
    let what = what.into();
    move |source| P2pError::Verbs { what, source }
}

/// What `--transport auto` picks: `Ok` (RDMA, on the named device) when libibverbs loads and a
/// device has an ACTIVE port 1, else `Err` with why not, which a report carries so that a TCP
/// number is not read as an RDMA one.
pub fn rdma_choice() -> Result<String, String> {
    let verbs = Verbs::load().map_err(|e| format!("libibverbs could not be loaded ({e})"))?;
    usable_device(&Arc::new(verbs)).ok_or_else(|| "no RDMA device has an ACTIVE port 1".to_string())
}

/// What a run asks for beyond the operation and the test; `None` takes perftest's default for
/// the test ([`PerftestDefaults`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requested {
    /// Message sizes.
    pub sizes: Option<Vec<u64>>,
    /// Iterations per size.
    pub iterations: Option<u64>,
    /// Work requests in flight per QP.
    pub tx_depth: Option<u32>,
    /// One signaled completion every this many work requests (capped at the tx depth).
    pub cq_mod: u32,
    /// Queue pairs.
    pub qps: u32,
    /// Largest message sent inline.
    pub inline_size: Option<u32>,
    /// Check every payload byte.
    pub verify: bool,
}

impl Default for Requested {
    fn default() -> Self {
        Requested {
            sizes: None,
            iterations: None,
            tx_depth: None,
            cq_mod: 100,
            qps: 1,
            inline_size: None,
            verify: false,
        }
    }
}

/// The parameters of an `op` `test` with perftest's defaults where `req` leaves them open,
/// checked. The completion moderation never exceeds the tx depth, or the send queue would fill
/// with unsignaled work requests.
pub fn test_params(op: Op, test: P2pTest, req: &Requested) -> Result<TestParams, VerbsError> {
    let d = PerftestDefaults::of(test);
    let tx_depth = req.tx_depth.unwrap_or(d.tx_depth);
    let p = TestParams {
        op,
        test,
        sizes: req.sizes.clone().unwrap_or_else(|| vec![d.size]),
        iterations: req.iterations.unwrap_or(d.iterations),
        tx_depth,
        cq_mod: req.cq_mod.min(tx_depth).max(1),
        qps: req.qps,
        inline_size: req.inline_size.unwrap_or(d.inline_size),
        verify: req.verify,
    };
    p.validate().map_err(VerbsError::Unsupported)?;
    Ok(p)
}

/// How a [`Server`] listens.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address of the control listener.
    pub bind: SocketAddr,
    /// The secret every client must prove it holds.
    pub token: Token,
    /// Longest wait of the control handshake.
    pub timeout: Duration,
    /// Return after the first session (its error included) instead of serving on.
    pub once: bool,
}

/// The server end: accepts control connections and runs each client's test on this node's
/// device, one at a time.
#[derive(Debug)]
pub struct Server {
    listener: TcpListener,
    verbs: Arc<Verbs>,
    opts: LocalOptions,
    cfg: ServerConfig,
}

impl Server {
    /// Listens on `cfg.bind`; the tests run on the device of `opts`.
    pub fn bind(
        verbs: Arc<Verbs>,
        opts: LocalOptions,
        cfg: ServerConfig,
    ) -> Result<Server, P2pError> {
        let listener =
            TcpListener::bind(cfg.bind).map_err(io(format!("listening on {}", cfg.bind)))?;
        Ok(Server {
            listener,
            verbs,
            opts,
            cfg,
        })
    }

    /// The address it listens on (the port picked when it was 0).
    pub fn local_addr(&self) -> Result<SocketAddr, P2pError> {
        self.listener
            .local_addr()
            .map_err(io("reading the listening address"))
    }

    /// Serves clients one after another. With `once` it returns the first session's outcome;
    /// otherwise a failed session goes to `on_error` and serving goes on.
    pub fn serve(&self, on_error: &mut dyn FnMut(P2pError)) -> Result<(), P2pError> {
        loop {
            let (stream, peer) = self.listener.accept().map_err(io("accepting a client"))?;
            let what = format!("serving the RDMA test of {peer}");
            let served = Channel::accept(stream, &self.cfg.token, self.cfg.timeout)
                .map_err(wire(what.clone()))
                .and_then(|mut ch| {
                    serve(&self.verbs, &mut ch, &self.opts).map_err(verbs_err(what))
                });
            match served {
                Ok(()) if self.cfg.once => return Ok(()),
                Err(e) if self.cfg.once => return Err(e),
                Ok(()) => {}
                Err(e) => on_error(e),
            }
        }
    }
}

/// The client end against the server at `host` (`HOST:PORT`).
pub fn run_remote(
    verbs: &Arc<Verbs>,
    host: &str,
    token: &Token,
    opts: &LocalOptions,
    params: &TestParams,
) -> Result<P2pReport, P2pError> {
    let mut ch = Channel::connect(host, token, opts.timeout)
        .map_err(wire(format!("connecting to {host}")))?;
    let test = match params.test {
        P2pTest::Bw => "bandwidth",
        P2pTest::Lat => "latency",
    };
    run_client(verbs, &mut ch, opts, params).map_err(verbs_err(format!(
        "RDMA {} {test} test with {host}",
        params.op.as_str()
    )))
}

/// Both ends in this process over loopback TCP, on the same device: a quick look.
pub fn run_local(
    verbs: &Arc<Verbs>,
    opts: &LocalOptions,
    params: &TestParams,
) -> Result<P2pReport, P2pError> {
    let token = Token::random().map_err(wire("making a token"))?;
    let listener = TcpListener::bind("127.0.0.1:0").map_err(io("binding a loopback port"))?;
    let addr = listener
        .local_addr()
        .map_err(io("reading the loopback port"))?;
    let (sv, so, st, timeout) = (verbs.clone(), opts.clone(), token.clone(), opts.timeout);
    let server = std::thread::spawn(move || -> Result<(), P2pError> {
        let (stream, _) = listener
            .accept()
            .map_err(io("accepting the local client"))?;
        let mut ch = Channel::accept(stream, &st, timeout).map_err(wire("local RDMA server"))?;
        serve(&sv, &mut ch, &so).map_err(verbs_err("local RDMA server"))
    });
    let mut ch = Channel::connect(addr, &token, timeout).map_err(wire("local RDMA test"))?;
    let report = run_client(verbs, &mut ch, opts, params);
    drop(ch);
    let served = server.join().map_err(|_| P2pError::ServerPanicked)?;
    let report = report.map_err(verbs_err("local RDMA test"))?;
    served?;
    Ok(report)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn req() -> Requested {
        Requested {
            tx_depth: Some(64),
            verify: true,
            ..Requested::default()
        }
    }

    #[test]
    fn perftest_defaults_per_test() {
        let p = test_params(Op::Send, P2pTest::Bw, &req()).unwrap();
        assert_eq!(
            (p.sizes.clone(), p.iterations, p.inline_size),
            (vec![65536], 5000, 0)
        );
        // cq-mod never exceeds the tx depth, or the send queue would fill unsignaled.
        assert_eq!(p.cq_mod, 64);
        assert_eq!(p.op, Op::Send);
        let p = test_params(Op::Send, P2pTest::Lat, &req()).unwrap();
        assert_eq!(
            (p.sizes.clone(), p.iterations, p.inline_size),
            (vec![2], 1000, 236)
        );
        // Latency without a tx depth: perftest's 1, so every send is signaled.
        let mut r = req();
        r.tx_depth = None;
        let p = test_params(Op::Write, P2pTest::Lat, &r).unwrap();
        assert_eq!((p.tx_depth, p.cq_mod), (1, 1));
        let p = test_params(Op::Write, P2pTest::Bw, &r).unwrap();
        assert_eq!((p.tx_depth, p.cq_mod), (128, 100));
    }

    #[test]
    fn latency_with_several_qps_is_refused() {
        let mut r = req();
        r.qps = 2;
        let e = test_params(Op::Write, P2pTest::Lat, &r).unwrap_err();
        assert!(matches!(e, VerbsError::Unsupported(_)), "{e}");
    }
}
