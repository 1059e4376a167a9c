//! The kernel log as `dmesg`, `dmesg -T`, `journalctl -k`, `/var/log/messages` or `/dev/kmsg`
//! give it: the lines that matter to GPU networking, by the kernel's own printk formats.
//!
//! `/dev/kmsg` (Documentation/ABI/testing/dev-kmsg) writes one record per read:
//! `PRI,SEQ,TS_USEC,FLAGS[,...];MESSAGE`, then zero or more dictionary lines that start with a
//! space (` SUBSYSTEM=pci`, ` DEVICE=+pci:0000:3b:00.0`), which are no log lines of their own.
//!
//! - NVIDIA Xid: `NVRM: Xid (PCI:0000:3b:00): 79, pid=..., GPU has fallen off the bus.`, each
//!   with its meaning and recommended action from NVIDIA's Xid catalog (`data/xid-catalog.tsv`).
//! - mlx5 health (`drivers/net/ethernet/mellanox/mlx5/core/health.c`, `cmd.c`): `device's health
//!   compromised - reached miss count`, `Fatal error %u detected`, `synd 0x%x: %s`, `Health issue
//!   observed`, `health recovery`, `%s(0x%x) timeout. Will cause a leak of a command resource`.
//! - Link changes: mlx5e's `Link down`/`Link up` (`netdev_info`, printed as `mlx5_core BDF IF:
//!   Link down`), and the `NIC Link is Down`/`NIC Link is Up ...` of ice, i40e, igb, bnxt.
//! - PCIe AER (`drivers/pci/pcie/aer.c`): `PCIe Bus Error: severity=%s, type=%s, (%s)`.
//! - Memory pinning for GPUDirect RDMA (`nvidia-peermem`, `nv_peer_mem`): an error while calling
//!   `nvidia_p2p_get_pages()` or `nvidia_p2p_dma_map_pages()`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use fabrik_model::{Fact, FactTable, KernelEvent, KernelEventKind, KernelLog, Node};

use super::{lines, normalize_bdf, Format, Paste};

/// The longest line kept as evidence.
const MAX_LINE: usize = 240;
/// The most events kept; a log flooded with one message says it by its count.
const MAX_EVENTS: usize = 4096;

/// The kernel log.
pub struct Dmesg;

impl Format for Dmesg {
    type Facts = KernelLog;
    const EXPECTED: &'static str =
        "kernel log lines (`[ 12.345678] mlx5_core 0000:3b:00.0 ens1f0: Link down`, `NVRM: Xid (PCI:...): 79, ...`)";

    fn parse(text: &str) -> Option<KernelLog> {
        let log = read_log(text);
        (!log.events.is_empty()).then_some(log)
    }
}

/// The whole log, events or not: what the probe keeps of a log it read (a log without events
/// is a clean log, not an unread one).
pub fn read_log(text: &str) -> KernelLog {
    let mut log = KernelLog::default();
    let mut in_kmsg_record = false;
    for line in lines(text) {
        if line.trim().is_empty() {
            continue;
        }
        // A /dev/kmsg record's dictionary continues it: ` KEY=value`.
        if in_kmsg_record && line.starts_with(' ') && kmsg_dictionary_line(line) {
            continue;
        }
        in_kmsg_record = kmsg_record(line).is_some();
        log.lines += 1;
        if log.events.len() < MAX_EVENTS {
            if let Some(e) = event(line) {
                log.events.push(e);
            }
        }
    }
    log
}

