//! A planned NCCL environment: the `KEY=VALUE` lines of an env file or a process environment.

use std::collections::{BTreeMap, BTreeSet};

/// Variables a job will run with. Only names starting with `NCCL_`, `OFI_NCCL_` (either in
/// any case, so that a misspelt case is seen), `FI_`, `RDMAV_` and `UCX_` are kept: fabrik
/// judges fabric settings and never records anything else.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlannedEnv {
    /// Where the values came from (`env-file:jobs/env.sh`, `process environment`).
    pub source: String,
    /// `NAME` to value, kept prefixes only.
    pub vars: BTreeMap<String, String>,
    /// Names of other families within a few edits of a variable NCCL reads
    /// (`CCL_NET_GDR_LEVEL`, the N of NCCL lost): kept by name, never with their value.
    pub misspelt_names: BTreeSet<String>,
}

const KEPT_PREFIXES: [&str; 4] = ["NCCL_", "FI_", "RDMAV_", "UCX_"];

fn kept(key: &str) -> bool {
    KEPT_PREFIXES.iter().any(|p| key.starts_with(p)) || fabrik_nccl::vars::is_checked_family(key)
}

impl PlannedEnv {
    /// Parses env-file text: `KEY=VALUE`, optional `export `, `#` comments, blank lines, values
    /// in single or double quotes. Lines that are not assignments are ignored.
    pub fn parse(source: impl Into<String>, text: &str) -> Self {
        let mut vars = BTreeMap::new();
        let mut misspelt = BTreeSet::new();
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
            } else if misspelt_into_nccl(key) {
                misspelt.insert(key.to_string());
            }
        }
        PlannedEnv {
            source: source.into(),
            vars,
            misspelt_names: misspelt,
        }
    }

    /// This process's own environment (`fabrik doctor --env`).
    pub fn from_process() -> Self {
        Self::from_pairs(
            "process environment",
            std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))),
        )
    }

    /// The kept pairs of `pairs` (a process environment, a parsed file), from `source`.
    pub fn from_pairs<I, K, V>(source: impl Into<String>, pairs: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        let mut vars = BTreeMap::new();
        let mut misspelt_names = BTreeSet::new();
        for (k, v) in pairs.into_iter().map(|(k, v)| (k.into(), v.into())) {
            if kept(&k) {
                vars.insert(k, v);
            } else if misspelt_into_nccl(&k) {
                misspelt_names.insert(k);
            }
        }
        PlannedEnv {
            source: source.into(),
            vars,
            misspelt_names,
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

/// A name of another family a misspelling away from an NCCL variable: only names long enough
/// to mean something are looked at (short ones are a few edits from anything).
fn misspelt_into_nccl(key: &str) -> bool {
    key.len() >= 8 && fabrik_nccl::vars::misspells_into_family(key).is_some()
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
        assert!(e.misspelt_names.is_empty());
        // NERSC/podman-hpc#136: the N of NCCL lost. The name is kept, its value is not.
        let e = PlannedEnv::parse(
            "t",
            "CCL_NET_GDR_LEVEL=PHB\nnccl_ib_hca=mlx5\nSECRET_TOKEN=x\n",
        );
        assert_eq!(
            e.misspelt_names.iter().collect::<Vec<_>>(),
            ["CCL_NET_GDR_LEVEL"]
        );
        assert_eq!(e.get("nccl_ib_hca"), Some("mlx5"));
        assert_eq!(e.vars.len(), 1);
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
