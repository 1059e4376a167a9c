//! Message sizes as the benchmark tools write them: the one parser of `64K`-style byte counts
//! and the one size sweep, shared by `bench p2p`, `bench collective` and the pair matrix.

/// A text that is not a byte count.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a size in bytes (e.g. 8, 64K, 32M, 1G)")]
pub struct SizeError {
    /// The text as given.
    pub text: String,
}

/// A byte count: digits with an optional suffix K, M, G or T (powers of 1024, as perftest and
/// nccl-tests read them) or B (bytes), in either case. `64K` is 65536.
pub fn parse_bytes(text: &str) -> Result<u64, SizeError> {
    let t = text.trim();
    let bad = || SizeError {
        text: text.to_string(),
    };
    let (digits, mult) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m: u64 = match c.to_ascii_uppercase() {
                'K' => 1 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                'T' => 1 << 40,
                'B' => 1,
                _ => return Err(bad()),
            };
            (&t[..i], m)
        }
        _ => (t, 1),
    };
    let v: u64 = digits.trim().parse().map_err(|_| bad())?;
    v.checked_mul(mult).ok_or_else(bad)
}

/// Sizes from `min` to `max`: multiplied by `factor` (nccl-tests `-f`, perftest `-a`'s
/// doubling), or stepped by `increment` bytes (nccl-tests `-i`) when given. Never more than
/// 100,000 sizes; a step past the largest u64 ends the sweep.
pub fn sweep(min: u64, max: u64, factor: u64, increment: Option<u64>) -> Vec<u64> {
    let mut out = Vec::new();
    let mut s = min.max(1);
    while s <= max && out.len() < 100_000 {
        out.push(s);
        let next = match increment {
            Some(i) if i > 0 => s.checked_add(i),
            _ if factor > 1 => s.checked_mul(factor),
            _ => None,
        };
        match next {
            Some(n) => s = n,
            None => break,
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_binary_suffixes_in_either_case() {
        assert_eq!(parse_bytes("8"), Ok(8));
        assert_eq!(parse_bytes("64K"), Ok(65536));
        assert_eq!(parse_bytes("8m"), Ok(8 << 20));
        assert_eq!(parse_bytes("1g"), Ok(1 << 30));
        assert_eq!(parse_bytes("2T"), Ok(2 << 40));
        assert_eq!(parse_bytes("512B"), Ok(512));
        assert_eq!(parse_bytes(" 4 K "), Ok(4096));
    }

    #[test]
    fn what_is_not_a_size_is_refused() {
        for bad in [
            "",
            "K",
            "12X",
            "-1",
            "1.5M",
            "99999999999999999999T",
            "16777216T",
        ] {
            assert!(parse_bytes(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_bytes("12X").unwrap_err().to_string(),
            "\"12X\" is not a size in bytes (e.g. 8, 64K, 32M, 1G)"
        );
    }

    #[test]
    fn sweeps_multiply_or_step_and_end_at_the_top() {
        assert_eq!(sweep(2, 16, 2, None), [2, 4, 8, 16]);
        assert_eq!(sweep(8, 100, 4, None), [8, 32]);
        assert_eq!(sweep(0, 3, 2, None), [1, 2]);
        assert_eq!(sweep(10, 40, 2, Some(10)), [10, 20, 30, 40]);
        assert_eq!(sweep(5, 5, 1, None), [5]);
        assert!(sweep(9, 8, 2, None).is_empty());
        let top = sweep(1 << 62, u64::MAX, 4, None);
        assert_eq!(top, [1 << 62], "a step past u64 ends the sweep");
    }
}
