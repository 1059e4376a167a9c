//! The comparison of a probed [`Node`] with the expectations: one finding per difference.

use std::collections::BTreeMap;

use fabrik_model::{Finding, LinkLayer, Node, RdmaDevice, Severity};

use super::file::*;
use super::from_node::layer_name;
use super::*;
use crate::env::PlannedEnv;
use crate::rules::roce::recommended_gid_index;
use crate::util::{all_ports, dev_path, ev, finding, is_active, net_path, port_path, port_subject};

/// Whether `found` starts with the expected version at a component boundary.
pub fn version_matches(expected: &str, found: &str) -> bool {
    let (expected, found) = (expected.trim(), found.trim());
    match found.strip_prefix(expected) {
        Some(rest) => {
            rest.is_empty()
                || !(rest.starts_with(|c: char| c.is_ascii_alphanumeric())
                    && expected.ends_with(|c: char| c.is_ascii_alphanumeric()))
        }
        None => false,
    }
}

const FIX_GPU: &str = "A GPU missing from the PCI bus has fallen off (Xid 79) or was never seen: check `nvidia-smi`, `dmesg | grep -i xid`, reseat or replace it; a different model means the node is not of this type.";
const FIX_RAIL: &str = "Find the missing device or port: driver loaded (`mlx5_core`, `mlx5_ib`), `ibstat`, cable and switch port; until repaired, keep multi-node jobs off the node.";

/// Compares a node with the expectations: one finding per difference, an info for each
/// expectation the node's data cannot confirm. `env` is the planned NCCL environment, when
/// one is given.
pub fn check_expectations(
    node: &Node,
    expect: &Expectations,
    env: Option<&PlannedEnv>,
) -> Vec<Finding> {
    let mut out = vec![];
    if let Some(g) = &expect.gpus {
        gpus(node, g, &mut out);
    }
    if let Some(r) = &expect.rdma {
        rdma(node, r, &mut out);
    }
    if let Some(ro) = &expect.roce {
        roce(node, ro, &mut out);
    }
    if let Some(h) = &expect.host {
        host(node, h, &mut out);
    }
    if let Some(v) = &expect.versions {
        versions(node, v, &mut out);
    }
    nccl(&expect.nccl, env, &mut out);
    super::below::check(node, expect, &mut out);
    fabrik_model::sort_findings(&mut out);
    out
}

fn gpus(node: &Node, g: &GpuExpect, out: &mut Vec<Finding>) {
    let mut addrs: Vec<&str> = node.gpus.iter().map(|g| g.pci.address.as_str()).collect();
    addrs.sort_unstable();
    if let Some(count) = g.count {
        if node.gpus.len() != count {
            out.push(finding(
                GPUS,
                Severity::Error,
                "node",
                format!(
                    "{} GPU(s) found where {count} are expected",
                    node.gpus.len()
                ),
                vec![ev(
                    "/sys/bus/pci/devices (vendor 0x10de, display class)",
                    if addrs.is_empty() {
                        "none".to_string()
                    } else {
                        addrs.join(" ")
                    },
                )],
                FIX_GPU,
            ));
        }
    }
    if let Some(model) = &g.model {
        let want = model.to_ascii_lowercase();
        let mut gpus: Vec<_> = node.gpus.iter().collect();
        gpus.sort_by(|a, b| a.pci.address.cmp(&b.pci.address));
        for gpu in gpus {
            match &gpu.model {
                Some(m) if m.to_ascii_lowercase().contains(&want) => {}
                Some(m) => out.push(finding(
                    GPUS,
                    Severity::Error,
                    format!("gpu {}", gpu.pci.address),
                    format!("GPU model `{m}` is not the expected `{model}`"),
                    vec![ev(
                        format!("/sys/bus/pci/devices/{}", gpu.pci.address),
                        m.clone(),
                    )],
                    FIX_GPU,
                )),
                None => unverified(
                    out,
                    &format!("gpu {}", gpu.pci.address),
                    format!("gpus.model = `{model}`"),
                    &format!("/sys/bus/pci/devices/{}/device", gpu.pci.address),
                ),
            }
        }
    }
}

fn judged_layer(r: &RdmaExpect) -> Option<LinkLayer> {
    r.link_layer.as_deref().map(LinkLayer::parse)
}

