//! Cloud shapes whose fabric is not plain verbs: GCP A3 (GPUDirect-TCPX) and AWS EFA.

use fabrik_model::{Finding, NetInterface, Node, Severity};

use crate::env::PlannedEnv;
use crate::util::*;

/// Rule id of "GCP A3-like node without GPUDirect-TCPX".
pub const GCP_A3_TCPX: &str = "FAB-CLOUD-001";
/// Rule id of "EFA present without the libfabric/aws-ofi-nccl settings".
pub const AWS_EFA: &str = "FAB-CLOUD-002";

fn gvnics(node: &Node) -> Vec<&NetInterface> {
    let mut v: Vec<&NetInterface> = node
        .net_interfaces
        .iter()
        .filter(|i| i.driver.as_deref() == Some("gve"))
        .collect();
    v.sort_by(|a, b| a.name.cmp(&b.name));
    v
}

/// An A3-like VM: 8 GPUs, several gVNIC (`gve`) interfaces and no RDMA device.
pub fn looks_like_gcp_a3(node: &Node) -> bool {
    node.gpus.len() >= 8 && gvnics(node).len() >= 2 && node.rdma_devices.is_empty()
}

fn tcpx_configured(env: &PlannedEnv) -> bool {
    env.vars
        .keys()
        .any(|k| k.starts_with("NCCL_GPUDIRECTTCPX_"))
        || env
            .get("NCCL_NET")
            .is_some_and(|v| v.to_ascii_lowercase().contains("tcpx"))
        || env
            .get("NCCL_NET_PLUGIN")
            .is_some_and(|v| v.to_ascii_lowercase().contains("tcpx"))
}

/// Rule [`GCP_A3_TCPX`]: "GCP A3-like node without GPUDirect-TCPX".
pub fn gcp_a3(node: &Node, env: Option<&PlannedEnv>) -> Vec<Finding> {
    if !looks_like_gcp_a3(node) {
        return vec![];
    }
    let nics = gvnics(node);
    let data_nics = nics.len().saturating_sub(1);
    let mut evidence: Vec<_> = nics
        .iter()
        .map(|i| ev(net_path(&i.name, "device/driver"), "gve"))
        .collect();
    evidence.push(ev("/sys/class/infiniband", "no devices"));
    let fix = "Run the GPUDirect-TCPX stack: the receive-datapath-manager (tcpgpudmarxd) container on each VM, the nccl-plugin-gpudirecttcpx NCCL plugin on LD_LIBRARY_PATH, and its NCCL_GPUDIRECTTCPX_* variables (NCCL_GPUDIRECTTCPX_SOCKET_IFNAME / CTRL_DEV naming the data and control gVNICs, NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX=/run/tcpx). Give the VM its 4 data NICs in separate VPCs. Without it two A3 nodes reach about 20 GB/s all_reduce algbw; with it about 50 GB/s.";
    let mut out = vec![];
    if data_nics < 4 {
        out.push(finding(
            GCP_A3_TCPX,
            Severity::Warning,
            "node",
            format!("GCP A3-like node with {} gVNIC interfaces: GPUDirect-TCPX needs 4 data NICs beside the primary one, so it cannot reach full bandwidth", nics.len()),
            evidence.clone(),
            fix,
        ));
    }
    match env {
        Some(e) if tcpx_configured(e) => {}
        Some(e) => out.push(finding(
            GCP_A3_TCPX,
            Severity::Warning,
            "node",
            format!("GCP A3-like node (8 GPUs, {} gVNICs, no RDMA) and the planned environment ({}) has no GPUDirect-TCPX settings: NCCL will use plain TCP sockets", nics.len(), e.source),
            {
                let mut v = evidence.clone();
                v.push(ev(PlannedEnv::evidence_path("NCCL_GPUDIRECTTCPX_*"), "unset"));
                v
            },
            fix,
        )),
        None => out.push(finding(
            GCP_A3_TCPX,
            Severity::Info,
            "node",
            format!("GCP A3-like node (8 GPUs, {} gVNICs, no RDMA): inter-node bandwidth depends on GPUDirect-TCPX, which fabrik cannot see from sysfs; pass the job's environment with --env or --env-file to check it", nics.len()),
            evidence,
            fix,
        )),
    }
    out
}

fn efa_configured(env: &PlannedEnv) -> Option<bool> {
    if let Some(p) = env.get("FI_PROVIDER") {
        return Some(p == "efa");
    }
    let plugin_named = env.get("NCCL_NET_PLUGIN").is_some_and(|v| {
        let v = v.to_ascii_lowercase();
        v.contains("ofi") || v.contains("aws")
    }) || env
        .get("NCCL_NET")
        .is_some_and(|v| v.to_ascii_lowercase().contains("libfabric"));
    if plugin_named || env.vars.keys().any(|k| k.starts_with("FI_EFA_")) {
        Some(true)
    } else {
        None
    }
}

