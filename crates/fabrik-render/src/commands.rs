//! `fabrik parse topo|ibstat|ibv_devinfo|show_gids|ibdev2netdev|mlnx_qos`: what was read from a
//! pasted command output, one table per tool. The findings follow, rendered by
//! [`crate::findings::text`].

use std::fmt::Write as _;

use fabrik_parse::commands::{
    ibdev2netdev::NetdevMap, ibstat::Ibstat, ibv_devinfo::DevinfoPort, mlnx_qos::MlnxQos,
    show_gids::RoceV2Index, topo::GpuNearestNic,
};

use crate::dash as opt;

/// `nvidia-smi topo -m`: each GPU's path to its nearest NICs, and the NICs to give
/// `NCCL_IB_HCA`.
pub fn topo(near: &[GpuNearestNic], nccl_ib_hca: &[String]) -> String {
    let mut t = String::new();
    let _ = writeln!(t, "{:<6} {:<6} nearest NIC", "GPU", "path");
    for g in near {
        let _ = writeln!(
            t,
            "{:<6} {:<6} {}",
            format!("GPU{}", g.gpu),
            g.path,
            g.nics.join(",")
        );
    }
    let _ = writeln!(t, "NCCL_IB_HCA (GPU-near NICs): {}", nccl_ib_hca.join(","));
    t
}

/// `ibstat`: one line per port (state, physical state, rate, link layer), then the errors
/// ibstat printed.
pub fn ibstat(st: &Ibstat) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{:<14} {:<12} {:<10} {:>6} link layer",
        "port", "state", "physical", "rate"
    );
    for p in &st.ports {
        let _ = writeln!(
            t,
            "{:<14} {:<12} {:<10} {:>6} {}",
            format!("{}:{}", p.device, p.port),
            opt(&p.state),
            opt(&p.phys_state),
            opt(&p.rate_gbps),
            opt(&p.link_layer)
        );
    }
    for e in &st.errors {
        let _ = writeln!(t, "ibstat error: {e}");
    }
    t
}

/// `ibv_devinfo`: one line per port (state, physical state, active and maximum MTU, link
/// layer).
pub fn ibv_devinfo(ports: &[DevinfoPort]) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{:<14} {:<12} {:<10} {:>6} {:>6} link layer",
        "port", "state", "physical", "mtu", "max"
    );
    for p in ports {
        let _ = writeln!(
            t,
            "{:<14} {:<12} {:<10} {:>6} {:>6} {}",
            format!("{}:{}", p.device, p.port),
            opt(&p.state),
            opt(&p.phys_state),
            opt(&p.active_mtu),
            opt(&p.max_mtu),
            opt(&p.link_layer)
        );
    }
    t
}

/// `show_gids`: each port's RoCE v2 GID index with an IPv4 address.
pub fn show_gids(idx: &[RoceV2Index]) -> String {
    let mut t = String::new();
    let _ = writeln!(t, "{:<14} {:<10} {:>6} IPv4", "port", "netdev", "v2 idx");
    for e in idx {
        let _ = writeln!(
            t,
            "{:<14} {:<10} {:>6} {}",
            format!("{}:{}", e.device, e.port),
            opt(&e.netdev),
            opt(&e.index),
            opt(&e.ipv4)
        );
    }
    t
}

/// `ibdev2netdev`: one line per port in the tool's own `dev:port ==> netdev (Up)` shape.
pub fn ibdev2netdev(maps: &[NetdevMap]) -> String {
    let mut t = String::new();
    for m in maps {
        let _ = writeln!(
            t,
            "{}:{} ==> {} ({}){}",
            m.device,
            m.port,
            m.netdev,
            match m.netdev_up {
                Some(true) => "Up",
                Some(false) => "Down",
                None => "-",
            },
            m.port_state
                .as_ref()
                .map(|s| format!(" port {s}"))
                .unwrap_or_default()
        );
    }
    t
}

/// `mlnx_qos`: the trust mode, the PFC priorities, and how many runs the text held.
pub fn mlnx_qos(q: &MlnxQos) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "trust: {}\nPFC enabled priorities: {}\nruns in the text: {} (the last one is read)",
        opt(&q.trust),
        q.pfc_enabled
            .as_ref()
            .map_or_else(|| "not shown".to_string(), |p| format!("{p:?}")),
        q.runs
    );
    t
}