fn rdma(node: &Node, r: &RdmaExpect, out: &mut Vec<Finding>) {
    let layer = judged_layer(r);
    let hw: Vec<&RdmaDevice> = crate::util::devices(node)
        .into_iter()
        .filter(|d| !d.is_software())
        .collect();
    if let Some(want) = r.devices {
        if hw.len() < want {
            out.push(finding(
                RDMA_COUNT,
                Severity::Error,
                "node",
                format!(
                    "{} hardware RDMA device(s) found where at least {want} are expected",
                    hw.len()
                ),
                vec![ev(
                    "/sys/class/infiniband",
                    hw.iter()
                        .map(|d| d.name.as_str())
                        .collect::<Vec<_>>()
                        .join(" "),
                )],
                FIX_RAIL,
            ));
        }
    }
    let ports: Vec<_> = all_ports(node)
        .filter(|(d, p)| {
            !d.is_software()
                && layer
                    .as_ref()
                    .is_none_or(|l| p.link_layer.as_ref() == Some(l))
        })
        .collect();
    let active: Vec<_> = ports.iter().filter(|(_, p)| is_active(p)).collect();
    if let Some(want) = r.active_ports {
        if active.len() < want {
            let not_active: Vec<String> = all_ports(node)
                .filter(|(d, p)| !d.is_software() && !is_active(p))
                .map(|(d, p)| {
                    format!(
                        "{} {}",
                        port_subject(d, p),
                        p.state
                            .as_ref()
                            .map(|s| s.name.as_str())
                            .unwrap_or("state unknown")
                    )
                })
                .collect();
            let mut evidence = vec![ev(
                "/sys/class/infiniband/*/ports/*/state",
                format!(
                    "ACTIVE{}: {}",
                    r.link_layer
                        .as_deref()
                        .map(|l| format!(" {l}"))
                        .unwrap_or_default(),
                    active
                        .iter()
                        .map(|(d, p)| port_subject(d, p))
                        .collect::<Vec<_>>()
                        .join(" ")
                ),
            )];
            if !not_active.is_empty() {
                evidence.push(ev(
                    "/sys/class/infiniband/*/ports/*/state",
                    format!("not ACTIVE: {}", not_active.join(", ")),
                ));
            }
            out.push(finding(
                RDMA_COUNT,
                Severity::Error,
                "node",
                format!(
                    "{} ACTIVE{} port(s) where at least {want} are expected: a rail is missing",
                    active.len(),
                    r.link_layer
                        .as_deref()
                        .map(|l| format!(" {l}"))
                        .unwrap_or_default()
                ),
                evidence,
                FIX_RAIL,
            ));
        }
    }
    // With no link layer given every active port is judged; a port of another layer is then
    // itself a difference worth naming.
    if let Some(l) = &layer {
        if r.active_ports.is_some() || r.rate_gbps.is_some() {
            for (d, p) in
                all_ports(node).filter(|(d, p)| !d.is_software() && !d.is_efa() && is_active(p))
            {
                if p.link_layer.as_ref() != Some(l) && ports.is_empty() {
                    out.push(finding(
                        LINK,
                        Severity::Error,
                        port_subject(d, p),
                        format!(
                            "link layer is {} where {} is expected",
                            layer_name(p.link_layer.as_ref()).unwrap_or("unknown"),
                            r.link_layer.as_deref().unwrap_or_default()
                        ),
                        vec![ev(port_path(d, p, "link_layer"), layer_name(p.link_layer.as_ref()).unwrap_or("unknown"))],
                        "Set the port's link type (`mlxconfig -d <dev> set LINK_TYPE_P1=1` for IB, 2 for Ethernet) to the fabric's.",
                    ));
                }
            }
        }
    }
    for (d, p) in &active {
        let subject = port_subject(d, p);
        if let Some(want) = r.rate_gbps {
            match p.rate.as_ref() {
                Some(rate) => match rate.gbps {
                    Some(g) if (g - want).abs() < 0.5 => {}
                    Some(g) => out.push(finding(
                        LINK,
                        if g < want { Severity::Error } else { Severity::Warning },
                        subject.clone(),
                        format!("port runs at {} where {want} Gb/s is expected", rate.text),
                        vec![ev(port_path(d, p, "rate"), rate.text.clone())],
                        "A lower rate means failed lanes or a wrong cable/transceiver: `mlxlink -d <dev> -p <port>`, reseat or replace; a higher one means the node is not of this type.",
                    )),
                    None => unverified(out, &subject, format!("rdma.rate_gbps = {want}"), &port_path(d, p, "rate")),
                },
                None => unverified(out, &subject, format!("rdma.rate_gbps = {want}"), &port_path(d, p, "rate")),
            }
        }
        if let Some(want) = r.ib_mtu {
            if crate::util::is_ib(p) {
                match p.active_mtu {
                    Some(m) if m == want => {}
                    Some(m) => out.push(finding(
                        MTU,
                        Severity::Warning,
                        subject.clone(),
                        format!("InfiniBand active MTU is {m} where {want} is expected"),
                        vec![ev("fabrik/cmd/ibv_devinfo.txt", format!("active_mtu: {m}"))],
                        "Set the MTU in the subnet manager's partition configuration (`mtu=5` for 4096 in partitions.conf).",
                    )),
                    None => unverified(out, &subject, format!("rdma.ib_mtu = {want}"), "fabrik/cmd/ibv_devinfo.txt"),
                }
            }
        }
        if let Some(want) = r.netdev_mtu {
            if crate::util::is_roce(p) {
                let nif = p.netdev.as_deref().and_then(|n| node.net_interface(n));
                match nif.and_then(|n| n.mtu.map(|m| (n, m))) {
                    Some((_, m)) if m == want => {}
                    Some((n, m)) => out.push(finding(
                        MTU,
                        Severity::Warning,
                        subject.clone(),
                        format!("{} has MTU {m} where {want} is expected", n.name),
                        vec![ev(net_path(&n.name, "mtu"), m.to_string())],
                        format!("`ip link set {} mtu {want}` and make it persistent; the switch ports must carry it too.", n.name),
                    )),
                    None => unverified(out, &subject, format!("rdma.netdev_mtu = {want}"), "/sys/class/net/<netdev>/mtu"),
                }
            }
        }
    }
    if let Some(want) = &r.firmware {
        let mut seen = std::collections::BTreeSet::new();
        for (d, _) in &active {
            if d.is_efa() || !seen.insert(d.name.clone()) {
                continue;
            }
            match &d.fw_ver {
                Some(f) if version_matches(want, f) => {}
                Some(f) => out.push(finding(
                    VERSIONS,
                    Severity::Warning,
                    d.name.clone(),
                    format!("HCA firmware {f} is not the expected {want}"),
                    vec![ev(dev_path(d, "fw_ver"), f.clone())],
                    "Flash the expected firmware (`mlxfwmanager --online -u` or the vendor's bundle) and reset the device.",
                )),
                None => unverified(out, &d.name, format!("rdma.firmware = `{want}`"), &dev_path(d, "fw_ver")),
            }
        }
    }
}

