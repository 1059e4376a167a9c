//! The report's evidence below the link state of each node: the PCIe path of every NIC and GPU
//! with its links and AER counts, NIC firmware settings, link quality, transceiver modules
//! (`ethtool -m`) and kernel log events.

use std::fmt::Write as _;

use fabrik_model::{KernelEventKind, Node, PciFunction, PciLink};

use super::escape::esc;

/// Kernel log events listed per node; the count says how many more there are.
const MAX_EVENTS: usize = 50;

fn link(l: &PciLink) -> String {
    let part = |speed: Option<f64>, width: Option<u32>| match (speed, width) {
        (None, None) => "?".to_string(),
        (s, w) => format!(
            "{} GT/s x{}",
            s.map(|s| s.to_string()).unwrap_or_else(|| "?".into()),
            w.map(|w| w.to_string()).unwrap_or_else(|| "?".into())
        ),
    };
    let cur = part(l.current_speed_gts, l.current_width);
    let max = part(l.max_speed_gts, l.max_width);
    if cur == max {
        cur
    } else {
        format!("{cur} (of {max})")
    }
}

fn aer(f: &PciFunction) -> String {
    let Some(a) = &f.aer else {
        return "-".into();
    };
    let count = |k: &str| a.counts.get(k).copied();
    let mut parts = vec![];
    for (label, total, bits) in [
        ("correctable", count("TOTAL_ERR_COR"), &a.correctable),
        ("non-fatal", count("TOTAL_ERR_NONFATAL"), &a.nonfatal),
        ("fatal", count("TOTAL_ERR_FATAL"), &a.fatal),
    ] {
        match (total, bits.is_empty()) {
            (Some(n), true) => parts.push(format!("{label} {n}")),
            (Some(n), false) => parts.push(format!("{label} {n} ({})", bits.join(" "))),
            (None, false) => parts.push(format!("{label}: {}", bits.join(" "))),
            (None, true) => {}
        }
    }
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(", ")
    }
}

fn opt<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref()
        .map(|v| v.to_string())
        .unwrap_or_else(|| "-".into())
}

fn ber(v: Option<f64>) -> String {
    v.map(|b| format!("{b:E}")).unwrap_or_else(|| "-".into())
}

fn row(body: &mut String, cells: &[String]) {
    body.push_str("<tr>");
    for c in cells {
        let _ = write!(body, "<td>{}</td>", esc(c));
    }
    body.push_str("</tr>\n");
}

fn head(body: &mut String, cells: &[&str]) {
    body.push_str("<table><tr>");
    for c in cells {
        let _ = write!(body, "<th>{}</th>", esc(c));
    }
    body.push_str("</tr>\n");
}

/// The PCIe path of every NIC and GPU, from the device up to its root port.
fn pcie(body: &mut String, n: &Node) {
    let mut endpoints: Vec<(String, &PciFunction)> = n
        .rdma_devices
        .iter()
        .filter_map(|d| Some((d.name.clone(), d.pci.as_ref()?)))
        .chain(
            n.net_interfaces
                .iter()
                .filter(|i| i.rdma_device.is_none())
                .filter_map(|i| Some((i.name.clone(), i.pci.as_ref()?))),
        )
        .chain(
            n.gpus
                .iter()
                .map(|g| (g.model.clone().unwrap_or_else(|| "GPU".into()), &g.pci)),
        )
        .collect();
    endpoints.sort_by(|a, b| a.1.address.cmp(&b.1.address));
    endpoints.dedup_by(|a, b| a.1.address == b.1.address);
    if endpoints.is_empty() {
        return;
    }
    body.push_str("<h4>PCIe paths</h4>\n");
    head(
        body,
        &["device", "function", "hop", "link", "AER (since boot)"],
    );
    for (name, f) in endpoints {
        row(
            body,
            &[
                name.clone(),
                f.address.clone(),
                "device".into(),
                link(&f.link),
                aer(f),
            ],
        );
        // The path runs from the root port down; show it upwards from the device.
        for b in f.path.iter().rev() {
            let bridge = n
                .pci_bridges
                .iter()
                .find(|x| &x.address == b)
                .and_then(|x| x.function.as_ref());
            match bridge {
                Some(bf) => row(
                    body,
                    &[
                        String::new(),
                        b.clone(),
                        "bridge".into(),
                        link(&bf.link),
                        aer(bf),
                    ],
                ),
                None => row(
                    body,
                    &[
                        String::new(),
                        b.clone(),
                        "bridge".into(),
                        "?".into(),
                        "-".into(),
                    ],
                ),
            }
        }
    }
    body.push_str("</table>\n");
}

fn firmware(body: &mut String, n: &Node) {
    if n.nic_firmware.is_empty() {
        return;
    }
    body.push_str("<h4>NIC firmware settings</h4>\n");
    for f in &n.nic_firmware {
        let _ = writeln!(
            body,
            "<details><summary>{} {} {}: {} settings</summary>",
            esc(&f.device),
            esc(f.device_type.as_deref().unwrap_or("")),
            esc(f.part.as_deref().unwrap_or("")),
            f.settings.len()
        );
        head(body, &["setting", "in force", "next boot", "default"]);
        for (k, s) in &f.settings {
            row(
                body,
                &[
                    k.clone(),
                    s.effective().to_string(),
                    s.next_boot.clone(),
                    opt(&s.default),
                ],
            );
        }
        body.push_str("</table></details>\n");
    }
}

