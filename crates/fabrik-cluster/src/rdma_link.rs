//! The `rdma` transport of the collectives and the pair matrix: a [`Link`] over an RC queue
//! pair ([`fabrik_verbs::VerbsPipe`]), set up over the rendezvous' authenticated data
//! connections (which carry only the queue-pair exchange; the bytes then move over verbs).

use std::net::TcpStream;
use std::sync::Arc;

use fabrik_verbs::{LocalOptions, PipeConfig, PipeDevice, Verbs, VerbsError, VerbsPipe};

use crate::link::Link;
use crate::rendezvous::Group;
use crate::ClusterError;

/// Loads libibverbs and opens the device, port and GID of `opts` (the defaults of
/// `bench p2p --transport rdma`: on RoCE, the GID NCCL would pick).
pub fn open_device(opts: &LocalOptions) -> Result<Arc<PipeDevice>, ClusterError> {
    let verbs = Arc::new(Verbs::load()?);
    Ok(PipeDevice::open(&verbs, opts)?)
}

/// Opens the device on every rank and agrees on the outcome: every rank gets `Ok` only when all
/// opened theirs; otherwise every rank fails with the first rank's reason (so nobody waits for a
/// peer that will never set up its queue pairs).
pub fn open_everywhere(
    group: &mut Group,
    opts: &LocalOptions,
) -> Result<Arc<PipeDevice>, ClusterError> {
    let opened = open_device(opts);
    let mine = opened.as_ref().err().map(ToString::to_string);
    let all = group.gather(mine)?;
    let verdict = all.map(|v| first_failure(&v, |r| group.label(r)));
    match group.broadcast(verdict)? {
        None => opened,
        Some(why) => Err(opened.err().unwrap_or(ClusterError::Aborted(why))),
    }
}

/// `Some("rank R (host): why")` for the first rank that reported a failure.
fn first_failure(per_rank: &[Option<String>], label: impl Fn(u32) -> String) -> Option<String> {
    per_rank
        .iter()
        .enumerate()
        .find_map(|(r, e)| e.as_ref().map(|e| format!("{}: {e}", label(r as u32))))
}

/// For `auto`: true when every rank has a usable RDMA device (libibverbs loads, and the device
/// of `opts`, or any device, has an ACTIVE port), decided by rank 0 so that all ranks agree.
pub fn all_ranks_have_rdma(group: &mut Group, opts: &LocalOptions) -> Result<bool, ClusterError> {
    let usable = open_device(opts).is_ok();
    let all = group.gather(usable)?;
    group.broadcast(all.map(|v| v.iter().all(|u| *u)))
}

/// One end of an RDMA pipe as a collective [`Link`].
#[derive(Debug)]
pub struct RdmaLink {
    pipe: VerbsPipe,
}

impl RdmaLink {
    /// Sets up a pipe with the peer at the other end of `stream` (the exchange is symmetric: both
    /// ends call this at once).
    pub fn connect(
        dev: &Arc<PipeDevice>,
        mut stream: TcpStream,
        peer: &str,
        cfg: &PipeConfig,
    ) -> Result<RdmaLink, ClusterError> {
        let pipe =
            VerbsPipe::connect(dev, &mut stream, peer, cfg).map_err(|e| peer_err(peer, e))?;
        Ok(RdmaLink { pipe })
    }

    /// The verbs pipe this link sends and receives through.
    pub fn pipe(&self) -> &VerbsPipe {
        &self.pipe
    }
}

fn peer_err(peer: &str, e: VerbsError) -> ClusterError {
    ClusterError::Peer {
        peer: peer.to_string(),
        why: fabrik_wire::with_causes(&e),
    }
}

impl Link for RdmaLink {
    fn send_all(&self, buf: &[u8]) -> Result<(), ClusterError> {
        self.pipe
            .send_all(buf)
            .map_err(|e| peer_err(self.pipe.peer(), e))
    }

    fn recv_exact(&self, buf: &mut [u8]) -> Result<(), ClusterError> {
        self.pipe
            .recv_exact(buf)
            .map_err(|e| peer_err(self.pipe.peer(), e))
    }

    fn send_buffer_bytes(&self) -> usize {
        self.pipe.window_bytes()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn the_first_failing_rank_is_named() {
        let label = |r: u32| format!("rank {r} (node{r})");
        assert_eq!(first_failure(&[None, None], label), None);
        assert_eq!(
            first_failure(&[None, Some("no device".into()), Some("x".into())], label).as_deref(),
            Some("rank 1 (node1): no device")
        );
    }

    #[test]
    fn no_rdma_here_is_a_clear_error_not_a_panic() {
        // On a machine without libibverbs this names the library; with it but no device, it
        // says there is none (or that the named device does not exist).
        let opts = LocalOptions {
            device: Some("fabrik_no_such_dev".into()),
            ..LocalOptions::default()
        };
        let e = open_device(&opts).unwrap_err().to_string();
        assert!(
            e.contains("libibverbs.so.1")
                || e.contains("no RDMA device")
                || e.contains("`fabrik_no_such_dev` not found"),
            "{e}"
        );
    }
}
