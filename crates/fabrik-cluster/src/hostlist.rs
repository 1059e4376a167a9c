//! Slurm's compressed hostlist syntax (`node[01-04,07],gpu-a[1-2]`), expanded as
//! `scontrol show hostnames` does. Hand-written: no maintained crate parses it, and the grammar
//! is small (comma-separated items, each a name with zero or more bracketed range lists whose
//! zero padding is kept).

use crate::ClusterError;

/// Refuse to expand more names than this; a hostile or mistyped list must not eat memory.
pub const MAX_HOSTS: usize = 1 << 20;

/// Expands a Slurm hostlist into names, in order.
pub fn expand_hostlist(list: &str) -> Result<Vec<String>, ClusterError> {
    let bad = |why: &str| ClusterError::Hostlist {
        list: list.chars().take(200).collect(),
        why: why.to_string(),
    };
    let mut out = Vec::new();
    for item in split_top_level(list).map_err(&bad)? {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let names = expand_item(item).map_err(&bad)?;
        if out.len() + names.len() > MAX_HOSTS {
            return Err(bad("expands to too many hosts"));
        }
        out.extend(names);
    }
    Ok(out)
}

/// Splits at commas that are not inside brackets.
fn split_top_level(list: &str) -> Result<Vec<&str>, &'static str> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in list.char_indices() {
        match c {
            '[' => {
                if depth > 0 {
                    return Err("nested brackets");
                }
                depth += 1;
            }
            ']' => {
                if depth == 0 {
                    return Err("']' without '['");
                }
                depth -= 1;
            }
            ',' if depth == 0 => {
                parts.push(&list[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err("unclosed '['");
    }
    parts.push(&list[start..]);
    Ok(parts)
}

/// One item: literal text and bracket groups; the result is their cartesian product.
fn expand_item(item: &str) -> Result<Vec<String>, &'static str> {
    let mut names = vec![String::new()];
    let mut rest = item;
    while !rest.is_empty() {
        if let Some(open) = rest.find('[') {
            let (lit, tail) = rest.split_at(open);
            for n in &mut names {
                n.push_str(lit);
            }
            let close = tail.find(']').ok_or("unclosed '['")?;
            let ranges = expand_ranges(&tail[1..close])?;
            if names.len().saturating_mul(ranges.len()) > MAX_HOSTS {
                return Err("expands to too many hosts");
            }
            names = names
                .iter()
                .flat_map(|n| ranges.iter().map(move |r| format!("{n}{r}")))
                .collect();
            rest = &tail[close + 1..];
        } else {
            for n in &mut names {
                n.push_str(rest);
            }
            rest = "";
        }
    }
    Ok(names)
}

/// `01-04,07` → `01 02 03 04 07`, keeping the width of the lower bound as Slurm does.
fn expand_ranges(spec: &str) -> Result<Vec<String>, &'static str> {
    let mut out = Vec::new();
    for part in spec.split(',') {
        let part = part.trim();
        if part.is_empty() {
            return Err("empty range");
        }
        let (lo, hi) = match part.split_once('-') {
            Some((lo, hi)) => (lo, hi),
            None => (part, part),
        };
        if lo.is_empty() || !lo.bytes().all(|b| b.is_ascii_digit()) {
            return Err("range bound is not a number");
        }
        if hi.is_empty() || !hi.bytes().all(|b| b.is_ascii_digit()) {
            return Err("range bound is not a number");
        }
        let width = lo.len();
        let a: u64 = lo.parse().map_err(|_| "range bound too large")?;
        let b: u64 = hi.parse().map_err(|_| "range bound too large")?;
        if b < a {
            return Err("range runs backwards");
        }
        if (b - a) as usize >= MAX_HOSTS || out.len() + ((b - a) as usize) >= MAX_HOSTS {
            return Err("expands to too many hosts");
        }
        for v in a..=b {
            out.push(format!("{v:0width$}"));
        }
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn expands_ranges_lists_and_padding() {
        assert_eq!(
            expand_hostlist("node[01-04,07],gpu-a[1-2]").unwrap(),
            ["node01", "node02", "node03", "node04", "node07", "gpu-a1", "gpu-a2"]
        );
    }

    #[test]
    fn plain_names_and_several_groups() {
        assert_eq!(expand_hostlist("login1").unwrap(), ["login1"]);
        assert_eq!(
            expand_hostlist("r[1-2]n[08-09].ib").unwrap(),
            ["r1n08.ib", "r1n09.ib", "r2n08.ib", "r2n09.ib"]
        );
        assert_eq!(
            expand_hostlist("a,b[9-11],c").unwrap(),
            ["a", "b9", "b10", "b11", "c"]
        );
    }

    #[test]
    fn malformed_lists_are_errors() {
        for bad in [
            "n[1-",
            "n]1[",
            "n[4-2]",
            "n[a-b]",
            "n[1-2[3]]",
            "n[]",
            "n[1,,2]",
        ] {
            let e = expand_hostlist(bad).unwrap_err();
            assert!(
                matches!(&e, ClusterError::Hostlist { list, .. } if list == bad),
                "{bad}: {e}"
            );
        }
        for huge in ["n[0-99999999]", "a[0-999]b[0-999]c[0-999]"] {
            let e = expand_hostlist(huge).unwrap_err();
            assert!(
                matches!(&e, ClusterError::Hostlist { list, why } if list == huge && why == "expands to too many hosts"),
                "{huge}: {e}"
            );
        }
    }

    proptest! {
        #[test]
        fn never_panics(s in "[a-z0-9\\[\\],\\-]{0,40}") {
            let _ = expand_hostlist(&s);
        }

        #[test]
        fn any_text_never_panics(s in any::<String>()) {
            let _ = expand_hostlist(&s);
        }

        #[test]
        fn single_range_has_the_right_count(lo in 0u32..500, len in 0u32..50) {
            let hi = lo + len;
            let v = expand_hostlist(&format!("h[{lo}-{hi}]")).unwrap();
            prop_assert_eq!(v.len() as u32, len + 1);
            prop_assert_eq!(v[0].clone(), format!("h{lo}"));
        }
    }
}
