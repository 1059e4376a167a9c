//! What a process's raw facts imply, derived once all its lines are read: the transport, whether
//! GPUDirect RDMA carried data, and whether NCCL fell back to sockets although RDMA was usable.

use super::messages::{is_internal_net, transport_of};
use super::report::*;
use super::Hints;

/// Derives what the raw facts imply, once all lines are read.
pub(super) fn settle(r: &mut ProcessReport, hints: Hints) {
    // `Using network IB|Socket` after a plugin failed: NCCL dropped the plugin and went on with
    // an internal network (plugin/net.cc tries the next one when a plugin's init fails).
    let on_internal_net = r
        .network
        .as_deref()
        .is_some_and(|n| is_internal_net(n.as_bytes()));
    // The busiest inter-node net of the channels names the network when NCCL did not.
    let mut best_net: Option<(&str, u64)> = None;
    let mut net_channels = 0u64;
    let mut gdr_channels = 0u64;
    for (k, n) in &r.channels {
        if let Some(rest) = k
            .strip_prefix("NET/")
            .or_else(|| k.strip_prefix("COLLNET/"))
        {
            net_channels += n;
            if rest.ends_with("/GDRDMA") {
                gdr_channels += n;
            }
            if k.starts_with("NET/") {
                let name = rest.trim_end_matches("/GDRDMA");
                let total: u64 = r
                    .channels
                    .iter()
                    .filter(|(k2, _)| {
                        k2.strip_prefix("NET/")
                            .map(|r2| r2.trim_end_matches("/GDRDMA") == name)
                            .unwrap_or(false)
                    })
                    .map(|(_, c)| c)
                    .sum();
                if best_net.is_none_or(|(_, c)| total > c) {
                    best_net = Some((name, total));
                }
            }
        }
    }
    let channel_net = best_net.map(|(n, _)| n.to_string());
    if r.network.is_none() {
        r.network = channel_net.clone();
    }
    let net = r.network.clone();
    // A loaded plugin replaces NCCL's internal networks; its name may say which it is
    // (`Loaded net plugin Libfabric (v10)`), while `NCCL RDMA Plugin` says nothing.
    let plugin_net = r
        .plugin
        .name
        .as_deref()
        .filter(|_| r.plugin.status == PluginStatus::Loaded)
        .map(transport_of)
        .filter(|t| *t != Transport::Unknown)
        // An IB plugin (IBext) that printed `NET/IB : No device found` has no network to offer:
        // its name is no evidence that IB carried anything.
        .filter(|t| !(*t == Transport::Ib && r.ib_no_device));
    // NCCL >= 2.6 initialises its socket network only when it is going to use it (earlier
    // releases printed `NET/Socket : Using` for the bootstrap in every process).
    let sockets_are_the_net = !r.socket_interfaces.is_empty()
        && (r.ib_no_device
            || r.env
                .get("NCCL_IB_DISABLE")
                .is_some_and(|v| v.trim() == "1")
            || r.ib_nics.is_empty() && version_at_least(r.nccl_version.as_deref(), 2, 6)
            // Without libibverbs IB cannot be the network, in any release.
            || r.ib_nics.is_empty() && hints.no_verbs
            // Any release: the network is set up (init.cc initNet) before the communicator
            // prints its rank and topology lines, and net_ib.cc prints `NET/IB : Using ...` or
            // `No device found` at the same INIT/NET level as the socket list. A process that
            // got past that point with a socket list, no IB line, no IB activity and no plugin
            // ran on sockets, whatever its (unknown) release.
            || r.ib_nics.is_empty()
                && !hints.ib_attempt
                && r.plugin.status != PluginStatus::Loaded
                && !r.ranks.is_empty());
    r.transport = Some(match net.as_deref() {
        Some(n) => transport_of(n),
        // `NET/Socket : GPU Direct RDMA Disabled for HCA 0 'eth0'`: the communicator's network.
        None if hints.gdr_net.is_some() => hints.gdr_net.unwrap_or(Transport::Unknown),
        None if !r.ib_nics.is_empty() => Transport::Ib,
        // The IBext plugin finding no device falls back to sockets like NCCL's own IB.
        None if sockets_are_the_net && r.ib_no_device => Transport::Socket,
        None if plugin_net.is_some() => plugin_net.unwrap_or(Transport::Unknown),
        None if hints.fastrak => Transport::FasTrak,
        None if hints.tcpx => Transport::GpuDirectTcpx,
        None if hints.ofi || r.ofi_provider.is_some() => Transport::Ofi,
        // An IB warning about a device, a completion or a queue pair, or a `-> N` trace
        // through net_ib.cc / the IBext plugin's ib_plugin.c: IB was the network.
        None if hints.ib_attempt
            && r.env.get("NCCL_IB_DISABLE").is_none_or(|v| v.trim() != "1") =>
        {
            Transport::Ib
        }
        // A trace through net_socket.cc or a `NET/Socket` warning: the socket network ran
        // (misc/socket.cc alone is also the bootstrap's, so it proves nothing).
        None if hints.socket_net => Transport::Socket,
        // NCCL < 2.6 prints `NET/Socket : Using` for its bootstrap in every process, so the
        // socket list alone proves nothing; after `NET/IB : No device found` it is the network.
        None if sockets_are_the_net => Transport::Socket,
        None => Transport::Unknown,
    });
    if r.transport == Some(Transport::Unknown) {
        r.transport = None;
    }
    // A network that is not one of NCCL's internal ones is a plugin's.
    if let Some(n) = net.as_deref() {
        if !matches!(n, "IB" | "Socket") {
            if r.plugin.name.is_none() {
                r.plugin.name = Some(n.to_string());
            }
            r.plugin.status = PluginStatus::Loaded;
        }
    } else if hints.tcpx {
        r.plugin
            .name
            .get_or_insert_with(|| "GPUDirectTCPX".to_string());
    }
    r.gdr = if gdr_channels > 0 {
        Some(true)
    } else if net_channels > 0 {
        Some(false)
    } else if r.gdr_hcas.iter().any(|h| h.enabled) {
        Some(true)
    } else if !r.gdr_hcas.is_empty() || hints.gdr_off {
        Some(false)
    } else {
        None
    };
    let uses_socket = r.transport == Some(Transport::Socket)
        || r.channels.keys().any(|k| k.starts_with("NET/Socket"));
    // Google's FastSocket plugin is a socket transport by design.
    let deliberate_socket_plugin = net
        .as_deref()
        .or(r
            .plugin
            .name
            .as_deref()
            .filter(|_| r.plugin.status == PluginStatus::Loaded))
        .is_some_and(|n| n.to_ascii_lowercase().starts_with("fastsocket"));
    let env_is = |k: &str, v: &str| {
        r.env
            .get(k)
            .is_some_and(|x| x.trim().eq_ignore_ascii_case(v))
    };
    let ib_disabled = env_is("NCCL_IB_DISABLE", "1");
    let net_socket_asked = env_is("NCCL_NET", "Socket");
    // RDMA was usable: NCCL listed RDMA NICs, an IB call or completion failed on a real device,
    // a plugin reported devices, the OFI plugin ran, or the host carries IPoIB interfaces
    // (`ib0`, `ibp12s0`, `ibs85f0`: named so by the ipoib driver and udev), which only exist
    // where an InfiniBand HCA is.
    let ipoib = r
        .bootstrap
        .iter()
        .chain(r.socket_interfaces.iter())
        .chain(r.ib_oob.iter())
        .any(|e| is_ipoib_name(&e.interface));
    let plugin_usable = r.plugin.status == PluginStatus::Loaded
        && !deliberate_socket_plugin
        && (hints.plugin_devices || !r.ib_no_device);
    let rdma_usable = !r.ib_nics.is_empty()
        || (hints.ib_attempt && !ib_disabled)
        || hints.ofi
        || plugin_usable
        || ipoib;
    // RDMA or a plugin was asked for: IB settings, a named net or plugin, or a plugin library
    // someone installed that this NCCL cannot use.
    let asked = r.env.iter().any(|(k, v)| {
        (k.starts_with("NCCL_IB_") && k != "NCCL_IB_DISABLE")
            || (k == "NCCL_NET" && !v.trim().eq_ignore_ascii_case("socket"))
            || (k == "NCCL_NET_PLUGIN" && !v.trim().eq_ignore_ascii_case("none"))
    }) || (r.plugin.status == PluginStatus::Unusable && !deliberate_socket_plugin);
    // A communicator of one rank sends nothing over the network.
    let one_rank = !r.ranks.is_empty() && r.ranks.iter().all(|x| x.nranks == Some(1));
    let ofi_over_tcp = r
        .ofi_provider
        .as_deref()
        .is_some_and(|p| p.starts_with("tcp") || p.starts_with("sockets"));
    r.socket_fallback = (uses_socket
        && !deliberate_socket_plugin
        && !ib_disabled
        && !net_socket_asked
        && !one_rank
        && (rdma_usable || asked))
        || ofi_over_tcp;
    if uses_socket && !deliberate_socket_plugin {
        r.socket_reason = Some(
            if ib_disabled {
                "NCCL_IB_DISABLE=1 turned InfiniBand/RoCE off"
            } else if net_socket_asked {
                "NCCL_NET=Socket asked for TCP sockets"
            } else if hints.no_verbs {
                "libibverbs could not be loaded, so NCCL could not look for RDMA devices"
            } else if r.ib_no_device {
                "NCCL found no RDMA device (`NET/IB : No device found`)"
            } else {
                "the log shows no RDMA NIC and no network plugin"
            }
            .to_string(),
        );
    }
    // A plugin failure that left the process on sockets although RDMA was usable caused that
    // fallback (an error); otherwise NCCL went on without the plugin and it is a warning.
    if on_internal_net && !r.socket_fallback {
        plugin_failures_are_warnings(r);
    }
}

