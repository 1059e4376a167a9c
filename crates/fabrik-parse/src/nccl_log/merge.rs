//! The end of a log: processes whose identity the log gave late merged into theirs, and the
//! DIAG reports and monitor events joined with the hosts the processes' ranks ran on.

use super::*;

/// DIAG reports and monitor events: their findings name hosts through the ranks the log's
/// processes joined.
pub(super) fn add_diag_and_monitor(
    diag: crate::ras::diag::DiagParser,
    monitor: crate::ras::monitor::MonitorParser,
    report: &mut LogReport,
) {
    {
        let diag = diag.finish();
        let table = monitor.finish();
        let mut extra = Vec::new();
        if !diag.is_empty() {
            extra.extend(crate::ras::diag::findings(
                &diag,
                &rank_hosts(&report.processes),
            ));
            report.diag = diag;
        }
        if table.events > 0 {
            extra.extend(crate::ras::monitor::findings(&table));
            report.ras_monitor = Some(table);
        }
        if extra.is_empty() {
            return;
        }
        for f in &extra {
            match f.severity {
                Severity::Error => report.summary.errors += 1,
                Severity::Warning => report.summary.warnings += 1,
                Severity::Info => {}
            }
        }
        extra.append(&mut report.findings);
        report.findings = extra;
        fabrik_model::sort_findings(&mut report.findings);
    }
}

/// Rank to host, where every process that joined that rank number is on one host (a job with
/// several communicators of different sizes may reuse rank numbers on other hosts: those are
/// left out rather than guessed).
pub fn rank_hosts(processes: &[ProcessReport]) -> crate::ras::diag::RankHosts {
    let mut map = crate::ras::diag::RankHosts::new();
    let mut clash = std::collections::BTreeSet::new();
    for p in processes {
        let Some(h) = &p.host else { continue };
        for r in &p.ranks {
            let rank = u64::from(r.rank);
            match map.get(&rank) {
                Some(prev) if prev != h => {
                    clash.insert(rank);
                }
                _ => {
                    map.insert(rank, h.clone());
                }
            }
        }
    }
    for r in clash {
        map.remove(&r);
    }
    map
}

/// Lines whose `host:pid` prefix was stripped (a paste, a collector) or program lines before
/// the first NCCL line go to an unnamed process. When the input names exactly one process, they
/// are that process's lines: merge them rather than count a second process.
pub(super) fn merge_unknown_process(processes: &mut Vec<ProcState>) {
    let unnamed = |p: &ProcState| p.report.host.is_none() && p.report.pid.is_none();
    let Some(u) = processes.iter().position(unnamed) else {
        return;
    };
    if processes.len() != 2 {
        return;
    }
    let from = processes.remove(u);
    let to = &mut processes[0];
    let (f, t) = (from.report, &mut to.report);
    t.lines += f.lines;
    for d in f.cuda_devices {
        if !t.cuda_devices.contains(&d) {
            t.cuda_devices.push(d);
        }
    }
    for r in f.ranks {
        if !t.ranks.contains(&r) {
            t.ranks.push(r);
        }
    }
    macro_rules! fill {
        ($($field:ident),*) => {$(
            if t.$field.is_none() {
                t.$field = f.$field;
            }
        )*};
    }
    fill!(
        nccl_version,
        cuda_runtime,
        cuda_driver,
        bootstrap,
        network,
        ib_oob,
        ofi_provider,
        nvls,
        collnet,
        sharp
    );
    if t.plugin.status == PluginStatus::Unknown {
        t.plugin = f.plugin;
    }
    if t.ib_nics.is_empty() {
        t.ib_nics = f.ib_nics;
    }
    if t.socket_interfaces.is_empty() {
        t.socket_interfaces = f.socket_interfaces;
    }
    if t.gdr_hcas.is_empty() {
        t.gdr_hcas = f.gdr_hcas;
    }
    t.relaxed_ordering |= f.relaxed_ordering;
    t.ib_no_device |= f.ib_no_device;
    for (k, v) in f.env {
        t.env.entry(k).or_insert(v);
    }
    for (k, n) in from.channels {
        match to.channels.iter_mut().find(|(k2, _)| *k2 == k) {
            Some(e) => e.1 += n,
            None => to.channels.push((k, n)),
        }
    }
    for i in from.issues {
        match to.issues.iter_mut().find(|j| j.rule == i.rule) {
            Some(j) => {
                j.count += i.count;
                if i.order < j.order {
                    let count = j.count;
                    *j = i;
                    j.count = count;
                }
            }
            None => to.issues.push(i),
        }
    }
    let h = &mut to.hints;
    let g = from.hints;
    h.ofi |= g.ofi;
    h.tcpx |= g.tcpx;
    h.fastrak |= g.fastrak;
    h.ib_attempt |= g.ib_attempt;
    h.plugin_devices |= g.plugin_devices;
    h.no_verbs |= g.no_verbs;
    h.socket_net |= g.socket_net;
    h.gdr_off |= g.gdr_off;
    h.gdr_net = h.gdr_net.or(g.gdr_net);
}
