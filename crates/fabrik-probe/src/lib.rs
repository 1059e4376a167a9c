//! Reads a node's fabric from a root directory (the live `/` or a snapshot) into a
//! [`fabrik_model::Node`], and captures snapshots that read back the same.
//!
//! [`probe`] is the single entry point: every file is read under the root, every missing or
//! malformed one becomes a `None` and a [`fabrik_model::ProbeWarning`], never a panic.
#![warn(missing_docs)]

mod archive;
pub mod captures;
pub mod confined;
mod facts;
pub mod fs;
pub mod gpu;
pub mod input;
pub mod klog;
pub mod live;
pub mod net;
pub mod nic_tools;
pub mod open;
pub mod output;
pub mod pci;
pub mod rdma;
pub mod root;
pub mod run;
pub mod snapshot;
pub mod system;
pub mod topology;
pub mod unpack;

pub use facts::roce_active_mtu;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fabrik_model::{Node, PciFunction, SCHEMA_VERSION};

use crate::captures::Captures;
use crate::fs::RootFs;
use fabrik_parse::formats::{Format, IbvDevinfo, Lspci, NvidiaSmiTopo};

/// Why a root could not be probed at all (a missing file inside it is only a [`fabrik_model::ProbeWarning`]).
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// A directory that is not a node, or a snapshot cut short (see [`root::check`]).
    #[error(transparent)]
    NotANode(root::RootError),
    /// The root directory does not exist.
    #[error("root directory {0} does not exist")]
    RootMissing(PathBuf),
    /// The root exists but is not a directory.
    #[error("root {0} is not a directory")]
    RootNotDirectory(PathBuf),
    /// The root directory could not be opened; the OS error is kept.
    #[error("cannot open root {0}: {1}")]
    RootUnreadable(PathBuf, std::io::Error),
}

/// How much of the live machine a probe asks beyond its files.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProbeOptions {
    /// On a live root, run the helper tools whose output only they give (`ibv_devinfo -v`,
    /// `ofed_info -s`, `nvidia-smi topo -m`): what `check`, `doctor`, `expect --from-root` and
    /// `snapshot` do, so that all four judge the same facts. Off, only files and the kernel's
    /// own interfaces (DCB over netlink) are read: what a frequent sampler wants.
    pub run_tools: bool,
    /// When the tools and the kernel queries must have answered (a check's budget); tools
    /// still running then are killed and their facts reported as not read.
    pub deadline: Option<Instant>,
    /// On a live root, read the kernel log (`/dev/kmsg`, else `journalctl -k`): what a check
    /// and a snapshot (tools or not) do; a frequent sampler leaves it off.
    pub read_kernel_log: bool,
}

impl ProbeOptions {
    /// Every fact, tools included, within `deadline`.
    pub fn every_fact(deadline: Instant) -> Self {
        ProbeOptions {
            run_tools: true,
            deadline: Some(deadline),
            read_kernel_log: true,
        }
    }

    fn deadline(&self) -> Instant {
        self.deadline
            .unwrap_or_else(|| Instant::now() + DEFAULT_LIVE_WAIT)
    }
}

/// How long live queries may take when no deadline is given.
pub const DEFAULT_LIVE_WAIT: Duration = Duration::from_secs(20);

/// Reads everything fabrik knows about the node rooted at `root` from its files and the
/// kernel's interfaces, without running tools (see [`probe_with`]).
pub fn probe(root: &Path) -> Result<Node, ProbeError> {
    probe_with(root, &ProbeOptions::default())
}

/// Reads the node at `root` as `opts` says.
pub fn probe_with(root: &Path, opts: &ProbeOptions) -> Result<Node, ProbeError> {
    let mut fs = open(root)?;
    Ok(probe_fs(&mut fs, root, opts))
}

/// The node at `root` with its RDMA devices and network interfaces only, everything else left
/// empty: for a caller that needs a NIC's rate, not the GPUs, topology and system files that
/// [`probe`] also reads.
pub fn probe_nics(root: &Path) -> Result<Node, ProbeError> {
    let mut fs = open(root)?;
    let caps = Captures::read(&mut fs);
    let deadline = Instant::now() + DEFAULT_LIVE_WAIT;
    let (rdma_devices, net_interfaces) = read_nics(&mut fs, &caps, deadline, &mut vec![]);
    Ok(Node {
        schema_version: SCHEMA_VERSION,
        root: root.display().to_string(),
        rdma_devices,
        net_interfaces,
        warnings: std::mem::take(&mut fs.warnings),
        ..Node::default()
    })
}

