//! The data paths between ranks, behind one trait: the host-memory collectives ([`Comm`]) and
//! the pair matrix run over whatever [`Transport`] the ranks agreed on.
//!
//! A transport turns an authenticated data connection between two ranks into a [`Link`]
//! ([`Transport::link`]); the trait's provided methods open those connections, the same for
//! every transport: a communicator's ring lanes and mesh ([`Transport::connect_comm`]), one
//! two-way link per pair test ([`Transport::pair_link`]). The ranks agree on one with
//! [`agree`], which is also where a transport is registered: adding one is its own module here,
//! a [`TransportChoice`] variant and its arm in [`agree`]; the collectives, the pair matrix,
//! `bench collective` ([`crate::bench`]) and the command line need no change.

use std::fmt::Debug;
use std::net::TcpStream;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use fabrik_verbs::{LocalOptions, MemKind, PipeConfig, PipeDevice, PortSpec};

use crate::collective::Comm;
use crate::link::Link;
use crate::rdma_link::{all_ranks_have_rdma, open_everywhere};
use crate::rendezvous::Group;
use crate::ClusterError;

mod rdma;
mod tcp;

pub use rdma::Rdma;
pub use tcp::Tcp;

const TAG_RING: u32 = 0;
const TAG_MESH: u32 = 1 << 16;

/// A data path between ranks: makes the links the host-memory collectives and pair tests run
/// over. Every rank of a job holds the same transport (see [`agree`]).
pub trait Transport: Debug + Send + Sync {
    /// The name reports carry (`tcp`, `rdma`).
    fn name(&self) -> &'static str;

    /// What the path runs on, for notes and headers (`rxe0:1 GID index 1 (...), MTU 1024`);
    /// `None` when the name says it all.
    fn describe(&self) -> Option<String> {
        None
    }

    /// The device and port it runs on (`rxe0:1`), when it runs on one.
    fn device(&self) -> Option<String> {
        None
    }

    /// The RDMA device and port (from 1) whose counters a pair test samples around its
    /// transfers; `None` where the sockets count their own retransmissions.
    fn counter_port(&self) -> Option<(String, u32)> {
        None
    }

    /// The receive granularity of the collectives over this transport when none is asked for.
    fn default_chunk_bytes(&self) -> usize;

    /// A note on how data is kept in flight (`8 x 262144 B in flight per pipe`), if the
    /// transport has such a setting.
    fn window(&self) -> Option<String> {
        None
    }

    /// Whether the data moves between the data connection's own addresses, so that a
    /// per-rail matrix measures rail i when it connects to every rank's i-th address (TCP);
    /// false where it moves over a device of its own and the connection only sets it up.
    fn follows_rails(&self) -> bool {
        false
    }

    /// Makes a link of `stream`, a data connection to `peer` (its label, for errors); both
    /// ends call this at once, and no wait of the link's may take longer than `wait`.
    fn link(
        &self,
        stream: TcpStream,
        peer: &str,
        wait: Duration,
    ) -> Result<Box<dyn Link>, ClusterError>;

