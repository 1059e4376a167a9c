//! Pure parsers for the texts the kernel and the helper tools write, one module per format.
//! Each takes a `&str` and never panics; what it cannot read it leaves out (`None` or an empty
//! list) so the caller can warn. Every parser is re-exported here, so callers name
//! `fabrik_probe::parse::parse_rate` whatever module holds it.

mod addresses;
mod attr;
mod cmdline;
mod dcb;
mod fib_trie;
mod gid;
mod if_inet6;
mod limits;
mod lspci;
mod modules;
mod nvidia;
mod ofed_info;
mod os_release;
mod pci;
mod pci_config;
mod proc_version;
mod rate;
mod route;

pub use addresses::{parse_addresses_file, parse_ip_o_addr};
pub use attr::{parse_int_auto, parse_numa, parse_u64};
pub use cmdline::iommu_cmdline_flags;
pub use dcb::{
    format_dcb_record, ieee_get_request, parse_dcb_record, parse_ieee_reply, DcbError, Ets,
    IeeeDcb, APP_SEL_DSCP, EOPNOTSUPP, RTM_GETDCB,
};
pub use fib_trie::parse_fib_trie_local;
pub use gid::{gid_ipv4, gid_is_zero};
pub use if_inet6::parse_if_inet6;
pub use limits::parse_memlock;
pub use lspci::parse_lspci_acs;
pub use modules::parse_proc_modules;
pub use nvidia::{parse_nvidia_gpu_information, parse_nvidia_open_module, parse_nvidia_version};
pub use ofed_info::parse_ofed_info;
pub use os_release::parse_os_release;
pub use pci::{is_bdf, normalize_bdf, parse_pci_speed};
pub use pci_config::{parse_pci_config, Acs, Express, ExtendedSpace, PciConfig, ACS_BITS};
pub use proc_version::parse_proc_version_release;
pub use rate::parse_rate;
pub use route::{parse_proc_route, RouteEntry};

// The command-output parsers live with `fabrik parse` (one home per format); the probe reads its
// captures under `fabrik/cmd/` through the same functions.
pub use fabrik_parse::commands::ibv_devinfo::parse_ibv_devinfo_mtu;
pub use fabrik_parse::commands::mlnx_qos::parse_mlnx_qos;
pub use fabrik_parse::commands::topo::parse_nvidia_smi_topo;

#[cfg(test)]
mod tests;
