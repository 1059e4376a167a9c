//! The rendezvous' deadlines: how long a handshake, a failure report or a silent rank may
//! take, and how a rank that said nothing in time is named. Every wait of a job has one, so no
//! peer, however slow, holds rank 0.

use std::time::Duration;

use fabrik_wire::Stall;

use super::Group;

/// The longest one connection may take from accept to its hello, however long the job waits.
pub(super) const HANDSHAKE_LIMIT: Duration = Duration::from_secs(10);
/// How long rank 0 still listens to the other ranks, all together, once one has failed.
pub(super) const AFTER_FAILURE: Duration = Duration::from_secs(2);
/// At most this many stalled connections are listed one by one in an error.
pub(super) const STALLS_LISTED: usize = 8;

/// `connections that stalled in their handshake: 10.0.0.9:4711 (3 bytes received in 10.0 s), …`
pub(super) fn describe_stalls(stalls: &[Stall]) -> String {
    let mut list: Vec<String> = stalls
        .iter()
        .take(STALLS_LISTED)
        .map(ToString::to_string)
        .collect();
    if stalls.len() > STALLS_LISTED {
        list.push(format!("and {} more", stalls.len() - STALLS_LISTED));
    }
    format!(
        "{} connection{} stalled in the handshake and {} closed: {}",
        stalls.len(),
        if stalls.len() == 1 { "" } else { "s" },
        if stalls.len() == 1 { "was" } else { "were" },
        list.join(", ")
    )
}

impl Group {
    /// Names the ranks that sent rank 0 nothing: `(rank, seconds waited, whether that was the
    /// whole timeout)`. A rank is called silent when it kept quiet for the whole timeout, or when
    /// the failures already known (`blame`) name it, i.e. its peers gave up on it too: a
    /// stopped or hung process keeps its connections open, so only its silence gives it away.
    /// Any other rank is only late (still busy with a healthy peer, most likely).
    pub(super) fn name_quiet(&self, quiet: &[(usize, f64, bool)], blame: &str) -> Vec<String> {
        quiet
            .iter()
            .map(|&(r, secs, full)| {
                let label = self.peers[r].label();
                // `rank 3 (` so that rank 3 is not found in rank 30's label.
                let short = format!("rank {r} (");
                if full {
                    format!(
                        "{label} is silent: its connection is open but it sent nothing in {secs:.0} s (stopped or hung)"
                    )
                } else if blame.contains(&short) {
                    format!(
                        "{label} is silent: its peers gave up on it and it sent no report within {secs:.0} s (stopped or hung)"
                    )
                } else {
                    format!("{label} sent no report within {secs:.0} s")
                }
            })
            .collect()
    }
}
