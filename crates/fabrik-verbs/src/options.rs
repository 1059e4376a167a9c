//! The options of `bench p2p --transport rdma` as a command line takes them (`clap::Args`
//! behind the `clap` feature), and the [`LocalOptions`] and [`TestParams`] they give.

use std::time::Duration;

use fabrik_model::P2pTest;

use crate::error::VerbsError;
use crate::mem::MemKind;
use crate::p2p::{test_params, Requested};
use crate::port_spec::{device_port, BadPort};
use crate::proto::{Op, TestParams};
use crate::LocalOptions;

/// `--op`: the RDMA operation ([`Op`]). The variants carry no doc comments: clap would show
/// them as help for each value.
#[allow(missing_docs)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum OpArg {
    Write,
    Read,
    Send,
}

/// `--mem`: where the buffer lives ([`MemKind`]), as [`OpArg`].
#[allow(missing_docs)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum MemArg {
    Host,
    Cuda,
    Managed,
}

/// Options that only the RDMA transport has (flattened into `bench p2p`).
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[derive(Debug, Clone)]
#[cfg_attr(
    feature = "clap",
    command(next_help_heading = "RDMA (--transport rdma)")
)]
pub struct RdmaOptions {
    /// RDMA device and port, `mlx5_0` or `mlx5_0:1`; default: the first device with an ACTIVE
    /// port 1.
    #[cfg_attr(feature = "clap", arg(long, short = 'd'))]
    pub device: Option<String>,
    /// GID index; default: the RoCE v2 GID carrying the control connection's local IPv4.
    #[cfg_attr(feature = "clap", arg(long, short = 'x'))]
    pub gid_index: Option<u32>,
    /// Path MTU in bytes (256..4096); default: the port's active MTU.
    #[cfg_attr(feature = "clap", arg(long, short = 'm'))]
    pub mtu: Option<u32>,
    /// RDMA operation.
    #[cfg_attr(feature = "clap", arg(long, value_enum, default_value = "write"))]
    pub op: OpArg,
    /// Work requests in flight per QP (default 128 for bw, 1 for lat, as perftest: a latency
    /// test then waits for every send's completion, as ib_send_lat does).
    #[cfg_attr(feature = "clap", arg(long, short = 't'))]
    pub tx_depth: Option<u32>,
    /// One signaled completion every N work requests (capped at --tx-depth).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 100))]
    pub cq_mod: u32,
    /// Queue pairs (bandwidth only).
    #[cfg_attr(feature = "clap", arg(long, short = 'q', default_value_t = 1))]
    pub qps: u32,
    /// Largest message sent inline (default 0 for bw, 236 for lat, as perftest).
    #[cfg_attr(feature = "clap", arg(long, short = 'I'))]
    pub inline_size: Option<u32>,
    /// Where the registered buffer lives.
    #[cfg_attr(feature = "clap", arg(long, value_enum, default_value = "host"))]
    pub mem: MemArg,
    /// CUDA device ordinal for --mem cuda/managed.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 0))]
    pub cuda_device: i32,
    /// Register memory with IBV_ACCESS_RELAXED_ORDERING (matters for GPU memory behind SR-IOV
    /// VFs and some PCIe topologies).
    #[cfg_attr(feature = "clap", arg(long))]
    pub relaxed_ordering: bool,
    /// With --mem cuda|managed, skip the host-memory reference pass (by default a bandwidth test
    /// also runs from a host buffer on the same QPs and sizes, to compare).
    #[cfg_attr(feature = "clap", arg(long))]
    pub no_host_reference: bool,
    /// Warn when GPU memory's bandwidth is below this fraction of the host reference's.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = crate::gpuref::DEFAULT_WARN_BELOW, value_parser = parse_fraction))]
    pub warn_below_host: f64,
}

#[cfg(feature = "clap")]
fn parse_fraction(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|e| format!("{e}"))?;
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err("a positive number, such as 0.8".into())
    }
}

/// `bench p2p`'s data paths: TCP streams (fabrik-bench) or RDMA verbs (this crate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum P2pTransport {
    // TCP streams; no doc comment, which clap would show beside the value.
    #[allow(missing_docs)]
    Tcp,
    /// RDMA verbs (RC queue pairs); see the RDMA options.
    Rdma,
    /// RDMA when this node has an RDMA device with an ACTIVE port, else TCP.
    Auto,
}

/// The data path a `bench p2p` run takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum P2pPath {
    /// RDMA verbs.
    Rdma,
    /// TCP streams; with `--transport auto`, why RDMA was not taken.
    Tcp(Option<String>),
}

