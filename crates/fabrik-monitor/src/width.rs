//! Counter widths, for saturation.
//!
//! The IB PMA counters in `ports/N/counters/` do not wrap: IBA 16.1.3.5 says they "stop at all
//! ones". The kernel (drivers/infiniband/core/sysfs.c, `PORT_PMA_ATTR`) prints each at its PMA
//! width: `symbol_error` 16 bits, `link_error_recovery` and `link_downed` 8, `port_rcv_errors`,
//! `port_rcv_remote_physical_errors`, `port_rcv_switch_relay_errors`, `port_xmit_discards` and
//! `VL15_dropped` 16, the two constraint-error counters 8, `local_link_integrity_errors` and
//! `excessive_buffer_overrun_errors` 4, and `port_xmit_wait` 32.
//!
//! `port_xmit_data`, `port_rcv_data`, `port_xmit_packets` and `port_rcv_packets` are 32-bit in
//! PortCounters, but when the device's ClassPortInfo advertises extended width (mlx4, mlx5,
//! bnxt_re, qib, hfi1 all do) the kernel shows the 64-bit PortCountersExtended values under the
//! same names, plus the 64-bit `unicast_*`/`multicast_*` counters. A file alone cannot tell which;
//! so for these four, saturation is decided by a value stuck at 4294967295 across two samples
//! (a 64-bit counter passes that value once, in a blink), see [`is_saturated`].
//!
//! `hw_counters/*`, netdev statistics and ethtool counters are 64-bit and never saturate in
//! practice.

use crate::sample::Source;

/// How a counter reaches its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ceiling {
    /// A PMA counter of this many bits: at `2^bits - 1` it is saturated.
    Pma(u32),
    /// 32-bit in PortCounters, 64-bit in PortCountersExtended: saturated only when stuck at
    /// `u32::MAX`.
    DataMaybe32,
    /// 64-bit; no practical ceiling.
    Wide,
}

impl Ceiling {
    /// The largest value the counter can hold.
    pub fn max(self) -> u64 {
        match self {
            Ceiling::Pma(bits) if bits < 64 => (1u64 << bits) - 1,
            Ceiling::Pma(_) | Ceiling::Wide => u64::MAX,
            Ceiling::DataMaybe32 => u64::from(u32::MAX),
        }
    }
}

/// The width of counter `name` from `source`: only PMA `counters/` have narrow ones.
pub fn ceiling(source: Source, name: &str) -> Ceiling {
    if source != Source::Counters {
        return Ceiling::Wide;
    }
    match name {
        "local_link_integrity_errors" | "excessive_buffer_overrun_errors" => Ceiling::Pma(4),
        "link_error_recovery"
        | "link_downed"
        | "port_xmit_constraint_errors"
        | "port_rcv_constraint_errors" => Ceiling::Pma(8),
        "symbol_error"
        | "port_rcv_errors"
        | "port_rcv_remote_physical_errors"
        | "port_rcv_switch_relay_errors"
        | "port_xmit_discards"
        | "VL15_dropped" => Ceiling::Pma(16),
        "port_xmit_wait" => Ceiling::Pma(32),
        "port_xmit_data" | "port_rcv_data" | "port_xmit_packets" | "port_rcv_packets" => {
            Ceiling::DataMaybe32
        }
        _ => Ceiling::Wide,
    }
}

/// Whether a counter read `before` then `after` is saturated (stuck at its ceiling).
/// `before` is `None` for a single reading (the exporter), which for a data counter cannot
/// tell a 64-bit value passing through `u32::MAX` from a stuck one; it says so only for
/// counters whose width is certain.
pub fn is_saturated(source: Source, name: &str, before: Option<u64>, after: u64) -> bool {
    match ceiling(source, name) {
        Ceiling::Wide => false,
        c @ Ceiling::Pma(_) => after == c.max(),
        c @ Ceiling::DataMaybe32 => after == c.max() && before == Some(after),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_follow_the_kernel_table() {
        assert_eq!(ceiling(Source::Counters, "symbol_error").max(), 65535);
        assert_eq!(ceiling(Source::Counters, "link_downed").max(), 255);
        assert_eq!(
            ceiling(Source::Counters, "excessive_buffer_overrun_errors").max(),
            15
        );
        assert_eq!(
            ceiling(Source::Counters, "port_xmit_wait").max(),
            4294967295
        );
        assert_eq!(
            ceiling(Source::Counters, "unicast_xmit_packets"),
            Ceiling::Wide
        );
        assert_eq!(ceiling(Source::HwCounters, "link_downed"), Ceiling::Wide);
    }

    #[test]
    fn data_counters_saturate_only_when_stuck() {
        let m = u64::from(u32::MAX);
        assert!(!is_saturated(Source::Counters, "port_xmit_data", None, m));
        assert!(!is_saturated(
            Source::Counters,
            "port_xmit_data",
            Some(m - 5),
            m
        ));
        assert!(is_saturated(Source::Counters, "port_xmit_data", Some(m), m));
        assert!(is_saturated(Source::Counters, "symbol_error", None, 65535));
        assert!(!is_saturated(Source::Counters, "symbol_error", None, 65534));
    }
}
