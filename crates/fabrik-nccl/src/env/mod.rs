//! `fabrik env`: the NCCL environment for a node, from its fabric or from a platform profile.
//!
//! [`generate`] is a pure function of the node, the profile and the caller's existing
//! environment; the CLI only gathers those three and prints the answer.

mod existing;
pub mod fabric;
pub mod iface;
mod platforms;
mod profile;
pub mod render;
pub mod sources;
mod types;

use std::collections::BTreeMap;

use fabrik_model::Node;

pub use profile::{Profile, UnknownProfile};
pub use types::*;

use fabric::{GidChoice, QosChoice, RdmaInventory};

/// Everything [`generate`] decides from.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The profile whose rules apply (`Auto` decides from the node).
    pub profile: Profile,
    /// The node as probed; `None` when only a named profile is wanted without facts.
    pub node: Option<&'a Node>,
    /// The caller's environment (only NCCL_*, FI_* and UCX_* entries are looked at).
    pub existing: &'a BTreeMap<String, String>,
    /// Keep the caller's values over fabrik's.
    pub keep_env: bool,
}

/// Why no environment could be generated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvError {
    /// `auto` was asked for without a node to decide from.
    #[error("profile `auto` decides from the node's fabric, but no node was given (probe one with --root)")]
    AutoNeedsNode,
}

/// Collects variables and notes in order; later `set`s of the same name replace earlier ones.
#[derive(Debug, Default)]
pub(crate) struct Builder {
    pub vars: Vec<EnvVar>,
    pub notes: Vec<Note>,
    pub runtime: Runtime,
}

impl Builder {
    pub fn new() -> Self {
        Builder {
            runtime: Runtime {
                shm_size: "16Gi".into(),
                ..Runtime::default()
            },
            ..Builder::default()
        }
    }

    pub fn set(
        &mut self,
        name: &str,
        value: impl Into<String>,
        reason: impl Into<String>,
        source: &str,
    ) {
        let var = EnvVar {
            name: name.into(),
            value: value.into(),
            reason: reason.into(),
            source: source.into(),
        };
        match self.vars.iter_mut().find(|v| v.name == name) {
            Some(v) => *v = var,
            None => self.vars.push(var),
        }
    }

    pub fn note(&mut self, note: Note) {
        self.notes.push(note);
    }
}

/// Builds the environment for `req`.
pub fn generate(req: &Request<'_>) -> Result<Env, EnvError> {
    let mut b = Builder::new();
    let (profile, transport) = match req.profile {
        Profile::Auto => {
            let node = req.node.ok_or(EnvError::AutoNeedsNode)?;
            auto(&mut b, node)
        }
        Profile::GenericIb => (Profile::GenericIb, infiniband(&mut b, req.node)),
        Profile::GenericRoce => (Profile::GenericRoce, roce(&mut b, req.node)),
        Profile::Socket => (Profile::Socket, socket(&mut b, req.node, true)),
        named => (named, platforms::apply(&mut b, named, req.node)),
    };
    if let Some(node) = req.node {
        host_limits(&mut b, node, transport);
        if req.profile == Profile::Auto && node.gpus.is_empty() {
            not_a_gpu_node(&mut b);
        }
    }
    let existing = existing::merge(&mut b, req.existing, req.keep_env);
    let summary = summary(&b, transport);
    Ok(Env {
        schema_version: fabrik_model::SCHEMA_VERSION,
        profile: profile.as_str().to_string(),
        requested_profile: req.profile.as_str().to_string(),
        transport,
        summary,
        vars: b.vars,
        notes: b.notes,
        existing,
        runtime: b.runtime,
    })
}

