//! What the kernel knows about a socket that the standard library does not say: a TCP
//! connection's segment and retransmission counts (`TCP_INFO`), the MTU of a UDP socket's route
//! (`IP_MTU`, `IPV6_MTU`), sending with don't-fragment set regardless of what the kernel learnt
//! of the path (`IP_PMTUDISC_PROBE`), and which interface holds a local address.
//!
//! Neither std nor socket2 exposes `TCP_INFO` or the MTU options, and nix covers only `IP_MTU`;
//! these are thin `getsockopt`/`setsockopt` calls on the socket's own descriptor.

use std::net::{IpAddr, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;

/// A TCP connection's counts since it opened: data segments sent and segments retransmitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TcpCounts {
    /// `tcpi_data_segs_out` (Linux 4.6+), else `tcpi_segs_out`, else `None` (older kernels
    /// give only the retransmissions).
    pub sent: Option<u64>,
    /// `tcpi_total_retrans`.
    pub retransmitted: u64,
    /// `tcpi_dsack_dups` (Linux 5.0+): segments the receiver reported, with D-SACK, that it
    /// already had: retransmissions that were not needed (a delayed acknowledgement taken for
    /// a loss), not packets lost.
    pub duplicates: Option<u64>,
}

/// `TCP_INFO` of `s`; `None` when the kernel does not answer (not Linux, not TCP).
pub(crate) fn tcp_counts(s: &TcpStream) -> Option<TcpCounts> {
    // SAFETY: `tcp_info` is plain old data, valid when zeroed.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: the pointer and length describe `info`, which lives across the call; the kernel
    // writes at most `len` bytes and sets `len` to what it wrote.
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&raw mut info).cast::<libc::c_void>(),
            &mut len,
        )
    };
    if rc != 0 {
        return None;
    }
    let len = len as usize;
    // Older kernels write a shorter structure: a field is known only when it was written.
    let has = |offset: usize| len >= offset + std::mem::size_of::<u32>();
    let sent = if has(std::mem::offset_of!(libc::tcp_info, tcpi_data_segs_out)) {
        Some(u64::from(info.tcpi_data_segs_out))
    } else if has(std::mem::offset_of!(libc::tcp_info, tcpi_segs_out)) {
        Some(u64::from(info.tcpi_segs_out))
    } else {
        None
    };
    let duplicates = has(std::mem::offset_of!(libc::tcp_info, tcpi_dsack_dups))
        .then_some(u64::from(info.tcpi_dsack_dups));
    has(std::mem::offset_of!(libc::tcp_info, tcpi_total_retrans)).then_some(TcpCounts {
        sent,
        retransmitted: u64::from(info.tcpi_total_retrans),
        duplicates,
    })
}

fn getsockopt_int(s: &UdpSocket, level: libc::c_int, name: libc::c_int) -> Option<i32> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: the pointer and length describe `v`, which lives across the call.
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            level,
            name,
            (&raw mut v).cast::<libc::c_void>(),
            &mut len,
        )
    };
    (rc == 0).then_some(v)
}

fn setsockopt_int(
    s: &UdpSocket,
    level: libc::c_int,
    name: libc::c_int,
    v: libc::c_int,
) -> std::io::Result<()> {
    // SAFETY: the pointer and length describe `v`, which lives across the call.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            level,
            name,
            (&raw const v).cast::<libc::c_void>(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Sets don't-fragment on every datagram `s` sends, without the kernel's path MTU cache
/// capping the size (`IP_PMTUDISC_PROBE`): a datagram up to the interface MTU leaves, and
/// whether it arrives is what the probe learns.
pub(crate) fn probe_mode(s: &UdpSocket, v6: bool) -> std::io::Result<()> {
    if v6 {
        setsockopt_int(
            s,
            libc::IPPROTO_IPV6,
            libc::IPV6_MTU_DISCOVER,
            libc::IPV6_PMTUDISC_PROBE,
        )
    } else {
        setsockopt_int(
            s,
            libc::IPPROTO_IP,
            libc::IP_MTU_DISCOVER,
            libc::IP_PMTUDISC_PROBE,
        )
    }
}

/// The MTU of a connected UDP socket's route (the interface's, unless the kernel learnt a
/// smaller path MTU).
pub(crate) fn route_mtu(s: &UdpSocket, v6: bool) -> Option<u32> {
    let v = if v6 {
        getsockopt_int(s, libc::IPPROTO_IPV6, libc::IPV6_MTU)
    } else {
        getsockopt_int(s, libc::IPPROTO_IP, libc::IP_MTU)
    }?;
    u32::try_from(v).ok().filter(|&m| m > 0)
}

/// The interface that holds `ip`, by name; `None` when no interface does (or the list cannot
/// be read).
pub(crate) fn interface_of(ip: IpAddr) -> Option<String> {
    nix::ifaddrs::getifaddrs().ok()?.find_map(|a| {
        let addr = a.address?;
        let found: Option<IpAddr> = if let Some(v4) = addr.as_sockaddr_in() {
            Some(IpAddr::V4(v4.ip()))
        } else {
            addr.as_sockaddr_in6().map(|v6| IpAddr::V6(v6.ip()))
        };
        (found == Some(ip)).then_some(a.interface_name)
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn a_loopback_connection_counts_its_segments() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let h = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut buf = vec![0u8; 1 << 20];
            s.read_exact(&mut buf).unwrap();
        });
        let mut c = TcpStream::connect(addr).unwrap();
        let before = tcp_counts(&c).unwrap();
        c.write_all(&vec![7u8; 1 << 20]).unwrap();
        h.join().unwrap();
        let after = tcp_counts(&c).unwrap();
        // A mebibyte over loopback is at least 16 segments of 64 KiB, and nothing is lost.
        assert!(
            after.sent.unwrap() >= before.sent.unwrap() + 16,
            "{after:?}"
        );
        assert_eq!(after.retransmitted, 0);
    }

    #[test]
    fn loopback_has_an_mtu_and_a_name() {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        s.connect("127.0.0.1:9").unwrap();
        probe_mode(&s, false).unwrap();
        // Loopback's MTU is 65536 on Linux; any positive value will do here.
        assert!(route_mtu(&s, false).unwrap() >= 1280);
        assert_eq!(
            interface_of("127.0.0.1".parse().unwrap()).as_deref(),
            Some("lo")
        );
        assert_eq!(interface_of("192.0.2.77".parse().unwrap()), None);
    }
}
