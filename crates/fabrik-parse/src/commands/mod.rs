//! Pasted command outputs: `nvidia-smi topo -m`, `ibstat`, `ibv_devinfo`, `show_gids`,
//! `ibdev2netdev`, `mlnx_qos`. One parser per format, used both by `fabrik parse <tool>` and by
//! the probe for the captures under `ROOT/fabrik/cmd/`. Each takes the text as users paste it
//! (with the command line or prompt, quoted, commented, cut at either end) and never panics;
//! what it cannot read it leaves out.

pub mod findings;
pub mod ibdev2netdev;
pub mod ibstat;
pub mod ibv_devinfo;
pub mod mlnx_qos;
pub mod show_gids;
pub mod topo;

/// Most text any of these tools prints for one node; longer input is cut (and said so).
pub const MAX_INPUT: usize = 16 << 20;

/// Removes what a paste puts before the tool's own text: Markdown/e-mail quotes (`> `), shell
/// or C comment markers (`# `, ` * `), in any nesting.
pub fn unquote(line: &str) -> &str {
    let mut t = line;
    for _ in 0..4 {
        let s = t.trim_start();
        let next = if let Some(r) = s.strip_prefix('>') {
            r
        } else if let Some(r) = s.strip_prefix("# ").or_else(|| s.strip_prefix("#\t")) {
            r
        } else if s == "#" || s == "*" {
            ""
        } else if let Some(r) = s.strip_prefix("* ").or_else(|| s.strip_prefix("*\t")) {
            r
        } else {
            return t;
        };
        t = next;
    }
    t
}

/// The value of a `Key: value` line up to a trailing shell comment (`Active # note`).
pub(crate) fn value_word(v: &str) -> Option<&str> {
    let v = v.split(" #").next().unwrap_or(v);
    v.split_whitespace().next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_and_comment_markers() {
        assert_eq!(unquote("> GPU0\tX"), " GPU0\tX");
        assert_eq!(unquote(" * mlx5_0\t1\t3"), "mlx5_0\t1\t3");
        assert_eq!(unquote("# GPU0 X"), "GPU0 X");
        assert_eq!(unquote("CA 'mlx5_0'"), "CA 'mlx5_0'");
        assert_eq!(value_word(" Active # comment"), Some("Active"));
    }
}
