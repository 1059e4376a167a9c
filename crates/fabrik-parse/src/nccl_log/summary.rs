//! From per-process facts to the job summary and its findings.

use std::collections::BTreeMap;

use fabrik_model::{sort_findings, Evidence, Finding, Severity, SCHEMA_VERSION};

use super::report::*;

pub(super) fn build(
    inputs: Vec<String>,
    processes: Vec<ProcessReport>,
    bare_versions: Vec<String>,
    lines_read: u64,
    nccl_lines: u64,
    has_ras: bool,
) -> LogReport {
    let mut host_names: Vec<String> = processes.iter().filter_map(|p| p.host.clone()).collect();
    host_names.sort();
    host_names.dedup();

    // A loaded plugin's name is weak evidence: plugin/net.cc drops a plugin whose init fails or
    // finds no device and goes on with IB or sockets. Where other processes show the network
    // itself (`Using network`, channels, NIC lists), those decide.
    let strong: Vec<Transport> = processes
        .iter()
        .filter(|p| !transport_only_from_plugin_name(p))
        .filter_map(|p| p.transport)
        .collect();
    let transports: Vec<Transport> = {
        let mut t: Vec<Transport> = if strong.is_empty() {
            processes.iter().filter_map(|p| p.transport).collect()
        } else {
            strong
        };
        t.sort();
        t.dedup();
        t
    };
    let transport = match transports.as_slice() {
        [] => Transport::Unknown,
        [one] => *one,
        _ => Transport::Mixed,
    };
    let plugin = processes
        .iter()
        .filter(|p| p.plugin.status == PluginStatus::Loaded)
        .find_map(|p| p.plugin.name.clone());

    let gdr_values: Vec<bool> = processes.iter().filter_map(|p| p.gdr).collect();
    let gdr = if gdr_values.is_empty() {
        None
    } else {
        Some(gdr_values.iter().any(|&g| g))
    };

    let mixed_rdma_and_socket = transports.contains(&Transport::Socket)
        && transports
            .iter()
            .any(|t| !matches!(t, Transport::Socket | Transport::Unknown));
    let socket_fallback = processes.iter().any(|p| p.socket_fallback) || mixed_rdma_and_socket;

    // Versions: prefixed `NCCL INFO NCCL version` lines and rank 0's bare line.
    let mut versions: BTreeMap<String, u32> = BTreeMap::new();
    for v in processes.iter().filter_map(|p| p.nccl_version.clone()) {
        *versions.entry(v).or_default() += 1;
    }
    for v in bare_versions {
        versions.entry(v).or_insert(1);
    }
    let nccl_version = versions
        .iter()
        .max_by_key(|(_, n)| **n)
        .map(|(v, _)| v.clone());

    let nvls = merge_flag(processes.iter().map(|p| p.nvls));
    let collnet = merge_flag(processes.iter().map(|p| p.collnet));

    let mut errors = 0u32;
    let mut warnings = 0u32;
    for p in &processes {
        for i in &p.issues {
            match i.severity {
                Severity::Error => errors += 1,
                Severity::Warning => warnings += 1,
                Severity::Info => {}
            }
        }
    }

    let mut findings = Vec::new();
    job_findings(
        &processes,
        transport,
        gdr,
        socket_fallback,
        &versions,
        &mut findings,
    );
    socket_findings(
        &processes,
        &host_names,
        transport,
        socket_fallback,
        &mut findings,
    );
    // Loopback across hosts is an error of the job, not of one process's lines.
    errors += findings
        .iter()
        .filter(|f| f.rule == "FAB-NCCL-SOCKET-LOOPBACK")
        .count() as u32;
    if nccl_lines == 0 && !has_ras {
        findings.push(Finding {
            rule: "FAB-NCCL-NO-LINES".into(),
            severity: Severity::Info,
            subject: "input".into(),
            message: format!(
                "No NCCL lines in {lines_read} line(s) read: the program ran without NCCL_DEBUG=INFO (or these are not NCCL logs), so nothing can be said about the transport"
            ),
            evidence: Vec::new(),
            fix: "Rerun with NCCL_DEBUG=INFO (and NCCL_DEBUG_SUBSYS=INIT,NET to keep the log short); NCCL_DEBUG_FILE=/path/nccl.%h.%p writes one file per process".into(),
        });
    }
    let root = first_failure(&processes);
    for (pi, p) in processes.iter().enumerate() {
        let subject = process_name(p);
        for (ii, i) in p.issues.iter().enumerate() {
            let result = i
                .result
                .as_deref()
                .map(|r| format!("result {r}; "))
                .unwrap_or_default();
            let role = match root {
                Some((rp, ri)) if (rp, ri) == (pi, ii) => {
                    "; the first failure of the job".to_string()
                }
                Some((rp, _))
                    if i.severity == Severity::Error && i.order > root_order(&processes, root) =>
                {
                    format!(
                        "; after the first failure, on {}",
                        process_name(&processes[rp])
                    )
                }
                _ => String::new(),
            };
            findings.push(Finding {
                rule: i.rule.clone(),
                severity: i.severity,
                subject: subject.clone(),
                message: format!(
                    "{} ({result}cause: {}; seen {} time(s){role})",
                    i.message, i.cause, i.count
                ),
                evidence: vec![Evidence::new(i.first_seen.clone(), i.message.clone())],
                fix: i.fix.clone(),
            });
        }
    }
    sort_findings(&mut findings);
    if let Some(f) = root.and_then(|r| root_finding(&processes, r)) {
        // The root cause leads; what followed it is ranked below.
        findings.insert(0, f);
    }

    let hosts = u32::try_from(host_names.len()).unwrap_or(u32::MAX);
    let nproc = u32::try_from(processes.len()).unwrap_or(u32::MAX);
    let text = summary_text(
        transport,
        plugin.as_deref(),
        gdr,
        socket_fallback,
        hosts,
        nproc,
        errors,
    );
    LogReport {
        schema_version: SCHEMA_VERSION,
        inputs,
        summary: Summary {
            transport,
            plugin,
            gdr,
            socket_fallback,
            nccl_version,
            hosts,
            processes: nproc,
            nranks: processes
                .iter()
                .flat_map(|p| p.ranks.iter().filter_map(|r| r.nranks))
                .max(),
            errors,
            warnings,
            nvls,
            collnet,
            text,
        },
        host_names,
        processes,
        findings,
        lines_read,
        nccl_lines,
        ras: None,
        diag: Vec::new(),
        ras_monitor: None,
    }
}

