//! The facts a health check needs beyond plain sysfs attributes, each read from the best
//! source the root has, and a [`NotRead`] with the reason when none gives it:
//!
//! | fact | live root | snapshot |
//! | --- | --- | --- |
//! | ACS of the bridges on GPU/NIC paths | PCI config space (sysfs `config`) | the copied `config`, else an `lspci -vvv` capture |
//! | PFC, trust (and ETS, recorded) | DCB over rtnetlink | `fabrik/dcb/IF.txt`, else an `mlnx_qos` capture |
//! | IB active MTU | `ibv_devinfo -v`, run within the deadline | its capture |
//! | RoCE active MTU | the netdev MTU, as the kernel derives it (`iboe_get_mtu`) | the same |
//! | OFED version, `nvidia-smi topo -m` | the tools, within the deadline | their captures |
//! | AER counts and links of GPUs, NICs and the bridges above them | sysfs `aer_dev_*`, `*_link_*` | the copied files |
//! | NIC firmware settings, link quality, `ethtool` settings, statistics and module diagnostics ([`crate::nic_tools`]) | `mstconfig`/`mlxconfig q`, `mstlink`/`mlxlink -c -m`, `ethtool IF`, `ethtool -S IF`, `ethtool -m IF`, within the deadline | their captures |
//! | the kernel log ([`crate::klog`]) | `/dev/kmsg`, else `journalctl -k` | `fabrik/kmsg.txt`, else a `journalctl-k` or `dmesg` capture |
//!
//! Whatever the live path reads is recorded as a file of the root, so `fabrik snapshot` keeps it
//! and the snapshot answers the same.

use std::time::{Duration, Instant};

use fabrik_model::{LinkLayer, NetInterface, NotRead, PciBridge, Pfc, RdmaDevice};

use crate::captures::{Captures, CMD_DIR};
use crate::fs::{join, RootFs};
use crate::live::{self, Tool, ToolOutcome, DCB_DIR};
use fabrik_parse::formats::dcb::{
    format_dcb_record, parse_dcb_record, DcbError, IeeeDcb, EOPNOTSUPP,
};
use fabrik_parse::formats::pci_config::{parse_pci_config, ExtendedSpace};

/// Tools running while the files are read.
pub(crate) struct Running(std::thread::JoinHandle<Vec<(Tool, ToolOutcome)>>);

/// The tools that give facts no file holds, for this root.
fn tools(fs: &mut RootFs) -> Vec<Tool> {
    let mut t = vec![Tool {
        name: "ofed_info-s".into(),
        program: "ofed_info",
        args: vec!["-s".into()],
    }];
    if !fs.list_opt(crate::rdma::CLASS_DIR).is_empty() {
        t.push(Tool {
            name: "ibv_devinfo-v".into(),
            program: "ibv_devinfo",
            args: vec!["-v".into()],
        });
    }
    t.extend(crate::nic_tools::live_tools(fs));
    if fs.exists("/proc/driver/nvidia/gpus") {
        t.push(Tool {
            name: "nvidia-smi-topo-m".into(),
            program: "nvidia-smi",
            args: vec!["topo".into(), "-m".into()],
        });
    }
    t
}

/// Starts the tools on their own threads; they run while the probe reads files.
pub(crate) fn start_tools(fs: &mut RootFs, deadline: Instant) -> Running {
    let list = tools(fs);
    Running(std::thread::spawn(move || live::run_tools(&list, deadline)))
}

/// Takes the tools' outputs as captures (recorded as `fabrik/cmd/NAME.txt`).
pub(crate) fn finish_tools(fs: &mut RootFs, caps: &mut Captures, running: Running) {
    let runs = running.0.join().unwrap_or_default();
    for (tool, outcome) in &runs {
        match outcome {
            ToolOutcome::Output { text, .. } => {
                fs.record_derived(
                    &join(CMD_DIR, &format!("{}.txt", tool.name)),
                    text.clone().into_bytes(),
                );
                caps.insert(&tool.name, text.clone());
            }
            ToolOutcome::Missing => {}
            other => fs.warn(
                &Captures::path_of(&tool.name),
                format!(
                    "`{} {}`: {}",
                    tool.program,
                    tool.args.join(" "),
                    other.describe()
                ),
            ),
        }
    }
    fs.tool_runs = runs;
}

