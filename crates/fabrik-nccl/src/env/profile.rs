//! Profile names as users type them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A named set of rules for the environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Profile {
    /// Decide from the node: InfiniBand, RoCE v2, EFA, or sockets.
    Auto,
    /// GCP A3 High/Edge (a3-highgpu-8g): GPUDirect-TCPX.
    GcpA3Tcpx,
    /// GCP A3 Mega (a3-megagpu-8g): GPUDirect-TCPXO.
    GcpA3MegaTcpxo,
    /// AWS EFA through the aws-ofi-nccl plugin.
    AwsEfa,
    /// Azure ND-series InfiniBand VMs.
    AzureNdIb,
    /// Alibaba Cloud ACS, RDMA NIC type 1 (GU8TF, GU8TEF, GX8SF).
    AlibabaAcsRdma,
    /// Alibaba Cloud ACS, RDMA NIC type 2 (P16EN).
    AlibabaAcsRdmaType2,
    /// Oracle Cloud RoCE v2 bare-metal GPU shapes.
    OciRoce,
    /// Any InfiniBand fabric.
    GenericIb,
    /// Any RoCE v2 fabric.
    GenericRoce,
    /// TCP sockets only.
    Socket,
}

impl Profile {
    /// Every profile, `auto` first.
    pub const ALL: [Profile; 11] = [
        Profile::Auto,
        Profile::GcpA3Tcpx,
        Profile::GcpA3MegaTcpxo,
        Profile::AwsEfa,
        Profile::AzureNdIb,
        Profile::AlibabaAcsRdma,
        Profile::AlibabaAcsRdmaType2,
        Profile::OciRoce,
        Profile::GenericIb,
        Profile::GenericRoce,
        Profile::Socket,
    ];

    /// Every named (non-auto) profile.
    /// Every profile but `Auto`.
    pub fn named() -> impl Iterator<Item = Profile> {
        Self::ALL.into_iter().filter(|p| *p != Profile::Auto)
    }

    /// The name the CLI and the docs use (`gcp-a3-tcpx`, `generic-roce`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Auto => "auto",
            Profile::GcpA3Tcpx => "gcp-a3-tcpx",
            Profile::GcpA3MegaTcpxo => "gcp-a3-mega-tcpxo",
            Profile::AwsEfa => "aws-efa",
            Profile::AzureNdIb => "azure-nd-ib",
            Profile::AlibabaAcsRdma => "alibaba-acs-rdma",
            Profile::AlibabaAcsRdmaType2 => "alibaba-acs-rdma-type2",
            Profile::OciRoce => "oci-roce",
            Profile::GenericIb => "generic-ib",
            Profile::GenericRoce => "generic-roce",
            Profile::Socket => "socket",
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A profile name fabrik does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown profile {0:?}; known profiles: {known}", known = known_list())]
pub struct UnknownProfile(pub String);

fn known_list() -> String {
    Profile::ALL
        .iter()
        .map(|p| p.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

impl FromStr for Profile {
    type Err = UnknownProfile;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim().to_ascii_lowercase();
        // `alibaba-acs-rdma-type1` is the long spelling of the default ACS profile.
        if s == "alibaba-acs-rdma-type1" {
            return Ok(Profile::AlibabaAcsRdma);
        }
        Profile::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or(UnknownProfile(s))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_is_listed() {
        for p in Profile::ALL {
            assert_eq!(p.as_str().parse::<Profile>().unwrap(), p);
        }
        assert_eq!(
            "alibaba-acs-rdma-type1".parse::<Profile>().unwrap(),
            Profile::AlibabaAcsRdma
        );
        let err = "gcp".parse::<Profile>().unwrap_err().to_string();
        assert!(
            err.contains("gcp-a3-tcpx") && err.contains("socket"),
            "{err}"
        );
    }
}
