//! Small helpers shared by the rules: finding construction, sysfs paths, port and device facts.

use fabrik_model::{
    Evidence, Finding, LinkLayer, Node, PhysState, Port, PortState, RdmaDevice, Severity,
};

pub(crate) fn finding(
    rule: &str,
    severity: Severity,
    subject: impl Into<String>,
    message: impl Into<String>,
    evidence: Vec<Evidence>,
    fix: impl Into<String>,
) -> Finding {
    Finding {
        rule: rule.to_string(),
        severity,
        subject: subject.into(),
        message: message.into(),
        evidence,
        fix: fix.into(),
    }
}

/// The known names closest to `word` (case-insensitive edit distance), nearest first, at
/// most `n`: what an error says when a name is not known. Only names within half the word's
/// length are offered, and the closest always is.
pub(crate) fn nearest<'a>(
    word: &str,
    known: impl IntoIterator<Item = &'a str>,
    n: usize,
) -> Vec<&'a str> {
    let w = word.to_ascii_uppercase();
    let mut scored: Vec<(usize, &str)> = known
        .into_iter()
        .map(|k| (strsim::levenshtein(&w, &k.to_ascii_uppercase()), k))
        .collect();
    scored.sort();
    scored.dedup_by(|a, b| a.1 == b.1);
    let limit = (w.chars().count() / 2).max(1);
    let mut out: Vec<&str> = scored
        .iter()
        .take(n)
        .filter(|(d, _)| *d <= limit)
        .map(|(_, k)| *k)
        .collect();
    if out.is_empty() {
        out.extend(scored.first().map(|(_, k)| *k));
    }
    out
}

pub(crate) fn ev(path: impl Into<String>, value: impl Into<String>) -> Evidence {
    Evidence::new(path, value)
}

/// `mlx5_0:1`, the way NCCL names a device port (`NET/IB : Using [0]mlx5_0:1/IB`).
pub(crate) fn port_subject(dev: &RdmaDevice, port: &Port) -> String {
    format!("{}:{}", dev.name, port.number)
}

pub(crate) fn port_path(dev: &RdmaDevice, port: &Port, file: &str) -> String {
    format!(
        "/sys/class/infiniband/{}/ports/{}/{}",
        dev.name, port.number, file
    )
}

pub(crate) fn dev_path(dev: &RdmaDevice, file: &str) -> String {
    format!("/sys/class/infiniband/{}/{}", dev.name, file)
}

pub(crate) fn pci_path(address: &str, file: &str) -> String {
    format!("/sys/bus/pci/devices/{address}/{file}")
}

pub(crate) fn net_path(ifname: &str, file: &str) -> String {
    format!("/sys/class/net/{ifname}/{file}")
}

pub(crate) fn is_active(port: &Port) -> bool {
    matches!(
        port.state.as_ref().map(|s| s.port_state()),
        Some(PortState::Active) | Some(PortState::ActiveDefer)
    )
}

pub(crate) fn is_link_up(port: &Port) -> bool {
    matches!(
        port.phys_state.as_ref().map(|s| s.phys_state()),
        Some(PhysState::LinkUp)
    )
}

pub(crate) fn is_roce(port: &Port) -> bool {
    port.link_layer == Some(LinkLayer::Ethernet)
}

pub(crate) fn is_ib(port: &Port) -> bool {
    port.link_layer == Some(LinkLayer::Infiniband)
}

/// The driver family of a device: its PCI driver (`mlx5_core`, `efa`, `hfi1`) when known, else
/// the name without its instance number (`mlx5_3` → `mlx5`, `i40iw0` → `i40iw`). rdma-core's
/// persistent names (`rdmap115s0` for EFA, `ibp12s0`, `rocep1s0f0`, `iwp…`: type, then PCI bus and
/// slot) keep only their type prefix, so the bus number does not split one family.
pub(crate) fn device_family(dev: &RdmaDevice) -> String {
    if let Some(driver) = dev.pci.as_ref().and_then(|p| p.driver.as_deref()) {
        return driver.to_string();
    }
    for prefix in [
        "rdmap", "rdmas", "ibp", "ibs", "rocep", "roces", "iwp", "iws",
    ] {
        if dev
            .name
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
        {
            return prefix.to_string();
        }
    }
    let trimmed = dev.name.trim_end_matches(|c: char| c.is_ascii_digit());
    trimmed.strip_suffix('_').unwrap_or(trimmed).to_string()
}

/// The node's RDMA devices sorted by name, so that nothing depends on the order they were read.
pub(crate) fn devices(node: &Node) -> Vec<&RdmaDevice> {
    let mut v: Vec<&RdmaDevice> = node.rdma_devices.iter().collect();
    v.sort_by(|a, b| a.name.cmp(&b.name));
    v
}

/// The node's network interfaces sorted by name.
pub(crate) fn interfaces(node: &Node) -> Vec<&fabrik_model::NetInterface> {
    let mut v: Vec<_> = node.net_interfaces.iter().collect();
    v.sort_by(|a, b| a.name.cmp(&b.name));
    v
}

