//! Cloud platform profiles. Values are the vendors' own, as their documentation and sample
//! manifests give them (see `sources` and docs/profiles/); the node, when known, is only used
//! to check that what the vendor assumes is there.

use fabrik_model::Node;

use super::sources as src;
use super::{fabric, socket_ifname, Builder, Mount, Note, Profile, Sidecar, Transport};

pub(crate) fn apply(b: &mut Builder, profile: Profile, node: Option<&Node>) -> Transport {
    match profile {
        Profile::GcpA3Tcpx => gcp_tcpx(b, node),
        Profile::GcpA3MegaTcpxo => gcp_tcpxo(b, node),
        Profile::AwsEfa => aws_efa(b, node),
        Profile::AzureNdIb => azure_nd(b, node),
        Profile::AlibabaAcsRdma => alibaba(b, node, false),
        Profile::AlibabaAcsRdmaType2 => alibaba(b, node, true),
        Profile::OciRoce => oci_roce(b, node),
        // The generic profiles and auto are handled by the caller; reaching here is a
        // programming error, answered with the safest environment.
        Profile::Auto | Profile::GenericIb | Profile::GenericRoce | Profile::Socket => {
            super::socket(b, node, true)
        }
    }
}

/// Warns about interfaces the platform's values name but the probed node does not have.
fn expect_interfaces(b: &mut Builder, node: Option<&Node>, names: &[&str], profile: Profile) {
    let Some(node) = node else { return };
    if node.net_interfaces.is_empty() {
        return;
    }
    let missing: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| node.net_interface(n).is_none())
        .collect();
    if !missing.is_empty() {
        b.note(Note::warning(format!(
            "profile {profile} names interfaces this node does not have: {}",
            missing.join(", ")
        )));
    }
}

fn nvidia_libs_mount() -> Mount {
    Mount {
        k8s_host_path: Some("/home/kubernetes/bin/nvidia/lib64".into()),
        ..Mount::new(
            "libraries",
            "/var/lib/nvidia/lib64",
            "/usr/local/nvidia/lib64",
        )
    }
}