/// `--profile auto` read a machine without GPUs (a login or head node): the interface and HCA
/// names it chose are that machine's, and the GPU nodes the job runs on may name theirs
/// otherwise.
fn not_a_gpu_node(b: &mut Builder) {
    let baked: Vec<String> = b
        .vars
        .iter()
        .filter(|v| v.name.ends_with("_IFNAME") || v.name.ends_with("_HCA"))
        .map(|v| format!("{}={}", v.name, v.value))
        .collect();
    let what = if baked.is_empty() {
        "its fabric (no RDMA, no interface chosen)".to_string()
    } else {
        baked.join(", ")
    };
    b.note(Note::warning(format!(
        "this machine has no GPU (a login or head node?): the job is built from its interfaces, {what}, which the GPU nodes may not share; run fabrik on a GPU node, pass one's snapshot (--root) or inventory (--node), or name a --profile"
    )));
}

fn auto(b: &mut Builder, node: &Node) -> (Profile, Transport) {
    let inv = fabric::inventory(node);
    if !inv.efa.is_empty() {
        b.note(Note::info(format!(
            "EFA devices found ({}): using the aws-efa profile",
            inv.efa.join(", ")
        )));
        return (
            Profile::AwsEfa,
            platforms::apply(b, Profile::AwsEfa, Some(node)),
        );
    }
    if !inv.ib.is_empty() {
        return (Profile::GenericIb, infiniband(b, Some(node)));
    }
    if !inv.roce.is_empty() {
        return (Profile::GenericRoce, roce(b, Some(node)));
    }
    gcp_hint(b, node);
    (Profile::Socket, socket(b, Some(node), false))
}

/// Several gVNIC interfaces mean a GCP A3 VM, where TCPX/TCPXO beat plain sockets, but only
/// when the plugin and the receive-datapath-manager run: that is not visible in sysfs, so it is
/// said rather than assumed.
fn gcp_hint(b: &mut Builder, node: &Node) {
    let gve: Vec<&str> = node
        .net_interfaces
        .iter()
        .filter(|i| i.driver.as_deref() == Some("gve"))
        .map(|i| i.name.as_str())
        .collect();
    if gve.len() >= 4 {
        b.note(
            Note::warning(format!(
                "{} gVNIC interfaces ({}) look like a GCP A3 VM: with the GPUDirect-TCPX plugin and receive-datapath-manager installed use --profile gcp-a3-tcpx (A3 High, 4 data NICs) or gcp-a3-mega-tcpxo (A3 Mega, 8 data NICs); plain sockets reach a fraction of that bandwidth",
                gve.len(),
                gve.join(",")
            ))
            .with_source(sources::GKE_TCPX),
        );
    }
}

fn unusable_notes(b: &mut Builder, inv: &RdmaInventory) {
    for u in &inv.unusable {
        b.note(Note::info(format!("not used: {u}")));
    }
}

/// NCCL_SOCKET_IFNAME for bootstrap (RDMA) or data (sockets). Returns the interface chosen.
fn socket_ifname(b: &mut Builder, node: Option<&Node>, for_data: bool) -> Option<String> {
    let Some(node) = node else {
        b.note(Note::warning(
            "no node facts: NCCL_SOCKET_IFNAME is not set (probe the node with --root to choose it)",
        ));
        return None;
    };
    match iface::choose_socket_interface(node) {
        Some(c) => {
            let what = if for_data {
                "NCCL's TCP data path and bootstrap use"
            } else {
                "NCCL's bootstrap and out-of-band TCP use"
            };
            b.set(
                "NCCL_SOCKET_IFNAME",
                iface::exact_ifname(&c.name),
                format!("{what} {} ({}): {}", c.name, c.ipv4.join(", "), c.why),
                sources::NCCL_ENV,
            );
            if !c.others.is_empty() {
                b.note(Note::info(format!(
                    "other interfaces with IPv4 not chosen for NCCL_SOCKET_IFNAME: {}",
                    c.others.join(", ")
                )));
            }
            Some(c.name)
        }
        None => {
            let msg = if node.net_interfaces.is_empty() {
                "no network interfaces were read from the node: NCCL_SOCKET_IFNAME is not set"
                    .to_string()
            } else {
                "no interface is up with an IPv4 address outside loopback, bridges and container links: NCCL_SOCKET_IFNAME is not set and NCCL will fall back to its own choice (maybe lo)".to_string()
            };
            b.note(Note::warning(msg));
            None
        }
    }
}

