//! `bench p2p`'s option set, as the command line gives it: the role (server, client, both on
//! this machine), the sizes, how long each runs and which paths the streams take; read and
//! checked into a [`ClientConfig`] or a [`ServerConfig`].

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use fabrik_model::P2pTest;
use fabrik_wire::Token;

use crate::client::with_port;
use crate::{Amount, BenchError, ClientConfig, PathSpec, ServerConfig};

/// The control port a server listens on when none is given.
pub const DEFAULT_PORT: u16 = 18800;

/// How one end of `bench p2p` runs.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[cfg_attr(
    feature = "clap",
    command(group(clap::ArgGroup::new("role").required(true).args(["server", "client", "local"])))
)]
pub struct P2pOptions {
    /// Run the server end.
    #[cfg_attr(feature = "clap", arg(long))]
    pub server: bool,
    /// Run the client end against HOST[:PORT].
    #[cfg_attr(feature = "clap", arg(long, value_name = "HOST[:PORT]"))]
    pub client: Option<String>,
    /// Run both ends on this machine over loopback, for a quick look.
    #[cfg_attr(feature = "clap", arg(long))]
    pub local: bool,
    /// Server: address to listen on.
    #[cfg_attr(
        feature = "clap",
        arg(long, default_value = "0.0.0.0", value_name = "ADDR")
    )]
    pub bind: IpAddr,
    /// Server: control port to listen on (0 picks a free one); client: the default for HOST.
    #[cfg_attr(feature = "clap", arg(long, short = 'p', default_value_t = DEFAULT_PORT))]
    pub port: u16,
    /// Shared secret; the server prints a random one when none is given.
    #[cfg_attr(
        feature = "clap",
        arg(long, env = "FABRIK_TOKEN", hide_env_values = true)
    )]
    pub token: Option<String>,
    /// Server: exit after the first session.
    #[cfg_attr(feature = "clap", arg(long))]
    pub once: bool,
    /// bw: bandwidth (streams of messages); lat: ping-pong latency.
    #[cfg_attr(
        feature = "clap",
        arg(long, default_value = "bw", value_parser = test_kind())
    )]
    pub test: P2pTest,
    /// Message size (K, M, G, T suffixes are powers of 1024). Default 64K for bw, 2 for lat.
    #[cfg_attr(feature = "clap", arg(long, short = 's', value_parser = fabrik_model::size::parse_bytes, conflicts_with_all = ["min_size", "max_size", "all"]))]
    pub size: Option<u64>,
    /// Sweep: smallest message size.
    #[cfg_attr(feature = "clap", arg(short = 'b', long = "min-size", value_parser = fabrik_model::size::parse_bytes, requires = "max_size"))]
    pub min_size: Option<u64>,
    /// Sweep: largest message size.
    #[cfg_attr(feature = "clap", arg(short = 'e', long = "max-size", value_parser = fabrik_model::size::parse_bytes, requires = "min_size"))]
    pub max_size: Option<u64>,
    /// Sweep: each size is the previous times this.
    #[cfg_attr(feature = "clap", arg(short = 'f', long, default_value_t = 2))]
    pub factor: u64,
    /// Sweep 2 B to 8 MiB by powers of two, as perftest's -a.
    #[cfg_attr(feature = "clap", arg(short = 'a', long))]
    pub all: bool,
    /// Messages per stream (bw) or round trips (lat). Default: 2 s per size for bw, 10000 for lat.
    #[cfg_attr(feature = "clap", arg(long, short = 'n', conflicts_with = "duration"))]
    pub iters: Option<u64>,
    /// Seconds per size (bw).
    #[cfg_attr(feature = "clap", arg(long, short = 'D'))]
    pub duration: Option<f64>,
    /// Parallel TCP streams.
    #[cfg_attr(feature = "clap", arg(long, short = 'P', default_value_t = 1))]
    pub streams: u32,
    /// Local addresses to spread the streams over, round-robin.
    #[cfg_attr(
        feature = "clap",
        arg(long, value_delimiter = ',', conflicts_with = "ifaces")
    )]
    pub local_addrs: Vec<IpAddr>,
    /// Local interfaces to spread the streams over, round-robin (SO_BINDTODEVICE).
    #[cfg_attr(feature = "clap", arg(long, value_delimiter = ','))]
    pub ifaces: Vec<String>,
    /// Server addresses paired by position with the local addresses or interfaces (default:
    /// the server's address on each local subnet).
    #[cfg_attr(feature = "clap", arg(long, value_delimiter = ','))]
    pub peer_addrs: Vec<IpAddr>,
    /// Send in both directions at once (bandwidth is the sum).
    #[cfg_attr(feature = "clap", arg(long))]
    pub bidir: bool,
    /// Check every payload byte end to end.
    #[cfg_attr(feature = "clap", arg(long))]
    pub verify: bool,
    /// Seconds any network wait may take before the peer is declared gone.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 30.0))]
    pub timeout: f64,
    /// SO_SNDBUF/SO_RCVBUF in bytes (default: kernel autotuning).
    #[cfg_attr(feature = "clap", arg(long, value_parser = fabrik_model::size::parse_bytes))]
    pub sock_buf: Option<u64>,
    /// Latency round trips run before measuring.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 100))]
    pub warmup: u64,
}

