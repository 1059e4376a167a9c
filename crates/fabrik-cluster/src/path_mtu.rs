//! The path MTU between two ranks, found the way a black hole hides it: UDP datagrams sent with
//! don't-fragment set, each echoed by the peer when it arrives, the largest echoed being the
//! path MTU. No ICMP is needed (a black hole is a path that drops large packets without saying
//! so), and the probe runs over the same addresses the data uses.
//!
//! The first datagram is as large as the route allows (the interface MTU); on a healthy path it
//! comes back at once and the probe is one round trip. When it does not, it is sent again,
//! [`CONFIRM`] copies, before the path is taken for one that drops it: a host that loses a few
//! percent of its packets loses both first copies now and then, and that is loss, not a black
//! hole. Otherwise the sizes between the largest
//! echoed and the smallest lost are tried a dozen at a time, each twice (a lossy path loses
//! some), so the search closes in a few 200 ms windows.

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::sockinfo;

/// How long one batch of probes waits for its echoes.
const WINDOW: Duration = Duration::from_millis(200);
/// Batches after the first, full-size one.
const BATCHES: u32 = 4;
/// Sizes tried per batch.
const PER_BATCH: u32 = 12;
/// Copies of each probe: a path that loses a few percent still answers one of them.
const COPIES: u32 = 2;
/// Copies of the full-size probe sent again when none of the first came back: with 5 % loss
/// each way, all of eight round trips fail once in about a million paths.
const CONFIRM: u32 = 6;
/// MTUs paths commonly have (Ethernet, PPPoE, IPsec and tunnel overheads, GCP, AWS, jumbo
/// frames): each is tried beside the next size up in the first batch, so a path that stops at
/// one of them is found exactly in one window.
const COMMON: &[u32] = &[
    576, 1280, 1400, 1420, 1450, 1460, 1480, 1492, 1500, 2044, 4092, 4200, 8192, 8244, 8896, 8958,
    9000, 9001, 9216,
];
/// The echo loop looks at its stop flag this often.
const ECHO_POLL: Duration = Duration::from_millis(20);
/// Probe header: tag, sequence number and the packet's size.
const HEADER: usize = 16;

/// IP and UDP header bytes in front of the payload.
fn overhead(v6: bool) -> u32 {
    if v6 {
        48
    } else {
        28
    }
}

/// The smallest MTU a path may have (RFC 791's 576 is what every IPv4 host must take, RFC
/// 8200's 1280 for IPv6); probing starts no lower.
fn floor(v6: bool) -> u32 {
    if v6 {
        1280
    } else {
        576
    }
}

/// What one rank found towards its partner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    pub local_mtu: u32,
    pub interface: Option<String>,
    pub path_mtu: Option<u32>,
    pub probes: u32,
}

/// A UDP socket that echoes the partner's probes.
pub(crate) fn echo_socket(peer: IpAddr) -> std::io::Result<UdpSocket> {
    let any: SocketAddr = if peer.is_ipv6() {
        "[::]:0".parse()
    } else {
        "0.0.0.0:0".parse()
    }
    .map_err(|e| std::io::Error::new(ErrorKind::InvalidInput, e))?;
    UdpSocket::bind(any)
}

/// Echoes every probe that carries `tag` and comes from `peer` until `stop` is set: the reply
/// is the probe's header with the size it arrived with.
pub(crate) fn echo(sock: &UdpSocket, tag: u64, peer: IpAddr, stop: &AtomicBool) {
    let _ = sock.set_read_timeout(Some(ECHO_POLL));
    let mut buf = vec![0u8; 65536];
    let v6 = peer.is_ipv6();
    while !stop.load(Ordering::Relaxed) {
        let Ok((n, from)) = sock.recv_from(&mut buf) else {
            continue;
        };
        if from.ip() != peer || n < HEADER || buf[..8] != tag.to_be_bytes() {
            continue;
        }
        let size = u32::try_from(n).unwrap_or(u32::MAX) + overhead(v6);
        let mut reply = [0u8; HEADER];
        reply[..12].copy_from_slice(&buf[..12]);
        reply[12..].copy_from_slice(&size.to_be_bytes());
        let _ = sock.send_to(&reply, from);
    }
}

/// Probes the path to `peer` (its echo socket), whose echoes carry `tag`. `None` when no
/// socket could be set up for it (the reason is logged): the matrix goes on without the MTU.
pub(crate) fn probe(peer: SocketAddr, tag: u64) -> Option<Found> {
    let v6 = peer.is_ipv6();
    let sock = echo_socket(peer.ip())
        .and_then(|s| s.connect(peer).map(|()| s))
        .and_then(|s| sockinfo::probe_mode(&s, v6).map(|()| s));
    let sock = match sock {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("path MTU probe to {peer}: {e}");
            return None;
        }
    };
    let local_mtu = sockinfo::route_mtu(&sock, v6).unwrap_or(1500);
    let interface = sock
        .local_addr()
        .ok()
        .and_then(|a| sockinfo::interface_of(a.ip()));
    let mut p = Prober {
        sock,
        tag,
        v6,
        seq: 0,
        sent: BTreeMap::new(),
        probes: 0,
    };
    let path_mtu = p.search(local_mtu);
    Some(Found {
        local_mtu,
        interface,
        path_mtu,
        probes: p.probes,
    })
}

