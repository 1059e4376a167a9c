//! `cluster matrix`'s option set, as the command line gives it, read and checked into a
//! [`MatrixConfig`] and the transport to agree on ([`MatrixOptions::plan`]).

use std::time::Duration;

use crate::matrix::{rail_count, MatrixConfig};
use crate::rendezvous::Group;
use crate::transport::TransportChoice;
use crate::ClusterError;

/// How the all-pairs matrix measures.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct MatrixOptions {
    /// tcp, rdma (verbs RC queue pairs), or auto (rdma when every rank has a usable RDMA
    /// device, else tcp).
    #[cfg_attr(feature = "clap", arg(long, default_value = "tcp"))]
    pub transport: String,
    /// Bytes per timed transfer (K, M, G, T suffixes are powers of 1024).
    #[cfg_attr(feature = "clap", arg(long, default_value = "16M"))]
    pub size: String,
    /// Timed transfers per direction, after one warm-up.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 3))]
    pub iters: u32,
    /// One matrix per rail: rail i pairs every rank's i-th --data-ip (NIC i against NIC i, for
    /// rail-optimised fabrics). Every rank gives the same number of addresses; --output FILE is
    /// written as FILE-railI per rail.
    #[cfg_attr(feature = "clap", arg(long))]
    pub per_rail: bool,
    /// Skip the second pass that measures each suspect against nodes whose every pair passed
    /// (to tell a bad node from a bad link).
    #[cfg_attr(feature = "clap", arg(long))]
    pub no_second_pass: bool,
    /// Seconds the whole run may take to its verdict: each pair's transfers are cut short to
    /// fit (every wait keeps its own limit, an eighth of --timeout).
    #[cfg_attr(feature = "clap", arg(long, value_name = "SECS"))]
    pub deadline: Option<f64>,
}

impl MatrixOptions {
    /// Reads and checks every value, so that a bad one is said before any rank starts.
    pub fn plan(&self) -> Result<(MatrixConfig, TransportChoice), ClusterError> {
        let choice: TransportChoice = self.transport.parse().map_err(|_| {
            ClusterError::Invalid(format!(
                "unknown --transport {:?} ({})",
                self.transport,
                TransportChoice::NAMES
            ))
        })?;
        let deadline = match self.deadline {
            Some(d) if !(d.is_finite() && d > 0.0 && d < 1e9) => {
                return Err(ClusterError::Invalid(format!(
                    "--deadline must be a positive number of seconds, not {d}"
                )))
            }
            d => d.map(Duration::from_secs_f64),
        };
        let cfg = MatrixConfig {
            size: fabrik_model::size::parse_bytes(&self.size)?.max(1),
            iters: self.iters.max(1),
            rail: 0,
            isolate: !self.no_second_pass,
            deadline,
            tcp_buffers: None,
        };
        Ok((cfg, choice))
    }

    /// How many matrices the run makes: one, or with `--per-rail` one per data address that
    /// every rank gives ([`rail_count`]).
    pub fn rails(&self, group: &Group) -> Result<u32, ClusterError> {
        if self.per_rail {
            rail_count(group)
        } else {
            Ok(1)
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn args() -> MatrixOptions {
        MatrixOptions {
            transport: "auto".into(),
            size: "1M".into(),
            iters: 0,
            per_rail: false,
            no_second_pass: true,
            deadline: Some(30.0),
        }
    }

    #[test]
    fn a_plan_reads_every_flag_and_names_a_bad_one() {
        let (cfg, choice) = args().plan().unwrap();
        assert_eq!(choice, TransportChoice::Auto);
        assert_eq!((cfg.size, cfg.iters, cfg.isolate), (1 << 20, 1, false));
        assert_eq!(cfg.deadline, Some(Duration::from_secs(30)));
        let bad = |f: fn(&mut MatrixOptions)| {
            let mut a = args();
            f(&mut a);
            a.plan().unwrap_err().to_string()
        };
        assert_eq!(
            bad(|a| a.transport = "ucx".into()),
            "unknown --transport \"ucx\" (tcp, rdma or auto)"
        );
        assert_eq!(
            bad(|a| a.deadline = Some(-1.0)),
            "--deadline must be a positive number of seconds, not -1"
        );
    }
}
