//! Single-value sysfs attributes: decimal or hex numbers, `numa_node`.

use super::Format;

/// An unsigned decimal attribute (`mtu`, `current_link_width`, counters).
pub struct Decimal;

impl Format for Decimal {
    type Facts = u64;
    const EXPECTED: &'static str = "an unsigned decimal number";

    fn parse(text: &str) -> Option<u64> {
        text.trim().parse().ok()
    }
}

/// A numeric attribute that may be written in hex (`0x12`) or decimal.
pub struct DecimalOrHex;

impl Format for DecimalOrHex {
    type Facts = u64;
    const EXPECTED: &'static str = "an unsigned number, decimal or `0x` hex";

    fn parse(text: &str) -> Option<u64> {
        let t = text.trim();
        match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
            Some(hex) => u64::from_str_radix(hex, 16).ok(),
            None => t.parse().ok(),
        }
    }
}

/// `numa_node`: `-1` means the platform gave no NUMA information (`Some(None)`).
pub struct NumaNode;

impl Format for NumaNode {
    type Facts = Option<i32>;
    const EXPECTED: &'static str = "a NUMA node number or -1";

    fn parse(text: &str) -> Option<Option<i32>> {
        let v: i32 = text.trim().parse().ok()?;
        Some(if v < 0 { None } else { Some(v) })
    }
}

/// A sysctl of three numbers (`net.ipv4.tcp_rmem`: `4096 131072 6291456`).
pub struct SysctlTriple;

impl Format for SysctlTriple {
    type Facts = [u64; 3];
    const EXPECTED: &'static str = "three numbers (`4096 131072 6291456`)";

    fn parse(text: &str) -> Option<[u64; 3]> {
        let mut it = text.split_whitespace().map(|w| w.parse::<u64>().ok());
        let v = [it.next()??, it.next()??, it.next()??];
        it.next().is_none().then_some(v)
    }
}

#[cfg(test)]
mod triple_tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn three_numbers_as_the_kernel_prints_them() {
        // proc_dointvec_minmax's output for tcp_rmem: tab-separated, a newline at the end.
        assert_eq!(
            SysctlTriple::parse("4096\t131072\t6291456\n"),
            Some([4096, 131072, 6291456])
        );
        assert_eq!(SysctlTriple::parse("4096 8192"), None);
        assert_eq!(SysctlTriple::parse("1 2 3 4"), None);
        assert_eq!(SysctlTriple::parse("1 x 3"), None);
    }

    proptest! {
        #[test]
        fn never_panics(s in ".*") {
            let _ = SysctlTriple::parse(&s);
        }
    }
}