/// Hardware RDMA devices that NCCL's IB transport can use (not software, not EFA), by name.
pub(crate) fn verbs_hardware(node: &Node) -> impl Iterator<Item = &RdmaDevice> {
    devices(node)
        .into_iter()
        .filter(|d| !d.is_software() && !d.is_efa())
}

/// Every (device, port) pair of the node, by device name and port number.
pub(crate) fn all_ports(node: &Node) -> impl Iterator<Item = (&RdmaDevice, &Port)> {
    devices(node).into_iter().flat_map(|d| {
        let mut ports: Vec<&Port> = d.ports.iter().collect();
        ports.sort_by_key(|p| p.number);
        ports.into_iter().map(move |p| (d, p))
    })
}

/// Whether a healthy (ACTIVE and LinkUp) IB or RoCE port on real hardware is present: the
/// condition under which NCCL would use its IB transport rather than sockets.
pub(crate) fn has_healthy_verbs_port(node: &Node) -> bool {
    verbs_hardware(node).any(|d| {
        d.ports
            .iter()
            .any(|p| is_active(p) && is_link_up(p) && (is_ib(p) || is_roce(p)))
    })
}

/// The model of an HCA as far as sysfs tells it: ports of the same model can be compared. The
/// board id is part of it because one chip ships on different boards for different jobs (a
/// DGX's compute and storage ConnectX-7 share `MT4129` but not the board).
pub(crate) fn model_key(dev: &RdmaDevice) -> String {
    let chip = dev
        .hca_type
        .clone()
        .or_else(|| dev.pci.as_ref().and_then(|p| p.device.clone()));
    match (chip, &dev.board_id) {
        (Some(c), Some(b)) => format!("{c} ({b})"),
        (Some(c), None) => c,
        (None, Some(b)) => b.clone(),
        (None, None) => "unknown model".to_string(),
    }
}

/// IB lane speeds in increasing order; an unknown name ranks as `None`.
pub(crate) fn lane_speed_rank(speed: &str) -> Option<u8> {
    const ORDER: [&str; 9] = [
        "SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR", "NDR", "XDR",
    ];
    ORDER.iter().position(|s| *s == speed).map(|i| i as u8)
}

/// `6.1.0-26-amd64` → (6, 1). `None` for text that does not start with `MAJOR.MINOR`.
pub(crate) fn kernel_major_minor(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.trim().split(['.', '-']);
    let major = parts.next()?.parse().ok()?;
    let minor_text: String = parts
        .next()?
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    let minor = minor_text.parse().ok()?;
    Some((major, minor))
}

/// Whether probing reported `path` as missing or unreadable: the facts from it are unknown, not
/// absent.
pub(crate) fn unread(node: &Node, path: &str) -> bool {
    node.warnings.iter().any(|w| w.path == path)
}

pub(crate) fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("{n} {one}")
    } else {
        format!("{n} {many}")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn efa_by_name_driver_or_ids() {
        let mut d = crate::testkit::hca("rdmap115s0", "0000:73:00.0", 0, &[], vec![]);
        d.pci.as_mut().unwrap().driver = None;
        assert!(!d.is_efa());
        let pci = d.pci.as_mut().unwrap();
        pci.vendor = Some("0x1d0f".into());
        pci.device = Some("0xefa1".into());
        assert!(d.is_efa(), "p5's renamed EFA by its ids");
        let pci = d.pci.as_mut().unwrap();
        pci.device = Some("0xec20".into());
        assert!(!d.is_efa(), "ENA is no EFA");
        d.pci.as_mut().unwrap().driver = Some("efa".into());
        assert!(d.is_efa());
    }

    #[test]
    fn kernel_versions_parse_as_osrelease_writes_them() {
        assert_eq!(kernel_major_minor("6.1.0-26-amd64"), Some((6, 1)));
        assert_eq!(kernel_major_minor("5.15.0-1045-gcp"), Some((5, 15)));
        assert_eq!(kernel_major_minor("5.4.0"), Some((5, 4)));
        assert_eq!(kernel_major_minor("4.18.0-513.el8.x86_64"), Some((4, 18)));
        assert_eq!(kernel_major_minor("6.18.44-fc-v669"), Some((6, 18)));
        assert_eq!(kernel_major_minor("garbage"), None);
        assert_eq!(kernel_major_minor(""), None);
    }

    proptest::proptest! {
        #[test]
        fn kernel_parsing_never_panics(s in ".{0,40}") {
            let _ = kernel_major_minor(&s);
        }
    }

    #[test]
    fn lane_speeds_are_ordered() {
        assert!(lane_speed_rank("EDR") < lane_speed_rank("HDR"));
        assert!(lane_speed_rank("FDR10") < lane_speed_rank("FDR"));
        assert_eq!(lane_speed_rank("ZZZ"), None);
    }
}