fn roce(node: &Node, ro: &RoceExpect, out: &mut Vec<Finding>) {
    let ports: Vec<_> = all_ports(node)
        .filter(|(d, p)| {
            !d.is_software() && !d.is_iwarp() && crate::util::is_roce(p) && is_active(p)
        })
        .collect();
    for (d, p) in ports {
        let subject = port_subject(d, p);
        if let Some(want) = ro.gid_index {
            let found = recommended_gid_index(p);
            if found != Some(want) {
                out.push(finding(
                    ROCE,
                    Severity::Warning,
                    subject.clone(),
                    match found {
                        Some(i) => format!("the RoCE v2 GID with the port's IPv4 address is at index {i} where {want} is expected (NCCL_IB_GID_INDEX)"),
                        None => format!("no RoCE v2 GID with an IPv4 address, where one at index {want} is expected"),
                    },
                    vec![ev(port_path(d, p, "gid_attrs/types"), found.map(|i| format!("RoCE v2 IPv4 at {i}")).unwrap_or_else(|| "none".into()))],
                    "Give the netdev its IPv4 address the same way on every node (the GID table follows the address setup), or leave NCCL_IB_GID_INDEX unset with NCCL ≥ 2.21.",
                ));
            }
        }
        let nif = p.netdev.as_deref().and_then(|n| node.net_interface(n));
        let pfc = nif.and_then(|n| n.pfc.as_ref());
        if ro.pfc_priorities.is_some() || ro.trust.is_some() {
            match (nif, pfc) {
                (Some(n), Some(pfc)) => {
                    if let Some(want) = &ro.pfc_priorities {
                        let mut a = pfc.enabled_priorities.clone();
                        a.sort_unstable();
                        let mut b = want.clone();
                        b.sort_unstable();
                        if a != b {
                            out.push(finding(
                                ROCE,
                                Severity::Warning,
                                subject.clone(),
                                format!("PFC is enabled on priorities {a:?} of {} where {b:?} are expected", n.name),
                                vec![ev(pfc.source.clone(), format!("PFC enabled {a:?}"))],
                                format!("`mlnx_qos -i {} --pfc <8 flags>` with 1 on the expected priorities; the switch must match.", n.name),
                            ));
                        }
                    }
                    if let Some(want) = &ro.trust {
                        match &pfc.trust {
                            Some(t) if t.eq_ignore_ascii_case(want) => {}
                            Some(t) => out.push(finding(
                                ROCE,
                                Severity::Warning,
                                subject.clone(),
                                format!("{} trusts {t} where {want} is expected", n.name),
                                vec![ev(pfc.source.clone(), format!("Priority trust state: {t}"))],
                                format!("`mlnx_qos -i {} --trust {want}`.", n.name),
                            )),
                            None => unverified(
                                out,
                                &subject,
                                format!("roce.trust = `{want}`"),
                                &pfc.source,
                            ),
                        }
                    }
                }
                _ => unverified(
                    out,
                    &subject,
                    "roce.pfc_priorities/trust".into(),
                    "fabrik/cmd/mlnx_qos-<netdev>.txt",
                ),
            }
        }
        if let Some(want) = ro.ecn {
            match nif.and_then(|n| n.ecn.as_ref().map(|e| (n, e))) {
                Some((n, ecn)) => {
                    let prios: Vec<u8> = ro
                        .pfc_priorities
                        .clone()
                        .unwrap_or_else(|| ecn.np_enabled.keys().copied().collect());
                    let on = |p: &u8| {
                        ecn.np_enabled.get(p) == Some(&true) && ecn.rp_enabled.get(p) == Some(&true)
                    };
                    let enabled = if ro.pfc_priorities.is_some() {
                        prios.iter().all(on)
                    } else {
                        prios.iter().any(on)
                    };
                    if enabled != want {
                        out.push(finding(
                            ROCE,
                            Severity::Warning,
                            subject.clone(),
                            format!("ECN is {} on {} where it is expected {}", if enabled { "on" } else { "off" }, n.name, if want { "on" } else { "off" }),
                            vec![ev(net_path(&n.name, "ecn/roce_np/enable"), format!("np {:?} rp {:?}", ecn.np_enabled, ecn.rp_enabled))],
                            format!("`echo {} > /sys/class/net/{}/ecn/roce_np/enable/<prio>` and the same for roce_rp.", u8::from(want), n.name),
                        ));
                    }
                }
                None => unverified(
                    out,
                    &subject,
                    format!("roce.ecn = {want}"),
                    "/sys/class/net/<netdev>/ecn",
                ),
            }
        }
    }
}