impl RdmaOptions {
    /// The path `transport` takes on this node (`auto` looks for a usable device). Over TCP
    /// the RDMA-only options given are refused: the run would silently measure something
    /// else (host memory over TCP streams).
    pub fn path(&self, transport: P2pTransport) -> Result<P2pPath, VerbsError> {
        let because = match transport {
            P2pTransport::Rdma => return Ok(P2pPath::Rdma),
            P2pTransport::Tcp => None,
            P2pTransport::Auto => match crate::p2p::rdma_choice() {
                Ok(_) => return Ok(P2pPath::Rdma),
                Err(why) => Some(why),
            },
        };
        let given = self.given();
        if !given.is_empty() {
            let chosen = match &because {
                Some(why) => format!("--transport auto chose TCP ({why})"),
                None => "the transport is TCP".to_string(),
            };
            return Err(VerbsError::Options(format!(
                "{} {} RDMA-only: {chosen}, which would measure host memory over TCP streams \
                 instead; add --transport rdma to measure them (or drop them for a TCP test)",
                given.join(", "),
                if given.len() == 1 { "is" } else { "are" }
            )));
        }
        Ok(P2pPath::Tcp(because))
    }

    /// The RDMA options given with a value other than their default: over TCP each would be
    /// silently ignored and the run would measure something else (host memory, one stream).
    pub fn given(&self) -> Vec<&'static str> {
        let d = crate::gpuref::DEFAULT_WARN_BELOW;
        [
            (self.device.is_some(), "-d/--device"),
            (self.gid_index.is_some(), "-x/--gid-index"),
            (self.mtu.is_some(), "-m/--mtu"),
            (self.op != OpArg::Write, "--op"),
            (self.tx_depth.is_some(), "-t/--tx-depth"),
            (self.cq_mod != 100, "--cq-mod"),
            (self.qps != 1, "-q/--qps"),
            (self.inline_size.is_some(), "-I/--inline-size"),
            (self.mem != MemArg::Host, "--mem"),
            (self.cuda_device != 0, "--cuda-device"),
            (self.relaxed_ordering, "--relaxed-ordering"),
            (self.no_host_reference, "--no-host-reference"),
            (self.warn_below_host != d, "--warn-below-host"),
        ]
        .into_iter()
        .filter_map(|(given, name)| given.then_some(name))
        .collect()
    }

    /// The local end these options describe, waiting up to `timeout` for anything.
    pub fn local_options(&self, timeout: Duration) -> Result<LocalOptions, BadPort> {
        let (device, port) = device_port(self.device.as_deref())?;
        Ok(LocalOptions {
            device,
            port,
            gid_index: self.gid_index,
            mtu: self.mtu,
            mem: match self.mem {
                MemArg::Host => MemKind::Host,
                MemArg::Cuda => MemKind::Cuda,
                MemArg::Managed => MemKind::Managed,
            },
            cuda_device: self.cuda_device,
            relaxed_ordering: self.relaxed_ordering,
            host_reference: !self.no_host_reference,
            warn_below: self.warn_below_host,
            timeout,
            root: "/".into(),
        })
    }

    /// The test these options and the common ones (`sizes`, `iterations`, `verify`) ask for,
    /// with perftest's defaults where they leave it open.
    pub fn params(
        &self,
        test: P2pTest,
        sizes: Option<Vec<u64>>,
        iterations: Option<u64>,
        verify: bool,
    ) -> Result<TestParams, VerbsError> {
        let op = match self.op {
            OpArg::Write => Op::Write,
            OpArg::Read => Op::Read,
            OpArg::Send => Op::Send,
        };
        let req = Requested {
            sizes,
            iterations,
            tx_depth: self.tx_depth,
            cq_mod: self.cq_mod,
            qps: self.qps,
            inline_size: self.inline_size,
            verify,
        };
        test_params(op, test, &req)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn rdma() -> RdmaOptions {
        RdmaOptions {
            device: Some("mlx5_0:2".into()),
            gid_index: None,
            mtu: None,
            op: OpArg::Send,
            tx_depth: Some(64),
            cq_mod: 100,
            qps: 1,
            inline_size: None,
            mem: MemArg::Host,
            cuda_device: 0,
            relaxed_ordering: true,
            no_host_reference: false,
            warn_below_host: 0.8,
        }
    }

    #[test]
    fn flags_map_to_the_test_with_perftest_defaults() {
        // The defaults themselves are crate::p2p's; here, that the flags reach them.
        let p = rdma().params(P2pTest::Bw, None, None, true).unwrap();
        assert_eq!(
            (p.op, p.tx_depth, p.cq_mod, p.verify),
            (Op::Send, 64, 64, true)
        );
        assert_eq!((p.sizes.clone(), p.iterations), (vec![65536], 5000));
    }

    #[test]
    fn device_and_port_split() {
        let o = rdma().local_options(Duration::from_secs(1)).unwrap();
        assert_eq!((o.device.as_deref(), o.port), (Some("mlx5_0"), 2));
        assert!(o.relaxed_ordering);
        let mut r = rdma();
        r.device = Some("mlx5_0:x".into());
        let e = r.local_options(Duration::from_secs(1)).unwrap_err();
        assert_eq!(e.to_string(), "bad port in --device mlx5_0:x");
    }
}
