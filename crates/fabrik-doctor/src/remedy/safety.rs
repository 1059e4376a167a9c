//! Refusing a [`Change`] whose names or values could be read as syntax by a shell, udev,
//! systemd or a path.

use super::*;

/// Why a change cannot be written into a command, a file name, a udev rule or a unit file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} `{}` holds characters fabrik does not write into commands or configuration files", .value.escape_debug())]
pub struct Unsafe {
    /// Which field.
    pub what: &'static str,
    /// Its value.
    pub value: String,
}

/// A name (netdev, module, PCI address, firmware key) fabrik writes into file names, udev rules
/// and unit files: Linux netdev names are at most 15 bytes without `/`, whitespace or `:`
/// (`dev_valid_name`), module names are identifiers, PCI addresses hex with `:` and `.`.
fn name_ok(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s != "."
        && s != ".."
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-:@+".contains(c))
}

fn value_ok(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
}

impl Change {
    /// Refuses a change whose names or values could be read as syntax by a shell, udev,
    /// systemd or a path: only the plain characters real names use pass.
    pub fn check(&self) -> Result<(), Unsafe> {
        let bad = |what: &'static str, value: &str| Unsafe {
            what,
            value: value.to_string(),
        };
        let name = |what, v: &str| {
            if name_ok(v) {
                Ok(())
            } else {
                Err(bad(what, v))
            }
        };
        let value = |what, v: &str| {
            if value_ok(v) {
                Ok(())
            } else {
                Err(bad(what, v))
            }
        };
        match self {
            Change::Mtu { netdev, .. } => name("netdev", netdev),
            Change::Sysctl { key, value: v } => {
                if !(key.starts_with("net.")
                    && key
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._".contains(c)))
                {
                    return Err(bad("sysctl", key));
                }
                // A vector sysctl (`tcp_rmem`: min default max) is numbers and single spaces.
                let numbers = v.len() <= 64
                    && v.split(' ')
                        .all(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_digit()));
                if numbers {
                    Ok(())
                } else {
                    value("sysctl value", v)
                }
            }
            Change::Module { name: m } => {
                if m.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !m.is_empty() {
                    Ok(())
                } else {
                    Err(bad("module", m))
                }
            }
            Change::NetdevAttr {
                netdev,
                attr,
                value: v,
            } => {
                name("netdev", netdev)?;
                let parts: Vec<&str> = attr.split('/').collect();
                let ok = matches!(parts.as_slice(), ["ecn", "roce_np" | "roce_rp", "enable", p] if p.len() == 1 && p.as_bytes()[0].is_ascii_digit() && p.as_bytes()[0] < b'8');
                if !ok {
                    return Err(bad("attribute", attr));
                }
                value("value", v)
            }
            Change::Memlock => Ok(()),
            Change::Qos { netdev, pfc, trust } => {
                name("netdev", netdev)?;
                if pfc.iter().any(|p| *p > 7) || !matches!(trust.as_str(), "dscp" | "pcp") {
                    return Err(bad("trust", trust));
                }
                Ok(())
            }
            Change::AcsOff { bridge } => name("PCI address", bridge),
            Change::Firmware {
                device,
                key,
                value: v,
            } => {
                name("PCI address", device)?;
                value("firmware setting", key)?;
                value("firmware value", v)
            }
        }
    }
}