/// ` SUBSYSTEM=pci`: a dictionary line of a /dev/kmsg record (the kernel escapes any
/// non-printable byte in it as `\xNN`).
fn kmsg_dictionary_line(line: &str) -> bool {
    line.trim_start().split_once('=').is_some_and(|(k, _)| {
        !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// A /dev/kmsg record `PRI,SEQ,TS_USEC,FLAGS[,...];MESSAGE`: its time in microseconds and its
/// message. The first three fields are decimal; more comma-separated fields may follow the
/// flags (the ABI allows additions).
pub fn kmsg_record(line: &str) -> Option<(u64, &str)> {
    let (head, message) = line.split_once(';')?;
    let mut f = head.split(',');
    let decimal = |s: Option<&str>| {
        s.filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|s| s.parse::<u64>().ok())
    };
    decimal(f.next())?;
    decimal(f.next())?;
    let usec = decimal(f.next())?;
    // The flags field: `-`, `c` or `+` (and nothing else today).
    f.next()?;
    Some((usec, message))
}

/// Xid → (description, action), from NVIDIA's Xid catalog.
fn xid_catalog() -> &'static BTreeMap<u32, (String, String)> {
    static CATALOG: OnceLock<BTreeMap<u32, (String, String)>> = OnceLock::new();
    CATALOG.get_or_init(|| {
        include_str!("../../data/xid-catalog.tsv")
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let mut f = l.split('\t');
                let code = f.next()?.parse().ok()?;
                Some((code, (f.next()?.to_string(), f.next()?.to_string())))
            })
            .collect()
    })
}

/// Xid `code`'s description and recommended action in NVIDIA's catalog.
pub fn xid_meaning(code: u32) -> Option<(&'static str, &'static str)> {
    xid_catalog()
        .get(&code)
        .map(|(d, a)| (d.as_str(), a.as_str()))
}

/// `[ 1234.567890]` at the start of a dmesg line: its seconds and the rest.
fn monotonic(line: &str) -> (Option<f64>, Option<String>, &str) {
    if let Some((usec, message)) = kmsg_record(line) {
        let (s, us) = (usec / 1_000_000, usec % 1_000_000);
        // As `dmesg` prints the same record.
        return (
            Some(usec as f64 / 1e6),
            Some(format!("[{s}.{us:06}]")),
            message,
        );
    }
    let t = line.trim_start();
    if let Some(rest) = t.strip_prefix('[') {
        if let Some((stamp, after)) = rest.split_once(']') {
            let secs = stamp.trim().parse::<f64>().ok();
            return (
                secs,
                Some(format!("[{}]", stamp.trim())),
                after.trim_start(),
            );
        }
    }
    // `Mar  5 10:00:01 host kernel: ...` (syslog, journalctl): the time is the first 3 words.
    let w: Vec<&str> = t
        .splitn(4, char::is_whitespace)
        .filter(|s| !s.is_empty())
        .collect();
    if w.len() >= 3 && w[0].len() == 3 && w[0].chars().all(|c| c.is_ascii_alphabetic()) {
        if let Some(pos) = t.find(" kernel: ") {
            let time = t[..pos].rsplit_once(' ').map(|(a, _)| a.to_string());
            let rest = &t[pos + " kernel: ".len()..];
            let (secs, stamp, rest) = monotonic(rest);
            return (secs, stamp.or(time), rest);
        }
    }
    (None, None, t)
}

/// The first PCI address in the line (`0000:3b:00.0`, or NVRM's `PCI:0000:3b:00`).
fn pci_device(text: &str) -> Option<String> {
    text.split(|c: char| c.is_whitespace() || c == '(' || c == ')' || c == ',')
        .map(|w| w.trim_end_matches(':').trim_start_matches("PCI:"))
        .find_map(|w| normalize_bdf(w).or_else(|| nvrm_bdf(w)))
}

/// NVRM names a GPU `0000:3b:00` (domain, bus, device; no function).
fn nvrm_bdf(w: &str) -> Option<String> {
    let p: Vec<&str> = w.split(':').collect();
    (p.len() == 3
        && p[0].len() == 4
        && p[1].len() == 2
        && p[2].len() == 2
        && p.iter().all(|x| x.chars().all(|c| c.is_ascii_hexdigit())))
    .then(|| w.to_ascii_lowercase())
}

/// The netdev of `mlx5_core 0000:3b:00.0 ens1f0np0: Link down` (the word before `Link`).
fn link_device(text: &str, at: usize) -> Option<String> {
    let before = text[..at].trim_end().trim_end_matches(':');
    let word = before.rsplit(|c: char| c.is_whitespace()).next()?;
    let word = word.trim_end_matches(':');
    (!word.is_empty() && normalize_bdf(word).is_none() && !word.contains('['))
        .then(|| word.to_string())
        .or_else(|| pci_device(text))
}