fn rdma_runtime(b: &mut Builder) {
    b.runtime.needs_rdma_devices = true;
    b.runtime.ipc_lock = true;
    b.runtime.host_network = true;
}

fn infiniband(b: &mut Builder, node: Option<&Node>) -> Transport {
    rdma_runtime(b);
    let Some(n) = node else {
        b.note(Note::warning(
            "no node facts: NCCL_IB_HCA is not set; NCCL will use every active HCA it finds",
        ));
        socket_ifname(b, None, false);
        return Transport::Infiniband;
    };
    let mut inv = fabric::inventory(n);
    let (near, far) = fabric::split_by_gpu_affinity(n, std::mem::take(&mut inv.ib));
    inv.ib = near;
    for f in far {
        b.note(Note::info(f));
    }
    if inv.ib.is_empty() {
        b.note(Note::warning(
            "profile generic-ib, but the node has no active InfiniBand port: NCCL_IB_HCA is not set and NCCL will fall back to sockets",
        ));
    } else {
        let rates: Vec<String> = inv
            .ib
            .iter()
            .map(|p| {
                format!(
                    "{} {}",
                    p.hca(),
                    p.rate.as_deref().unwrap_or("rate unknown")
                )
            })
            .collect();
        b.set(
            "NCCL_IB_HCA",
            fabric::hca_list(&inv.ib),
            format!(
                "the {} active InfiniBand ports, exactly ({}); `=` stops prefix matches such as mlx5_1 also selecting mlx5_10",
                inv.ib.len(),
                rates.join(", ")
            ),
            sources::NCCL_ENV,
        );
    }
    if !inv.roce.is_empty() {
        b.note(Note::warning(format!(
            "active RoCE ports are also present ({}); they are left out of NCCL_IB_HCA because an InfiniBand and an Ethernet fabric do not reach each other",
            inv.roce.iter().map(|p| p.hca()).collect::<Vec<_>>().join(", ")
        )));
    }
    unusable_notes(b, &inv);
    socket_ifname(b, Some(n), false);
    Transport::Infiniband
}