fn host(node: &Node, h: &HostExpect, out: &mut Vec<Finding>) {
    if let Some(module) = &h.peer_memory {
        let modules_read = !node.modules.is_empty();
        if !modules_read {
            unverified(
                out,
                "node",
                format!("host.peer_memory = `{module}`"),
                "/proc/modules",
            );
        } else if !node.has_module(module) {
            out.push(finding(
                GDR,
                Severity::Error,
                "node",
                format!("the peer-memory module {module} is not loaded: NCCL cannot use GPUDirect RDMA and stages every transfer through host memory"),
                vec![ev("/proc/modules", format!("no {module}"))],
                format!("`modprobe {module}` (and load it at boot), or enable DMA-BUF with the GPU driver and kernel that support it."),
            ));
        }
    }
    if let Some(want) = &h.memlock {
        match &node.memlock {
            None => unverified(out, "node", "host.memlock".into(), "/proc/self/limits"),
            Some(limit) => {
                let (ok, want_text) = match want {
                    Memlock::Text(_) => (limit.is_unlimited(), "unlimited".to_string()),
                    Memlock::Bytes(b) => (
                        limit.soft_bytes.is_none_or(|s| s >= *b),
                        format!("at least {b} bytes"),
                    ),
                };
                if !ok {
                    out.push(finding(
                        GDR,
                        Severity::Warning,
                        "node",
                        format!("max locked memory is {} bytes where {want_text} is expected", limit.soft_bytes.map(|b| b.to_string()).unwrap_or_else(|| "unlimited".into())),
                        vec![ev("/proc/self/limits", format!("Max locked memory {}", limit.soft_bytes.map(|b| b.to_string()).unwrap_or_else(|| "unlimited".into())))],
                        "`* soft memlock unlimited` and `* hard memlock unlimited` in /etc/security/limits.conf; `LimitMEMLOCK=infinity` for services.",
                    ));
                }
            }
        }
    }
}

