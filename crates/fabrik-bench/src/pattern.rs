//! The payload pattern `--verify` checks: every message is a run of little-endian u64 words
//! counting up from a seed derived from (stream, message sequence), so any byte that is lost,
//! duplicated, reordered or flipped shows up at its exact offset, and filling costs about as much
//! as a memcpy.

/// The first word of message `seq` on `stream` (splitmix64 of the pair, so neighbouring messages
/// and streams never share a run of words).
pub fn seed(stream: u32, seq: u64) -> u64 {
    let mut z = (u64::from(stream) << 40 ^ seq).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Fills `buf` with the pattern of message `seq` on `stream`.
pub fn fill(buf: &mut [u8], stream: u32, seq: u64) {
    let base = seed(stream, seq);
    let mut chunks = buf.chunks_exact_mut(8);
    let mut word = base;
    for chunk in &mut chunks {
        chunk.copy_from_slice(&word.to_le_bytes());
        word = word.wrapping_add(1);
    }
    let tail = chunks.into_remainder();
    let n = tail.len();
    tail.copy_from_slice(&word.to_le_bytes()[..n]);
}

/// The offset of the first byte of `buf` that differs from the pattern, or `None`.
pub fn check(buf: &[u8], stream: u32, seq: u64) -> Option<usize> {
    let base = seed(stream, seq);
    let mut word = base;
    let mut chunks = buf.chunks_exact(8);
    for (i, chunk) in (&mut chunks).enumerate() {
        let want = word.to_le_bytes();
        if chunk != want {
            let j = chunk.iter().zip(want.iter()).position(|(a, b)| a != b);
            return Some(i * 8 + j.unwrap_or(0));
        }
        word = word.wrapping_add(1);
    }
    let tail = chunks.remainder();
    let want = word.to_le_bytes();
    let start = buf.len() - tail.len();
    tail.iter()
        .zip(want.iter())
        .position(|(a, b)| a != b)
        .map(|j| start + j)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_filled_message_checks_clean_and_a_flip_is_found_at_its_offset() {
        let mut buf = vec![0u8; 1000];
        fill(&mut buf, 3, 17);
        assert_eq!(check(&buf, 3, 17), None);
        buf[517] ^= 0x40;
        assert_eq!(check(&buf, 3, 17), Some(517));
    }

    #[test]
    fn another_stream_or_sequence_does_not_match() {
        let mut buf = vec![0u8; 64];
        fill(&mut buf, 1, 5);
        assert_eq!(check(&buf, 2, 5), Some(0));
        assert!(check(&buf, 1, 6).is_some());
    }

    proptest! {
        #[test]
        fn any_single_flip_is_found_exactly(len in 1usize..300, stream in 0u32..64, seq in any::<u64>(), at in any::<prop::sample::Index>(), bit in 0u8..8) {
            let mut buf = vec![0u8; len];
            fill(&mut buf, stream, seq);
            prop_assert_eq!(check(&buf, stream, seq), None);
            let i = at.index(len);
            buf[i] ^= 1 << bit;
            prop_assert_eq!(check(&buf, stream, seq), Some(i));
        }
    }
}
