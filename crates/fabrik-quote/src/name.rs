//! Names that can never be valid, refused before anything is rendered.
//!
//! Quoting makes any text safe as data; these checks are for names that are identifiers in
//! the world outside (a host, a job, a network interface, an RDMA device, an image): one that
//! holds a newline, a control character or shell syntax is not a name anyone has, it is an
//! attack or a mistake, and writing it quoted into a launch file would only move the failure
//! to the cluster. Each check says which character is wrong and what the name may hold.

use crate::{chars, Refused};

/// What a kind of name may hold.
struct Rule {
    what: &'static str,
    max_len: usize,
    allowed: fn(char) -> bool,
    holds: &'static str,
}

impl Rule {
    fn check<'a>(&self, s: &'a str) -> Result<&'a str, Refused> {
        let why = |reason: String| {
            Err(Refused::new(
                s,
                format!("is not {}: {reason} ({})", self.what, self.holds),
            ))
        };
        if s.is_empty() {
            return why("it is empty".into());
        }
        if let Some(c) = s.chars().find(|c| !(self.allowed)(*c)) {
            return why(format!("it contains {}", chars::describe(c)));
        }
        if s.starts_with('-') {
            // A leading '-' would be read as an option by the program it is handed to
            // (`mpirun`, `docker run`, `srun --nodelist`).
            return why("it starts with '-'".into());
        }
        if s.len() > self.max_len {
            return why(format!("it is longer than {} bytes", self.max_len));
        }
        Ok(s)
    }
}

/// A host name or address as `--hosts` and `--master-addr` take it: RFC 1123 labels (letters,
/// digits, `-`, and `_` as some clusters use), dots, and `:` for an IPv6 address; at most 253
/// bytes (RFC 1035's limit on a name).
pub fn host(s: &str) -> Result<&str, Refused> {
    Rule {
        what: "a host name",
        max_len: 253,
        allowed: |c| c.is_ascii_alphanumeric() || "-._:".contains(c),
        holds: "a host name holds letters, digits, '-', '_', '.' and ':'",
    }
    .check(s)
}

/// A job name (`#SBATCH --job-name`, Kubernetes object names are checked further by the
/// renderer): letters, digits and `_.+@%,:=-`, at most 128 bytes.
pub fn job(s: &str) -> Result<&str, Refused> {
    Rule {
        what: "a job name",
        max_len: 128,
        allowed: |c| c.is_ascii_alphanumeric() || "_.+@%,:=-".contains(c),
        holds: "a job name holds letters, digits and _.+@%,:=-",
    }
    .check(s)
}

/// A network interface name: what Linux's `dev_valid_name` accepts (under 16 bytes, no `/`,
/// `:` or whitespace) narrowed to the characters interfaces are given in practice (letters,
/// digits, `_`, `.`, `-`, `@`), so that no control character or shell syntax passes.
pub fn interface(s: &str) -> Result<&str, Refused> {
    if s == "." || s == ".." {
        return Err(Refused::new(s, "is not an interface name"));
    }
    Rule {
        what: "an interface name",
        max_len: 15,
        allowed: |c| c.is_ascii_alphanumeric() || "_.-@".contains(c),
        holds: "an interface name holds at most 15 letters, digits, '_', '.', '-' and '@'",
    }
    .check(s)
}

/// An RDMA device name (`mlx5_0`, `rocep1s0f0`, `efa_0`, `rxe0`): under 64 bytes (the
/// kernel's IB_DEVICE_NAME_MAX), letters, digits, `_`, `.` and `-`.
pub fn device(s: &str) -> Result<&str, Refused> {
    Rule {
        what: "an RDMA device name",
        max_len: 63,
        allowed: |c| c.is_ascii_alphanumeric() || "_.-".contains(c),
        holds: "an RDMA device name holds at most 63 letters, digits, '_', '.' and '-'",
    }
    .check(s)
}

/// A container image reference (`nvcr.io/nvidia/pytorch:24.04-py3`, `img@sha256:...`): the
/// characters of the distribution reference grammar, at most 1024 bytes.
pub fn image(s: &str) -> Result<&str, Refused> {
    Rule {
        what: "a container image reference",
        max_len: 1024,
        allowed: |c| c.is_ascii_alphanumeric() || "._-/:@+".contains(c),
        holds: "an image reference holds letters, digits and ._-/:@+",
    }
    .check(s)
}

/// A Kubernetes extended resource name (`rdma/hca_shared_devices_a`, `vpc.amazonaws.com/efa`):
/// a qualified name, at most 253 bytes.
pub fn resource(s: &str) -> Result<&str, Refused> {
    Rule {
        what: "a Kubernetes resource name",
        max_len: 253,
        allowed: |c| c.is_ascii_alphanumeric() || "._-/".contains(c),
        holds: "a resource name holds letters, digits and ._-/",
    }
    .check(s)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn real_names_pass() {
        for h in [
            "node-0",
            "gpu12.cluster.local",
            "10.0.0.1",
            "fe80::1",
            "n_1",
        ] {
            assert_eq!(host(h), Ok(h));
        }
        for j in ["train", "fabrik-job", "llama_70b.v2", "a=b"] {
            assert_eq!(job(j), Ok(j));
        }
        for i in [
            "eth0",
            "enp1s0f0np0",
            "ib0.8001",
            "bond0.100",
            "cali1234-ab",
            "lxc_health",
        ] {
            assert_eq!(interface(i), Ok(i));
        }
        for d in [
            "mlx5_0",
            "rocep1s0f0",
            "efa_0",
            "rxe0",
            "bnxt_re0",
            "irdma-x",
        ] {
            assert_eq!(device(d), Ok(d));
        }
        for i in [
            "nvcr.io/nvidia/pytorch:24.04-py3",
            "img@sha256:0123abcd",
            "localhost:5000/x",
        ] {
            assert_eq!(image(i), Ok(i));
        }
        assert_eq!(
            resource("vpc.amazonaws.com/efa"),
            Ok("vpc.amazonaws.com/efa")
        );
    }

    #[test]
    fn hostile_names_are_refused_and_the_message_says_why() {
        let e = host("x\ntouch PWNED").unwrap_err();
        assert_eq!(
            e.to_string(),
            "\"x\\ntouch PWNED\" is not a host name: it contains a newline (a host name holds letters, digits, '-', '_', '.' and ':')"
        );
        assert!(job("x;id").unwrap_err().to_string().contains("';'"));
        assert!(job("a b").unwrap_err().to_string().contains("a space"));
        assert!(interface("eth0\u{1b}[2J")
            .unwrap_err()
            .to_string()
            .contains("U+001B"));
        assert!(interface("0123456789abcdef").is_err());
        assert!(interface("..").is_err());
        assert!(host("-oProxyCommand=x").is_err());
        assert!(image("--privileged").is_err());
        assert!(device("mlx5_0\n").is_err());
        assert!(host("").is_err());
        assert!(host("a\u{2028}b").is_err());
        assert!(resource("a b").is_err());
    }
}
