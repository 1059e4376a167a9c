//! Prometheus exposition of a [`Sample`] (pure: a sample in, OpenMetrics text out).
//!
//! Every metric is documented in docs/monitor.md. Names follow Prometheus conventions:
//! `fabrik_` prefix, base units (bytes, seconds), `_total` on counters, `_info` for info
//! metrics whose value is always 1.

use std::collections::BTreeMap;
use std::fmt;

use fabrik_model::Finding;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

use crate::ethtool::priority_pause;
use crate::sample::{Reading, Sample, Source};
use crate::width::is_saturated;

/// The content type of [`encode`]'s output.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The content type of [`to_prometheus_text`]'s output.
pub const PROMETHEUS_TEXT_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Rewrites OpenMetrics text from [`encode`] into the classic Prometheus text format (0.0.4),
/// for clients that do not ask for OpenMetrics (curl, `promtool check metrics`, older servers).
///
/// Hand-written because prometheus-client encodes OpenMetrics only. The two formats differ, for
/// what [`encode`] emits, in three ways: a counter family is named with its `_total` suffix,
/// `info` families are gauges named `*_info`, and there are no `# UNIT` or `# EOF` lines.
pub fn to_prometheus_text(openmetrics: &str) -> String {
    use std::collections::HashMap;
    let mut kinds: HashMap<&str, &str> = HashMap::new();
    for line in openmetrics.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            if let Some((name, kind)) = rest.split_once(' ') {
                kinds.insert(name, kind);
            }
        }
    }
    let renamed = |name: &str| -> (String, Option<&str>) {
        match kinds.get(name).copied() {
            Some("counter") => (format!("{name}_total"), Some("counter")),
            Some("info") => (format!("{name}_info"), Some("gauge")),
            other => (name.to_string(), other),
        }
    };
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line.starts_with("# UNIT ") || line == "# EOF" {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            out.push_str(&format!("# HELP {} {help}\n", renamed(name).0));
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let name = rest.split_once(' ').map_or(rest, |(n, _)| n);
            let (new, kind) = renamed(name);
            out.push_str(&format!("# TYPE {new} {}\n", kind.unwrap_or("untyped")));
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Renders one scrape: the sample, the findings to export, and how long reading took.
pub fn encode(
    sample: Sample,
    findings: &[Finding],
    scrape_seconds: f64,
) -> Result<String, fmt::Error> {
    let mut by_rule: BTreeMap<FindingKey, i64> = BTreeMap::new();
    for f in findings {
        *by_rule
            .entry(FindingKey {
                severity: f.severity.to_string(),
                rule: f.rule.clone(),
                subject: f.subject.clone(),
                place: place_of(&f.subject, &sample),
            })
            .or_default() += 1;
    }
    let mut registry = Registry::default();
    registry.register_collector(Box::new(NodeCollector {
        sample,
        findings: by_rule,
        scrape_seconds,
    }));
    let mut out = String::with_capacity(64 * 1024);
    prometheus_client::encoding::text::encode(&mut out, &registry)?;
    Ok(out)
}

#[derive(Debug)]
struct NodeCollector {
    sample: Sample,
    findings: BTreeMap<FindingKey, i64>,
    scrape_seconds: f64,
}

/// One `fabrik_findings` series: severity, rule, subject, and where the subject is when it is
/// a port or an interface of the sample (the labels the port and netdev series carry, so an
/// alert or a panel can join the two).
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct FindingKey {
    severity: String,
    rule: String,
    subject: String,
    place: Vec<(&'static str, String)>,
}

/// `device` and `port` for a subject `DEVICE:PORT` naming a sampled port, `interface` for a
/// sampled netdev, nothing for other subjects (the node, a GPU, a PCI function).
fn place_of(subject: &str, sample: &Sample) -> Vec<(&'static str, String)> {
    if let Some((dev, port)) = subject.rsplit_once(':') {
        if let Ok(n) = port.parse::<u32>() {
            if sample.ports.iter().any(|p| p.device == dev && p.port == n) {
                return vec![("device", dev.to_string()), ("port", port.to_string())];
            }
        }
    }
    if sample.netdevs.iter().any(|n| n.name == subject) {
        return vec![("interface", subject.to_string())];
    }
    Vec::new()
}

/// The number before `: ` in `4: ACTIVE` / `5: LinkUp`.
pub fn state_number(s: &str) -> Option<i64> {
    s.split(':').next()?.trim().parse().ok()
}

/// `100 Gb/sec (4X EDR)` / `2.5 Gb/sec (1X SDR)` to bytes per second, read by
/// [`fabrik_parse::formats::IbRate`] (the kernel's `rate` file has one reader).
pub fn rate_bytes_per_second(s: &str) -> Option<f64> {
    use fabrik_parse::formats::Format;
    fabrik_parse::formats::IbRate::parse(s)?
        .gbps
        .map(|g| g * 1e9 / 8.0)
}

fn counter(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    rows: &[(Vec<(&str, String)>, u64)],
) -> fmt::Result {
    family(
        enc,
        (name, help, unit),
        MetricType::Counter,
        rows,
        ConstCounter::new,
    )
}

fn gauge(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    rows: &[(Vec<(&str, String)>, f64)],
) -> fmt::Result {
    family(
        enc,
        (name, help, unit),
        MetricType::Gauge,
        rows,
        ConstGauge::new,
    )
}

/// One metric family of `kind`, a sample per row made by `make`; nothing where no row is.
fn family<V: Copy, M: EncodeMetric>(
    enc: &mut DescriptorEncoder,
    (name, help, unit): (&str, &str, Option<&Unit>),
    kind: MetricType,
    rows: &[(Vec<(&str, String)>, V)],
    make: fn(V) -> M,
) -> fmt::Result {
    if rows.is_empty() {
        return Ok(());
    }
    let mut m = enc.encode_descriptor(name, help, unit, kind)?;
    for (labels, v) in rows {
        let fam = m.encode_family(labels)?;
        make(*v).encode(fam)?;
    }
    Ok(())
}

type Rows<T> = Vec<(Vec<(&'static str, String)>, T)>;

impl Collector for NodeCollector {
    fn encode(&self, mut enc: DescriptorEncoder) -> fmt::Result {
        let s = &self.sample;
        let mut info: Vec<Vec<(&str, String)>> = Vec::new();
        let mut state: Rows<f64> = Vec::new();
        let mut phys: Rows<f64> = Vec::new();
        let mut rate: Rows<f64> = Vec::new();
        let mut tx_bytes: Rows<u64> = Vec::new();
        let mut rx_bytes: Rows<u64> = Vec::new();
        let mut tx_pkts: Rows<u64> = Vec::new();
        let mut rx_pkts: Rows<u64> = Vec::new();
        let mut pma: Rows<u64> = Vec::new();
        let mut hw: Rows<u64> = Vec::new();
        let mut saturated: Rows<f64> = Vec::new();
        let mut unreadable: Rows<f64> = Vec::new();

        for p in &s.ports {
            let dp = || vec![("device", p.device.clone()), ("port", p.port.to_string())];
            info.push(vec![
                ("device", p.device.clone()),
                ("port", p.port.to_string()),
                ("state", p.state.clone().unwrap_or_default()),
                ("phys_state", p.phys_state.clone().unwrap_or_default()),
                ("rate", p.rate.clone().unwrap_or_default()),
                ("link_layer", p.link_layer.clone().unwrap_or_default()),
                ("netdev", p.netdevs.join(",")),
            ]);
            if let Some(v) = p.state.as_deref().and_then(state_number) {
                state.push((dp(), v as f64));
            }
            if let Some(v) = p.phys_state.as_deref().and_then(state_number) {
                phys.push((dp(), v as f64));
            }
            if let Some(v) = p.rate.as_deref().and_then(rate_bytes_per_second) {
                rate.push((dp(), v));
            }
            let val = |src: Source, n: &str| p.reading(src, n).and_then(Reading::value);
            // A data counter reading exactly 2^32-1 is most likely a stuck 32-bit PMA counter;
            // leaving that one sample out is harmless even when it was a 64-bit value passing by.
            let data = |n: &str| {
                val(Source::Counters, n)
                    .filter(|v| !is_saturated(Source::Counters, n, Some(*v), *v))
            };
            if let Some(w) = data("port_xmit_data") {
                tx_bytes.push((dp(), w.saturating_mul(4)));
            }
            if let Some(w) = data("port_rcv_data") {
                rx_bytes.push((dp(), w.saturating_mul(4)));
            }
            if let Some(v) =
                data("port_xmit_packets").or_else(|| val(Source::HwCounters, "sent_pkts"))
            {
                tx_pkts.push((dp(), v));
            }
            if let Some(v) =
                data("port_rcv_packets").or_else(|| val(Source::HwCounters, "rcvd_pkts"))
            {
                rx_pkts.push((dp(), v));
            }
            let mut bad = 0usize;
            for (name, r) in &p.counters {
                match r {
                    Reading::Value(v) => {
                        if is_saturated(Source::Counters, name, None, *v) {
                            let mut l = dp();
                            l.push(("counter", name.clone()));
                            saturated.push((l, 1.0));
                        }
                        if name == "port_xmit_data" || name == "port_rcv_data" {
                            continue;
                        }
                        let mut l = dp();
                        l.push(("counter", name.clone()));
                        pma.push((l, *v));
                    }
                    Reading::Unreadable(_) => bad += 1,
                }
            }
            for (name, r) in &p.hw_counters {
                match r {
                    Reading::Value(v) => {
                        let mut l = dp();
                        l.push(("counter", name.clone()));
                        hw.push((l, *v));
                    }
                    Reading::Unreadable(_) => bad += 1,
                }
            }
            unreadable.push((vec![("subject", p.subject())], bad as f64));
        }

        let mut nd_info: Vec<Vec<(&str, String)>> = Vec::new();
        let mut nd_stat: Rows<u64> = Vec::new();
        let mut pause: Rows<u64> = Vec::new();
        let mut discards: Rows<u64> = Vec::new();
        for n in &s.netdevs {
            nd_info.push(vec![
                ("interface", n.name.clone()),
                ("operstate", n.operstate.clone().unwrap_or_default()),
                ("physical", n.physical.to_string()),
                ("rdma_ports", n.rdma_ports.join(",")),
            ]);
            let mut bad = 0usize;
            for (name, r) in &n.statistics {
                match r {
                    Reading::Value(v) => nd_stat.push((
                        vec![("interface", n.name.clone()), ("counter", name.clone())],
                        *v,
                    )),
                    Reading::Unreadable(_) => bad += 1,
                }
            }
            for (name, r) in &n.ethtool {
                let Reading::Value(v) = r else {
                    bad += 1;
                    continue;
                };
                if let Some((dir, prio)) = priority_pause(name) {
                    pause.push((
                        vec![
                            ("interface", n.name.clone()),
                            ("direction", dir.to_string()),
                            ("priority", prio.to_string()),
                        ],
                        *v,
                    ));
                } else if let Some(dir) = name.strip_suffix("_discards_phy") {
                    if dir == "rx" || dir == "tx" {
                        discards.push((
                            vec![
                                ("interface", n.name.clone()),
                                ("direction", dir.to_string()),
                            ],
                            *v,
                        ));
                    }
                }
            }
            unreadable.push((vec![("subject", n.name.clone())], bad as f64));
        }

        if !info.is_empty() {
            let mut m = enc.encode_descriptor(
                "fabrik_port",
                "RDMA port: state, physical state, rate, link layer and netdev as the kernel reports them",
                None,
                MetricType::Info,
            )?;
            for l in &info {
                m.encode_info(l)?;
            }
        }
        gauge(
            &mut enc,
            "fabrik_port_state",
            "RDMA port logical state number (1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER)",
            None,
            &state,
        )?;
        gauge(
            &mut enc,
            "fabrik_port_phys_state",
            "RDMA port physical state number (5 LinkUp, 3 Disabled, 2 Polling...)",
            None,
            &phys,
        )?;
        gauge(
            &mut enc,
            "fabrik_port_rate_bytes_per_second",
            "RDMA port signalling rate from the port's rate file, in bytes per second",
            None,
            &rate,
        )?;
        counter(
            &mut enc,
            "fabrik_port_transmit",
            "Bytes transmitted by the RDMA port (counters/port_xmit_data x 4)",
            Some(&Unit::Bytes),
            &tx_bytes,
        )?;
        counter(
            &mut enc,
            "fabrik_port_receive",
            "Bytes received by the RDMA port (counters/port_rcv_data x 4)",
            Some(&Unit::Bytes),
            &rx_bytes,
        )?;
        counter(&mut enc, "fabrik_port_transmit_packets", "Packets transmitted by the RDMA port (counters/port_xmit_packets, or rxe hw_counters/sent_pkts)", None, &tx_pkts)?;
        counter(&mut enc, "fabrik_port_receive_packets", "Packets received by the RDMA port (counters/port_rcv_packets, or rxe hw_counters/rcvd_pkts)", None, &rx_pkts)?;
        counter(&mut enc, "fabrik_port_pma", "Every IB PMA counter in ports/N/counters (raw value; the data counters are in fabrik_port_transmit_bytes_total and fabrik_port_receive_bytes_total)", None, &pma)?;
        counter(&mut enc, "fabrik_port_hw_stat", "Every driver counter in ports/N/hw_counters (mlx5 Q and congestion counters, rxe counters)", None, &hw)?;
        gauge(&mut enc, "fabrik_port_pma_saturated", "1 for an IB PMA counter stuck at its maximum (it stops instead of wrapping; clear it with perfquery -R)", None, &saturated)?;
        if !nd_info.is_empty() {
            let mut m = enc.encode_descriptor(
                "fabrik_netdev",
                "Network interface watched by fabrik: operstate, whether it is a physical device, RDMA ports on it",
                None,
                MetricType::Info,
            )?;
            for l in &nd_info {
                m.encode_info(l)?;
            }
        }
        counter(
            &mut enc,
            "fabrik_netdev_stat",
            "Every /sys/class/net/IF/statistics counter of the interface",
            None,
            &nd_stat,
        )?;
        counter(&mut enc, "fabrik_netdev_pause_frames", "PFC pause frames per priority and direction (ethtool -S rx_prioN_pause / tx_prioN_pause)", None, &pause)?;
        counter(&mut enc, "fabrik_netdev_phy_discards", "Packets discarded by the NIC's physical port (ethtool -S rx_discards_phy / tx_discards_phy)", None, &discards)?;
        gauge(
            &mut enc,
            "fabrik_unreadable_counters",
            "Counter files of a port or interface that could not be read as numbers in this scrape",
            None,
            &unreadable,
        )?;
        let f: Rows<f64> = self
            .findings
            .iter()
            .map(|(k, n)| {
                let mut labels = vec![
                    ("severity", k.severity.clone()),
                    ("rule", k.rule.clone()),
                    ("subject", k.subject.clone()),
                ];
                labels.extend(k.place.iter().cloned());
                (labels, *n as f64)
            })
            .collect();
        gauge(&mut enc, "fabrik_findings", "Findings by severity, rule id and subject (doctor rules, and counter rules over the exporter's rate window), with device and port or interface where the subject is one", None, &f)?;
        gauge(
            &mut enc,
            "fabrik_scrape_duration_seconds",
            "Time spent reading the counters for this scrape",
            None,
            &[(Vec::new(), self.scrape_seconds)],
        )?;
        let problems = s.problems.len() as f64;
        gauge(
            &mut enc,
            "fabrik_scrape_problems",
            "Problems that concern the whole scrape (a directory that could not be listed)",
            None,
            &[(Vec::new(), problems)],
        )?;
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn parses_port_attributes() {
        assert_eq!(state_number("4: ACTIVE"), Some(4));
        assert_eq!(state_number("5: LinkUp"), Some(5));
        assert_eq!(state_number("garbage"), None);
        assert_eq!(rate_bytes_per_second("100 Gb/sec (4X EDR)"), Some(12.5e9));
        assert_eq!(rate_bytes_per_second("2.5 Gb/sec (1X SDR)"), Some(312.5e6));
        assert_eq!(rate_bytes_per_second("weird"), None);
    }

    #[test]
    fn saturated_pma_counters_are_flagged() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/counters/mlx5-ib/after");
        let text = encode(crate::read::sample(&root), &[], 0.001).unwrap();
        // 16-bit port_rcv_errors at 65535: certain.
        assert!(text.contains(
            "fabrik_port_pma_saturated{device=\"mlx5_1\",port=\"1\",counter=\"port_rcv_errors\"} 1.0"
        ));
        // One reading of 4294967295 in a data counter may be a 64-bit value passing by: the
        // exporter does not call it saturated (`diff` and `top`, with two samples, do).
        assert!(!text.contains("counter=\"port_xmit_data\"} 1.0"));
        // 64-bit extended data counters past 2^32, in bytes.
        assert!(text.contains(
            "fabrik_port_transmit_bytes_total{device=\"mlx5_0\",port=\"1\"} 56000000000\n"
        ));
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn classic_text_renames_counters_and_info() {
        let om = "# HELP a_bytes help a\n# TYPE a_bytes counter\n# UNIT a_bytes bytes\na_bytes_total{x=\"1\"} 5\n# HELP b help b\n# TYPE b info\nb_info{y=\"2\"} 1\n# HELP c help c\n# TYPE c gauge\nc 1.0\n# EOF\n";
        let t = to_prometheus_text(om);
        assert_eq!(
            t,
            "# HELP a_bytes_total help a\n# TYPE a_bytes_total counter\na_bytes_total{x=\"1\"} 5\n# HELP b_info help b\n# TYPE b_info gauge\nb_info{y=\"2\"} 1\n# HELP c help c\n# TYPE c gauge\nc 1.0\n"
        );
    }
}