fn merge_flag(values: impl Iterator<Item = Option<bool>>) -> Option<bool> {
    let mut out = None;
    for v in values.flatten() {
        out = Some(out.unwrap_or(false) || v);
    }
    out
}

pub fn process_name(p: &ProcessReport) -> String {
    match (&p.host, p.pid) {
        (Some(h), Some(pid)) => format!("{h}:{pid}"),
        (Some(h), None) => h.clone(),
        (None, Some(pid)) => format!("pid {pid}"),
        (None, None) => "unknown process".to_string(),
    }
}

fn summary_text(
    transport: Transport,
    plugin: Option<&str>,
    gdr: Option<bool>,
    fallback: bool,
    hosts: u32,
    processes: u32,
    errors: u32,
) -> String {
    let mut s = format!("transport {}", transport.as_str());
    if let Some(p) = plugin {
        s.push_str(&format!(" (plugin {p})"));
    }
    s.push_str(match gdr {
        Some(true) => ", GPUDirect RDMA used",
        Some(false) => ", GPUDirect RDMA not used",
        None => ", GPUDirect RDMA not shown",
    });
    if fallback {
        s.push_str(", FELL BACK TO SOCKETS although RDMA or a plugin was present");
    }
    s.push_str(&format!(
        "; {hosts} host(s), {processes} process(es), {errors} error(s)"
    ));
    s
}