/// Why this machine's NICs could not be read ([`live_nics`]); the probe's words, kept for every
/// caller of the process.
#[derive(Debug, Clone, thiserror::Error)]
#[error("probing /: {0}")]
pub struct LiveNicsError(String);

/// This machine's NICs (`/`, as [`probe_nics`] reads them), read once per process: the line
/// rates the benchmarks judge by come from them, and under `--local N` every rank is a thread
/// of one process.
pub fn live_nics() -> Result<&'static Node, LiveNicsError> {
    static NICS: std::sync::OnceLock<Result<Node, LiveNicsError>> = std::sync::OnceLock::new();
    NICS.get_or_init(|| probe_nics(Path::new("/")).map_err(|e| LiveNicsError(e.to_string())))
        .as_ref()
        .map_err(Clone::clone)
}

fn open(root: &Path) -> Result<RootFs, ProbeError> {
    refuse_non_node(root)?;
    match std::fs::metadata(root) {
        Ok(m) if m.is_dir() => {
            RootFs::new(root).map_err(|e| ProbeError::RootUnreadable(root.to_path_buf(), e))
        }
        Ok(_) => Err(ProbeError::RootNotDirectory(root.to_path_buf())),
        Err(_) => Err(ProbeError::RootMissing(root.to_path_buf())),
    }
}

/// Only a root that [`root::check`] accepts is probed: a directory that is not a node would
/// otherwise read as an empty node, which the doctor then diagnoses.
fn refuse_non_node(root: &Path) -> Result<(), ProbeError> {
    match root::check(root) {
        Ok(_) => Ok(()),
        Err(root::RootError::Missing(p)) => Err(ProbeError::RootMissing(p)),
        Err(root::RootError::NotDirectory(p)) => Err(ProbeError::RootNotDirectory(p)),
        Err(e) => Err(ProbeError::NotANode(e)),
    }
}

/// Probes and also returns every name read, for [`snapshot`].
/// A probed node, every name read, and the tools run (for [`snapshot`]).
pub(crate) type Recording = (
    Node,
    std::collections::BTreeMap<String, fs::Recorded>,
    Vec<(live::Tool, live::ToolOutcome)>,
);

pub(crate) fn probe_recording(root: &Path, opts: &ProbeOptions) -> Result<Recording, ProbeError> {
    let mut fs = open(root)?.recording();
    let node = probe_fs(&mut fs, root, opts);
    let runs = std::mem::take(&mut fs.tool_runs);
    Ok((node, fs.take_record(), runs))
}