fn not_read(out: &mut Vec<NotRead>, fact: &str, subject: &str, reason: impl Into<String>) {
    out.push(NotRead {
        fact: fact.into(),
        subject: subject.into(),
        reason: reason.into(),
    });
}

/// Whether the netdev backs a hardware RoCE port, the ones whose PFC a rule judges.
fn roce_netdev(devices: &[RdmaDevice], nif: &NetInterface) -> bool {
    devices.iter().any(|d| {
        !d.is_software()
            && d.ports.iter().any(|p| {
                p.netdev.as_deref() == Some(nif.name.as_str())
                    && p.link_layer == Some(LinkLayer::Ethernet)
            })
    })
}

/// PFC and trust of every hardware netdev: over netlink on a live root (recorded as
/// `fabrik/dcb/IF.txt`), from that record in a snapshot, else from an `mlnx_qos` capture
/// (already read); a RoCE netdev left without is a [`NotRead`].
pub(crate) fn dcb(
    fs: &mut RootFs,
    devices: &[RdmaDevice],
    nets: &mut [NetInterface],
    deadline: Instant,
    out: &mut Vec<NotRead>,
) {
    let live = fs.shares_network_namespace();
    for nif in nets.iter_mut().filter(|n| n.pci.is_some()) {
        let record = join(DCB_DIR, &format!("{}.txt", nif.name));
        let got: Result<IeeeDcb, String> = if live {
            let wait = deadline
                .saturating_duration_since(Instant::now())
                .min(Duration::from_secs(2));
            match live::read_dcb(&nif.name, wait) {
                Ok(d) => {
                    fs.record_derived(&record, format_dcb_record(&d).into_bytes());
                    Ok(d)
                }
                Err(live::DcbReadError::Reply(DcbError::Errno(EOPNOTSUPP))) => {
                    fs.record_derived(&record, b"unsupported: 1\n".to_vec());
                    Err(format!(
                        "the driver of {} has no DCB (RTM_GETDCB answers EOPNOTSUPP)",
                        nif.name
                    ))
                }
                Err(e) => Err(format!("DCB of {} over netlink: {e}", nif.name)),
            }
        } else {
            match fs.text_opt(&record) {
                Some(t) if t.contains("unsupported:") => Err(format!(
                    "the driver of {} had no DCB when the snapshot was taken",
                    nif.name
                )),
                Some(t) => Ok(parse_dcb_record(&t)),
                None => Err(format!(
                    "this root holds neither a DCB record ({record}) nor an mlnx_qos capture of {}",
                    nif.name
                )),
            }
        };
        match got {
            Ok(d) => match d.pfc_priorities() {
                Some(prios) => {
                    nif.pfc = Some(Pfc {
                        enabled_priorities: prios,
                        trust: Some(d.trust().to_string()),
                        source: record,
                    })
                }
                None if nif.pfc.is_none() && roce_netdev(devices, nif) => not_read(
                    out,
                    "pfc",
                    &nif.name,
                    format!("the driver of {} reports DCB but no PFC", nif.name),
                ),
                None => {}
            },
            Err(why) => {
                if nif.pfc.is_none() && roce_netdev(devices, nif) {
                    not_read(out, "pfc", &nif.name, why);
                }
            }
        }
    }
}