/// `bw` or `lat`, as `--test` takes them.
#[cfg(feature = "clap")]
fn test_kind() -> impl clap::builder::TypedValueParser<Value = P2pTest> {
    use clap::builder::{PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(["bw", "lat"]).map(|s| match s.as_str() {
        "lat" => P2pTest::Lat,
        _ => P2pTest::Bw,
    })
}

/// `v` seconds, named `what` when it is not a positive number below a million.
pub fn secs(v: f64, what: &str) -> Result<Duration, BenchError> {
    if !(v.is_finite() && v > 0.0 && v < 1e6) {
        return Err(BenchError::Options(format!(
            "{what} must be a positive number of seconds, not {v}"
        )));
    }
    Ok(Duration::from_secs_f64(v))
}

impl P2pOptions {
    /// `--timeout`, checked.
    pub fn wait(&self) -> Result<Duration, BenchError> {
        secs(self.timeout, "--timeout")
    }

    /// The sizes asked for: one `--size`, a sweep (`-b`/`-e`/`-f`, or `-a`), or `None` for the
    /// test's default.
    pub fn sizes(&self) -> Result<Option<Vec<u64>>, BenchError> {
        if let Some(s) = self.size {
            return Ok(Some(vec![s]));
        }
        let (lo, hi) = match (self.all, self.min_size, self.max_size) {
            (true, _, _) => (2, 8 << 20),
            (false, Some(lo), Some(hi)) => (lo, hi),
            _ => return Ok(None),
        };
        if self.factor < 2 {
            return Err(BenchError::Options("--factor must be at least 2".into()));
        }
        if lo == 0 || lo > hi {
            return Err(BenchError::Options(format!(
                "the sweep needs 0 < MIN <= MAX (got {lo} and {hi})"
            )));
        }
        Ok(Some(fabrik_model::size::sweep(lo, hi, self.factor, None)))
    }

    /// `--client HOST[:PORT]` with `--port` filled in; `None` for the server and `--local`.
    pub fn server_address(&self) -> Option<String> {
        self.client.as_deref().map(|h| with_port(h, self.port))
    }

    /// The token as given, checked.
    fn given_token(&self) -> Result<Option<Token>, BenchError> {
        self.token
            .as_deref()
            .map(Token::new)
            .transpose()
            .map_err(|e| BenchError::Options(format!("--token / FABRIK_TOKEN: {e}")))
    }

    /// The token a client against a server elsewhere proves: the one given.
    pub fn client_token(&self) -> Result<Token, BenchError> {
        self.given_token()?.ok_or_else(|| {
            BenchError::Options(
                "the client needs the server's token: --token or FABRIK_TOKEN".into(),
            )
        })
    }

    /// The client's settings (`--local`'s too: its server takes the same token).
    pub fn client_config(&self) -> Result<ClientConfig, BenchError> {
        let token = match (self.local, self.given_token()?) {
            (true, Some(t)) => t,
            (true, None) => Token::random()?,
            (false, _) => self.client_token()?,
        };
        let mut cfg =
            ClientConfig::new(self.server_address().unwrap_or_default(), token, self.test);
        if let Some(sizes) = self.sizes()? {
            cfg.sizes = sizes;
        }
        if let Some(n) = self.iters {
            cfg.amount = Amount::Iters(n);
        }
        if let Some(d) = self.duration {
            cfg.amount = Amount::Duration(secs(d, "--duration")?);
        }
        cfg.streams = self.streams;
        cfg.paths = if !self.local_addrs.is_empty() {
            PathSpec::LocalAddrs(self.local_addrs.clone())
        } else if !self.ifaces.is_empty() {
            PathSpec::Ifaces(self.ifaces.clone())
        } else {
            PathSpec::Default
        };
        cfg.peer_addrs = self.peer_addrs.clone();
        cfg.bidir = self.bidir;
        cfg.verify = self.verify;
        cfg.timeout = self.wait()?;
        cfg.sock_buf = self.sock_buf.map(|b| b as usize);
        cfg.warmup = self.warmup;
        Ok(cfg)
    }

    /// The server's settings, and whether its token was made up here (to be printed for the
    /// client) rather than given.
    pub fn server_config(&self) -> Result<(ServerConfig, bool), BenchError> {
        let (token, generated) = match self.given_token()? {
            Some(t) => (t, false),
            None => (Token::random()?, true),
        };
        let cfg = ServerConfig {
            bind: SocketAddr::new(self.bind, self.port),
            token,
            timeout: self.wait()?,
            once: self.once,
            sock_buf: self.sock_buf.map(|b| b as usize),
        };
        Ok((cfg, generated))
    }

    /// Refuses the options that only TCP streams have, for a run over RDMA.
    pub fn tcp_only_unused(&self) -> Result<(), BenchError> {
        if self.duration.is_some() || self.bidir || self.streams != 1 || !self.ifaces.is_empty() {
            return Err(BenchError::Options(
                "--duration, --bidir, --streams and --ifaces are TCP options (RDMA: --qps)".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn client(host: &str) -> P2pOptions {
        P2pOptions {
            server: false,
            client: Some(host.into()),
            local: false,
            bind: IpAddr::from([0, 0, 0, 0]),
            port: DEFAULT_PORT,
            token: Some("s3cret".into()),
            once: false,
            test: P2pTest::Bw,
            size: None,
            min_size: None,
            max_size: None,
            factor: 2,
            all: false,
            iters: None,
            duration: None,
            streams: 1,
            local_addrs: Vec::new(),
            ifaces: Vec::new(),
            peer_addrs: Vec::new(),
            bidir: false,
            verify: false,
            timeout: 30.0,
            sock_buf: None,
            warmup: 100,
        }
    }

    #[test]
    fn the_client_settings_come_from_the_options() {
        let mut o = client("node2");
        o.min_size = Some(1024);
        o.max_size = Some(4096);
        o.ifaces = vec!["eth1".into(), "eth2".into()];
        o.duration = Some(0.5);
        let cfg = o.client_config().unwrap();
        assert_eq!(cfg.server, format!("node2:{DEFAULT_PORT}"));
        assert_eq!(cfg.sizes, vec![1024, 2048, 4096]);
        assert_eq!(
            cfg.paths,
            PathSpec::Ifaces(vec!["eth1".into(), "eth2".into()])
        );
        assert!(matches!(cfg.amount, Amount::Duration(d) if d == Duration::from_millis(500)));
        assert_eq!(cfg.timeout, Duration::from_secs(30));
        assert_eq!(
            o.tcp_only_unused().unwrap_err().to_string(),
            "--duration, --bidir, --streams and --ifaces are TCP options (RDMA: --qps)"
        );
    }

    #[test]
    fn bad_options_are_named() {
        let mut o = client("node2");
        o.token = None;
        assert_eq!(
            o.client_config().unwrap_err().to_string(),
            "the client needs the server's token: --token or FABRIK_TOKEN"
        );
        let mut o = client("node2");
        (o.min_size, o.max_size) = (Some(8), Some(4));
        assert_eq!(
            o.sizes().unwrap_err().to_string(),
            "the sweep needs 0 < MIN <= MAX (got 8 and 4)"
        );
        o.timeout = -1.0;
        assert_eq!(
            o.wait().unwrap_err().to_string(),
            "--timeout must be a positive number of seconds, not -1"
        );
        o.server = true;
        o.timeout = 5.0;
        let (cfg, generated) = o.server_config().unwrap();
        assert_eq!((cfg.bind.port(), generated), (DEFAULT_PORT, false));
    }
}
