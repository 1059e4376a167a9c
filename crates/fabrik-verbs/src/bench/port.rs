//! Which device, port, GID and MTU an RDMA test or pipe runs on, and the options that choose
//! them: the defaults every RDMA user of fabrik shares.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use fabrik_model::gid::policy::GidSettings;

use crate::device::{device_names, mtu_bytes_to_enum, port_state_name, Context, PortInfo};
use crate::error::VerbsError;
use crate::ffi::*;
use crate::gid::roce_gid_index;
use crate::gpuref;
use crate::loader::Verbs;
use crate::mem::MemKind;

/// How this end uses its hardware (not negotiated: each end picks its own).
#[derive(Debug, Clone)]
pub struct LocalOptions {
    /// The RDMA device to use; `None` picks the first usable one.
    pub device: Option<String>,
    /// The port, from 1.
    pub port: u8,
    /// The GID index; `None` is 0 on IB and, on RoCE, the one NCCL would pick under this
    /// process's `NCCL_IB_*` variables.
    pub gid_index: Option<u32>,
    /// Path MTU in bytes; `None` uses the port's active MTU.
    pub mtu: Option<u32>,
    /// Where the benchmark buffer lives.
    pub mem: MemKind,
    /// The CUDA device ordinal, for GPU memory.
    pub cuda_device: i32,
    /// Register the buffer with `IBV_ACCESS_RELAXED_ORDERING`.
    pub relaxed_ordering: bool,
    /// With GPU memory, also run the bandwidth test from a host buffer (same QPs, sizes) and
    /// compare.
    pub host_reference: bool,
    /// Warn when GPU memory's bandwidth is below this fraction of host memory's.
    pub warn_below: f64,
    /// Longest wait for any completion or control message.
    pub timeout: Duration,
    /// Where sysfs is read for the GID table (`/` live).
    pub root: PathBuf,
}

impl Default for LocalOptions {
    fn default() -> Self {
        LocalOptions {
            device: None,
            port: 1,
            gid_index: None,
            mtu: None,
            mem: MemKind::Host,
            cuda_device: 0,
            relaxed_ordering: false,
            host_reference: true,
            warn_below: gpuref::DEFAULT_WARN_BELOW,
            timeout: Duration::from_secs(30),
            root: PathBuf::from("/"),
        }
    }
}

/// Opens `name`, or when `None` the first device whose `port` is ACTIVE.
pub(crate) fn open_device(
    verbs: &Arc<Verbs>,
    name: Option<&str>,
    port: u8,
) -> Result<Arc<Context>, VerbsError> {
    if name.is_some() {
        return Context::open(verbs.clone(), name);
    }
    let names = device_names(verbs)?;
    if names.is_empty() {
        return Err(VerbsError::NoDevices);
    }
    for n in &names {
        let ctx = Context::open(verbs.clone(), Some(n))?;
        if ctx
            .query_port(port)
            .map(|p| p.state == IBV_PORT_ACTIVE)
            .unwrap_or(false)
        {
            return Ok(ctx);
        }
    }
    // None is active: open the first, and let the port check say why.
    Context::open(verbs.clone(), names.first().map(String::as_str))
}

/// The device, port, GID and MTU a test or pipe runs on, checked to be usable.
pub(crate) struct PortChoice {
    pub(crate) ctx: Arc<Context>,
    pub(crate) port_info: PortInfo,
    pub(crate) gid_index: u32,
    pub(crate) gid: [u8; 16],
    pub(crate) mtu: u32,
}

/// Opens `opts`' device and port and picks the GID index (the one NCCL would use under this
/// process's NCCL_IB_* variables, unless `--gid-index` names one) and the MTU (the active one, or `--mtu` capped by it): the
/// defaults every RDMA user of fabrik shares, each refusal a typed error naming the device.
pub(crate) fn open_port(verbs: &Arc<Verbs>, opts: &LocalOptions) -> Result<PortChoice, VerbsError> {
    let ctx = open_device(verbs, opts.device.as_deref(), opts.port)?;
    let count = ctx.phys_port_cnt()?;
    if opts.port == 0 || opts.port > count {
        return Err(VerbsError::PortNotFound {
            device: ctx.name.clone(),
            port: opts.port,
            count,
        });
    }
    let port_info = ctx.query_port(opts.port)?;
    if port_info.state != IBV_PORT_ACTIVE {
        return Err(VerbsError::PortNotActive {
            device: ctx.name.clone(),
            port: opts.port,
            state: port_state_name(port_info.state).to_string(),
        });
    }
    let gid_index = match opts.gid_index {
        Some(i) => i,
        None if !port_info.is_ethernet() => 0,
        None => roce_gid_index(
            &opts.root,
            &ctx.name,
            u32::from(opts.port),
            &GidSettings::from_env(|k| std::env::var(k).ok()),
        ),
    };
    let tbl = u32::try_from(port_info.gid_tbl_len).unwrap_or(0);
    if gid_index >= tbl {
        return Err(VerbsError::GidIndexOutOfRange {
            device: ctx.name.clone(),
            port: opts.port,
            index: gid_index,
            len: tbl,
        });
    }
    let gid = ctx.query_gid(opts.port, gid_index)?;
    if port_info.is_ethernet() && gid.iter().all(|b| *b == 0) {
        return Err(VerbsError::GidEmpty {
            device: ctx.name.clone(),
            port: opts.port,
            index: gid_index,
        });
    }
    let active = port_info.active_mtu_bytes();
    let mtu = match opts.mtu {
        Some(m) => {
            if mtu_bytes_to_enum(m).is_none() {
                return Err(VerbsError::Unsupported(format!(
                    "MTU {m}: RDMA MTUs are 256, 512, 1024, 2048 or 4096"
                )));
            }
            m.min(active)
        }
        None => active,
    };
    Ok(PortChoice {
        ctx,
        port_info,
        gid_index,
        gid,
        mtu,
    })
}

/// Whether this node has an RDMA device with an ACTIVE port (for `--transport auto`).
pub fn usable_device(verbs: &Arc<Verbs>) -> Option<String> {
    let names = device_names(verbs).ok()?;
    names.into_iter().find(|n| {
        Context::open(verbs.clone(), Some(n))
            .and_then(|c| c.query_port(1))
            .map(|p| p.state == IBV_PORT_ACTIVE)
            .unwrap_or(false)
    })
}