struct Prober {
    sock: UdpSocket,
    tag: u64,
    v6: bool,
    seq: u32,
    /// Size of each probe sent, by sequence number.
    sent: BTreeMap<u32, u32>,
    probes: u32,
}

impl Prober {
    /// The largest size echoed, searching from `top` (the route's MTU) down.
    fn search(&mut self, top: u32) -> Option<u32> {
        let low = floor(self.v6).min(top);
        if self.batch(&[top], COPIES).contains(&top) || self.batch(&[top], CONFIRM).contains(&top) {
            return Some(top);
        }
        // `ok` passed, `bad` did not: the answer lies in [ok, bad).
        let mut ok: Option<u32> = None;
        let mut bad = top;
        for batch in 0..BATCHES {
            let from = ok.map_or(low, |o| o + 1);
            if from >= bad {
                break;
            }
            let mut sizes = spread(from, bad - 1, PER_BATCH);
            if batch == 0 {
                sizes.extend(
                    COMMON
                        .iter()
                        .flat_map(|&c| [c, c + 1])
                        .filter(|&c| c >= from && c < bad),
                );
                sizes.sort_unstable();
                sizes.dedup();
            }
            let echoed = self.batch(&sizes, COPIES);
            if let Some(&best) = echoed.iter().max() {
                ok = Some(ok.map_or(best, |o| o.max(best)));
            }
            let floor_ok = ok.unwrap_or(0);
            if let Some(&lost) = sizes
                .iter()
                .filter(|s| **s > floor_ok && !echoed.contains(s))
                .min()
            {
                bad = bad.min(lost);
            }
            if ok.is_none() && echoed.is_empty() && from == low {
                // Not even the smallest packet came back: the peer is unreachable over UDP,
                // which says nothing about the MTU.
                return None;
            }
            if ok.is_some_and(|o| bad - o <= 1) {
                break;
            }
        }
        ok
    }

    /// Sends each size `copies` times and returns the sizes echoed within one window.
    fn batch(&mut self, sizes: &[u32], copies: u32) -> Vec<u32> {
        let over = overhead(self.v6);
        for _ in 0..copies {
            for &size in sizes {
                let len = (size.saturating_sub(over) as usize).max(HEADER);
                let mut d = vec![0u8; len];
                d[..8].copy_from_slice(&self.tag.to_be_bytes());
                d[8..12].copy_from_slice(&self.seq.to_be_bytes());
                d[12..16].copy_from_slice(&size.to_be_bytes());
                self.sent.insert(self.seq, size);
                self.seq = self.seq.wrapping_add(1);
                self.probes += 1;
                // EMSGSIZE (above the route's MTU) and refusals count as lost probes.
                let _ = self.sock.send(&d);
            }
        }
        let mut echoed: Vec<u32> = Vec::new();
        let until = Instant::now() + WINDOW;
        let mut buf = [0u8; 64];
        while echoed.len() < sizes.len() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            let _ = self.sock.set_read_timeout(Some(left));
            let n = match self.sock.recv(&mut buf) {
                Ok(n) => n,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => break,
                // An ICMP error (port unreachable, fragmentation needed) surfaces here: the
                // probe it answers is lost; keep listening for the others.
                Err(_) => continue,
            };
            if n < HEADER || buf[..8] != self.tag.to_be_bytes() {
                continue;
            }
            let seq = u32::from_be_bytes([buf[8], buf[9], buf[10], buf[11]]);
            let arrived = u32::from_be_bytes([buf[12], buf[13], buf[14], buf[15]]);
            if let Some(&size) = self.sent.get(&seq) {
                // The echo says the size it arrived with; a shorter one was cut on the way.
                if arrived >= size && sizes.contains(&size) && !echoed.contains(&size) {
                    echoed.push(size);
                }
            }
        }
        echoed
    }
}