fn probe_fs(fs: &mut RootFs, root: &Path, opts: &ProbeOptions) -> Node {
    let deadline = opts.deadline();
    let tools = (opts.run_tools && fs.is_live()).then(|| facts::start_tools(fs, deadline));
    let mut caps = Captures::read(fs);
    let os = system::os_info(fs);
    let gpus = gpu::read_gpus(fs);
    if let Some(t) = tools {
        facts::finish_tools(fs, &mut caps, t);
    }
    let mut not_read = vec![];
    let live_log = opts.read_kernel_log && fs.is_live();
    let kernel_log = klog::kernel_log(fs, &mut caps, live_log, deadline, &mut not_read);
    let (rdma_devices, mut net_interfaces) = read_nics(fs, &caps, deadline, &mut not_read);
    nic_tools::netdev_facts(&caps, &mut net_interfaces);
    let nic_firmware = nic_tools::firmware(&caps);
    let link_quality = nic_tools::link_quality(&caps);
    let transceivers = nic_tools::transceivers(&caps, &net_interfaces);
    nic_tools::not_read(fs, &mut not_read);
    let network_functions = pci::read_network_functions(fs);

    // NICs for GPU distances: RDMA devices, or PCI network interfaces on nodes without RDMA.
    let mut nics: Vec<(String, PciFunction)> = rdma_devices
        .iter()
        .filter_map(|d| d.pci.clone().map(|p| (d.name.clone(), p)))
        .collect();
    if rdma_devices.is_empty() {
        nics = net_interfaces
            .iter()
            .filter_map(|n| n.pci.clone().map(|p| (n.name.clone(), p)))
            .collect();
    }
    let single_numa_node = system::single_numa_node(fs);
    let mut gpu_nic_paths = topology::gpu_nic_paths(&gpus, &nics, single_numa_node);
    if let Some(text) = caps.get("nvidia-smi-topo-m") {
        let smi = NvidiaSmiTopo::parse(text)
            .map(|t| t.gpu_nic_cells())
            .unwrap_or_default();
        topology::cross_check(&mut gpu_nic_paths, &gpus, &smi, fs);
    }
    let mut acs = std::collections::BTreeMap::new();
    let mut have_lspci = false;
    for (_, text) in caps.with_prefix("lspci") {
        have_lspci = true;
        acs.extend(Lspci::parse(text).map(|l| l.acs()).unwrap_or_default());
    }
    let functions: Vec<&PciFunction> = gpus
        .iter()
        .map(|g| &g.pci)
        .chain(nics.iter().map(|(_, p)| p))
        .collect();
    let mut pci_bridges = topology::bridges(&functions, have_lspci.then_some(&acs));
    // Each bridge's own link and AER counts: a link that retrained narrower, or errors seen by
    // a switch port, sit on the path between the endpoint and its root port, where the
    // endpoint's own files do not show them.
    for b in pci_bridges.iter_mut() {
        b.function = pci::function_behind(fs, &fs::join(gpu::PCI_DEVICES, &b.address));
    }
    facts::bridge_acs(fs, &mut pci_bridges, have_lspci, &mut not_read);

    let modules = system::modules(fs);
    let dev_infiniband = system::dev_infiniband(fs, !rdma_devices.is_empty());
    let memlock = system::memlock(fs);
    let neighbour_limits = system::neighbour_limits(fs);
    let tcp_buffers = system::tcp_buffers(fs);
    let iommu = system::iommu(fs, os.kernel_cmdline.as_deref());
    let versions = system::versions(fs, &caps);
    let hostname = system::hostname(fs);

    Node {
        schema_version: SCHEMA_VERSION,
        root: root.display().to_string(),
        hostname,
        os,
        rdma_devices,
        net_interfaces,
        gpus,
        gpu_nic_paths,
        network_functions,
        pci_bridges,
        modules,
        dev_infiniband,
        memlock,
        neighbour_limits,
        tcp_buffers,
        iommu,
        versions,
        command_captures: caps.names(),
        warnings: std::mem::take(&mut fs.warnings),
        not_read,
        kernel_log,
        nic_firmware,
        link_quality,
        transceivers,
        ..Node::default()
    }
}

/// The RDMA devices and the network interfaces, each netdev knowing the RDMA device on it.
fn read_nics(
    fs: &mut RootFs,
    caps: &Captures,
    deadline: Instant,
    not_read: &mut Vec<fabrik_model::NotRead>,
) -> (
    Vec<fabrik_model::RdmaDevice>,
    Vec<fabrik_model::NetInterface>,
) {
    let mtus = caps
        .get("ibv_devinfo-v")
        .and_then(IbvDevinfo::parse)
        .map(|d| d.mtus())
        .unwrap_or_default();
    let mut rdma_devices = rdma::read_devices(fs, &mtus);
    let mut net_interfaces = net::read_interfaces(fs, caps);
    link_netdevs(&mut rdma_devices, &mut net_interfaces);
    facts::dcb(fs, &rdma_devices, &mut net_interfaces, deadline, not_read);
    facts::mtus(caps, &mut rdma_devices, &net_interfaces, not_read);
    (rdma_devices, net_interfaces)
}

/// Cross-references ports and netdevs: each netdev learns the RDMA device that uses it.
fn link_netdevs(devices: &mut [fabrik_model::RdmaDevice], nets: &mut [fabrik_model::NetInterface]) {
    for d in devices.iter() {
        for p in &d.ports {
            let Some(nd) = &p.netdev else { continue };
            if let Some(n) = nets.iter_mut().find(|n| &n.name == nd) {
                if n.rdma_device.is_none() {
                    n.rdma_device = Some(d.name.clone());
                }
            }
        }
    }
}