fn event(line: &str) -> Option<KernelEvent> {
    let (seconds, time, text) = monotonic(line);
    let kind_device = classify(text)?;
    let mut kept: String = text.trim().chars().take(MAX_LINE).collect();
    if kept.len() < text.trim().len() {
        kept.push('…');
    }
    Some(KernelEvent {
        kind: kind_device.0,
        device: kind_device.1,
        time,
        seconds,
        line: kept,
    })
}

fn classify(text: &str) -> Option<(KernelEventKind, Option<String>)> {
    if let Some(at) = text.find("NVRM: Xid") {
        // `NVRM: Xid (PCI:0000:3b:00): 79, pid=..., ...`
        let rest = &text[at..];
        let code = rest
            .split_once("):")
            .and_then(|(_, r)| r.trim_start().split(',').next())
            .and_then(|n| n.trim().parse::<u32>().ok())?;
        let m = xid_meaning(code);
        return Some((
            KernelEventKind::Xid {
                code,
                meaning: m.map(|(d, _)| d.to_string()),
                action: m.map(|(_, a)| a.to_string()),
            },
            pci_device(rest),
        ));
    }
    if let Some(at) = text.find("PCIe Bus Error: severity=") {
        let sev = text[at + "PCIe Bus Error: severity=".len()..]
            .split(',')
            .next()
            .unwrap_or("")
            .trim()
            .to_string();
        return Some((KernelEventKind::Aer { severity: sev }, pci_device(text)));
    }
    let mlx5 = text.contains("mlx5_core") || text.contains("mlx5_ib");
    if mlx5
        && [
            "health compromised",
            "Fatal error",
            "synd 0x",
            "Health issue observed",
            "health recovery",
            "Will cause a leak of a command resource",
            "FW fatal",
            "firmware internal error",
            "mlx5_pci_err_detected",
            "exec_timeout",
            "No done completion",
        ]
        .iter()
        .any(|p| text.contains(p))
    {
        return Some((KernelEventKind::Mlx5Health, pci_device(text)));
    }
    // mlx5e prints `Link down`; r8169, e1000 and others the lower-case `link down` as a whole
    // message after the interface (`r8169: eth0: link up`).
    for (pat, up) in [
        ("NIC Link is Down", false),
        ("NIC Link is Up", true),
        ("Link down", false),
        ("Link up", true),
        (": link down", false),
        (": link up", true),
    ] {
        if let Some(at) = text.find(pat) {
            // `Link up` must be the message, not part of another word (`Link update`).
            let after = text[at + pat.len()..].chars().next();
            if after.is_some_and(|c| c.is_alphanumeric()) {
                continue;
            }
            let kind = if up {
                KernelEventKind::LinkUp
            } else {
                KernelEventKind::LinkDown
            };
            return Some((kind, link_device(text, at)));
        }
    }
    let peer = text.contains("nvidia-peermem")
        || text.contains("nv_peer_mem")
        || text.contains("nvidia_p2p");
    if peer
        && (text.contains("nvidia_p2p_get_pages") || text.contains("nvidia_p2p_dma_map_pages"))
        && (text.contains("error") || text.contains("fail"))
    {
        return Some((KernelEventKind::PinFailure, pci_device(text)));
    }
    None
}

/// A short name of an event kind, for tables.
fn kind_name(k: &KernelEventKind) -> String {
    match k {
        KernelEventKind::Xid { code, .. } => format!("Xid {code}"),
        KernelEventKind::Mlx5Health => "mlx5 health".to_string(),
        KernelEventKind::LinkDown => "link down".to_string(),
        KernelEventKind::LinkUp => "link up".to_string(),
        KernelEventKind::Aer { severity } => format!("AER {severity}"),
        KernelEventKind::PinFailure => "pin failure".to_string(),
    }
}