fn link_quality(body: &mut String, n: &Node) {
    if n.link_quality.is_empty() {
        return;
    }
    body.push_str("<h4>Link quality</h4>\n");
    head(
        body,
        &[
            "device",
            "state",
            "speed",
            "width",
            "FEC",
            "effective errors",
            "effective BER",
            "raw BER",
            "symbol errors",
            "link down",
            "module",
            "recommendation",
        ],
    );
    for l in &n.link_quality {
        let module = l
            .module
            .as_ref()
            .map(|m| {
                let mut s = [&m.cable_type, &m.vendor, &m.part_number]
                    .iter()
                    .filter_map(|v| v.as_deref())
                    .collect::<Vec<_>>()
                    .join(" ");
                if let Some(t) = m.temperature_c {
                    let _ = write!(s, ", {t} °C");
                }
                s
            })
            .unwrap_or_else(|| "-".into());
        row(
            body,
            &[
                l.device.clone(),
                opt(&l.state),
                opt(&l.speed),
                opt(&l.width),
                opt(&l.fec),
                opt(&l.effective_errors),
                ber(l.effective_ber),
                ber(l.raw_ber),
                opt(&l.symbol_errors),
                opt(&l.link_down),
                module,
                opt(&l.recommendation),
            ],
        );
    }
    body.push_str("</table>\n");
}

fn transceivers(body: &mut String, n: &Node) {
    if n.transceivers.is_empty() {
        return;
    }
    body.push_str("<h4>Transceiver modules</h4>\n");
    head(
        body,
        &[
            "interface",
            "module",
            "temperature °C",
            "voltage V",
            "lane",
            "bias mA",
            "tx mW",
            "rx mW (dBm)",
            "flags set",
        ],
    );
    for m in &n.transceivers {
        let module = [&m.identifier, &m.vendor, &m.part_number]
            .iter()
            .filter_map(|v| v.as_deref())
            .collect::<Vec<_>>()
            .join(" ");
        let flags = m
            .flags_set
            .iter()
            .map(|f| match f.lane {
                Some(l) => format!("{} (lane {l})", f.name),
                None => f.name.clone(),
            })
            .collect::<Vec<_>>()
            .join(", ");
        let lanes: Vec<Option<&fabrik_model::ModuleLane>> = if m.lanes.is_empty() {
            vec![None]
        } else {
            m.lanes.iter().map(Some).collect()
        };
        for (i, l) in lanes.into_iter().enumerate() {
            let first = i == 0;
            let keep = |s: String| if first { s } else { String::new() };
            let rx = l
                .and_then(|l| l.rx_power_mw)
                .map(|p| match fabrik_model::units::dbm(p) {
                    Some(d) => format!("{p} ({d:.2})"),
                    None => format!("{p}"),
                })
                .unwrap_or_else(|| "-".into());
            row(
                body,
                &[
                    keep(m.interface.clone()),
                    keep(module.clone()),
                    keep(opt(&m.temperature_c)),
                    keep(opt(&m.voltage_v)),
                    l.map(|l| l.lane.to_string()).unwrap_or_else(|| "-".into()),
                    opt(&l.and_then(|l| l.bias_ma)),
                    opt(&l.and_then(|l| l.tx_power_mw)),
                    rx,
                    keep(if flags.is_empty() {
                        "-".into()
                    } else {
                        flags.clone()
                    }),
                ],
            );
        }
    }
    body.push_str("</table>\n");
}

fn kernel_log(body: &mut String, n: &Node) {
    let Some(log) = &n.kernel_log else {
        return;
    };
    let _ = writeln!(
        body,
        "<h4>Kernel log</h4>\n<p>{} line(s) read, {} event(s) recognised.</p>",
        log.lines,
        log.events.len()
    );
    if log.events.is_empty() {
        return;
    }
    head(body, &["time", "event", "device", "line"]);
    for e in log.events.iter().take(MAX_EVENTS) {
        let kind = match &e.kind {
            KernelEventKind::Xid {
                code,
                meaning,
                action,
            } => format!(
                "Xid {code}{}{}",
                meaning
                    .as_deref()
                    .map(|m| format!(": {m}"))
                    .unwrap_or_default(),
                action
                    .as_deref()
                    .map(|a| format!(" ({a})"))
                    .unwrap_or_default()
            ),
            KernelEventKind::Mlx5Health => "mlx5 health".into(),
            KernelEventKind::LinkDown => "link down".into(),
            KernelEventKind::LinkUp => "link up".into(),
            KernelEventKind::Aer { severity } => format!("AER {severity}"),
            KernelEventKind::PinFailure => "memory pinning failed".into(),
        };
        row(body, &[opt(&e.time), kind, opt(&e.device), e.line.clone()]);
    }
    body.push_str("</table>\n");
    if log.events.len() > MAX_EVENTS {
        let _ = writeln!(
            body,
            "<p>... and {} more event(s).</p>",
            log.events.len() - MAX_EVENTS
        );
    }
}

/// The evidence below the link state of one node, or nothing when the node holds none.
pub(super) fn node_evidence(body: &mut String, name: &str, n: &Node) {
    let mut section = String::new();
    pcie(&mut section, n);
    firmware(&mut section, n);
    link_quality(&mut section, n);
    transceivers(&mut section, n);
    kernel_log(&mut section, n);
    if !section.is_empty() {
        let _ = writeln!(body, "<h3>{}: below the link state</h3>", esc(name));
        body.push_str(&section);
    }
}
