//! What a node assembled from pasted tool outputs knows, and how such facts are laid out for
//! people.
//!
//! A probed [`crate::Node`] holds every fact fabrik reads (or a warning for each it could not).
//! A node built from a paste of `ibstat` or `show_gids` holds a few: [`crate::Node::known`] lists
//! them, and the doctor runs only the rules whose facts are all known, so that a fact the paste
//! could not give is never taken for a fact that is absent.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A kind of fact a [`crate::Node`] holds.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Fact {
    /// The complete list of the node's RDMA devices, network interfaces, GPUs, routes and
    /// settings: what only reading the node itself gives (an absent device is really absent).
    Inventory,
    /// The logical and physical state of the RDMA ports listed.
    PortState,
    /// The state of the network interfaces behind RDMA ports (up or down).
    NetdevState,
    /// The signalling rate of the RDMA ports listed.
    PortRate,
    /// The active MTU of the RDMA ports listed.
    Mtu,
    /// The GID tables of the RDMA ports listed, with each GID's type.
    Gids,
    /// Priority flow control of the interfaces listed.
    Pfc,
    /// RoCE ECN switches of the interfaces listed.
    Ecn,
    /// The PCIe distance of each GPU to each NIC.
    GpuNicPaths,
    /// The current and maximum PCIe link of the functions listed.
    PciLinks,
    /// The ACS control bits of the PCIe bridges listed.
    Acs,
    /// The PCIe Device Control (relaxed ordering) of the functions listed.
    PciDevCtl,
    /// The PCIe Advanced Error Reporting status of the functions listed.
    Aer,
    /// IOMMU mode.
    Iommu,
    /// Loaded kernel modules.
    Modules,
    /// The locked-memory limit.
    Memlock,
    /// `/dev/infiniband`.
    DevInfiniband,
    /// Port and interface counters.
    Counters,
    /// NIC firmware configuration (`mstconfig q`).
    Firmware,
    /// Physical link quality (`mstlink`): BER, FEC, module.
    LinkQuality,
    /// Kernel log events.
    KernelLog,
    /// NVLink state of the GPUs listed.
    NvLink,
    /// Links of the InfiniBand fabric seen from this node (`iblinkinfo`, `ibdiagnet`).
    Fabric,
}

/// Facts read from a tool's output, laid out as one table with notes under it: the columns
/// that matter for the tool, one row per device, port or link. Renderers lay it out as text
/// or Markdown; the facts themselves are serialized apart.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FactTable {
    /// Column headings.
    pub columns: Vec<String>,
    /// Rows, each with as many cells as there are columns (`-` for an unknown value).
    pub rows: Vec<Vec<String>>,
    /// Lines under the table: what the tool itself reported, advice that follows from the
    /// facts.
    pub notes: Vec<String>,
}

impl FactTable {
    /// A table with these column headings and no rows.
    pub fn new<S: Into<String>>(columns: impl IntoIterator<Item = S>) -> Self {
        FactTable {
            columns: columns.into_iter().map(Into::into).collect(),
            ..FactTable::default()
        }
    }

    /// Adds a row; an unknown value is written `-`.
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(
            cells
                .into_iter()
                .map(Into::into)
                .map(|c: String| if c.is_empty() { "-".to_string() } else { c })
                .collect(),
        );
    }

    /// Adds a note under the table.
    pub fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }
}

/// An optional value as a table cell (empty, written `-`, when unknown).
pub fn cell<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref().map(ToString::to_string).unwrap_or_default()
}
