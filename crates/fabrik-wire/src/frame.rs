//! Frames: a 4-byte big-endian length, then that many bytes. The length is checked against the
//! limit before anything is allocated, so a hostile or confused peer cannot make us reserve
//! gigabytes.

use std::io::{Read, Write};

use crate::WireError;

/// Writes one frame: a 4-byte big-endian length, then `payload`; a payload above `max` is
/// refused before anything is written. `peer` and `timeout_secs` name the errors.
pub fn write_frame<W: Write>(
    w: &mut W,
    payload: &[u8],
    max: u32,
    peer: &str,
    timeout_secs: f64,
) -> Result<(), WireError> {
    let len = u32::try_from(payload.len())
        .ok()
        .filter(|&l| l <= max)
        .ok_or_else(|| WireError::FrameTooLarge {
            peer: format!("(sending to {peer})"),
            len: payload.len() as u64,
            max,
        })?;
    let io = |e| WireError::from_io(peer, e, timeout_secs);
    w.write_all(&len.to_be_bytes()).map_err(io)?;
    w.write_all(payload).map_err(io)?;
    w.flush().map_err(io)
}

/// Reads one frame; a length prefix above `max` is refused before anything is allocated.
pub fn read_frame<R: Read>(
    r: &mut R,
    max: u32,
    peer: &str,
    timeout_secs: f64,
) -> Result<Vec<u8>, WireError> {
    let io = |e| WireError::from_io(peer, e, timeout_secs);
    let mut header = [0u8; 4];
    r.read_exact(&mut header).map_err(io)?;
    let len = u32::from_be_bytes(header);
    if len > max {
        return Err(WireError::FrameTooLarge {
            peer: peer.to_string(),
            len: u64::from(len),
            max,
        });
    }
    let mut payload = vec![0u8; len as usize];
    r.read_exact(&mut payload).map_err(io)?;
    Ok(payload)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn round_trip() {
        let mut buf = Vec::new();
        assert!(write_frame(&mut buf, b"hello", 64, "p", 1.0).is_ok());
        let got = read_frame(&mut buf.as_slice(), 64, "p", 1.0);
        assert_eq!(got.ok().as_deref(), Some(&b"hello"[..]));
    }

    #[test]
    fn oversized_length_is_refused_before_allocating() {
        let mut bytes = u32::MAX.to_be_bytes().to_vec();
        bytes.extend_from_slice(b"xx");
        match read_frame(&mut bytes.as_slice(), 1024, "peer-a", 1.0) {
            Err(WireError::FrameTooLarge { peer, len, max }) => {
                assert_eq!(
                    (peer.as_str(), len, max),
                    ("peer-a", u64::from(u32::MAX), 1024)
                );
            }
            other => panic!("expected FrameTooLarge, got {other:?}"),
        }
    }

    #[test]
    fn truncated_frame_is_a_closed_peer() {
        let bytes = [0u8, 0, 0, 10, 1, 2];
        assert!(matches!(
            read_frame(&mut &bytes[..], 1024, "p", 1.0),
            Err(WireError::Closed { .. })
        ));
    }

    #[test]
    fn writing_over_the_limit_fails() {
        let mut buf = Vec::new();
        assert!(matches!(
            write_frame(&mut buf, &[0u8; 10], 4, "p", 1.0),
            Err(WireError::FrameTooLarge { .. })
        ));
        assert!(buf.is_empty());
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = read_frame(&mut bytes.as_slice(), 128, "p", 1.0);
        }
    }
}
