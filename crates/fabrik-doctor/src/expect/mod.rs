//! Expectations: what a node of a cluster must have, written once per machine type in a TOML
//! file, and the comparison of a probed [`Node`] with it. A node that lost a GPU or a rail looks
//! healthy to rules that only judge what is present; compared with what it should have, every
//! difference becomes a finding with the evidence read.
//!
//! Counts of GPUs are exact; RDMA devices and ACTIVE ports are minimums (a DGX's storage NICs
//! come and go with cabling, a missing rail does not). `rdma.link_layer`, when given, picks the
//! ports the other `[rdma]` fields judge, so storage Ethernet ports do not count as slow
//! InfiniBand rails. Versions match as prefixes at a component boundary: `535` matches
//! `535.161.08`, `535.16` does not.
//!
//! The file's format and its validation are in `file`, the file a known-good node would write
//! in `from_node`, the comparison in `compare`; waivers, which the file also holds, are
//! [`crate::waive`].

mod below;
mod compare;
mod file;
mod from_node;
mod options;

use fabrik_model::{Finding, Severity};

pub(crate) use below::setting_matches;
pub use compare::{check_expectations, version_matches};
pub use file::{
    BandwidthExpect, ExpectError, Expectations, GpuExpect, HostExpect, KernelLogExpect, Memlock,
    NicExpect, PcieExpect, RdmaExpect, RoceExpect, VersionExpect, KLOG_CLASSES,
};
pub use options::{apply, ExpectOptions, OptionsError};

/// Rule id of "GPU count or model differs from the expectations".
pub const GPUS: &str = "FAB-EXP-001";
/// Rule id of "Fewer RDMA devices or ACTIVE ports than expected".
pub const RDMA_COUNT: &str = "FAB-EXP-002";
/// Rule id of "Port rate or link layer differs from the expectations".
pub const LINK: &str = "FAB-EXP-003";
/// Rule id of "MTU differs from the expectations".
pub const MTU: &str = "FAB-EXP-004";
/// Rule id of "RoCE GID index, PFC, trust or ECN differs from the expectations".
pub const ROCE: &str = "FAB-EXP-005";
/// Rule id of "Peer-memory module or memlock differs from the expectations".
pub const GDR: &str = "FAB-EXP-006";
/// Rule id of "Driver, OFED, rdma-core, NCCL or firmware version differs from the expectations".
pub const VERSIONS: &str = "FAB-EXP-007";
/// Rule id of "An NCCL setting differs from the expectations".
pub const NCCL: &str = "FAB-EXP-008";
/// Rule id of "An expectation the node's data cannot confirm".
pub const UNVERIFIED: &str = "FAB-EXP-009";
/// Rule id of "A NIC firmware setting differs from the expectations".
pub const FIRMWARE: &str = "FAB-EXP-011";
/// Rule id of "A PCIe link on a NIC's or GPU's path is slower or narrower than expected".
pub const PCIE: &str = "FAB-EXP-012";
/// Rule id of "A port's FEC or bit error ratio differs from the expectations".
pub const LINK_QUALITY: &str = "FAB-EXP-013";
/// Rule id of "Kernel log events the expectations say must be absent".
pub const KERNEL_LOG: &str = "FAB-EXP-014";

/// An info finding: the expectation `what` cannot be checked on `subject`, whose fact would come
/// from `path`.
fn unverified(out: &mut Vec<Finding>, subject: &str, what: String, path: &str) {
    out.push(crate::util::finding(
        UNVERIFIED,
        Severity::Info,
        subject,
        format!("cannot verify the expectation {what}: the node's data does not show it"),
        vec![crate::util::ev(path, "not read")],
        "Snapshot the node with `fabrik snapshot` as root so the fact is captured, or drop the expectation.",
    ));
}

/// `N ACTIVE ports` when the expectations give `rdma.active_ports` and the node has at least
/// that many ACTIVE ports (of `rdma.link_layer` when given): a rail down beyond them is one the
/// cluster does not count on.
pub fn rails_met(node: &fabrik_model::Node, expect: &Expectations) -> Option<String> {
    let r = expect.rdma.as_ref()?;
    let want = r.active_ports?;
    let layer = r.link_layer.as_deref().map(fabrik_model::LinkLayer::parse);
    let have = crate::util::all_ports(node)
        .filter(|(d, p)| {
            !d.is_software()
                && crate::util::is_active(p)
                && layer
                    .as_ref()
                    .is_none_or(|l| p.link_layer.as_ref() == Some(l))
        })
        .count();
    (have >= want).then(|| format!("{want} ACTIVE port(s)"))
}
