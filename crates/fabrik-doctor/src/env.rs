//! A planned NCCL environment: the `KEY=VALUE` lines of an env file or a process environment.

use std::collections::BTreeMap;

/// Variables a job will run with. Only names starting with `NCCL_`, `FI_`, `RDMAV_` and
/// `UCX_` are kept: fabrik judges fabric settings and never records anything else.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlannedEnv {
    /// Where the values came from (`env-file:jobs/env.sh`, `process environment`).
    pub source: String,
    /// `NAME` to value, kept prefixes only.
    pub vars: BTreeMap<String, String>,
}

const KEPT_PREFIXES: [&str; 4] = ["NCCL_", "FI_", "RDMAV_", "UCX_"];

fn kept(key: &str) -> bool {
    KEPT_PREFIXES.iter().any(|p| key.starts_with(p))
}

impl PlannedEnv {
    /// Parses env-file text: `KEY=VALUE`, optional `export `, `#` comments, blank lines, values
    /// in single or double quotes. Lines that are not assignments are ignored.
    pub fn parse(source: impl Into<String>, text: &str) -> Self {
        let mut vars = BTreeMap::new();
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let line = line.strip_prefix("export ").unwrap_or(line).trim_start();
            let Some((key, value)) = line.split_once('=') else {
                continue;
            };
            let key = key.trim();
            if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                continue;
            }
            if kept(key) {
                vars.insert(key.to_string(), unquote(value.trim()).to_string());
            }
        }
        PlannedEnv {
            source: source.into(),
            vars,
        }
    }

    /// The kept pairs of `pairs` (a process environment, a parsed file), from `source`.
    pub fn from_pairs<I, K, V>(source: impl Into<String>, pairs: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        let vars = pairs
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .filter(|(k, _)| kept(k))
            .collect();
        PlannedEnv {
            source: source.into(),
            vars,
        }
    }

    /// A set, non-empty value. NCCL treats an empty variable as unset for most settings (for
    /// example `NCCL_IB_HCA=` in Alibaba's ACS P16EN guide).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.vars
            .get(key)
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
    }

    /// NCCL_SOCKET_IFNAME as NCCL honours it: `ncclFindInterfaces` ignores values of one
    /// character or less and falls back to its automatic choice.
    pub fn socket_ifname(&self) -> Option<&str> {
        self.get("NCCL_SOCKET_IFNAME").filter(|v| v.len() > 1)
    }

    /// NCCL reads integer parameters with `strtoll`; anything not an integer is left unjudged.
    pub fn int(&self, key: &str) -> Option<i64> {
        self.get(key).and_then(|v| v.parse().ok())
    }

    /// How findings cite variable `key` as evidence: `env:KEY`.
    pub fn evidence_path(key: &str) -> String {
        format!("env:{key}")
    }
}

fn unquote(v: &str) -> &str {
    for q in ['"', '\''] {
        if let Some(inner) = v.strip_prefix(q).and_then(|s| s.strip_suffix(q)) {
            return inner;
        }
    }
    v
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn env_files_parse_like_shell_assignments() {
        let e = PlannedEnv::parse(
            "t",
            "# ACS type 2\nexport NCCL_IB_DISABLE=1\nNCCL_SOCKET_IFNAME=\"eth0\"\nNCCL_IB_HCA=\nPATH=/bin\nnot a line\nFI_PROVIDER='efa'\n",
        );
        assert_eq!(e.get("NCCL_IB_DISABLE"), Some("1"));
        assert_eq!(e.int("NCCL_IB_DISABLE"), Some(1));
        assert_eq!(e.get("NCCL_SOCKET_IFNAME"), Some("eth0"));
        assert_eq!(e.get("NCCL_IB_HCA"), None);
        assert!(e.vars.contains_key("NCCL_IB_HCA"));
        assert_eq!(e.get("FI_PROVIDER"), Some("efa"));
        assert!(!e.vars.contains_key("PATH"));
        assert_eq!(e.socket_ifname(), Some("eth0"));
        assert_eq!(
            PlannedEnv::parse("t", "NCCL_SOCKET_IFNAME=^\n").socket_ifname(),
            None
        );
    }

    proptest! {
        #[test]
        fn parsing_never_panics(s in ".*") {
            let _ = PlannedEnv::parse("p", &s);
        }
    }
}