/// Rule [`AWS_EFA`]: "EFA present without the libfabric/aws-ofi-nccl settings".
pub fn aws_efa(node: &Node, env: Option<&PlannedEnv>) -> Vec<Finding> {
    let efa: Vec<_> = devices(node).into_iter().filter(|d| d.is_efa()).collect();
    if efa.is_empty() {
        return vec![];
    }
    let names = efa
        .iter()
        .map(|d| d.name.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    let evidence = vec![ev("/sys/class/infiniband", names.clone())];
    let fix = "Install the EFA software (libfabric with the efa provider) and the aws-ofi-nccl plugin, put the plugin on LD_LIBRARY_PATH (AWS Deep Learning AMIs/containers ship it), and run with FI_PROVIDER=efa (FI_EFA_USE_DEVICE_RDMA=1 on instances with RDMA read, p4d/p5, for older libfabric). NCCL_DEBUG=INFO should print `NET/OFI Selected provider is efa`.";
    let (severity, message) = match env.map(|e| (e, efa_configured(e))) {
        Some((_, Some(true))) => return vec![],
        Some((e, Some(false))) => (
            Severity::Error,
            format!("EFA devices present ({names}) but the planned environment ({}) sets FI_PROVIDER to `{}`: libfabric will not use EFA", e.source, e.get("FI_PROVIDER").unwrap_or("")),
        ),
        Some((e, None)) => (
            Severity::Warning,
            format!("EFA devices present ({names}) but the planned environment ({}) has no libfabric/aws-ofi-nccl settings (FI_PROVIDER, FI_EFA_*, NCCL_NET_PLUGIN): NCCL's built-in transports cannot drive EFA and fall back to TCP sockets unless the plugin is found on LD_LIBRARY_PATH", e.source),
        ),
        None => (
            Severity::Info,
            format!("EFA devices present ({names}): NCCL needs the aws-ofi-nccl plugin and libfabric's efa provider to use them; fabrik cannot see the plugin from sysfs, pass the job's environment with --env or --env-file to check the settings"),
        ),
    };
    vec![finding(AWS_EFA, severity, "node", message, evidence, fix)]
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::testkit::*;
    use fabrik_model::NetKind;

    fn a3() -> Node {
        let mut n = healthy_ib_node("a3");
        n.rdma_devices.clear();
        n.gpu_nic_paths.clear();
        n.net_interfaces.retain(|i| i.name == "lo");
        for i in 0..5 {
            let mut nif = netif(
                &format!("eth{i}"),
                NetKind::Ethernet,
                Some(&format!("10.{i}.0.2/32")),
                "up",
            );
            nif.driver = Some("gve".into());
            nif.mtu = Some(8244);
            nif.default_route = i == 0;
            n.net_interfaces.push(nif);
        }
        n
    }

    #[test]
    fn a3_without_env_is_info_with_tcpx_env_quiet_without_warns() {
        let n = a3();
        assert!(looks_like_gcp_a3(&n));
        let f = gcp_a3(&n, None);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Info);
        let good = PlannedEnv::parse(
            "t",
            "NCCL_GPUDIRECTTCPX_SOCKET_IFNAME=eth1,eth2,eth3,eth4\n",
        );
        assert!(gcp_a3(&n, Some(&good)).is_empty());
        let bad = PlannedEnv::parse("t", "NCCL_SOCKET_IFNAME=eth0\n");
        assert_eq!(gcp_a3(&n, Some(&bad))[0].severity, Severity::Warning);
        assert!(gcp_a3(&healthy_ib_node("x"), None).is_empty());
    }

    #[test]
    fn a3_with_too_few_data_nics_warns() {
        let mut n = a3();
        n.net_interfaces
            .retain(|i| i.name != "eth4" && i.name != "eth3");
        let good = PlannedEnv::parse("t", "NCCL_GPUDIRECTTCPX_SOCKET_IFNAME=eth1,eth2\n");
        let f = gcp_a3(&n, Some(&good));
        assert_eq!(f.len(), 1);
        assert!(f[0].message.contains("4 data NICs"));
    }

    #[test]
    fn efa_settings_are_checked() {
        let mut n = bare_node();
        let mut d = hca("efa_0", "0000:10:1c.0", 0, &[], vec![]);
        d.pci.as_mut().unwrap().driver = Some("efa".into());
        n.rdma_devices.push(d);
        assert_eq!(aws_efa(&n, None)[0].severity, Severity::Info);
        let ok = PlannedEnv::parse("t", "FI_PROVIDER=efa\nFI_EFA_USE_DEVICE_RDMA=1\n");
        assert!(aws_efa(&n, Some(&ok)).is_empty());
        let wrong = PlannedEnv::parse("t", "FI_PROVIDER=tcp\n");
        assert_eq!(aws_efa(&n, Some(&wrong))[0].severity, Severity::Error);
        let none = PlannedEnv::parse("t", "NCCL_DEBUG=INFO\n");
        assert_eq!(aws_efa(&n, Some(&none))[0].severity, Severity::Warning);
        assert!(aws_efa(&healthy_ib_node("a"), None).is_empty());
    }
}