impl Paste for Dmesg {
    const NAME: &'static str = "dmesg";
    const ALIASES: &'static [&'static str] = &["journalctl", "kernel-log"];
    const ABOUT: &'static str =
        "kernel log (`dmesg`, `journalctl -k`): NVIDIA Xid errors with their meaning, mlx5 health, link flaps, AER, memory pinning failures; `-` reads stdin";

    fn node(facts: &KernelLog) -> Node {
        Node {
            kernel_log: Some(facts.clone()),
            known: Some(BTreeSet::from([Fact::KernelLog])),
            ..Node::default()
        }
    }

    fn table(facts: &KernelLog) -> FactTable {
        let mut counts: BTreeMap<(String, String), (usize, String)> = BTreeMap::new();
        for e in &facts.events {
            let key = (kind_name(&e.kind), e.device.clone().unwrap_or_default());
            let c = counts.entry(key).or_insert((0, String::new()));
            c.0 += 1;
            if let KernelEventKind::Xid {
                meaning: Some(m), ..
            } = &e.kind
            {
                c.1.clone_from(m);
            }
        }
        let mut t = FactTable::new(["event", "device", "count", "meaning"]);
        for ((kind, dev), (n, meaning)) in counts {
            t.row([kind, dev, n.to_string(), meaning]);
        }
        t.note(format!(
            "{} events in {} log lines",
            facts.events.len(),
            facts.lines
        ));
        t
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn kmsg_records_read_as_dmesg_prints_them() {
        // The example of Documentation/ABI/testing/dev-kmsg, with a dictionary that is no line.
        let text = "7,160,424069,-;pci_root PNP0A03:00: host bridge window [io  0x0000-0x0cf7] (ignored)\n SUBSYSTEM=acpi\n DEVICE=+acpi:PNP0A03:00\n6,339,5140900,-;NET: Registered protocol family 10\n30,340,5690716,-;udevd[80]: starting version 181\n";
        let log = read_log(text);
        assert_eq!(log.lines, 3);
        assert!(log.events.is_empty());
        assert_eq!(Dmesg::parse(text), None, "a clean log holds no events");
        assert_eq!(
            kmsg_record("6,339,5140900,-;NET: Registered protocol family 10"),
            Some((5140900, "NET: Registered protocol family 10"))
        );
        // Extra fields after the flags are allowed by the ABI; a dmesg line is not a record.
        assert_eq!(kmsg_record("4,12,99,c,extra;hi"), Some((99, "hi")));
        assert_eq!(kmsg_record("[    5.140900] NET: x; y"), None);
        assert_eq!(kmsg_record("4,12;too short"), None);
        // The same record as an event: its time as dmesg writes it, the prefix gone.
        let line = "3,901,8123456789,-;mlx5_core 0000:3b:00.0 ens1f0np0: Link down";
        let log = read_log(&format!(
            "{line}\n SUBSYSTEM=pci\n DEVICE=+pci:0000:3b:00.0\n"
        ));
        assert_eq!(log.lines, 1);
        let e = &log.events[0];
        assert_eq!(e.kind, KernelEventKind::LinkDown);
        assert_eq!(e.device.as_deref(), Some("ens1f0np0"));
        assert_eq!(e.time.as_deref(), Some("[8123.456789]"));
        assert_eq!(e.seconds, Some(8123.456789));
        assert_eq!(e.line, "mlx5_core 0000:3b:00.0 ens1f0np0: Link down");
    }

    proptest! {
        #[test]
        fn kmsg_records_never_panic_and_keep_their_time(
            pri in 0u32..200, seq in any::<u64>(), usec in any::<u64>(), msg in "[^\n]{0,80}"
        ) {
            let line = format!("{pri},{seq},{usec},-;{msg}");
            prop_assert_eq!(kmsg_record(&line), Some((usec, msg.as_str())));
            let _ = read_log(&line);
        }

        #[test]
        fn any_text_reads_without_panic(text in "\\PC{0,400}") {
            let log = read_log(&text);
            prop_assert!(log.lines as usize <= text.lines().count());
        }
    }
}