/// `iboe_get_mtu` (include/rdma/ib_addr.h): a RoCE port's active MTU is the largest IB MTU
/// that fits the netdev's MTU less the RoCE v2 headers (GRH 40, UDP 8, BTH 12, XRC 4,
/// AtomicETH 28, ICRC 4 bytes).
pub fn roce_active_mtu(netdev_mtu: u32) -> Option<u32> {
    let room = netdev_mtu.checked_sub(40 + 8 + 12 + 4 + 28 + 4)?;
    [4096, 2048, 1024, 512, 256]
        .into_iter()
        .find(|m| *m <= room)
}

/// Active MTUs the capture lacks: a RoCE port's from its netdev; an IB port's is a
/// [`NotRead`] (only `ibv_devinfo -v` or a MAD query gives it).
pub(crate) fn mtus(
    caps: &Captures,
    devices: &mut [RdmaDevice],
    nets: &[NetInterface],
    out: &mut Vec<NotRead>,
) {
    for d in devices.iter_mut().filter(|d| !d.is_software()) {
        for p in d.ports.iter_mut().filter(|p| p.active_mtu.is_none()) {
            match p.link_layer {
                Some(LinkLayer::Ethernet) => {
                    p.active_mtu = p
                        .netdev
                        .as_deref()
                        .and_then(|n| nets.iter().find(|i| i.name == n))
                        .and_then(|i| i.mtu)
                        .and_then(roce_active_mtu);
                }
                Some(LinkLayer::Infiniband) => {
                    let why = if caps.get("ibv_devinfo-v").is_some() {
                        "`ibv_devinfo -v` does not list it".to_string()
                    } else {
                        "sysfs has no IB MTU and `ibv_devinfo -v` gave no output (not installed, or past the deadline)".to_string()
                    };
                    not_read(out, "ib_mtu", &format!("{}:{}", d.name, p.number), why);
                }
                _ => {}
            }
        }
    }
}

/// Where a PCI function's config space is.
fn config_path(address: &str) -> String {
    format!("{}/{address}/config", crate::gpu::PCI_DEVICES)
}

/// ACS of each bridge from its config space, where the root gives the whole of it; where it
/// does not, the `lspci -vvv` capture's answer (already in `bridges`) stays; a bridge left
/// unknown is a [`NotRead`].
pub(crate) fn bridge_acs(
    fs: &mut RootFs,
    bridges: &mut [PciBridge],
    have_lspci: bool,
    out: &mut Vec<NotRead>,
) {
    for b in bridges.iter_mut() {
        let path = config_path(&b.address);
        let why = match fs.read_bytes(&path) {
            Ok(bytes) => {
                let c = parse_pci_config(&bytes);
                match c.extended() {
                    ExtendedSpace::Read => {
                        b.acs_ctl_enabled = Some(c.acs.map(|a| a.enabled()).unwrap_or_default());
                        continue;
                    }
                    ExtendedSpace::Absent => {
                        b.acs_ctl_enabled = Some(vec![]);
                        continue;
                    }
                    ExtendedSpace::NotReadable => format!(
                        "only the first {} bytes of its config space could be read: the extended space, where ACS is, needs root (CAP_SYS_ADMIN)",
                        bytes.len()
                    ),
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                "this root holds neither its config space nor an lspci -vvv capture of it"
                    .to_string()
            }
            Err(e) => format!("{path}: {e}"),
        };
        if b.acs_ctl_enabled.is_none() {
            let why = if have_lspci {
                format!("{why}; the lspci capture does not list it")
            } else {
                why
            };
            not_read(out, "acs", &b.address, why);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roce_mtus_follow_the_kernel() {
        // mlx5 RoCE on a 9000-byte netdev reports 4096; on 1500, 1024 (1500 - 96 = 1404).
        assert_eq!(roce_active_mtu(9000), Some(4096));
        assert_eq!(roce_active_mtu(4192), Some(4096));
        assert_eq!(roce_active_mtu(4191), Some(2048));
        assert_eq!(roce_active_mtu(1500), Some(1024));
        assert_eq!(roce_active_mtu(96), None);
        assert_eq!(roce_active_mtu(351), None);
        assert_eq!(roce_active_mtu(352), Some(256));
    }
}