fn job_findings(
    processes: &[ProcessReport],
    transport: Transport,
    gdr: Option<bool>,
    socket_fallback: bool,
    versions: &BTreeMap<String, u32>,
    out: &mut Vec<Finding>,
) {
    if socket_fallback {
        let evidence = processes
            .iter()
            .filter(|p| p.socket_fallback || p.transport == Some(Transport::Socket))
            .take(8)
            .map(|p| {
                Evidence::new(
                    process_name(p),
                    format!(
                        "network {}, IB NICs {}, plugin {:?}",
                        p.network.as_deref().unwrap_or("?"),
                        p.ib_nics.len(),
                        p.plugin.status
                    ),
                )
            })
            .collect();
        out.push(Finding {
            rule: "FAB-NCCL-SOCKET-FALLBACK".into(),
            severity: Severity::Error,
            subject: "job".into(),
            message: "NCCL carried traffic over TCP sockets although RDMA or a network plugin was usable or asked for (RDMA NICs listed, an IB device error, IPoIB interfaces, a loaded or installed plugin, NCCL_IB_*/NCCL_NET settings)".into(),
            evidence,
            fix: "Find why the RDMA transport was not usable: `fabrik doctor` on each host (devices, ports ACTIVE, /dev/infiniband in the container, memlock), the plugin's own warnings, NCCL_IB_HCA and NCCL_NET settings".into(),
        });
    }
    let ib_like = matches!(transport, Transport::Ib | Transport::Ofi | Transport::Mixed);
    if gdr == Some(false) && ib_like {
        out.push(Finding {
            rule: "FAB-NCCL-GDR-OFF".into(),
            severity: Severity::Warning,
            subject: "job".into(),
            message: "GPUDirect RDMA was not used: network traffic is staged through host memory".into(),
            evidence: processes
                .iter()
                .filter(|p| p.gdr == Some(false))
                .take(8)
                .map(|p| Evidence::new(process_name(p), "no GDRDMA channel / GDR disabled for HCA"))
                .collect(),
            fix: "Load nvidia_peermem (or use a DMA-BUF capable driver and kernel), disable PCIe ACS between GPU and NIC on bare metal, check NCCL_NET_GDR_LEVEL".into(),
        });
    }
    let partial: Vec<&ProcessReport> = processes
        .iter()
        .filter(|p| {
            let g = p
                .channels
                .keys()
                .any(|k| k.starts_with("NET/") && k.ends_with("/GDRDMA"));
            let n = p.channels.keys().any(|k| {
                k.starts_with("NET/") && !k.ends_with("/GDRDMA") && !k.starts_with("NET/Socket")
            });
            g && n
        })
        .collect();
    if !partial.is_empty() {
        out.push(Finding {
            rule: "FAB-NCCL-GDR-PARTIAL".into(),
            severity: Severity::Warning,
            subject: "job".into(),
            message: "Some network channels use GPUDirect RDMA and others do not".into(),
            evidence: partial
                .iter()
                .take(8)
                .map(|p| Evidence::new(process_name(p), format!("{:?}", p.channels)))
                .collect(),
            fix: "Check the GPU-NIC distance of the NICs without GDR (`fabrik inventory`); NCCL_NET_GDR_LEVEL raises the distance allowed".into(),
        });
    }
    if versions.len() > 1 {
        out.push(Finding {
            rule: "FAB-NCCL-VERSION-MIX".into(),
            severity: Severity::Warning,
            subject: "job".into(),
            message: format!(
                "Processes run different NCCL versions: {}",
                versions.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
            evidence: Vec::new(),
            fix: "Use one container image (one NCCL) on every node".into(),
        });
    }
}

/// Sockets by design across hosts: said plainly (warning), and loopback across hosts (error:
/// `lo` cannot reach another host, so the job hangs or fails to connect).
fn socket_findings(
    processes: &[ProcessReport],
    host_names: &[String],
    transport: Transport,
    socket_fallback: bool,
    out: &mut Vec<Finding>,
) {
    let sockets: Vec<&ProcessReport> = processes
        .iter()
        .filter(|p| p.transport == Some(Transport::Socket))
        .collect();
    if sockets.is_empty() {
        return;
    }
    // Hosts from prefixes, or from the distinct addresses the processes bound to when the
    // prefixes were stripped.
    // One address per process (its bootstrap, else its first socket interface): a process
    // lists every interface of its host, which says nothing about other hosts.
    let mut addrs: Vec<&str> = processes
        .iter()
        .filter_map(|p| {
            p.bootstrap
                .iter()
                .chain(p.socket_interfaces.iter())
                .find_map(|e| e.address.as_deref())
        })
        .filter(|a| !a.starts_with("127.") && *a != "::1")
        .collect();
    addrs.sort_unstable();
    addrs.dedup();
    let nranks = processes
        .iter()
        .flat_map(|p| p.ranks.iter().filter_map(|r| r.nranks))
        .max();
    let multi_host = host_names.len() > 1 || (host_names.is_empty() && addrs.len() > 1);
    // The socket transport opens connections over every interface it lists (net_socket.cc), so
    // one `lo` among them already sends a peer to its own 127.0.0.1.
    let loopback: Vec<&ProcessReport> = sockets
        .iter()
        .copied()
        .filter(|p| {
            p.socket_interfaces
                .iter()
                .any(|e| is_loopback(&e.interface))
        })
        .collect();
    if !multi_host {
        local_loopback(processes, &loopback, out);
    }
    if multi_host && !loopback.is_empty() {
        out.push(Finding {
            rule: "FAB-NCCL-SOCKET-LOOPBACK".into(),
            severity: Severity::Error,
            subject: "job".into(),
            message: format!(
                "NCCL's socket transport uses the loopback interface `lo` on a job that spans {} hosts: lo cannot reach another host, so connections hang or fail",
                host_names.len().max(addrs.len())
            ),
            evidence: loopback
                .iter()
                .take(8)
                .map(|p| {
                    Evidence::new(
                        process_name(p),
                        p.socket_interfaces
                            .iter()
                            .map(|e| format!("{}:{}", e.interface, e.address.as_deref().unwrap_or("?")))
                            .collect::<Vec<_>>()
                            .join(" "),
                    )
                })
                .collect(),
            fix: "Set NCCL_SOCKET_IFNAME to the interface that routes between the hosts (`ip -br addr`; e.g. `eth0`, or `^lo,docker` to exclude), the same on every host".into(),
        });
    }
    let all_socket = transport == Transport::Socket;
    if all_socket && multi_host && !socket_fallback && nranks != Some(1) {
        let mut reasons: Vec<&str> = sockets
            .iter()
            .filter_map(|p| p.socket_reason.as_deref())
            .collect();
        reasons.sort_unstable();
        reasons.dedup();
        let why = if reasons.is_empty() {
            "the log does not say why".to_string()
        } else {
            reasons.join("; ")
        };
        out.push(Finding {
            rule: "FAB-NCCL-SOCKET-ONLY".into(),
            severity: Severity::Warning,
            subject: "job".into(),
            message: format!(
                "All inter-node traffic of this {}-host job ran over TCP sockets (no RDMA, no network plugin): {why}. Expect a fraction of the bandwidth an RDMA fabric gives",
                host_names.len().max(addrs.len())
            ),
            evidence: sockets
                .iter()
                .take(8)
                .map(|p| {
                    Evidence::new(
                        process_name(p),
                        format!(
                            "network {}, interfaces {}",
                            p.network.as_deref().unwrap_or("Socket"),
                            p.socket_interfaces
                                .iter()
                                .map(|e| e.interface.as_str())
                                .collect::<Vec<_>>()
                                .join(" ")
                        ),
                    )
                })
                .collect(),
            fix: "If the hosts have RDMA NICs, make them visible to NCCL (`fabrik doctor`: devices, /dev/infiniband in the container, rdma-core installed) or install the cloud's network plugin; if they have none, this is expected and NCCL_SOCKET_NTHREADS / NCCL_NSOCKS_PERTHREAD tune socket throughput".into(),
        });
    }
}

/// `lo` (Linux) and `lo0`: the loopback interfaces misc/socket.cc may end up with.
fn is_loopback(name: &str) -> bool {
    name == "lo" || name == "lo0"
}

/// A one-host job on the loopback interface works, but says how the job was set up: NCCL takes
/// `lo` only when NCCL_SOCKET_IFNAME names it or the host has no other usable interface
/// (misc/socket.cc tries `ib`, then anything but docker/lo/virbr, then docker, then lo), and
/// the same settings on a second host cannot connect. Named, not an error.
fn local_loopback(processes: &[ProcessReport], sockets: &[&ProcessReport], out: &mut Vec<Finding>) {
    let on_lo = |e: &Endpoint| is_loopback(&e.interface);
    let mut evidence: Vec<Evidence> = Vec::new();
    for p in processes {
        let mut what: Vec<String> = Vec::new();
        if let Some(b) = p.bootstrap.as_ref().filter(|b| on_lo(b)) {
            what.push(format!(
                "bootstrap {}:{}",
                b.interface,
                b.address.as_deref().unwrap_or("?")
            ));
        }
        if sockets.iter().any(|q| std::ptr::eq(*q, p)) {
            let list: Vec<String> = p
                .socket_interfaces
                .iter()
                .map(|e| e.interface.clone())
                .collect();
            what.push(format!("socket transport over {}", list.join(" ")));
        }
        if !what.is_empty() && evidence.len() < 8 {
            evidence.push(Evidence::new(process_name(p), what.join("; ")));
        }
    }
    if evidence.is_empty() {
        return;
    }
    let ifname = processes
        .iter()
        .find_map(|p| p.env.get("NCCL_SOCKET_IFNAME"))
        .map_or_else(
            || "NCCL_SOCKET_IFNAME is not in the log: NCCL found no other usable interface, or the setting names lo".to_string(),
            |v| format!("NCCL_SOCKET_IFNAME={v}"),
        );
    out.push(Finding {
        rule: "FAB-NCCL-LOOPBACK".into(),
        severity: Severity::Info,
        subject: "job".into(),
        message: format!(
            "NCCL uses the loopback interface lo on this one-host job ({ifname}): that works while every rank is on this host, but ranks on a second host with the same settings cannot connect"
        ),
        evidence,
        fix: "Before the job spans hosts, set NCCL_SOCKET_IFNAME to the interface that routes between them (`ip -br addr`; e.g. `eth0`, or `^lo,docker` to exclude)".into(),
    });
}

/// The job's first failure: per process, the earliest error that names a cause (an RDMA set-up
/// failure, a registration, a bootstrap interface...) before the generic reports (a result
/// code, `unhandled system error`) and before the consequences (a peer's remote error, an
/// abort, a watchdog timeout, a failed proxy operation); across processes, the earliest in log
/// order of the best class. Returns (process index, issue index).
fn first_failure(processes: &[ProcessReport]) -> Option<(usize, usize)> {
    let class = |rule: &str| {
        if super::diagnose::is_consequence(rule) {
            2
        } else if super::diagnose::is_generic(rule) {
            1
        } else {
            0
        }
    };
    processes
        .iter()
        .enumerate()
        .flat_map(|(pi, p)| {
            p.issues
                .iter()
                .enumerate()
                .filter(|(_, i)| i.severity == Severity::Error)
                .map(move |(ii, i)| ((class(&i.rule), i.order), (pi, ii)))
        })
        .min_by_key(|(k, _)| *k)
        .map(|(_, at)| at)
}

fn root_order(processes: &[ProcessReport], root: Option<(usize, usize)>) -> u64 {
    root.and_then(|(p, i)| processes.get(p)?.issues.get(i))
        .map_or(u64::MAX, |i| i.order)
}

fn ranks_of(p: &ProcessReport) -> String {
    let mut ranks: Vec<u32> = p.ranks.iter().map(|r| r.rank).collect();
    ranks.sort_unstable();
    ranks.dedup();
    match ranks.as_slice() {
        [] => "rank unknown".to_string(),
        [one] => format!("rank {one}"),
        many => format!(
            "ranks {}",
            many.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(",")
        ),
    }
}

fn root_finding(processes: &[ProcessReport], (pi, ii): (usize, usize)) -> Option<Finding> {
    let p = processes.get(pi)?;
    let i = p.issues.get(ii)?;
    let after: Vec<(&ProcessReport, &super::report::LogIssue)> = processes
        .iter()
        .enumerate()
        .filter(|(qi, _)| *qi != pi)
        .filter_map(|(_, q)| {
            q.issues
                .iter()
                .filter(|j| j.severity == Severity::Error)
                .min_by_key(|j| j.order)
                .map(|j| (q, j))
        })
        .collect();
    let host = p.host.as_deref().unwrap_or("host unknown");
    let pid = p
        .pid
        .map_or_else(|| "pid unknown".to_string(), |v| format!("pid {v}"));
    let result = i
        .result
        .as_deref()
        .map(|r| format!(" [{r}]"))
        .unwrap_or_default();
    // The line's GPU picks the rank among those of a multi-GPU process.
    let who = match i.cuda_dev {
        Some(d) => match p.ranks.iter().find(|r| r.cuda_dev == Some(d)) {
            Some(r) => format!("rank {} (GPU {d})", r.rank),
            None => format!("{}, GPU {d}", ranks_of(p)),
        },
        None => ranks_of(p),
    };
    let mut message = format!(
        "The failure started on {who} ({host}, {pid}) at {}: {}{result}. Cause: {}",
        i.first_seen, i.message, i.cause
    );
    if !after.is_empty() {
        let mut kinds: Vec<&str> = after.iter().map(|(_, j)| j.rule.as_str()).collect();
        kinds.sort_unstable();
        kinds.dedup();
        message.push_str(&format!(
            ". {} other process(es) failed after it ({}): consequences, not causes",
            after.len(),
            kinds.join(", ")
        ));
    }
    let mut evidence = vec![Evidence::new(i.first_seen.clone(), i.message.clone())];
    evidence.extend(after.iter().take(7).map(|(q, j)| {
        Evidence::new(
            format!("{} {}", process_name(q), j.first_seen),
            j.message.clone(),
        )
    }));
    Some(Finding {
        rule: "FAB-NCCL-FIRST-FAILURE".into(),
        severity: Severity::Error,
        subject: process_name(p),
        message,
        evidence,
        fix: i.fix.clone(),
    })
}

/// The process's transport rests only on the name of a plugin it loaded: it printed no network,
/// no network channel and no NIC list.
fn transport_only_from_plugin_name(p: &ProcessReport) -> bool {
    p.network.is_none()
        && p.ib_nics.is_empty()
        && p.socket_interfaces.is_empty()
        && !p.channels.keys().any(|k| k.starts_with("NET/"))
        && p.plugin.status == PluginStatus::Loaded
        && p.plugin.name.is_some()
        && p.transport.is_some()
}