fn roce(b: &mut Builder, node: Option<&Node>) -> Transport {
    rdma_runtime(b);
    let Some(n) = node else {
        b.note(Note::warning(
            "no node facts: NCCL_IB_HCA and NCCL_IB_GID_INDEX are not set; NCCL picks the RoCE v2 GID itself (2.21 and later)",
        ));
        socket_ifname(b, None, false);
        return Transport::Roce;
    };
    let inv = fabric::inventory(n);
    unusable_notes(b, &inv);
    let boot = socket_ifname(b, Some(n), false);
    let (mut ports, far) = fabric::split_by_gpu_affinity(n, inv.roce.clone());
    for f in far {
        b.note(Note::info(f));
    }
    // A RoCE port that also carries the default route may be a front-end NIC or a fabric port
    // on a host without a separate management NIC. When its PFC setting differs from that of
    // the other RoCE ports it is the front end and is left out; otherwise sysfs cannot tell,
    // so it stays in and the user is told.
    if let (Some(boot), true) = (&boot, ports.len() > 1) {
        let pfc_of = |p: &fabric::UsablePort| {
            p.netdev
                .as_deref()
                .and_then(|d| n.net_interface(d))
                .and_then(|i| i.pfc.as_ref())
                .map(|f| (f.enabled_priorities.clone(), f.trust.clone()))
        };
        if let Some(front) = ports
            .iter()
            .find(|p| p.netdev.as_deref() == Some(boot.as_str()))
            .cloned()
        {
            let others: Vec<_> = ports
                .iter()
                .filter(|p| p.hca() != front.hca())
                .map(pfc_of)
                .collect();
            let fabric_pfc = others.first().cloned().flatten();
            let others_agree = others.iter().all(|o| *o == fabric_pfc);
            if fabric_pfc.is_some() && others_agree && pfc_of(&front) != fabric_pfc {
                ports.retain(|p| p.hca() != front.hca());
                b.note(Note::info(format!(
                    "{} ({boot}) carries the default route and lacks the PFC setting of the other RoCE ports: it is the front-end NIC and is left out of NCCL_IB_HCA",
                    front.hca()
                )));
            } else {
                b.note(Note::warning(format!(
                    "{} ({boot}) also carries the default route: front-end traffic shares it with NCCL; if it is a front-end NIC rather than a fabric port, drop it from NCCL_IB_HCA",
                    front.hca()
                )));
            }
        }
    }
    if ports.is_empty() {
        b.note(Note::warning(
            "profile generic-roce, but the node has no active RoCE port: NCCL will fall back to sockets",
        ));
        return Transport::Roce;
    }
    b.set(
        "NCCL_IB_HCA",
        fabric::hca_list(&ports),
        format!(
            "the {} active RoCE ports, exactly ({})",
            ports.len(),
            ports
                .iter()
                .map(|p| format!("{} on {}", p.hca(), p.netdev.as_deref().unwrap_or("?")))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        sources::NCCL_ENV,
    );
    match fabric::roce_gid_index(n, &ports) {
        GidChoice::Same(i) => b.set(
            "NCCL_IB_GID_INDEX",
            i.to_string(),
            format!("GID {i} is the one NCCL 2.21+ selects by itself on every RoCE port (the first RoCE v2 IPv4-mapped entry); set so that NCCL before 2.21, whose default is 0, uses it too"),
            sources::NCCL_ENV,
        ),
        GidChoice::Differs(list) => b.note(
            Note::warning(format!(
                "the RoCE v2 IPv4 GID sits at different indexes on different ports ({}); NCCL_IB_GID_INDEX is one number for all, so it is not set: NCCL 2.21+ selects the GID per device from NCCL_IB_ADDR_FAMILY",
                list.iter().map(|(p, i)| format!("{p}: {i}")).collect::<Vec<_>>().join(", ")
            ))
            .with_source(sources::NCCL_ENV),
        ),
        GidChoice::Missing(list) => b.note(Note::warning(format!(
            "no RoCE v2 GID carrying an IPv4 address on {}: give the netdev an IPv4 address (RoCE v2 over IPv4 needs it) or set NCCL_IB_GID_INDEX by hand",
            list.join(", ")
        ))),
    }
    match fabric::roce_qos(n, &ports) {
        QosChoice::TrafficClass { tc, dscp, priority } => {
            b.set(
                "NCCL_IB_TC",
                tc.to_string(),
                format!("PFC is lossless on priority {priority} with DSCP trust; DSCP {dscp} maps there under mlx5's default DSCP/8 map, and TC = DSCP<<2 | ECT(0) = {tc} (NVIDIA's priority-3 recipe is DSCP 26, TC 106)"),
                sources::NCCL_ENV,
            );
            b.note(Note::info(format!(
                "NCCL_IB_TC assumes the default DSCP-to-priority map (DSCP 8p..8p+7 on priority p); if the fabric remaps DSCP, use its RoCE DSCP << 2 instead of {tc}"
            )));
        }
        QosChoice::ServiceLevel { sl } => b.set(
            "NCCL_IB_SL",
            sl.to_string(),
            format!("PFC is lossless on priority {sl} with PCP trust; for RoCE the service level becomes the VLAN priority (PCP)"),
            sources::NCCL_ENV,
        ),
        QosChoice::Unknown(why) => b.note(
            Note::warning(format!(
                "NCCL_IB_TC/NCCL_IB_SL not set: {why}; NCCL then sends with traffic class 0"
            ))
            .with_source(sources::NCCL_IB_PARAMS),
        ),
    }
    Transport::Roce
}

fn socket(b: &mut Builder, node: Option<&Node>, explicit: bool) -> Transport {
    let inv = node.map(fabric::inventory).unwrap_or_default();
    let iface = socket_ifname(b, node, true);
    if let Some(n) = node {
        unusable_notes(b, &inv);
        if !inv.has_usable() {
            let why = if n.rdma_devices.is_empty() {
                "no RDMA device exists (nothing under /sys/class/infiniband)".to_string()
            } else {
                "no RDMA port is usable".to_string()
            };
            b.set(
                "NCCL_IB_DISABLE",
                "1",
                format!("{why}: NCCL goes straight to TCP sockets instead of probing verbs"),
                sources::NCCL_ENV,
            );
            let via = iface
                .map(|i| format!("on {i}"))
                .unwrap_or_else(|| "on an interface NCCL picks itself".into());
            b.note(Note::warning(format!(
                "only sockets are available: {why}; NCCL will use TCP sockets {via}"
            )));
        } else if explicit {
            b.set(
                "NCCL_IB_DISABLE",
                "1",
                "profile socket forces TCP although usable RDMA ports exist",
                sources::NCCL_ENV,
            );
            b.note(Note::warning(
                "usable RDMA ports exist but profile socket disables them; use --profile auto to use RDMA",
            ));
        }
    } else {
        b.set(
            "NCCL_IB_DISABLE",
            "1",
            "profile socket: TCP sockets only",
            sources::NCCL_ENV,
        );
    }
    Transport::Socket
}

/// Limits of the host that break RDMA regardless of variables.
fn host_limits(b: &mut Builder, node: &Node, transport: Transport) {
    if !matches!(
        transport,
        Transport::Infiniband | Transport::Roce | Transport::Efa
    ) {
        return;
    }
    match &node.dev_infiniband {
        Some(list) if !list.iter().any(|d| d.starts_with("uverbs")) => b.note(Note::warning(
            "/dev/infiniband has no uverbs device: NCCL cannot open the HCAs here (in a container, pass /dev/infiniband)",
        )),
        None if !node.rdma_devices.is_empty() => b.note(Note::warning(
            "/dev/infiniband was not found: NCCL cannot open the HCAs here (in a container, pass /dev/infiniband)",
        )),
        _ => {}
    }
    if let Some(m) = &node.memlock {
        if !m.is_unlimited() {
            let soft = m
                .soft_bytes
                .map_or("?".into(), |v| format!("{} KiB", v / 1024));
            b.note(Note::warning(format!(
                "max locked memory is {soft}, not unlimited: verbs memory registration fails or NCCL falls back; run with `ulimit -l unlimited` (docker: --ulimit memlock=-1)"
            )));
        }
    }
}

fn summary(b: &Builder, transport: Transport) -> String {
    let get = |n: &str| b.vars.iter().find(|v| v.name == n).map(|v| v.value.clone());
    let iface = get("NCCL_SOCKET_IFNAME")
        .map(|v| v.trim_start_matches('=').to_string())
        .unwrap_or_else(|| "an interface NCCL picks itself".into());
    match transport {
        Transport::Socket => format!("Only TCP sockets: NCCL sends data over {iface}."),
        Transport::Infiniband => match get("NCCL_IB_HCA") {
            Some(h) => format!("InfiniBand: NCCL uses {}; bootstrap over {iface}.", h.trim_start_matches('=')),
            None => format!("InfiniBand: NCCL picks the HCAs itself; bootstrap over {iface}."),
        },
        Transport::Roce => match get("NCCL_IB_HCA") {
            Some(h) => format!(
                "RoCE v2: NCCL uses {}{}; bootstrap over {iface}.",
                h.trim_start_matches('='),
                get("NCCL_IB_GID_INDEX").map(|g| format!(" with GID index {g}")).unwrap_or_default()
            ),
            None => format!("RoCE v2: NCCL picks the devices itself; bootstrap over {iface}."),
        },
        Transport::GpudirectTcpx => "GCP GPUDirect-TCPX: 4 data NICs through the TCPX net plugin and the receive-datapath-manager.".into(),
        Transport::GpudirectTcpxo => "GCP GPUDirect-TCPXO: 8 data NICs through the TCPXO (FasTrak) net plugin and its daemon.".into(),
        Transport::Efa => "AWS EFA through the aws-ofi-nccl plugin (libfabric efa provider).".into(),
    }
}

#[cfg(test)]
mod tests;