    /// Opens the communicator: `channels` ring lanes (at least one) and, with `mesh`, a link to
    /// every other rank; every rank calls this at once. Every link is set up at once: each
    /// set-up may wait for its peer, busy with its own neighbours' set-ups, so one after
    /// another could wait in a circle.
    fn connect_comm(
        &self,
        group: &mut Group,
        channels: usize,
        mesh: bool,
        chunk_bytes: usize,
    ) -> Result<Comm, ClusterError> {
        let (rank, n) = (group.rank(), group.size());
        let labels: Vec<String> = (0..n).map(|r| group.label(r)).collect();
        if n < 2 {
            return Comm::from_links(rank, n, labels, Vec::new(), Vec::new(), chunk_bytes);
        }
        let channels = channels.max(1);
        let ring = group.ring_streams(channels, mesh, (TAG_RING, TAG_MESH), "connect")?;
        // Set-ups are tagged with their slot so that the links come back in order.
        let mut streams = Vec::new();
        for (c, s) in ring.to_next.into_iter().enumerate() {
            streams.push((c as u32, ring.next, s));
        }
        for (c, s) in ring.from_prev.into_iter().enumerate() {
            streams.push(((channels + c) as u32, ring.prev, s));
        }
        let ring_count = streams.len();
        streams.extend(ring.mesh.into_iter().map(|(peer, s)| (peer, peer, s)));
        let wait = group.timeout();
        let mut links = thread::scope(|sc| {
            let hs: Vec<_> = streams
                .into_iter()
                .map(|(slot, peer, stream)| {
                    let label = &labels[peer as usize];
                    sc.spawn(move || self.link(stream, label, wait).map(|l| (slot, l)))
                })
                .collect();
            hs.into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(ClusterError::ThreadPanicked("a link set-up")))
                })
                .collect::<Result<Vec<_>, _>>()
        })?;
        let mesh_links = links.split_off(ring_count);
        let prevs = links.split_off(channels);
        let lanes = links
            .into_iter()
            .zip(prevs)
            .map(|((_, next), (_, prev))| (next, prev))
            .collect();
        let mut mesh_slots: Vec<Option<Box<dyn Link>>> = (0..n).map(|_| None).collect();
        for (peer, l) in mesh_links {
            mesh_slots[peer as usize] = Some(l);
        }
        Comm::from_links(rank, n, labels, lanes, mesh_slots, chunk_bytes)
    }

    /// A two-way link to `peer` for a pair test, labelled `tag`, over the peer's `rail`-th data
    /// address, every wait bounded by `wait`: the lower rank connects, the higher accepts.
    fn pair_link(
        &self,
        group: &mut Group,
        peer: u32,
        tag: u32,
        rail: u32,
        wait: Duration,
    ) -> Result<Box<dyn Link>, ClusterError> {
        let stream = if group.rank() < peer {
            group
                .connector()
                .within(wait)
                .connect_data(peer, tag, rail as usize)?
        } else {
            group.accept_data_within(peer, tag, wait)?
        };
        self.link(stream, &group.label(peer), wait)
    }
}

/// Which transport a run asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TransportChoice {
    /// TCP over the ranks' data addresses.
    #[default]
    Tcp,
    /// RDMA verbs (RC queue pairs) on every rank, or the run fails naming the rank that has none.
    Rdma,
    /// RDMA when every rank has a usable device, else TCP.
    Auto,
}

impl TransportChoice {
    /// Every choice's name, as `--transport` and `--backend` take it.
    pub const NAMES: &'static str = "tcp, rdma or auto";
}

impl std::str::FromStr for TransportChoice {
    type Err = ClusterError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "tcp" => Ok(TransportChoice::Tcp),
            "rdma" => Ok(TransportChoice::Rdma),
            "auto" => Ok(TransportChoice::Auto),
            _ => Err(ClusterError::Unknown {
                what: "transport",
                value: s.to_string(),
                known: TransportChoice::NAMES,
            }),
        }
    }
}

/// How the RDMA transport uses its device (`--device`, `--gid-index`, `--rdma-mtu`,
/// `--rdma-chunk`, `--rdma-slots`); the time limits are the job's.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[cfg_attr(
    feature = "clap",
    command(next_help_heading = "RDMA (--backend rdma / --transport rdma)")
)]
pub struct RdmaSettings {
    /// RDMA device and port, `mlx5_0` or `mlx5_0:1`; default: the first device with an ACTIVE
    /// port 1.
    #[cfg_attr(feature = "clap", arg(long, value_name = "NAME[:PORT]"))]
    pub device: Option<PortSpec>,
    /// GID index; default: the RoCE v2 GID carrying this rank's data address.
    #[cfg_attr(feature = "clap", arg(long))]
    pub gid_index: Option<u32>,
    /// Path MTU in bytes (256..4096); default: the port's active MTU.
    #[cfg_attr(feature = "clap", arg(long = "rdma-mtu", value_name = "RDMA_MTU"))]
    pub mtu: Option<u32>,
    /// Bytes per RDMA message (each pipe keeps --rdma-slots of them in flight).
    #[cfg_attr(
        feature = "clap",
        arg(long = "rdma-chunk", value_name = "RDMA_CHUNK", default_value = "256K", value_parser = chunk_bytes)
    )]
    pub chunk_bytes: usize,
    /// Messages in flight per RDMA pipe.
    #[cfg_attr(
        feature = "clap",
        arg(long = "rdma-slots", value_name = "RDMA_SLOTS", default_value_t = 8)
    )]
    pub slots: u32,
}