fn gke_interfaces_annotation(data_nics: u32) -> String {
    let mut list = vec![r#"{"interfaceName":"eth0","network":"default"}"#.to_string()];
    for i in 1..=data_nics {
        list.push(format!(
            r#"{{"interfaceName":"eth{i}","network":"vpc{i}"}}"#
        ));
    }
    format!("[{}]", list.join(","))
}

fn gcp_common_runtime(b: &mut Builder, data_nics: u32) {
    b.runtime.ipc_lock = true;
    b.runtime
        .k8s_annotations
        .insert("networking.gke.io/default-interface".into(), "eth0".into());
    b.runtime.k8s_annotations.insert(
        "networking.gke.io/interfaces".into(),
        gke_interfaces_annotation(data_nics),
    );
    b.note(
        Note::warning(format!(
            "the networking.gke.io/interfaces annotation names networks vpc1..vpc{data_nics}: they must match the GKE Network objects of your cluster"
        ))
        .with_source(src::GKE_TCPX),
    );
}

fn gcp_tcpx(b: &mut Builder, node: Option<&Node>) -> Transport {
    let s = src::GKE_TCPX_NCCL_CONFIG;
    b.set("LD_LIBRARY_PATH", "/usr/local/nvidia/lib64:/usr/local/tcpx/lib64", "NCCL and the TCPX plugin (libnccl-net.so) are loaded from the driver mount and the plugin install directory", src::GCE_GPUDIRECT);
    b.set(
        "NCCL_SOCKET_IFNAME",
        "eth0",
        "bootstrap over the primary gVNIC",
        s,
    );
    b.set(
        "NCCL_GPUDIRECTTCPX_CTRL_DEV",
        "eth0",
        "TCPX control traffic over the primary NIC",
        s,
    );
    b.set(
        "NCCL_GPUDIRECTTCPX_SOCKET_IFNAME",
        "eth1,eth2,eth3,eth4",
        "the 4 data NICs of an A3 High VM carry GPU payloads",
        s,
    );
    b.set("NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX", "/tmp", "the receive-datapath-manager's socket directory /run/tcpx is mounted at /tmp in the container", src::GKE_TCPX_POD);
    b.set(
        "NCCL_GPUDIRECTTCPX_PROGRAM_FLOW_STEERING_WAIT_MICROS",
        "1000000",
        "wait up to 1 s for the RxDM to program flow steering",
        s,
    );
    b.set(
        "NCCL_CROSS_NIC",
        "0",
        "keep each ring on the same NIC index across nodes (A3 rail alignment)",
        s,
    );
    b.set("NCCL_ALGO", "Ring", "Google's tested algorithm for TCPX", s);
    b.set(
        "NCCL_PROTO",
        "Simple",
        "the TCPX plugin supports the Simple protocol",
        s,
    );
    b.set(
        "NCCL_NSOCKS_PERTHREAD",
        "4",
        "Google's TCPX socket fan-out",
        s,
    );
    b.set(
        "NCCL_SOCKET_NTHREADS",
        "1",
        "Google's TCPX socket threads",
        s,
    );
    b.set("NCCL_MAX_NCHANNELS", "8", "Google's TCPX channel count", s);
    b.set("NCCL_MIN_NCHANNELS", "8", "Google's TCPX channel count", s);
    b.set(
        "NCCL_DYNAMIC_CHUNK_SIZE",
        "524288",
        "Google's TCPX chunk size",
        s,
    );
    b.set("NCCL_BUFFSIZE", "4194304", "Google's TCPX buffer size", s);
    b.set(
        "NCCL_NET_GDR_LEVEL",
        "PIX",
        "GPUDirect only between a GPU and the NIC on its PCIe switch",
        s,
    );
    b.set(
        "NCCL_P2P_PXN_LEVEL",
        "0",
        "no PXN: each GPU sends through its own NIC",
        s,
    );
    expect_interfaces(
        b,
        node,
        &["eth0", "eth1", "eth2", "eth3", "eth4"],
        Profile::GcpA3Tcpx,
    );
    gcp_common_runtime(b, 4);
    b.runtime.gpu_device_nodes = true;
    b.runtime.shm_size = "1Gi".into();
    b.runtime.docker_extra_args = vec![
        "--userns=host".into(),
        "--ulimit".into(),
        "stack=67108864".into(),
    ];
    b.runtime.mounts = vec![
        Mount::new("tcpx-socket", "/run/tcpx", "/tmp"),
        nvidia_libs_mount(),
        Mount {
            docker_only: true,
            ..Mount::new("tcpx-lib", "/var/lib/tcpx", "/usr/local/tcpx")
        },
    ];
    let mut devices = String::new();
    for i in 0..8 {
        devices.push_str(&format!("- path: /dev/nvidia{i}\n"));
    }
    devices.push_str("- path: /dev/nvidiactl\n- path: /dev/nvidia-uvm\n");
    b.runtime
        .k8s_annotations
        .insert("devices.gke.io/container.tcpx-daemon".into(), devices);
    b.runtime.k8s_sidecar = Some(Sidecar {
        name: "tcpx-daemon".into(),
        image: "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/tcpgpudmarxd-dev:v2.0.12".into(),
        command: vec!["/tcpgpudmarxd/build/app/tcpgpudmarxd".into()],
        args: vec![
            "--gpu_nic_preset".into(),
            "a3vm".into(),
            "--gpu_shmem_type".into(),
            "fd".into(),
            "--uds_path".into(),
            "/run/tcpx".into(),
            "--setup_param".into(),
            "--verbose 128 2 0 ".into(),
        ],
        capabilities: vec!["NET_ADMIN".into()],
        mounts: vec![
            nvidia_libs_mount(),
            Mount::new("tcpx-socket", "/run/tcpx", "/run/tcpx"),
            Mount::new("sys", "/sys", "/hostsysfs"),
            Mount::new("proc-sys", "/proc/sys", "/hostprocsysfs"),
        ],
        env: vec![("LD_LIBRARY_PATH".into(), "/usr/local/nvidia/lib64".into())],
        source: src::GKE_TCPX_POD.into(),
    });
    b.note(
        Note::warning(
            "TCPX needs the receive-datapath-manager (tcpgpudmarxd) running on every VM before the job starts (Kubernetes: the tcpx-daemon sidecar rendered with the job; VMs: its container with --network=host and /run/tcpx), and an image that carries the TCPX NCCL plugin",
        )
        .with_source(src::GCE_GPUDIRECT),
    );
    b.note(Note::info(
        "outside a container (no /run/tcpx mounted at /tmp) set NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX=/run/tcpx",
    ));
    b.note(Note::info(
        "MPI launches with TCPX use a hostfile with slots=8 (one rank per GPU)",
    ));
    Transport::GpudirectTcpx
}

fn gcp_tcpxo(b: &mut Builder, node: Option<&Node>) -> Transport {
    let s = src::DGXC_GCP_TCPXO;
    b.set(
        "LD_LIBRARY_PATH",
        "/usr/local/nvidia/lib64",
        "the TCPXO NCCL plugin is installed with the driver libraries",
        src::GKE_TCPXO_POD,
    );
    b.set(
        "NCCL_FASTRAK_CTRL_DEV",
        "eth0",
        "TCPXO control traffic over the primary NIC",
        s,
    );
    b.set(
        "NCCL_FASTRAK_IFNAME",
        "eth1,eth2,eth3,eth4,eth5,eth6,eth7,eth8",
        "the 8 data NICs of an A3 Mega VM",
        s,
    );
    b.set(
        "NCCL_SOCKET_IFNAME",
        "eth0",
        "bootstrap over the primary NIC",
        s,
    );
    b.set(
        "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY",
        "/dev/aperture_devices",
        "the LLCM aperture devices mounted from the host",
        src::GKE_TCPXO_POD,
    );
    b.set(
        "NCCL_FASTRAK_USE_LLCM",
        "1",
        "TCPXO low-latency control memory",
        s,
    );
    b.set("NCCL_FASTRAK_USE_SNAP", "1", "TCPXO snap datapath", s);
    b.set("NCCL_FASTRAK_NUM_FLOWS", "2", "flows per connection", s);
    b.set(
        "NCCL_FASTRAK_ENABLE_CONTROL_CHANNEL",
        "0",
        "as set for TCPXO pods",
        s,
    );
    b.set(
        "NCCL_FASTRAK_ENABLE_HOTPATH_LOGGING",
        "0",
        "no logging on the data path",
        s,
    );
    b.set(
        "NCCL_FASTRAK_PLUGIN_ACCEPT_TIMEOUT_MS",
        "600000",
        "wait up to 10 min for peers to accept",
        s,
    );
    b.set("NCCL_CROSS_NIC", "0", "rail-aligned rings", s);
    b.set(
        "NCCL_ALGO",
        "Ring,Tree",
        "the algorithms tuned for TCPXO",
        s,
    );
    b.set("NCCL_BUFFSIZE", "8388608", "TCPXO buffer size", s);
    b.set("NCCL_DYNAMIC_CHUNK_SIZE", "524288", "TCPXO chunk size", s);
    b.set(
        "NCCL_P2P_NET_CHUNKSIZE",
        "524288",
        "TCPXO p2p chunk size",
        s,
    );
    b.set("NCCL_MIN_NCHANNELS", "4", "TCPXO minimum channels", s);
    b.set(
        "NCCL_NET_GDR_LEVEL",
        "PIX",
        "GPUDirect between a GPU and the NIC on its PCIe switch",
        s,
    );
    b.set(
        "NCCL_NVLS_ENABLE",
        "0",
        "NVLink SHARP off, as for TCPXO pods",
        s,
    );
    expect_interfaces(
        b,
        node,
        &[
            "eth0", "eth1", "eth2", "eth3", "eth4", "eth5", "eth6", "eth7", "eth8",
        ],
        Profile::GcpA3MegaTcpxo,
    );
    gcp_common_runtime(b, 8);
    b.runtime.shm_size = "1Gi".into();
    b.runtime.mounts = vec![
        nvidia_libs_mount(),
        Mount::new(
            "aperture-devices",
            "/dev/aperture_devices",
            "/dev/aperture_devices",
        ),
    ];
    let mut devices = String::new();
    for i in 0..8 {
        devices.push_str(&format!("- path: /dev/nvidia{i}\n"));
    }
    devices.push_str(
        "- path: /dev/nvidiactl\n- path: /dev/nvidia-uvm\n- path: /dev/dmabuf_import_helper\n",
    );
    b.runtime
        .k8s_annotations
        .insert("devices.gke.io/container.tcpxo-daemon".into(), devices);
    b.runtime.k8s_sidecar = Some(Sidecar {
        name: "tcpxo-daemon".into(),
        image: "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.9".into(),
        command: vec!["/bin/sh".into(), "-c".into()],
        args: vec!["set -ex\nchmod 755 /fts/entrypoint_rxdm_container.sh\n/fts/entrypoint_rxdm_container.sh --num_hops=2 --num_nics=8 --uid= --alsologtostderr\n".into()],
        capabilities: vec!["NET_ADMIN".into(), "NET_BIND_SERVICE".into()],
        mounts: vec![
            nvidia_libs_mount(),
            Mount::new("sys", "/sys", "/hostsysfs"),
            Mount::new("proc-sys", "/proc/sys", "/hostprocsysfs"),
        ],
        env: vec![("LD_LIBRARY_PATH".into(), "/usr/local/nvidia/lib64".into())],
        source: src::GKE_TCPXO_POD.into(),
    });
    b.note(
        Note::warning(
            "TCPXO needs its receive-datapath-manager (tcpxo-daemon) next to the job and the TCPXO NCCL plugin installed on the node (GKE: nccl-tcpxo-installer; Slurm: the Cluster Toolkit prolog)",
        )
        .with_source(src::GCP_TCPXO_TOOLKIT),
    );
    Transport::GpudirectTcpxo
}

fn aws_efa(b: &mut Builder, node: Option<&Node>) -> Transport {
    b.runtime.needs_rdma_devices = true;
    // On EKS the EFA device plugin puts /dev/infiniband/uverbsN into pods that request
    // vpc.amazonaws.com/efa; no host path or privilege is needed.
    b.runtime.k8s_rdma_injected = true;
    b.runtime.ipc_lock = true;
    if let Some(n) = node {
        let inv = fabric::inventory(n);
        if inv.efa.is_empty() {
            if !n.rdma_devices.is_empty() || !n.net_interfaces.is_empty() {
                b.note(Note::warning(
                    "profile aws-efa, but no EFA device was found on this node: NCCL will fall back to sockets",
                ));
            }
        } else {
            b.runtime
                .k8s_resources
                .insert("vpc.amazonaws.com/efa".into(), inv.efa.len().to_string());
        }
        if !n.net_interfaces.is_empty() {
            socket_ifname(b, Some(n), false);
        }
    }
    if !b
        .runtime
        .k8s_resources
        .contains_key("vpc.amazonaws.com/efa")
    {
        b.note(Note::warning(
            "the number of EFA interfaces is unknown without a probed node: `fabrik launch k8s` requests vpc.amazonaws.com/efa for --instance-type (p4d 4, p5 32, p5en 16) or --rdma-resource vpc.amazonaws.com/efa=N",
        ));
    }
    b.note(
        Note::info(
            "with libfabric >= 1.18 and aws-ofi-nccl >= 1.7 no FI_* or NCCL_* variable is needed: the plugin selects the efa provider and device RDMA itself",
        )
        .with_source(src::AWS_OFI_NCCL_EFA),
    );
    b.note(
        Note::info(
            "older stacks only: aws-ofi-nccl 1.6.x on p4/p5 needs FI_EFA_USE_DEVICE_RDMA=1; aws-ofi-nccl <= 1.5 also FI_PROVIDER=efa and NCCL_PROTO=simple; RDMAV_FORK_SAFE must not be set",
        )
        .with_source(src::AWS_OFI_NCCL_EFA),
    );
    b.note(
        Note::info(
            "if os.fork() fails with `Cannot allocate memory` (PyTorch data loaders), set FI_EFA_USE_HUGE_PAGE=0",
        )
        .with_source(src::AWS_OFI_NCCL_EFA),
    );
    Transport::Efa
}

fn azure_nd(b: &mut Builder, node: Option<&Node>) -> Transport {
    let s = src::AZURE_ND_H100_V5;
    super::rdma_runtime(b);
    b.set("NCCL_IB_PCI_RELAXED_ORDERING", "1", "ND VMs pass the HCAs through Hyper-V; relaxed PCIe ordering is needed for full GPUDirect RDMA bandwidth", s);
    b.set(
        "UCX_IB_PCI_RELAXED_ORDERING",
        "on",
        "the same for UCX (MPI) traffic",
        s,
    );
    b.set(
        "NCCL_SOCKET_IFNAME",
        "eth0",
        "bootstrap over the VM's accelerated Ethernet NIC",
        s,
    );
    b.set(
        "CUDA_DEVICE_ORDER",
        "PCI_BUS_ID",
        "GPU numbering by PCI bus, matching the topology file",
        s,
    );
    b.set("NCCL_TOPO_FILE", "/opt/microsoft/ndv5-topo.xml", "the VM's real GPU/NIC/NUMA layout, which NCCL cannot see through the hypervisor (ND A100 v4: /opt/microsoft/ndv4-topo.xml)", s);
    b.note(
        Note::info(
            "NCCL_TOPO_FILE ships with the Azure HPC images; on other images copy Microsoft's topology file for the VM size",
        )
        .with_source(s),
    );
    expect_interfaces(b, node, &["eth0"], Profile::AzureNdIb);
    if let Some(n) = node {
        let inv = fabric::inventory(n);
        if inv.ib.is_empty() && !n.rdma_devices.is_empty() {
            b.note(Note::warning(
                "profile azure-nd-ib, but no active InfiniBand port was found",
            ));
        }
    }
    Transport::Infiniband
}

fn alibaba(b: &mut Builder, node: Option<&Node>, type2: bool) -> Transport {
    let s = src::ALIBABA_ACS_RDMA;
    b.runtime.needs_rdma_devices = !type2;
    b.runtime.k8s_rdma_injected = true;
    b.runtime.ipc_lock = true;
    b.runtime
        .k8s_labels
        .insert("alibabacloud.com/hpn-type".into(), "rdma".into());
    b.runtime
        .k8s_labels
        .insert("alibabacloud.com/compute-class".into(), "gpu".into());
    b.set(
        "NCCL_SOCKET_IFNAME",
        "eth0",
        "ACS recommends eth0 for NCCL's connections",
        s,
    );
    let transport = if type2 {
        b.set(
            "NCCL_IB_DISABLE",
            "1",
            "RDMA NIC type 2 (P16EN): ACS requires IB/RoCE off in NCCL",
            s,
        );
        b.set(
            "NCCL_IB_HCA",
            "",
            "RDMA NIC type 2 (P16EN): ACS requires NCCL_IB_HCA empty",
            s,
        );
        b.runtime
            .k8s_labels
            .insert("alibabacloud.com/gpu-model-series".into(), "P16EN".into());
        Transport::Socket
    } else {
        b.set(
            "NCCL_IB_HCA",
            "mlx5",
            "RDMA NIC type 1 (GU8TF, GU8TEF, GX8SF): the pod's mlx5 devices",
            s,
        );
        b.note(
            Note::warning(
                "set the label alibabacloud.com/gpu-model-series to your card model (GU8TF, GU8TEF or GX8SF); RDMA is offered to 8-GPU pods only",
            )
            .with_source(s),
        );
        Transport::Roce
    };
    b.note(
        Note::info(
            "ACS's example also sets NCCL_DEBUG=INFO; fabrik leaves debug output to you (NCCL recommends not keeping debug variables in production)",
        )
        .with_source(s),
    );
    b.note(Note::info(
        "in the pod the high-performance NIC appears as hpn0 once the hpn-type label is set",
    ));
    if let Some(n) = node {
        if !n.net_interfaces.is_empty() && n.net_interface("hpn0").is_none() && !type2 {
            b.note(Note::warning(
                "no hpn0 interface on this node: the pod may lack the alibabacloud.com/hpn-type: rdma label",
            ));
        }
    }
    transport
}

fn oci_roce(b: &mut Builder, node: Option<&Node>) -> Transport {
    let s = src::OCI_OKE_H100;
    super::rdma_runtime(b);
    b.runtime.shm_size = "32Gi".into();
    b.set("NCCL_IB_GID_INDEX", "3", "OCI's RoCE v2 IPv4 GID index", s);
    b.set("NCCL_IB_TC", "41", "OCI's RDMA traffic class", s);
    b.set("NCCL_IB_SL", "0", "OCI's service level", s);
    b.set("NCCL_IB_TIMEOUT", "22", "OCI's longer IB timeout", s);
    b.set("NCCL_IB_SPLIT_DATA_ON_QPS", "0", "as OCI sets it", s);
    b.set("NCCL_CUMEM_ENABLE", "0", "as OCI sets it", s);
    b.set("NCCL_IGNORE_CPU_AFFINITY", "1", "as OCI sets it", s);
    b.set(
        "NCCL_SOCKET_IFNAME",
        "eth0",
        "bootstrap over the primary VNIC",
        s,
    );
    b.set("UCX_TLS", "tcp", "MPI's own traffic over TCP", s);
    b.set("UCX_NET_DEVICES", "eth0", "MPI's own traffic over eth0", s);
    let from_node = node
        .map(fabric::inventory)
        .filter(|inv| !inv.roce.is_empty());
    match from_node {
        Some(inv) => {
            b.set(
                "NCCL_IB_HCA",
                fabric::hca_list(&inv.roce),
                format!("the {} active RoCE ports of this node", inv.roce.len()),
                src::NCCL_ENV,
            );
        }
        None => {
            b.set(
                "NCCL_IB_HCA",
                "=mlx5_0,mlx5_1,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8,mlx5_9,mlx5_10,mlx5_12,mlx5_13,mlx5_14,mlx5_15,mlx5_16,mlx5_17",
                "OCI's RDMA HCAs of BM.GPU.H100.8 (mlx5_2 and mlx5_11 are the front-end NICs)",
                s,
            );
            b.note(Note::warning(
                "NCCL_IB_HCA is OCI's list for BM.GPU.H100.8; other shapes number their HCAs differently (probe the node with --root to list its own)",
            ));
        }
    }
    if let Some(n) = node {
        if let fabric::GidChoice::Same(i) = fabric::roce_gid_index(n, &fabric::inventory(n).roce) {
            if i != 3 {
                b.note(Note::warning(format!(
                    "OCI's NCCL_IB_GID_INDEX is 3 but this node's RoCE v2 IPv4 GID is at index {i}"
                )));
            }
        }
    }
    Transport::Roce
}
