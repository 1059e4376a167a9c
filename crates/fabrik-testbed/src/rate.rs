//! tc rate strings, to size the tbf bucket.

/// Bits per second of a tc rate (`100mbit`, `2gbit`, `500kbit`, `1000000bit`, `10mbps` =
/// megabytes per second as tc reads it), or `None`.
pub fn parse_rate(text: &str) -> Option<u64> {
    let t = text.trim().to_ascii_lowercase();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().ok()?;
    let mult = match unit {
        "bit" => 1.0,
        "kbit" => 1e3,
        "mbit" => 1e6,
        "gbit" => 1e9,
        "tbit" => 1e12,
        "bps" => 8.0,
        "kbps" => 8e3,
        "mbps" => 8e6,
        "gbps" => 8e9,
        _ => return None,
    };
    let bps = n * mult;
    (bps.is_finite() && bps >= 1.0).then_some(bps as u64)
}

/// The tbf bucket: at least 10 ms of traffic (the kernel refills per tick; HZ can be 100) and at
/// least two 64 KiB GSO super-packets, which veth hands to the qdisc whole.
pub fn burst_bytes(bps: u64) -> u64 {
    (bps / 8 / 100).max(128 * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tc_rates_parse() {
        assert_eq!(parse_rate("100mbit"), Some(100_000_000));
        assert_eq!(parse_rate("2Gbit"), Some(2_000_000_000));
        assert_eq!(parse_rate("1.5gbit"), Some(1_500_000_000));
        assert_eq!(parse_rate("10mbps"), Some(80_000_000));
        assert_eq!(parse_rate("fast"), None);
        assert_eq!(parse_rate("100"), None);
        assert_eq!(parse_rate("mbit"), None);
    }

    proptest::proptest! {
        #[test]
        fn any_text_parses_or_is_refused(text in ".{0,24}") {
            let _ = parse_rate(&text);
        }

        #[test]
        fn mbit_rates_round_trip(n in 1u64..100_000) {
            proptest::prop_assert_eq!(parse_rate(&format!("{n}mbit")), Some(n * 1_000_000));
        }
    }

    #[test]
    fn bursts_cover_ten_ms_and_gso() {
        assert_eq!(burst_bytes(10_000_000_000), 12_500_000);
        assert_eq!(burst_bytes(1_000_000), 128 * 1024);
    }
}