/// `--rdma-chunk`: a size (K, M, G, T suffixes), checked against the pipes' limits later.
pub fn chunk_bytes(s: &str) -> Result<usize, String> {
    let b = fabrik_model::size::parse_bytes(s).map_err(|e| e.to_string())?;
    usize::try_from(b).map_err(|_| format!("{s} is too large"))
}

impl Default for RdmaSettings {
    fn default() -> Self {
        RdmaSettings {
            device: None,
            gid_index: None,
            mtu: None,
            chunk_bytes: 256 << 10,
            slots: 8,
        }
    }
}

impl RdmaSettings {
    /// How this rank opens its device, every wait bounded by `timeout`.
    pub fn local_options(&self, timeout: Duration) -> LocalOptions {
        LocalOptions {
            device: self.device.as_ref().map(|d| d.device.clone()),
            port: self.device.as_ref().map_or(1, |d| d.port),
            gid_index: self.gid_index,
            mtu: self.mtu,
            mem: MemKind::Host,
            timeout,
            ..LocalOptions::default()
        }
    }

    /// The pipes' settings, checked; every wait bounded by `timeout`.
    pub fn pipe_config(&self, timeout: Duration) -> Result<PipeConfig, ClusterError> {
        let cfg = PipeConfig {
            chunk_bytes: self.chunk_bytes,
            slots: self.slots,
            timeout,
        };
        cfg.validate()?;
        Ok(cfg)
    }
}

/// Resolves `choice` on every rank alike: `Rdma` opens the device everywhere (failing on every
/// rank, naming the first that could not), `Auto` picks RDMA only when every rank has a usable
/// device. Returns the RDMA device when the ranks agreed on RDMA, `None` for TCP.
pub fn agree_rdma(
    group: &mut Group,
    choice: TransportChoice,
    opts: &LocalOptions,
) -> Result<Option<Arc<PipeDevice>>, ClusterError> {
    let rdma = match choice {
        TransportChoice::Tcp => false,
        TransportChoice::Rdma => true,
        TransportChoice::Auto => all_ranks_have_rdma(group, opts)?,
    };
    if !rdma {
        return Ok(None);
    }
    let rank = group.rank();
    open_everywhere(group, opts)
        .map(Some)
        .map_err(|e| e.context(format!("rank {rank} opening the RDMA device")))
}

/// The transport every rank agreed on for `choice` (see [`agree_rdma`]); the registration of
/// every transport.
pub fn agree(
    group: &mut Group,
    choice: TransportChoice,
    rdma: &RdmaSettings,
) -> Result<Box<dyn Transport>, ClusterError> {
    let opts = rdma.local_options(group.timeout());
    Ok(match agree_rdma(group, choice, &opts)? {
        None => Box::new(Tcp),
        Some(dev) => {
            let pipe = rdma.pipe_config(group.timeout())?;
            Box::new(Rdma::new(dev, pipe))
        }
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn rdma_settings_give_the_device_options_and_checked_pipes() {
        let s = RdmaSettings {
            device: Some("rxe0:2".parse().unwrap()),
            gid_index: Some(1),
            chunk_bytes: chunk_bytes("128K").unwrap(),
            slots: 4,
            ..RdmaSettings::default()
        };
        let o = s.local_options(Duration::from_secs(5));
        assert_eq!(
            (o.device.as_deref(), o.port, o.gid_index, o.timeout),
            (Some("rxe0"), 2, Some(1), Duration::from_secs(5))
        );
        let p = s.pipe_config(Duration::from_secs(5)).unwrap();
        assert_eq!((p.chunk_bytes, p.slots), (128 << 10, 4));
        assert_eq!(
            RdmaSettings::default().local_options(Duration::ZERO).port,
            1
        );
        let tiny = RdmaSettings {
            chunk_bytes: 1,
            ..RdmaSettings::default()
        };
        assert_eq!(
            tiny.pipe_config(Duration::from_secs(1))
                .unwrap_err()
                .to_string(),
            "pipe chunk of 1 bytes outside 4096..=67108864"
        );
        assert!(chunk_bytes("lots").unwrap_err().contains("lots"));
    }
}