fn versions(node: &Node, v: &VersionExpect, out: &mut Vec<Finding>) {
    let found = &node.versions;
    for (name, want, have, path) in [
        (
            "nvidia_driver",
            &v.nvidia_driver,
            &found.nvidia_driver,
            "/proc/driver/nvidia/version",
        ),
        ("ofed", &v.ofed, &found.ofed, "fabrik/cmd/ofed_info.txt"),
        (
            "rdma_core",
            &v.rdma_core,
            &found.rdma_core,
            "rdma-core version",
        ),
        ("nccl", &v.nccl, &found.nccl, "NCCL version"),
    ] {
        let Some(want) = want else { continue };
        match have {
            Some(h) if version_matches(want, h) => {}
            Some(h) => out.push(finding(
                VERSIONS,
                Severity::Warning,
                "node",
                format!("{name} is {h} where {want} is expected"),
                vec![ev(path, h.clone())],
                "Install the cluster's release on this node (or update the expectations if the whole cluster moved).",
            )),
            None => unverified(out, "node", format!("versions.{name} = `{want}`"), path),
        }
    }
}

fn nccl(expected: &BTreeMap<String, String>, env: Option<&PlannedEnv>, out: &mut Vec<Finding>) {
    if expected.is_empty() {
        return;
    }
    let Some(env) = env else {
        unverified(
            out,
            "env",
            format!(
                "[nccl] ({}): no planned environment was given (--env-file or --env)",
                expected.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
            "env:",
        );
        return;
    };
    for (key, want) in expected {
        let have = env.get(key);
        if have == Some(want.as_str()) {
            continue;
        }
        out.push(finding(
            NCCL,
            Severity::Warning,
            format!("env {key}"),
            match have {
                Some(h) => format!("{key}={h} in {} where {want} is expected", env.source),
                None => format!(
                    "{key} is not set in {} where {want} is expected",
                    env.source
                ),
            },
            vec![ev(PlannedEnv::evidence_path(key), have.unwrap_or("unset"))],
            format!("Set {key}={want} in the job's environment (or /etc/nccl.conf)."),
        ));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::testkit::*;

    fn ids(f: &[Finding]) -> Vec<(&str, Severity, &str)> {
        f.iter()
            .map(|f| (f.rule.as_str(), f.severity, f.subject.as_str()))
            .collect()
    }

    const IB: &str = r#"
name = "test"
[gpus]
count = 8
[rdma]
active_ports = 4
link_layer = "InfiniBand"
rate_gbps = 400
"#;

    #[test]
    fn versions_match_at_component_boundaries() {
        assert!(version_matches("535", "535.161.08"));
        assert!(version_matches("535.161.08", "535.161.08"));
        assert!(!version_matches("535.16", "535.161.08"));
        assert!(version_matches(
            "MLNX_OFED_LINUX-23.10",
            "MLNX_OFED_LINUX-23.10-1.1.9.0"
        ));
        assert!(!version_matches("550", "535.161.08"));
    }

    #[test]
    fn a_file_with_an_unknown_key_or_bad_value_is_refused() {
        let refused = |text: &str| match Expectations::parse("t", text) {
            Ok(e) => panic!("{text:?} was read as {e:?}"),
            Err(e) => format!("{e:#}"),
        };
        let unknown = refused("[gpus]\ncont = 8\n");
        assert!(unknown.contains("cont"), "{unknown}");
        let layer = refused("[rdma]\nlink_layer = \"Infiniband2\"\n");
        assert!(layer.contains("Infiniband2"), "{layer}");
        let memlock = refused("[host]\nmemlock = \"lots\"\n");
        assert!(memlock.contains("lots"), "{memlock}");
        let e = Expectations::parse("t", "[host]\nmemlock = 65536\n").unwrap();
        let memlock = e.host.and_then(|h| h.memlock);
        assert_eq!(memlock, Some(super::super::file::Memlock::Bytes(65536)));
    }

    #[test]
    fn the_healthy_node_meets_what_it_was_written_from() {
        for n in [healthy_ib_node("a"), healthy_roce_node("r", 1)] {
            let e = Expectations::from_node(&n);
            let back = Expectations::parse("t", &e.to_toml().unwrap()).unwrap();
            assert_eq!(back, e);
            assert!(
                check_expectations(&n, &e, None).is_empty(),
                "{:?}",
                check_expectations(&n, &e, None)
            );
        }
    }

    #[test]
    fn a_lost_gpu_and_a_dead_rail_and_a_slow_port_are_named() {
        let mut n = healthy_ib_node("a");
        let e = Expectations::parse("t", IB).unwrap();
        let gpus = n.gpus.len();
        let ports = n.rdma_devices.len();
        assert!(gpus < 8 || ports < 4 || check_expectations(&n, &e, None).is_empty());
        // Make the node the shape the file says before breaking it.
        let mut e = e;
        e.gpus.as_mut().unwrap().count = Some(gpus);
        e.rdma.as_mut().unwrap().active_ports = Some(ports);
        assert!(check_expectations(&n, &e, None).is_empty());
        n.gpus.pop();
        n.rdma_devices[1].ports[0].state = state("1: DOWN");
        n.rdma_devices[2].ports[0].rate = rate("200 Gb/sec (4X HDR)");
        let f = check_expectations(&n, &e, None);
        let got = ids(&f);
        assert!(got.contains(&(GPUS, Severity::Error, "node")), "{got:?}");
        assert!(
            got.contains(&(RDMA_COUNT, Severity::Error, "node")),
            "{got:?}"
        );
        let slow = port_subject(&n.rdma_devices[2], &n.rdma_devices[2].ports[0]);
        assert!(
            got.contains(&(LINK, Severity::Error, slow.as_str())),
            "{got:?}"
        );
        assert_eq!(f.len(), 3, "{got:?}");
        let rail = f.iter().find(|f| f.rule == RDMA_COUNT).unwrap();
        assert!(
            rail.evidence.iter().any(|e| e.value.contains("DOWN")),
            "{rail:?}"
        );
    }

    #[test]
    fn roce_settings_differences_are_warnings_with_the_capture_as_evidence() {
        let n = healthy_roce_node("r", 1);
        let mut e = Expectations::from_node(&n);
        let roce = e.roce.as_mut().unwrap();
        roce.gid_index = Some(roce.gid_index.unwrap() + 1);
        roce.pfc_priorities = Some(vec![4]);
        let f = check_expectations(&n, &e, None);
        assert!(
            f.iter()
                .all(|f| f.rule == ROCE && f.severity == Severity::Warning),
            "{f:?}"
        );
        assert!(f.iter().any(|f| f.message.contains("index")), "{f:?}");
        assert!(f.iter().any(|f| f.message.contains("PFC")), "{f:?}");
    }

    #[test]
    fn nccl_settings_need_an_environment_and_name_each_difference() {
        let n = healthy_ib_node("a");
        let e = Expectations::parse(
            "t",
            "[nccl]\nNCCL_IB_HCA = \"mlx5\"\nNCCL_NET_GDR_LEVEL = \"PXB\"\n",
        )
        .unwrap();
        let f = check_expectations(&n, &e, None);
        assert_eq!(ids(&f), vec![(UNVERIFIED, Severity::Info, "env")]);
        let env = PlannedEnv::parse("t", "NCCL_IB_HCA=mlx5\nNCCL_NET_GDR_LEVEL=SYS\n");
        let f = check_expectations(&n, &e, Some(&env));
        assert_eq!(
            ids(&f),
            vec![(NCCL, Severity::Warning, "env NCCL_NET_GDR_LEVEL")]
        );
    }

    #[test]
    fn missing_peer_memory_and_old_driver_are_found() {
        let mut n = healthy_ib_node("a");
        n.versions.nvidia_driver = Some("535.161.08".into());
        let e = Expectations::parse(
            "t",
            "[host]\npeer_memory = \"nvidia_peermem\"\n[versions]\nnvidia_driver = \"550\"\n",
        )
        .unwrap();
        n.modules.retain(|m| m.name != "nvidia_peermem");
        let f = check_expectations(&n, &e, None);
        let got = ids(&f);
        if n.modules.is_empty() {
            assert!(got.contains(&(UNVERIFIED, Severity::Info, "node")));
        } else {
            assert!(got.contains(&(GDR, Severity::Error, "node")), "{got:?}");
        }
        assert!(
            got.contains(&(VERSIONS, Severity::Warning, "node")),
            "{got:?}"
        );
    }
}
