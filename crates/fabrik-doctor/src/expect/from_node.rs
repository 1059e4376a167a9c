//! The expectations a known-good node meets (`fabrik expect --from-root`).

use std::collections::BTreeMap;

use fabrik_model::{LinkLayer, Node, RdmaDevice};

use super::file::*;
use crate::rules::roce::recommended_gid_index;
use crate::util::{all_ports, is_active};

impl Expectations {
    /// The expectations a known-good node meets: every fact it shows, as the file would say it.
    pub fn from_node(node: &Node) -> Self {
        let mut e = Expectations {
            name: node.hostname.as_ref().map(|h| format!("written from {h}")),
            ..Default::default()
        };
        if !node.gpus.is_empty() {
            let models: Vec<&str> = node
                .gpus
                .iter()
                .filter_map(|g| g.model.as_deref())
                .collect();
            let model = match models.first() {
                Some(first)
                    if models.len() == node.gpus.len() && models.iter().all(|m| m == first) =>
                {
                    Some(first.to_string())
                }
                _ => None,
            };
            e.gpus = Some(GpuExpect {
                count: Some(node.gpus.len()),
                model,
            });
        }
        let hw: Vec<&RdmaDevice> = node
            .rdma_devices
            .iter()
            .filter(|d| !d.is_software())
            .collect();
        if !hw.is_empty() {
            let active: Vec<_> = all_ports(node)
                .filter(|(d, p)| !d.is_software() && is_active(p))
                .collect();
            // The link layer most active ports share is the fabric's; the rest (storage,
            // management) is left to the device count.
            let mut layers: BTreeMap<String, usize> = BTreeMap::new();
            for (_, p) in &active {
                if let Some(ll) = layer_name(p.link_layer.as_ref()) {
                    *layers.entry(ll.to_string()).or_default() += 1;
                }
            }
            let link_layer = layers
                .iter()
                .max_by_key(|(_, n)| **n)
                .map(|(l, _)| l.clone());
            let judged: Vec<_> = active
                .iter()
                .filter(|(_, p)| {
                    link_layer.is_none()
                        || layer_name(p.link_layer.as_ref()) == link_layer.as_deref()
                })
                .collect();
            let one = |values: Vec<Option<String>>| -> Option<String> {
                let first = values.first()?.clone()?;
                values
                    .iter()
                    .all(|v| v.as_deref() == Some(&first))
                    .then_some(first)
            };
            let rate = one(judged
                .iter()
                .map(|(_, p)| p.rate.as_ref().and_then(|r| r.gbps).map(|g| g.to_string()))
                .collect())
            .and_then(|g| g.parse().ok());
            let is_ib = link_layer.as_deref() == Some("InfiniBand");
            let ib_mtu = if is_ib {
                one(judged
                    .iter()
                    .map(|(_, p)| p.active_mtu.map(|m| m.to_string()))
                    .collect())
                .and_then(|m| m.parse().ok())
            } else {
                None
            };
            let netdev_mtu = if link_layer.as_deref() == Some("Ethernet") {
                one(judged
                    .iter()
                    .map(|(_, p)| {
                        p.netdev
                            .as_deref()
                            .and_then(|n| node.net_interface(n))
                            .and_then(|i| i.mtu)
                            .map(|m| m.to_string())
                    })
                    .collect())
                .and_then(|m| m.parse().ok())
            } else {
                None
            };
            let mut judged_devs: Vec<&RdmaDevice> = judged.iter().map(|(d, _)| *d).collect();
            judged_devs.dedup_by(|a, b| a.name == b.name);
            let firmware = one(judged_devs.iter().map(|d| d.fw_ver.clone()).collect());
            e.rdma = Some(RdmaExpect {
                devices: Some(hw.len()),
                active_ports: Some(judged.len()),
                link_layer: link_layer.clone(),
                rate_gbps: rate,
                ib_mtu,
                netdev_mtu,
                firmware,
            });
            if link_layer.as_deref() == Some("Ethernet") {
                let gid_index = one(judged
                    .iter()
                    .map(|(_, p)| recommended_gid_index(p).map(|i| i.to_string()))
                    .collect())
                .and_then(|i| i.parse().ok());
                let nifs: Vec<_> = judged
                    .iter()
                    .filter_map(|(_, p)| p.netdev.as_deref().and_then(|n| node.net_interface(n)))
                    .collect();
                let pfc = one(nifs
                    .iter()
                    .map(|n| {
                        n.pfc
                            .as_ref()
                            .map(|p| format!("{:?}", p.enabled_priorities))
                    })
                    .collect())
                .and_then(|_| nifs.first().and_then(|n| n.pfc.as_ref()));
                let roce = RoceExpect {
                    gid_index,
                    pfc_priorities: pfc.map(|p| p.enabled_priorities.clone()),
                    trust: pfc.and_then(|p| p.trust.clone()),
                    ecn: None,
                };
                if roce != RoceExpect::default() {
                    e.roce = Some(roce);
                }
            }
        }
        let peer = ["nvidia_peermem", "nv_peer_mem"]
            .into_iter()
            .find(|m| node.has_module(m));
        let memlock = node.memlock.as_ref().map(|m| match m.soft_bytes {
            None => Memlock::Text("unlimited".into()),
            Some(b) => Memlock::Bytes(b),
        });
        if peer.is_some() || memlock.is_some() {
            e.host = Some(HostExpect {
                peer_memory: peer.map(str::to_string),
                memlock,
            });
        }
        let v = &node.versions;
        let versions = VersionExpect {
            nvidia_driver: v.nvidia_driver.clone(),
            ofed: v.ofed.clone(),
            rdma_core: v.rdma_core.clone(),
            nccl: v.nccl.clone(),
        };
        if versions != VersionExpect::default() {
            e.versions = Some(versions);
        }
        super::below::from_node(node, &mut e);
        e
    }
}

pub(super) fn layer_name(ll: Option<&LinkLayer>) -> Option<&'static str> {
    match ll? {
        LinkLayer::Infiniband => Some("InfiniBand"),
        LinkLayer::Ethernet => Some("Ethernet"),
        LinkLayer::Other(_) => None,
    }
}
