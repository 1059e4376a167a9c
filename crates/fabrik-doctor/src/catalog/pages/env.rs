//! Pages of the environment rules: the planned NCCL settings against the node.

use fabrik_model::{Rule, Scope, Severity};

use crate::catalog::sources::*;

pub(super) const ENV_001: Rule = Rule {
    id: "FAB-ENV-001",
    severity: Severity::Error,
    scope: Scope::Env,
    title: "NCCL_IB_HCA names devices or ports that do not exist or are down",
    checks: "Each NCCL_IB_HCA entry (prefix, `=` exact, `:port`, `^` exclusion) against the node's devices and port states.",
    why: "NCCL silently ignores entries that match nothing and uses only what is left, or falls back to sockets when nothing is.",
    evidence: "env:NCCL_IB_HCA, /sys/class/infiniband/*/ports/*/state.",
    fix: "Name devices as /sys/class/infiniband does; select ACTIVE ports only.",
    sources: &[NCCL_ENV],
};

pub(super) const ENV_002: Rule = Rule {
    id: "FAB-ENV-002",
    severity: Severity::Error,
    scope: Scope::Env,
    title: "NCCL_SOCKET_IFNAME matches no usable interface",
    checks: "NCCL_SOCKET_IFNAME (prefix, `=` exact, `^` exclusion) against running, addressed interfaces; a match that includes a bridge or virtual device is a warning.",
    why: "With no match NCCL fails at init (`Bootstrap : no socket interface found`); names differ between nodes more often than expected.",
    evidence: "env:NCCL_SOCKET_IFNAME, /sys/class/net/*.",
    fix: "Name the physical interface exactly (`==eth0`), list several names for heterogeneous nodes, or set it per node in /etc/nccl.conf.",
    sources: &[NCCL_ENV, SOCKET_286],
};

pub(super) const ENV_003: Rule = Rule {
    id: "FAB-ENV-003",
    severity: Severity::Warning,
    scope: Scope::Env,
    title: "IB/RoCE disabled while healthy RDMA ports exist",
    checks: "NCCL_IB_DISABLE=1 or NCCL_NET=Socket while an ACTIVE/LinkUp IB or RoCE hardware port is present.",
    why: "NCCL then uses TCP sockets; jobs run but at a fraction of the bandwidth. Some platforms require it (Alibaba ACS P16EN documents NCCL_IB_DISABLE=1).",
    evidence: "env:NCCL_IB_DISABLE, env:NCCL_NET, port states.",
    fix: "Remove the setting unless the platform documents it.",
    sources: &[NCCL_ENV, IB_DISABLE_1591, ACS_ALIBABA],
};

pub(super) const ENV_004: Rule = Rule {
    id: "FAB-ENV-004",
    severity: Severity::Error,
    scope: Scope::Env,
    title: "NCCL_IB_GID_INDEX points at an empty slot or a RoCE v1 GID",
    checks: "For each ACTIVE RoCE port: the GID at NCCL_IB_GID_INDEX is missing (error), RoCE v1 (error) or a link-local RoCE v2 GID (warning).",
    why: "An empty slot fails connection setup; RoCE v1 is not routable and mismatches RoCE v2 peers; link-local GIDs only reach one L2 segment.",
    evidence: "env:NCCL_IB_GID_INDEX, /sys/class/infiniband/<dev>/ports/<n>/gid_attrs/types/<index>.",
    fix: "Use the index of the RoCE v2 GID with the port's IPv4 address (fabrik prints it), or leave it unset with NCCL ≥ 2.21.",
    sources: &[NCCL_ENV, NCCL_IB_CONNECT_SRC, JUNIPER_GID, KERNEL_IB_ABI],
};

pub(super) const ENV_005: Rule = Rule {
    id: "FAB-ENV-005",
    severity: Severity::Warning,
    scope: Scope::Env,
    title: "NCCL_NET_GDR_LEVEL below the GPU↔NIC distance",
    checks: "For each GPU, the distance to its nearest NIC is greater than NCCL_NET_GDR_LEVEL (LOC, PIX, PXB, PHB, SYS or legacy integers 0-4).",
    why: "NCCL then disables GPUDirect RDMA for that GPU and stages through host memory.",
    evidence: "env:NCCL_NET_GDR_LEVEL, GPU↔NIC path classification.",
    fix: "Unset it (default PXB) or raise it to the actual distance.",
    sources: &[NCCL_ENV, NCCL_PATHS_SRC],
};

pub(super) const ENV_006: Rule = Rule {
    id: "FAB-ENV-006",
    severity: Severity::Warning,
    scope: Scope::Env,
    title: "NCCL_P2P_DISABLE or NCCL_SHM_DISABLE set",
    checks: "NCCL_P2P_DISABLE or NCCL_SHM_DISABLE set to a non-zero integer.",
    why: "They turn off NVLink/PCIe peer-to-peer or shared-memory transports; NVIDIA lists them as debugging variables, not for production.",
    evidence: "env:NCCL_P2P_DISABLE, env:NCCL_SHM_DISABLE.",
    fix: "Remove them after fixing the cause they worked around (ACS, IOMMU, container /dev/shm size).",
    sources: &[NCCL_ENV, ACS_ISSUE],
};

pub(super) const ENV_008: Rule = Rule {
    id: "FAB-ENV-008",
    severity: Severity::Warning,
    scope: Scope::Env,
    title: "NCCL_IB_HCA leaves out rails the node has",
    checks: "The ACTIVE ports of the hardware RDMA devices of the driver family NCCL_IB_HCA selects (EFA, iWARP and software devices left out), against those its entries select (prefixes, `=` exact names, `:N` ports, `^` exclusion, as NCCL reads them): a warning naming each rail left out.",
    why: "NCCL stripes inter-node traffic over the NICs NCCL_IB_HCA allows; a value that names 2 of 8 rails gives the job a quarter of the node's bandwidth, and nothing fails to tell.",
    evidence: "NCCL_IB_HCA, /sys/class/infiniband/*/ports/*/state.",
    fix: "Name every rail (`NCCL_IB_HCA=mlx5` selects them all) or leave it unset; exclude only NICs that are not rails (`^mlx5_8`).",
    sources: &[NCCL_ENV],
};

pub(super) const ENV_009: Rule = Rule {
    id: "FAB-ENV-009",
    severity: Severity::Warning,
    scope: Scope::Env,
    title: "An NCCL variable that nothing reads",
    checks: "Every NCCL_* and OFI_NCCL_* name of the planned environment against the variables NCCL (2.4 to today), its network plugins (aws-ofi-nccl, nccl-rdma-sharp-plugins, GPUDirect-TCPX/TCPXO) and nccl-tests read, extracted release by release from their sources (crates/fabrik-nccl/data/nccl-env.tsv, scripts/catalog/nccl_env.py; NCCL_PARAM(name, \"IB_HCA\", ...) reads NCCL_IB_HCA). Warning when a read name is at most 2 edits away, or one `_` word added or left out: a misspelling, named with the variable meant. Info when no read name is near (another program's setting, such as PyTorch's, or a release newer than the list) and when only older releases read it.",
    why: "NCCL ignores a variable it does not read, silently: NCCL_SOCKET_IFNAMES=eth0 leaves the interface choice automatic, NCCL_IB_GID_IDX=3 leaves the GID index automatic, and the job runs with settings nobody chose.",
    evidence: "env:NAME with its value; the nearest name read and the releases that read it.",
    fix: "Rename the variable to the one meant; remove settings no release you run reads.",
    sources: &[NCCL_ENV, NCCL_PARAM_SRC, OFI_PARAM_SRC],
};
