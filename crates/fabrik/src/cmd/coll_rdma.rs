//! The RDMA options that `bench collective --backend rdma` and `cluster matrix --transport rdma`
//! share (not a subcommand of its own), with the defaults `bench p2p --transport rdma` uses.

use anyhow::Context;
use fabrik_cluster::transport::{RdmaSettings, TransportChoice};
use fabrik_model::size::parse_bytes as parse_size;

#[derive(clap::Args, Debug, Clone)]
#[command(next_help_heading = "RDMA (--backend rdma / --transport rdma)")]
pub struct VerbsArgs {
    /// RDMA device and port, `mlx5_0` or `mlx5_0:1`; default: the first device with an ACTIVE
    /// port 1.
    #[arg(long, value_name = "NAME[:PORT]")]
    pub device: Option<String>,
    /// GID index; default: the RoCE v2 GID carrying this rank's data address.
    #[arg(long)]
    pub gid_index: Option<u32>,
    /// Path MTU in bytes (256..4096); default: the port's active MTU.
    #[arg(long)]
    pub rdma_mtu: Option<u32>,
    /// Bytes per RDMA message (each pipe keeps --rdma-slots of them in flight).
    #[arg(long, default_value = "256K")]
    pub rdma_chunk: String,
    /// Messages in flight per RDMA pipe.
    #[arg(long, default_value_t = 8)]
    pub rdma_slots: u32,
}

/// Splits `mlx5_0:1` into name and port (port 1 when absent).
pub fn device_port(d: Option<&str>) -> anyhow::Result<(Option<String>, u8)> {
    Ok(match d {
        Some(d) => match d.split_once(':') {
            Some((name, p)) => (
                Some(name.to_string()),
                p.parse::<u8>()
                    .with_context(|| format!("bad port in --device {d}"))?,
            ),
            None => (Some(d.to_string()), 1),
        },
        None => (None, 1),
    })
}

impl VerbsArgs {
    /// The RDMA transport's settings these flags give.
    pub fn settings(&self) -> anyhow::Result<RdmaSettings> {
        let (device, port) = device_port(self.device.as_deref())?;
        let chunk_bytes =
            usize::try_from(parse_size(&self.rdma_chunk)?).context("--rdma-chunk is too large")?;
        Ok(RdmaSettings {
            device,
            port,
            gid_index: self.gid_index,
            mtu: self.rdma_mtu,
            chunk_bytes,
            slots: self.rdma_slots,
        })
    }

}

/// Reads a `--transport`/`--backend` value, saying what is known when it is not.
pub fn transport_choice(name: &str, flag: &str) -> anyhow::Result<TransportChoice> {
    name.parse()
        .map_err(|_| anyhow::anyhow!("unknown {flag} {name:?} ({})", TransportChoice::NAMES))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn args() -> VerbsArgs {
        VerbsArgs {
            device: Some("rxe0:2".into()),
            gid_index: Some(1),
            rdma_mtu: None,
            rdma_chunk: "128K".into(),
            rdma_slots: 4,
        }
    }

    #[test]
    fn options_from_flags() {
        let o = args().settings().unwrap().local_options(Duration::from_secs(5));
        assert_eq!(
            (o.device.as_deref(), o.port, o.gid_index),
            (Some("rxe0"), 2, Some(1))
        );
        assert_eq!(o.timeout, Duration::from_secs(5));
        let p = args().settings().unwrap().pipe_config(Duration::from_secs(5)).unwrap();
        assert_eq!((p.chunk_bytes, p.slots), (128 << 10, 4));
        assert_eq!(device_port(None).unwrap(), (None, 1));
        assert_eq!(
            device_port(Some("mlx5_0:x")).unwrap_err().to_string(),
            "bad port in --device mlx5_0:x"
        );
        let mut a = args();
        a.rdma_chunk = "1".into();
        assert_eq!(
            format!("{:#}", a.settings().unwrap().pipe_config(Duration::from_secs(1)).unwrap_err()),
            "pipe chunk of 1 bytes outside 4096..=67108864"
        );
    }
}