/// IPoIB interface names: `ib0` (the ipoib driver's own `ib%d`) and udev's predictable
/// `ibp<bus>s<slot>` / `ibs<slot>` forms.
fn is_ipoib_name(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("ib") else {
        return false;
    };
    let rest = rest
        .strip_prefix('p')
        .or_else(|| rest.strip_prefix('s'))
        .unwrap_or(rest);
    rest.chars().next().is_some_and(|c| c.is_ascii_digit())
}

/// `2.26.2` ≥ major.minor.
fn version_at_least(v: Option<&str>, major: u64, minor: u64) -> bool {
    let Some(v) = v else { return false };
    let mut it = v.split('.').map(|p| p.parse::<u64>().ok());
    match (it.next().flatten(), it.next().flatten()) {
        (Some(a), Some(b)) => (a, b) >= (major, minor),
        _ => false,
    }
}

/// A plugin that failed to initialise, in a process that then chose an internal network, did not
/// stop the job: its errors say the plugin is unusable (a warning; the socket-fallback checks judge
/// whether sockets were right).
fn plugin_failures_are_warnings(r: &mut ProcessReport) {
    const PLUGIN_RULES: [&str; 3] = ["FAB-NCCL-OFI", "FAB-NCCL-TCPX", "FAB-NCCL-FASTRAK"];
    // The plugin found none of the hardware it drives (aws-ofi-nccl: no EFA provider; TCPX and
    // TCPXO: no data NIC or GPU): on a host without that hardware an installed plugin says so
    // and NCCL goes on without it, which is no problem of the job.
    const HARDWARE_ABSENT: [&str; 3] = [
        "FAB-NCCL-OFI-PROVIDER",
        "FAB-NCCL-TCPX-NIC",
        "FAB-NCCL-FASTRAK-NIC",
    ];
    let plugin_rule = |rule: &str| PLUGIN_RULES.iter().any(|p| rule.starts_with(p));
    for i in r.issues.iter_mut() {
        let absent = HARDWARE_ABSENT.contains(&i.rule.as_str());
        if plugin_rule(&i.rule) && (i.severity == fabrik_model::Severity::Error || absent) {
            i.severity = if absent {
                fabrik_model::Severity::Info
            } else {
                fabrik_model::Severity::Warning
            };
            i.cause = format!(
                "{} NCCL dropped the plugin and went on with its internal network ({}).",
                i.cause.trim_end(),
                r.network.as_deref().unwrap_or("")
            );
        }
    }
}