/// `n` sizes from `lo` to `hi` inclusive, evenly spaced, `hi` always among them.
fn spread(lo: u32, hi: u32, n: u32) -> Vec<u32> {
    if hi <= lo || n <= 1 {
        return vec![hi.max(lo)];
    }
    let span = hi - lo;
    let steps = n.min(span + 1);
    let mut v: Vec<u32> = (0..steps)
        .map(|i| lo + (u64::from(span) * u64::from(i) / u64::from(steps - 1)) as u32)
        .collect();
    v.dedup();
    v
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::sync::Arc;

    #[test]
    fn loopback_echoes_its_full_mtu_at_once() {
        let sock = echo_socket("127.0.0.1".parse().unwrap()).unwrap();
        let port = sock.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = Arc::clone(&stop);
        let h = std::thread::spawn(move || echo(&sock, 42, "127.0.0.1".parse().unwrap(), &s2));
        let found = probe(SocketAddr::from(([127, 0, 0, 1], port)), 42).unwrap();
        stop.store(true, Ordering::Relaxed);
        h.join().unwrap();
        assert_eq!(found.path_mtu, Some(found.local_mtu), "{found:?}");
        assert_eq!(found.probes, COPIES);
        assert_eq!(found.interface.as_deref(), Some("lo"));
    }

    #[test]
    fn full_size_probes_lost_by_chance_are_loss_not_a_smaller_mtu() {
        // An echo that loses the first copies of the full-size probe, as a host dropping a few
        // percent of what it sends now and then does.
        let sock = echo_socket("127.0.0.1".parse().unwrap()).unwrap();
        let port = sock.local_addr().unwrap().port();
        let relay = UdpSocket::bind("127.0.0.1:0").unwrap();
        let relay_addr = relay.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = Arc::clone(&stop);
        let h = std::thread::spawn(move || {
            relay.set_read_timeout(Some(ECHO_POLL)).unwrap();
            let mut buf = vec![0u8; 65536];
            let mut seen = 0;
            let mut prober = None;
            while !s2.load(Ordering::Relaxed) {
                let Ok((n, from)) = relay.recv_from(&mut buf) else {
                    continue;
                };
                if from.port() == port {
                    // An echo: back to the prober.
                    if let Some(p) = prober {
                        let _ = relay.send_to(&buf[..n], p);
                    }
                    continue;
                }
                prober = Some(from);
                seen += 1;
                if seen > COPIES {
                    let _ = relay.send_to(&buf[..n], SocketAddr::from(([127, 0, 0, 1], port)));
                }
            }
        });
        let stop_echo = Arc::new(AtomicBool::new(false));
        let s3 = Arc::clone(&stop_echo);
        let e = std::thread::spawn(move || echo(&sock, 9, "127.0.0.1".parse().unwrap(), &s3));
        let found = probe(relay_addr, 9).unwrap();
        stop.store(true, Ordering::Relaxed);
        stop_echo.store(true, Ordering::Relaxed);
        h.join().unwrap();
        e.join().unwrap();
        assert_eq!(found.path_mtu, Some(found.local_mtu), "{found:?}");
        assert_eq!(found.probes, COPIES + CONFIRM);
    }

    #[test]
    fn nobody_echoing_means_no_mtu_rather_than_a_small_one() {
        // A bound socket that never answers: every probe is lost.
        let mute = UdpSocket::bind("127.0.0.1:0").unwrap();
        let t0 = Instant::now();
        let found = probe(mute.local_addr().unwrap(), 7).unwrap();
        assert_eq!(found.path_mtu, None, "{found:?}");
        // The full-size probe's window and one batch from the floor.
        assert!(t0.elapsed() < WINDOW * 4, "{:?}", t0.elapsed());
    }

    #[test]
    fn a_wrong_tag_is_not_echoed() {
        let sock = echo_socket("127.0.0.1".parse().unwrap()).unwrap();
        let port = sock.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = Arc::clone(&stop);
        let h = std::thread::spawn(move || echo(&sock, 1, "127.0.0.1".parse().unwrap(), &s2));
        let found = probe(SocketAddr::from(([127, 0, 0, 1], port)), 2).unwrap();
        stop.store(true, Ordering::Relaxed);
        h.join().unwrap();
        assert_eq!(found.path_mtu, None);
    }

    #[test]
    fn spread_covers_both_ends() {
        assert_eq!(spread(576, 1499, 12).first(), Some(&576));
        assert_eq!(spread(576, 1499, 12).last(), Some(&1499));
        assert_eq!(spread(576, 1499, 12).len(), 12);
        assert_eq!(spread(1400, 1403, 12), vec![1400, 1401, 1402, 1403]);
        assert_eq!(spread(9000, 9000, 12), vec![9000]);
    }

    proptest! {
        #[test]
        fn spread_is_sorted_and_inside(lo in 0u32..70000, span in 0u32..70000, n in 0u32..40) {
            let hi = lo.saturating_add(span);
            let v = spread(lo, hi, n);
            prop_assert!(!v.is_empty());
            prop_assert!(v.windows(2).all(|w| w[0] < w[1]));
            prop_assert!(v.iter().all(|&s| s >= lo && s <= hi));
            prop_assert_eq!(*v.last().unwrap(), hi);
        }
    }
}
